"""Anthropic Messages API: a request body, a response body, an SSE stream, a
``{request, response}`` pair, or a proxy log of many calls (claude-trace JSONL / JSON array).

A proxy log resends the whole history on every call: calls are grouped into conversations by
their first message, and each conversation is rebuilt from its largest request plus that
request's response. Earlier responses' usage is put back on the assistant messages they
produced. Side calls without tools (titles, quota probes) are skipped with a counted
warning when tool-using calls exist. Server ``compaction`` blocks are recorded as compactions,
and so is a Claude Code compaction request (its last user message is the compact prompt):
the session it summarised and the session that continued after it are one conversation
with an ``OriginalCompaction`` of kind ``compact_request``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    OriginalCompaction,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
    Usage,
)
from . import _anthropic_blocks as ab
from ._common import decode_text, iter_jsonl, load_json, note
from ._kit import (
    MessageBuilder,
    Warnings,
    as_dict,
    as_list,
    as_str,
    reject_empty,
    shorten,
    title_from,
)

FORMAT = "anthropic-messages"
LABEL = "Anthropic Messages (request / response / SSE / proxy log)"

_EXPECTED = (
    "an Anthropic Messages request or response body, an SSE stream, or a proxy log of "
    "{request, response} records"
)
_MARKERS = (b'"input_schema"', b'"tool_use"', b'"tool_result"', b'"cache_control"', b'"system"')


def sniff(head: bytes, name: str) -> int:
    text = head.lstrip()
    compact = text.replace(b": ", b":").replace(b":\n", b":")
    if text.startswith((b"event:", b"data:")):
        return 90 if b"message_start" in head else 30
    if not text.startswith((b"{", b"[")):
        return 0
    if b'"request"' in compact and b'"response"' in compact and b"/v1/messages" in compact:
        return 90
    if b'"type":"message"' in compact and b'"role":"assistant"' in compact:
        return 85 if b'"stop_reason"' in compact or b'"usage"' in compact else 60
    if b'"messages"' in compact and b'"max_tokens"' in compact:
        return 85 if any(m in compact for m in _MARKERS) else 40
    return 0


@dataclass(slots=True)
class _Call:
    where: SourcePos
    request: dict[str, Any]
    response: dict[str, Any] | None


def parse(data: bytes, *, name: str) -> ParsedFile:
    reject_empty(data, name, _EXPECTED)
    warnings = Warnings()
    head = data.lstrip()[:16]
    if head.startswith((b"event:", b"data:")):
        text = decode_text(data, name)
        response = ab.reassemble(ab.sse_events(text, name))
        if response is None:
            raise TranscriptError(
                "SSE stream without a message_start event", file=name, expected=_EXPECTED
            )
        return _single(name, None, response, warnings)
    try:
        doc: Any = load_json(data, name)
    except TranscriptError as whole_error:
        if data.lstrip().startswith(b"{") and data.strip().count(b"\n"):
            first_line = data.lstrip().split(b"\n", 1)[0]
            try:
                json.loads(first_line)
            except ValueError:
                raise whole_error from None
            calls = [
                call
                for line, rec in iter_jsonl(data, name)
                if (call := _proxy_call(rec, SourcePos(file=name, line=line), warnings))
            ]
            return _proxy_log(name, calls, warnings)
        raise
    if isinstance(doc, dict):
        if ab.is_request(doc):
            return _single(name, doc, None, warnings)
        if ab.is_response(doc):
            return _single(name, None, doc, warnings)
        call = _proxy_call(doc, SourcePos(file=name, record=0), warnings)
        if call is not None:
            return _proxy_log(name, [call], warnings)
    elif isinstance(doc, list):
        calls = [
            call
            for index, rec in enumerate(doc)
            if (call := _proxy_call(rec, SourcePos(file=name, record=index), warnings))
        ]
        if calls:
            return _proxy_log(name, calls, warnings)
    raise TranscriptError("not an Anthropic Messages document", file=name, expected=_EXPECTED)


def _single(
    name: str,
    request: dict[str, Any] | None,
    response: dict[str, Any] | None,
    warnings: Warnings,
) -> ParsedFile:
    where = SourcePos(file=name, record=0)
    conv = conversation(
        request or {}, response, where, conv_id=name or "anthropic", warnings=warnings
    )
    return ParsedFile(FORMAT, (conv,), warnings.freeze())


def conversation(
    request: dict[str, Any],
    response: dict[str, Any] | None,
    where: SourcePos,
    *,
    conv_id: str,
    warnings: Warnings,
    earlier: list[tuple[int, Usage | None]] | None = None,
) -> Conversation:
    """One conversation: the request's messages plus the response (if any).

    ``earlier`` lists ``(message position, usage)`` of previous calls whose responses are
    now part of the history.
    """
    messages = _builders(request, response, where, earlier)
    model = _model(request, response)
    found = compactions(messages)  # flags the summary messages: before they are frozen
    return Conversation(
        id=conv_id,
        title=title_from(messages, shorten(conv_id)),
        messages=tuple(m.build() for m in messages),
        tools=ab.tools(request.get("tools")),
        compactions=found,
        model=model,
        usage_convention="anthropic",
    )


def _model(request: dict[str, Any], response: dict[str, Any] | None) -> str:
    return as_str(request.get("model")) or (as_str(response.get("model")) if response else "")


def _builders(
    request: dict[str, Any],
    response: dict[str, Any] | None,
    where: SourcePos,
    earlier: list[tuple[int, Usage | None]] | None = None,
) -> list[MessageBuilder]:
    messages = ab.request_messages(request, where)
    if response is not None:
        messages.append(ab.response_message(response, where))
    if not messages:
        raise TranscriptError(
            "the body holds no messages", file=where.file, expected="messages[] or content[]"
        )
    for position, usage in earlier or ():
        if 0 <= position < len(messages) and messages[position].role is Role.ASSISTANT:
            messages[position].usage = messages[position].usage or usage
    model = _model(request, response)
    for m in messages:
        if m.role is Role.ASSISTANT:
            m.model = m.model or model
    return messages


def compactions(messages: list[MessageBuilder]) -> tuple[OriginalCompaction, ...]:
    out = []
    for index, m in enumerate(messages):
        if any(b.kind is BlockKind.OPAQUE and b.raw_type == "compaction" for b in m.blocks):
            m.flags.add("compact_summary")
            # the message opening with the summary is the first one of the new context
            out.append(
                OriginalCompaction(
                    before_index=index,
                    kind="server_compaction",
                    summary_index=index,
                    source=m.source,
                )
            )
    return tuple(out)


def _body(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            return json.loads(value)
        except ValueError:
            note(
                "unreadable-json-text",
                "a request/response body is not valid JSON; skipped",
                repr(value[:60]),
            )
            return None
    return value


def _proxy_call(rec: Any, where: SourcePos, warnings: Warnings) -> _Call | None:
    r = as_dict(rec)
    req = as_dict(r.get("request"))
    if not req:
        warnings.add("record without a request skipped", str(where))
        return None
    body = as_dict(_body(req.get("body")))
    url = as_str(req.get("url"))
    if not ab.is_request(body) or "count_tokens" in url:
        warnings.add("non-Messages call skipped", str(where))
        return None
    resp = as_dict(r.get("response"))
    response = as_dict(_body(resp.get("body")))
    if not ab.is_response(response):
        raw = as_str(resp.get("body_raw")) or as_str(resp.get("body"))
        response = ab.reassemble(ab.sse_events(raw, f"{where} response")) or {}
    return _Call(where, body, response if ab.is_response(response) else None)


def _first_key(request: dict[str, Any]) -> str:
    """Calls of one conversation share their first message (cache markers aside)."""
    messages = request.get("messages")
    first = messages[0] if isinstance(messages, list) and messages else None
    content = as_dict(first).get("content")
    if isinstance(content, list):
        content = [
            {k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b
            for b in content
        ]
    return json.dumps(content, sort_keys=True, ensure_ascii=False)[:100_000]


# Claude Code's compact prompt (``getCompactPrompt``: every version seen opens with it, 2.1
# after a no-tools preamble). A request whose last user message holds it is a compaction's
# summarisation call, not a conversation: the session it summarises and the one that goes
# on after it (opening with the summary) are one conversation with that compaction.
COMPACT_PROMPT = "Your task is to create a detailed summary of the conversation so far"
_ADDITIONAL = "\n\nAdditional Instructions:\n"
_REMINDER = "\n\nREMINDER: Do NOT call any tools."
CONTINUED = "This session is being continued from a previous conversation"
_SUMMARY = re.compile(r"<summary>([\s\S]*?)</summary>")


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        as_str(as_dict(b).get("text")) for b in as_list(content) if as_dict(b).get("type") == "text"
    )


def _compact_prompt(request: dict[str, Any]) -> str | None:
    """The compact prompt closing ``request``; None when it is no compaction request."""
    messages = as_list(request.get("messages"))
    last = as_dict(messages[-1]) if messages else {}
    if last.get("role") != "user":
        return None
    text = _texts(last.get("content"))
    return text if COMPACT_PROMPT in text[:2_000] else None


def _instructions(prompt: str) -> str:
    """The user's focus text of ``/compact <text>`` (Additional Instructions), or ""."""
    _, found, rest = prompt.partition(_ADDITIONAL)
    return rest.split(_REMINDER)[0].strip() if found else ""


