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

from ..core.model import BlockKind, Message
from ..stages import agentscope
from ..tokens.qwen_tokens import DIGIT_SHAPE, QwenCounter

CLIP = 2000  # characters of a block body the ReMe format keeps (then "...")


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
