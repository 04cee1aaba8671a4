"""Exact Qwen2.5 count of a message as CoPaw's summariser input formats it, from the counts
of its block texts (``QwenCounter.count_wrapped``): the texts were counted once when the
replay started, so each block costs a few short windows instead of a second pass.

``agentscope.format_message(style="reme", include_thinking=False)`` is ``[ts] name:`` and one
line group per block (``<tag>body</tag>``, joined by newlines). Each group starts with
``<`` after a newline: a cut point where the count is additive (``qwen_tokens.CUT_RE``), so
the whole is the header's count plus each group's. The header is counted by its digit shape
(``qwen_tokens.DIGIT_SHAPE``: every digit is a one-token chunk), so a unique timestamp
costs nothing. tests/engine/tokens/test_qwen_cuts.py checks the total against counting the
formatted text on the corpus and the realistic transcript.
"""

from __future__ import annotations

from typing import NamedTuple

from ..core.model import BlockKind, Message
from ..stages import agentscope
from ..tokens.qwen_tokens import DIGIT_SHAPE, QwenCounter

CLIP = 2000  # characters of a block body the ReMe format keeps (then "...")


class StoredCounts(NamedTuple):
    """An original message's counts, stored at import (``_copaw_stored``)."""

    tokens: int  # ``CoPaw.count_message``
    formatted: int  # ``formatted_count`` with the names below
    names: list[list[str]]  # ``looked_up`` as the import found them
    # UTF-8 bytes of the formatted text (``agentscope.formatted_size``) with the names above;
    # None when imported before it was stored
    size: int | None = None

    def fits(self, tool_names: dict[str, str]) -> bool:
        """True when the replay's names of the calls give the same formatted text."""
        if not self.names:  # (most messages: no tool result borrowing a name)
            return True
        return all(tool_names.get(tool_id, "") == name for tool_id, name in self.names)


def _groups(message: Message, tool_names: dict[str, str]) -> list[tuple[str, str, bool, str, str]]:
    """(before, source, clipped, after, primed head) per block line: the line is ``before +
    source[:CLIP] + "..." + after`` when clipped, else ``before + source + after``; the
    counter memoised ``primed head + source`` (a tool call's name and input)."""
    out: list[tuple[str, str, bool, str, str]] = []
    for b in message.blocks:
        kind = b.kind
        if kind is BlockKind.TEXT:
            if b.text:
                out.append(("<text>", b.text, True, "</text>", ""))
        elif kind is BlockKind.TOOL_USE:
            before = f"<tool_use>{b.tool_name} params="
            out.append((before, b.input_json, True, "</tool_use>", b.tool_name))
        elif kind is BlockKind.TOOL_RESULT:
            output = agentscope.tool_output_text(b, with_files=True)
            if output:
                name = b.tool_name or tool_names.get(b.tool_id, "")
                out.append((f"<tool_result>{name} output=", output, True, "</tool_result>", ""))
        elif kind is BlockKind.MEDIA and b.text:
            tag = (b.media_type.split("/")[0] or "image") if b.media_type else "image"
            out.append((f"<{tag}>", b.text, False, f"</{tag}>", ""))
    return out


def reme_count(qwen: QwenCounter, message: Message, tool_names: dict[str, str]) -> int | None:
    """The count of ``format_message(message, style="reme", include_thinking=False,
    tool_names=tool_names)``; None when its header holds a newline (count the text)."""
    ts = agentscope.as_timestamp(message.timestamp)
    header = (f"[{ts}] " if ts else "") + f"{agentscope.as_name(message)}:"
    if "\n" in header:
        return None
    groups = _groups(message, tool_names)
    if not groups:
        return qwen.count(header)
    total = qwen.count((header + "\n").translate(DIGIT_SHAPE))
    last = len(groups) - 1
    for k, (before, source, clip, after, head) in enumerate(groups):
        end = after if k == last else after + "\n"
        if clip and len(source) > CLIP:
            total += qwen.count_wrapped(before, source, CLIP, "..." + end)
        else:
            total += qwen.count_wrapped(before, source, len(source), end, head)
    return total


def formatted_count(
    qwen: QwenCounter, message: Message, tool_names: dict[str, str], text: str | None = None
) -> int:
    """The count of ``format_message(message, style="reme", include_thinking=False,
    tool_names=tool_names)`` (``text``, when the caller formatted it already)."""
    n = reme_count(qwen, message, tool_names)
    if n is not None:
        return n
    if text is None:
        text = agentscope.format_message(
            message, style="reme", include_thinking=False, tool_names=tool_names
        )
    return qwen.count(text)


def looked_up(message: Message, tool_names: dict[str, str]) -> list[list[str]]:
    """[tool id, name] of each tool result of ``message`` that names its tool by the call
    it answers (``tool_names``): the formatted count depends on these names."""
    return [
        [b.tool_id, tool_names.get(b.tool_id, "")]
        for b in message.blocks
        if b.kind is BlockKind.TOOL_RESULT and not b.tool_name
    ]