def _summary_body(response: dict[str, Any] | None) -> str:
    """The summary the compaction's response holds (its <summary> part, else all of it)."""
    text = _texts(as_dict(response).get("content")).strip()
    found = _SUMMARY.search(text)
    return found.group(1).strip() if found else text


def _first_text(request: dict[str, Any]) -> str:
    messages = as_list(request.get("messages"))
    return _texts(as_dict(messages[0]).get("content")).split("\n")[0] if messages else ""


def _first_content(request: dict[str, Any]) -> str:
    messages = as_list(request.get("messages"))
    return _texts(as_dict(messages[0]).get("content")) if messages else ""


def _size(call: _Call) -> int:
    messages = call.request.get("messages")
    return len(messages) if isinstance(messages, list) else 0


def _final_and_earlier(group: list[_Call]) -> tuple[_Call, list[tuple[int, Usage | None]]]:
    final = max(reversed(group), key=_size)
    earlier = [
        (len(ab.request_messages(c.request, c.where)), ab.usage(c.response.get("usage")))
        for c in group
        if c is not final and c.response is not None
    ]
    return final, earlier


@dataclass(slots=True)
class _Link:
    """A compaction request between the session it summarised and the one after it."""

    call: _Call
    source: int | None  # index of the summarised group (None: not in the log)
    target: int | None  # index of the continued group (None: not in the log)


