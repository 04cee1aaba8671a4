"""Anthropic Messages API: a request body, a response body, an SSE stream, a
``{request, response}`` pair, or a proxy log of many calls (claude-trace JSONL / JSON array).

A proxy log resends the whole history on every call: calls are grouped into conversations by
their first message, and each conversation is rebuilt from its largest request plus that
request's response. Earlier responses' usage is put back on the assistant messages they
produced. Side calls without tools (titles, quota probes) are skipped with a counted
warning when tool-using calls exist. Server ``compaction`` blocks are recorded as compactions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..model import (
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
from ._kit import MessageBuilder, Warnings, as_dict, as_str, reject_empty, shorten, title_from

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
    model = as_str(request.get("model")) or (as_str(response.get("model")) if response else "")
    for m in messages:
        if m.role is Role.ASSISTANT:
            m.model = m.model or model
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


def _proxy_log(name: str, calls: list[_Call], warnings: Warnings) -> ParsedFile:
    if not calls:
        raise TranscriptError("no Messages API calls in the log", file=name, expected=_EXPECTED)
    chains: dict[str, list[_Call]] = {}
    for call in calls:
        chains.setdefault(_first_key(call.request), []).append(call)
    groups = list(chains.values())
    with_tools = [g for g in groups if any(c.request.get("tools") for c in g)]
    if with_tools and len(with_tools) < len(groups):
        skipped = sum(len(g) for g in groups if g not in with_tools)
        for _ in range(skipped):
            warnings.add("side call without tools (title, probe …) not imported as a conversation")
        groups = with_tools

    def size(call: _Call) -> int:
        messages = call.request.get("messages")
        return len(messages) if isinstance(messages, list) else 0

    # the main conversation (largest request) first
    groups.sort(key=lambda g: -max(size(c) for c in g))
    convs = []
    stem = name or "proxy-log"
    for index, group in enumerate(groups):
        final = max(reversed(group), key=size)
        earlier = [
            (len(ab.request_messages(c.request, c.where)), ab.usage(c.response.get("usage")))
            for c in group
            if c is not final and c.response is not None
        ]
        convs.append(
            conversation(
                final.request,
                final.response,
                final.where,
                conv_id=f"{stem}#{index}",
                warnings=warnings,
                earlier=earlier,
            )
        )
    return ParsedFile(FORMAT, tuple(convs), warnings.freeze())
