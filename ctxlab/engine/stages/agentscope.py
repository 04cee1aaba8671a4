"""AgentScope ``Msg`` view of engine messages, shared by QwenPaw and CoPaw/ReMe.

Both count per block with their own string counter and format compacted messages for the
summariser as ``[ts] name:`` plus one rendering per block.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from datetime import date, datetime
from functools import lru_cache
from json.encoder import encode_basestring
from typing import Any

from ..core.model import Block, BlockKind, Message, Role
from ..core.summary_request import MaterialItem, PromptMessage, SummaryRequest
from . import prompts
from .deferred_prompt import DeferredPromptMessage
from .markers import QWENPAW_MARKER
from .remade_input import RemadeInput

CountStr = Callable[[str], int]


def as_role(message: Message) -> str:
    """AgentScope role: tool results travel in a ``system``-role Msg."""
    if message.role is Role.TOOL:
        return "system"
    for b in message.blocks:  # (a loop, not any(): asked for every formatted message)
        if b.kind is BlockKind.TOOL_RESULT:
            return "system"
    return _ROLE_VALUE[message.role]


_ROLE_VALUE = {role: role.value for role in Role}  # (Enum.value is a property: slower)


def as_name(message: Message) -> str:
    role = as_role(message)
    if role == "system":
        return "system"
    return message.name or role


@lru_cache(maxsize=1 << 16)  # QwenPaw and CoPaw format the same messages again and again
def as_timestamp(value: str | None) -> str:
    """``YYYY-mm-dd HH:MM:SS.fff`` as AgentScope stamps messages ('' when unknown, so the
    replay stays deterministic)."""
    if not value:
        return ""
    # The common shapes by slicing (same text; every timestamp of a session is distinct, so
    # the cache above seldom helps); anything else through datetime.
    plain = _PLAIN_ISO.fullmatch(value)
    if (
        plain is not None
        and _valid_date(plain[1])
        and plain[2] < "24"
        and plain[3] < "60"
        and plain[4] < "60"
    ):
        return f"{plain[1]} {plain[2]}:{plain[3]}:{plain[4]}.{(plain[5] or '000')[:3]}"
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


# ``YYYY-mm-ddTHH:MM:SS`` with 3 or 6 fraction digits or none, in UTC or without a zone:
# fromisoformat keeps these fields as written (no zone conversion) and strftime prints them
# (from the year 1000 on: strftime does not pad a shorter %Y).
_PLAIN_ISO = re.compile(
    r"([1-9]\d{3}-\d\d-\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{3}|\d{6}))?(?:Z|\+00:00)?", re.ASCII
)


@lru_cache(maxsize=1 << 12)
def _valid_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _media_tokens(block: Block, count: CountStr) -> int:
    if block.text:  # a URL source
        return count(block.text)
    if block.size:  # base64 source: len(data)//4 of the base64 string
        return (4 * math.ceil(block.size / 3)) // 4
    return 10


def tool_output_text(block: Block, *, with_files: bool) -> str:
    """The tool_result output as AgentScope formats it (str, or list parts joined)."""
    if not block.parts:
        return block.text
    parts: list[str] = []
    for p in block.parts:
        if p.kind is BlockKind.TEXT:
            parts.append(p.text)
        elif p.kind is BlockKind.MEDIA:
            if with_files and p.media_type.startswith("file"):
                parts.append(f"[file] {p.text}: {p.text}")
            elif p.text:
                parts.append(f"[{p.media_type.split('/')[0] or 'image'}] {p.text}")
    return "\n".join(parts)


def tool_result_tokens(block: Block, count: CountStr, *, files: bool) -> int:
    if not block.parts:
        return count(block.text)
    total = 0
    for p in block.parts:
        if p.kind is BlockKind.TEXT:
            total += count(p.text)
        elif p.kind is BlockKind.MEDIA:
            if files and p.media_type.startswith("file"):
                total += count(p.text)
            else:
                total += _media_tokens(p, count)
    return total


def message_tokens(message: Message, count: CountStr, *, files_in_results: bool = False) -> int:
    """Per-block sum (each block rounded separately); unknown blocks count 0."""
    total = 0
    for b in message.blocks:
        kind = b.kind
        if kind is BlockKind.TEXT or kind is BlockKind.THINKING:
            total += count(b.text)
        elif kind is BlockKind.TOOL_USE:
            total += count(b.tool_name + b.input_json)
        elif kind is BlockKind.TOOL_RESULT:
            total += tool_result_tokens(b, count, files=files_in_results)
        elif kind is BlockKind.MEDIA and not b.media_type.startswith("file"):
            total += _media_tokens(b, count)
    return total


def format_message(
    message: Message,
    *,
    style: str,
    include_thinking: bool,
    tool_names: dict[str, str],
) -> str:
    """One compacted message as the summariser input shows it.

    ``style="qwenpaw"``: ``[text]: …`` lines, 1000-char blocks, newlines flattened.
    ``style="reme"``: ``<text>…</text>`` tags, 2000-char blocks, newlines kept, tool
    results whole (ReMe 0.3.0.6b3 ``AsBlockStat.format``; QwenPaw cuts at its marker).
    """
    lines = _lines(message, reme=style == "reme", include_thinking=include_thinking,
                   tool_names=tool_names)  # fmt: skip
    if style == "reme":
        return "\n".join([_header(message), *[h + body + t for h, body, t in lines]])
    return "\n".join([_header(message), *[h + _flat(body) + t for h, body, t in lines]])


def formatted_size(
    message: Message,
    *,
    style: str,
    include_thinking: bool,
    tool_names: dict[str, str],
) -> int:
    """UTF-8 bytes of ``format_message`` (same arguments), summed from its pieces without
    making the text: flattening a newline to a space keeps the size."""
    lines = _lines(message, reme=style == "reme", include_thinking=include_thinking,
                   tool_names=tool_names)  # fmt: skip
    size = _utf8_size(_header(message)) + len(lines)  # (a newline before each line)
    for head, body, tail in lines:
        size += _utf8_size(head) + _utf8_size(body) + _utf8_size(tail)
    return size


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _header(message: Message) -> str:
    ts = as_timestamp(message.timestamp)
    name = as_name(message)
    return f"[{ts}] {name}:" if ts else f"{name}:"


def _lines(
    message: Message, *, reme: bool, include_thinking: bool, tool_names: dict[str, str]
) -> list[tuple[str, str, str]]:
    """(head, body, tail) of each line after ``format_message``'s header: the line is
    their concatenation, QwenPaw's with the body's newlines flattened."""
    # (Every compacted message is formatted once: the clipping is inlined, kinds tested
    # most frequent first.)
    limit = 2000 if reme else 1000
    out: list[tuple[str, str, str]] = []
    append = out.append
    for b in message.blocks:
        kind = b.kind
        if kind is BlockKind.TEXT:
            text = b.text
            if text:
                if len(text) > limit:
                    text = text[:limit] + "..."
                append(("<text>", text, "</text>") if reme else ("[text]: ", text, ""))
        elif kind is BlockKind.TOOL_RESULT:
            output = tool_output_text(b, with_files=reme) if b.parts else b.text
            if not reme:  # QwenPaw shows only what precedes its truncation notice; ReMe's
                # as_msg_stat keeps the whole compacted text (head, marker, tail, path)
                output = output.split(QWENPAW_MARKER, 1)[0]
            if not output:
                continue
            tool = b.tool_name or tool_names.get(b.tool_id, "")
            if len(output) > limit:
                output = output[:limit] + "..."
            append(
                (f"<tool_result>{tool} output=", output, "</tool_result>")
                if reme
                else (f"[tool_result]: {tool} output=", output, "")
            )
        elif kind is BlockKind.TOOL_USE:
            raw = clipped_input(b, limit)
            append(
                (f"<tool_use>{b.tool_name} params=", raw, "</tool_use>")
                if reme
                else (f"[tool_use]: {b.tool_name} params=", raw, "")
            )
        elif kind is BlockKind.THINKING:
            if include_thinking and b.text:
                text = b.text
                if len(text) > limit:
                    text = text[:limit] + "..."
                append(("<thinking>", text, "</thinking>") if reme else ("[think]: ", text, ""))
        elif kind is BlockKind.MEDIA and b.text:  # (a URL, never flattened)
            tag = (b.media_type.split("/")[0] or "image") if b.media_type else "image"
            append((f"<{tag}>{b.text}</{tag}>" if reme else f"[{tag}]: {b.text}", "", ""))
    return out


def clipped_input(block: Block, limit: int) -> str:
    """``block.input_json`` cut to ``limit`` characters plus "..." when longer, as the
    summariser input shows a tool call. A parsed input is written only as far as the cut
    (``_json_head``): a call's input is often a whole file (9 MiB of JSON for the 9,500 calls
    of the realistic 20k transcript) and the formatted text keeps 1,000 or 2,000
    characters of it."""
    value = block.tool_input
    raw = value if isinstance(value, str) else _json_head(value, limit)
    if raw is None:  # (a value JSON does not write this way: the block's own dump)
        raw = block.input_json
    return raw[:limit] + "..." if len(raw) > limit else raw


def _json_head(value: object, limit: int) -> str | None:
    """``json.dumps(value, ensure_ascii=False)`` whole, or a prefix of it longer than
    ``limit`` characters; None for a value holding something else than what a JSON
    document parses to (str keys, str, int, float, bool, None, list, dict): the caller
    dumps those whole (and fails as ``json.dumps`` does; a value past the cut is not read:
    a tool input parsed from a transcript holds none)."""
    out: list[str] = []
    try:
        _write_json(value, out, limit + 1)
    except _NotPlain:
        return None
    return "".join(out)


class _NotPlain(Exception):
    """A value ``_write_json`` does not write."""


_JSON_CONSTANTS = {True: "true", False: "false", None: "null"}
# a number as ``json.dumps`` writes it (float repr, NaN, Infinity)
_JSON_NUMBER = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode


def _write_json(value: Any, out: list[str], room: int) -> int:
    """Append ``json.dumps(value, ensure_ascii=False)`` (default separators) to ``out``,
    stopping once ``room`` characters are written; the number written. Each piece is what
    ``json.dumps`` writes for it (a string's escapes are per character, so a string cut
    before escaping gives a prefix of the escaped whole)."""
    kind = type(value)
    if kind is str:
        if len(value) < room:
            text = encode_basestring(value)
        else:  # the opening quote and at least ``room`` characters: past the cut
            text = encode_basestring(value[:room])[:-1]
        out.append(text)
        return len(text)
    if kind is dict:
        out.append("{")
        n = 1
        sep = ""
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            if n >= room:
                return n
            text = f"{sep}{encode_basestring(key)}: "
            sep = ", "
            out.append(text)
            n += len(text)
            if n >= room:
                return n
            n += _write_json(item, out, room - n)
        out.append("}")
        return n + 1
    if kind is list:
        out.append("[")
        n = 1
        for k, item in enumerate(value):
            if k:
                out.append(", ")
                n += 2
            if n >= room:
                return n
            n += _write_json(item, out, room - n)
        out.append("]")
        return n + 1
    if value is None or kind is bool:
        text = _JSON_CONSTANTS[value]
    elif kind is int or kind is float:
        text = _JSON_NUMBER(value)
    else:
        raise _NotPlain
    out.append(text)
    return len(text)


def _flat(text: str) -> str:
    return text.replace("\n", " ")


def material_role(message: Message) -> str:
    """The role the offline summariser sees: AgentScope tool results are ``system`` msgs."""
    role = as_role(message)
    return "tool" if role == "system" else role


def compactor_call(
    *,
    strategy: str,
    lang: str,
    system: str,
    user: Callable[[str, str, str], str],
    messages: Sequence[tuple[int, Message]],
    previous: str,
    style: str,
    include_thinking: bool,
    tool_names: dict[str, str],
    sizes: Sequence[int] | None = None,
) -> tuple[SummaryRequest, RemadeInput]:
    """The compactor call QwenPaw and ReMe both make, and its input made again when read
    (``remade_input``): a system prompt and one user message ``user(history, previous,
    lang)``, ``history`` the ``messages`` (index, message) formatted (``style``,
    ``include_thinking``, ``tool_names``) and joined by blank lines. ``user`` puts
    ``history`` in once, as it is. The user message is made when read
    (``DeferredPromptMessage``), its size summed from the parts: ``sizes`` are the
    messages' ``formatted_size`` when the caller has them. Only the names the tool results
    look up are copied (the strategy's map grows, and a reused id could change its name
    later)."""
    shown = tuple(m for _, m in messages)
    result = BlockKind.TOOL_RESULT
    names = {
        b.tool_id: tool_names[b.tool_id]
        for m in shown
        for b in m.blocks
        if b.kind is result and not b.tool_name and b.tool_id in tool_names
    }
    if sizes is None:
        sizes = [
            formatted_size(m, style=style, include_thinking=include_thinking, tool_names=names)
            for m in shown
        ]
    history_size = sum(sizes) + 2 * max(len(sizes) - 1, 0)  # (a blank line between two)
    args = (user, shown, style, include_thinking, names, previous, lang)
    prompt = DeferredPromptMessage(
        "user",
        RemadeInput(_compactor_user, *args),
        history_size + _utf8_size(user("", previous, lang)),
    )
    request = SummaryRequest(
        strategy=strategy,
        system=system,
        messages=(prompt,),
        language=lang,
        style="sections",
        sections=prompts.SECTIONS[lang],
        material=tuple(MaterialItem(material_role(m), m.text, i) for i, m in messages),
        previous_summary=previous,
    )
    return request, RemadeInput(_compactor_text, strategy, system, *args)


def _compactor_user(
    user: Callable[[str, str, str], str],
    messages: tuple[Message, ...],
    style: str,
    include_thinking: bool,
    names: dict[str, str],
    previous: str,
    lang: str,
) -> str:
    history = "\n\n".join(
        format_message(m, style=style, include_thinking=include_thinking, tool_names=names)
        for m in messages
    )
    return user(history, previous, lang)


def _compactor_text(strategy: str, system: str, *args: Any) -> str:
    prompt = PromptMessage("user", _compactor_user(*args))
    return SummaryRequest(strategy, system, (prompt,)).input_text()