def _link(call: _Call, groups: list[list[_Call]], keys: list[str], claimed: set[int]) -> _Link:
    key, first = _first_key(call.request), _first_text(call.request)
    source = next((i for i, k in enumerate(keys) if k == key), None)
    if source is None:  # the compaction request may carry other reminders: its first line
        source = next(
            (i for i, g in enumerate(groups) if first and _first_text(g[0].request) == first),
            None,
        )
    body = _summary_body(call.response)[:200]
    target = next(
        (
            i
            for i, g in enumerate(groups)
            if i not in claimed
            and i != source
            and _first_text(g[0].request).startswith(CONTINUED)
            and (not body or any(body in _first_content(c.request) for c in g))
        ),
        None,
    )  # fmt: skip
    return _Link(call, source, target)


def _proxy_log(name: str, calls: list[_Call], warnings: Warnings) -> ParsedFile:
    if not calls:
        raise TranscriptError("no Messages API calls in the log", file=name, expected=_EXPECTED)
    compaction_calls = [c for c in calls if _compact_prompt(c.request) is not None]
    chains: dict[str, list[_Call]] = {}
    for call in calls:
        if call not in compaction_calls:
            chains.setdefault(_first_key(call.request), []).append(call)
    groups = list(chains.values())
    with_tools = [g for g in groups if any(c.request.get("tools") for c in g)]
    if with_tools and len(with_tools) < len(groups):
        skipped = sum(len(g) for g in groups if g not in with_tools)
        for _ in range(skipped):
            warnings.add("side call without tools (title, probe …) not imported as a conversation")
        groups = with_tools

    # the main conversation (largest request) first
    groups.sort(key=lambda g: -max(_size(c) for c in g))
    keys = [_first_key(g[0].request) for g in groups]
    links: list[_Link] = []
    claimed: set[int] = set()
    for call in compaction_calls:
        link = _link(call, groups, keys, claimed)
        if link.target is not None and link.source is not None:
            claimed.add(link.target)
        links.append(link)
    by_source: dict[int | None, list[_Link]] = {}
    for link in links:
        by_source.setdefault(link.source, []).append(link)

    convs: list[Conversation] = []
    stem = name or "proxy-log"
    for index in range(len(groups)):
        if index in claimed:
            continue  # joined to the session it continues
        convs.append(_joined(index, groups, by_source, f"{stem}#{len(convs)}", warnings))
    for link in by_source.get(None, []):  # the summarised session is not in the log
        warnings.add(
            "a compaction request whose session is not in the log: not imported",
            str(link.call.where),
        )
    return ParsedFile(FORMAT, tuple(convs), warnings.freeze())


def _joined(
    first: int,
    groups: list[list[_Call]],
    by_source: dict[int | None, list[_Link]],
    conv_id: str,
    warnings: Warnings,
) -> Conversation:
    """Group ``first``'s conversation, followed through each compaction request made from
    it into the session that continued after it (``OriginalCompaction`` kind
    ``compact_request``: the summary message opens the continued part; when that session
    is not in the log, the response's summary is that message)."""
    messages: list[MessageBuilder] = []
    found: list[OriginalCompaction] = []
    index: int | None = first
    seen: set[int] = set()
    request: dict[str, Any] = {}
    model = ""
    while index is not None and index not in seen:
        seen.add(index)
        final, earlier = _final_and_earlier(groups[index])
        part = _builders(final.request, final.response, final.where, earlier)
        if messages:
            part = [m for m in part if m.role is not Role.SYSTEM]
        request, model = final.request, model or _model(final.request, final.response)
        messages.extend(part)
        links = by_source.get(index, [])
        if not links:
            break
        link = links[-1]  # the last compaction of this session: it continued after it
        prompt = _compact_prompt(link.call.request) or ""
        instructions = _instructions(prompt)
        usage = ab.usage(as_dict(link.call.response).get("usage"))
        before = len(messages)
        if link.target is None:
            summary = _summary_body(link.call.response)
            if summary:
                messages.append(
                    MessageBuilder(
                        Role.USER,
                        [Block(BlockKind.TEXT, text=summary, raw_type="compact_summary")],
                        link.call.where,
                        flags={"compact_summary", "meta"},
                    )
                )
        found.append(
            OriginalCompaction(
                before_index=before,
                kind="compact_request",
                trigger="manual" if instructions else "",
                pre_tokens=usage.prompt_tokens if usage else None,
                summary_index=before if len(messages) > before or link.target is not None
                else None,
                source=link.call.where,
                instructions=instructions,
            )
        )  # fmt: skip
        index = link.target
    for compaction in found:
        if compaction.summary_index is not None and compaction.summary_index < len(messages):
            messages[compaction.summary_index].flags.add("compact_summary")
    server = compactions(messages)
    return Conversation(
        id=conv_id,
        title=title_from(messages, shorten(conv_id)),
        messages=tuple(m.build() for m in messages),
        tools=ab.tools(request.get("tools")),
        compactions=tuple(sorted((*found, *server), key=lambda c: c.before_index)),
        model=model,
        usage_convention="anthropic",
    )
