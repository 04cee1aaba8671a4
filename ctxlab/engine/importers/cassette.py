"""HTTP recordings of LLM API calls: VCR YAML cassettes (``interactions: [{request,
response}]``, read with ``yaml.safe_load``) and their JSON twins (``[{method, uri,
request_body, status, response_body}]``).

Each call is routed by endpoint to the Anthropic Messages, OpenAI Responses, OpenAI Chat
Completions or Gemini ``generateContent`` reader. Calls of one conversation resend its history,
so calls are grouped by provider and first message; each conversation is its largest request
plus that request's response, and earlier responses' usage is put back on the messages they
produced.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
    Usage,
)
from . import _anthropic_blocks as ab
from . import anthropic, openai_responses
from ._common import decode_text, load_json
from ._kit import (
    MessageBuilder,
    Warnings,
    as_dict,
    as_int,
    as_list,
    as_str,
    base64_size,
    openai_usage,
    reject_empty,
    shorten,
    title_from,
)
from ._openai_items import chat_message, chat_messages, tool_defs

FORMAT = "api-cassettes"
LABEL = "API cassette (VCR YAML / JSON recording)"

_EXPECTED = "a VCR cassette (interactions: [{request, response}]) or its JSON twin"


def sniff(head: bytes, name: str) -> int:
    text = head.lstrip()
    if text.startswith(b"interactions:") or (b"\ninteractions:" in head and b"request:" in head):
        return 95
    if text.startswith(b"[") and b'"request_body"' in head and b'"uri"' in head:
        return 95
    return 0


@dataclass(slots=True)
class _Call:
    kind: str  # anthropic | responses | chat | gemini
    where: SourcePos
    request: dict[str, Any]
    response: dict[str, Any] | None


def _body(value: Any) -> Any:
    """VCR stores bodies as parsed JSON, a string, or ``{string: ...}``."""
    if isinstance(value, dict) and set(value) <= {"string", "encoding"}:
        value = value.get("string")
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        stripped = value.lstrip()
        if stripped.startswith(("{", "[")):
            try:
                return json.loads(value)
            except ValueError:
                return value
    return value


def _kind(uri: str, request: dict[str, Any]) -> str:
    if "anthropic" in uri or uri.split("?")[0].endswith("/v1/messages"):
        return "anthropic"
    if "generateContent" in uri or "contents" in request:
        return "gemini"
    if uri.split("?")[0].endswith("/responses") or "input" in request:
        return "responses"
    if "chat/completions" in uri:
        return "chat"
    if "messages" in request:  # no telling endpoint: Anthropic requires max_tokens
        return "anthropic" if "max_tokens" in request and "openai" not in uri else "chat"
    return ""


def _interactions(data: bytes, name: str) -> list[tuple[SourcePos, str, Any, Any]]:
    """``(where, uri, request body, response body)`` for each recorded call."""
    text = data.lstrip()
    if text.startswith(b"["):
        doc = load_json(data, name)
        out = []
        for index, rec in enumerate(as_list(doc)):
            r = as_dict(rec)
            out.append(
                (
                    SourcePos(file=name, record=index),
                    as_str(r.get("uri")),
                    _body(r.get("request_body")),
                    _body(r.get("response_body")),
                )
            )
        return out
    source = decode_text(data, name)
    try:
        # the C loader (libyaml) when built in: same safe semantics, ~10x faster
        doc = yaml.load(source, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise TranscriptError(
            f"invalid YAML: {getattr(exc, 'problem', None) or exc.__class__.__name__}",
            file=name,
            line=mark.line + 1 if mark is not None else None,
            expected=_EXPECTED,
        ) from None
    out = []
    for index, rec in enumerate(as_list(as_dict(doc).get("interactions"))):
        req = as_dict(as_dict(rec).get("request"))
        resp = as_dict(as_dict(rec).get("response"))
        request = req.get("parsed_body", _body(req.get("body")))
        response = resp.get("parsed_body", _body(resp.get("body")))
        out.append((SourcePos(file=name, record=index), as_str(req.get("uri")), request, response))
    return out


def parse(data: bytes, *, name: str) -> ParsedFile:
    reject_empty(data, name, _EXPECTED)
    warnings = Warnings()
    calls: list[_Call] = []
    interactions = _interactions(data, name)
    if not interactions:
        raise TranscriptError("no recorded interactions", file=name, expected=_EXPECTED)
    for where, uri, request, response in interactions:
        req = as_dict(request)
        kind = _kind(uri, req) if req else ""
        if not kind:
            warnings.add("interaction that is not an LLM API call skipped", str(where))
            continue
        resp = as_dict(response)
        if not resp and isinstance(response, str) and kind == "anthropic":
            resp = ab.reassemble(ab.sse_events(response, f"{where} response")) or {}
        if isinstance(response, str) and not resp:
            warnings.add("streamed or non-JSON response body not read", str(where))
        calls.append(_Call(kind, where, req, resp or None))
    if not calls:
        raise TranscriptError("no LLM API calls in the recording", file=name, expected=_EXPECTED)
    chains: dict[tuple[str, str], list[_Call]] = {}
    for call in calls:
        chains.setdefault((call.kind, _first_key(call)), []).append(call)
    convs = []
    for index, group in enumerate(chains.values()):
        conv_id = f"{name or 'cassette'}#{index}"
        try:
            convs.append(_conversation(group, conv_id, warnings))
        except TranscriptError as exc:
            warnings.add(f"call not imported: {exc.reason}", str(group[-1].where))
    if not convs:
        raise TranscriptError("no conversation in the recording", file=name, expected=_EXPECTED)
    return ParsedFile(FORMAT, tuple(convs), warnings.freeze())


def _first_key(call: _Call) -> str:
    r = call.request
    items = r.get("messages", r.get("input", r.get("contents")))
    first = items[0] if isinstance(items, list) and items else items
    return json.dumps(first, sort_keys=True, ensure_ascii=False, default=str)[:100_000]


def _size(call: _Call) -> int:
    r = call.request
    items = r.get("messages", r.get("input", r.get("contents")))
    return len(items) if isinstance(items, list) else 1


def _conversation(group: list[_Call], conv_id: str, warnings: Warnings) -> Conversation:
    final = max(reversed(group), key=_size)
    build: Callable[..., Conversation] = _BUILDERS[final.kind]
    earlier: list[tuple[int, Usage | None, str]] = []
    for call in group:
        if call is final or call.response is None:
            continue
        before = build(call.request, None, call.where, conv_id=conv_id, warnings=Warnings())
        usage, model = _response_usage(call)
        earlier.append((len(before.messages), usage, model))
    conv = build(final.request, final.response, final.where, conv_id=conv_id, warnings=warnings)
    if not earlier:
        return conv
    messages = list(conv.messages)
    for position, usage, model in earlier:
        if 0 <= position < len(messages) and messages[position].role is Role.ASSISTANT:
            m = messages[position]
            messages[position] = type(m)(
                role=m.role,
                blocks=m.blocks,
                source=m.source,
                timestamp=m.timestamp,
                model=m.model or model,
                usage=m.usage or usage,
                id=m.id,
                name=m.name,
                flags=m.flags,
            )
    return Conversation(
        id=conv.id,
        title=conv.title,
        messages=tuple(messages),
        tools=conv.tools,
        compactions=conv.compactions,
        model=conv.model,
        usage_convention=conv.usage_convention,
    )


def _response_usage(call: _Call) -> tuple[Usage | None, str]:
    r = call.response or {}
    if call.kind == "anthropic":
        return ab.usage(r.get("usage")), as_str(r.get("model"))
    if call.kind == "gemini":
        return _gemini_usage(r.get("usageMetadata")), as_str(r.get("modelVersion"))
    return openai_usage(r.get("usage")), as_str(r.get("model"))


def _chat(
    request: dict[str, Any],
    response: dict[str, Any] | None,
    where: SourcePos,
    *,
    conv_id: str,
    warnings: Warnings,
) -> Conversation:
    messages = chat_messages(request.get("messages"), where, warnings)
    model = as_str(request.get("model"))
    if response is not None:
        choice = as_dict(next(iter(as_list(response.get("choices"))), None))
        message = as_dict(choice.get("message"))
        if message:
            reply = chat_message(message, Role.ASSISTANT, where)
            reply.usage = openai_usage(response.get("usage"))
            reply.model = model = as_str(response.get("model")) or model
            reply.id = as_str(response.get("id"))
            messages.append(reply)
    if not messages:
        raise TranscriptError("no chat messages", file=where.file, expected="messages[]")
    return Conversation(
        id=conv_id,
        title=title_from(messages, shorten(conv_id)),
        messages=tuple(m.build() for m in messages),
        tools=tool_defs(request.get("tools")),
        model=model,
        usage_convention="openai",
    )


def _gemini_usage(value: Any) -> Usage | None:
    u = as_dict(value)
    if not u:
        return None
    prompt = as_int(u.get("promptTokenCount"))
    cached = min(as_int(u.get("cachedContentTokenCount")), prompt)
    thoughts = as_int(u.get("thoughtsTokenCount"))
    return Usage(
        input_uncached=prompt - cached,
        cache_read=cached,
        output=as_int(u.get("candidatesTokenCount")) + thoughts,
        reasoning=thoughts,
        convention="gemini",
    )


class _GeminiIds:
    """Gemini calls may carry no id: results are linked to calls by name, in order."""

    def __init__(self) -> None:
        self.count = 0
        self.pending: dict[str, list[str]] = {}

    def call(self, part: dict[str, Any]) -> str:
        self.count += 1
        call_id = as_str(part.get("id")) or f"call_{self.count}"
        self.pending.setdefault(as_str(part.get("name")), []).append(call_id)
        return call_id

    def result(self, part: dict[str, Any]) -> str:
        queue = self.pending.get(as_str(part.get("name")))
        return as_str(part.get("id")) or (queue.pop(0) if queue else "")


def _gemini_content(content: Any, ids: _GeminiIds, where: SourcePos) -> MessageBuilder | None:
    c = as_dict(content)
    blocks: list[Block] = []
    for raw in as_list(c.get("parts")):
        part = as_dict(raw)
        if "text" in part:
            kind = BlockKind.THINKING if part.get("thought") is True else BlockKind.TEXT
            blocks.append(Block(kind, text=as_str(part.get("text")), raw_type="text"))
        elif "functionCall" in part:
            call = as_dict(part.get("functionCall"))
            blocks.append(
                Block(
                    BlockKind.TOOL_USE,
                    tool_id=ids.call(call),
                    tool_name=as_str(call.get("name")),
                    tool_input=call.get("args"),
                    raw_type="functionCall",
                )  # fmt: skip
            )
        elif "functionResponse" in part:
            resp = as_dict(part.get("functionResponse"))
            payload = resp.get("response")
            blocks.append(
                Block(
                    BlockKind.TOOL_RESULT,
                    tool_id=ids.result(resp),
                    text=json.dumps(payload, ensure_ascii=False, default=str),
                    raw_type="functionResponse",
                )  # fmt: skip
            )
        elif "inlineData" in part:
            data = as_dict(part.get("inlineData"))
            blocks.append(
                Block(
                    BlockKind.MEDIA,
                    media_type=as_str(data.get("mimeType")),
                    size=base64_size(as_str(data.get("data"))),
                    raw_type="inlineData",
                    data=as_str(data.get("data")),
                )  # fmt: skip
            )
        else:
            blocks.append(Block(BlockKind.OPAQUE, raw_type=next(iter(part), "part")))
    if not blocks:
        return None
    if as_str(c.get("role")) == "model":
        role = Role.ASSISTANT
    elif all(b.kind is BlockKind.TOOL_RESULT for b in blocks):
        role = Role.TOOL
    else:
        role = Role.USER
    return MessageBuilder(role, blocks, where)


def _gemini(
    request: dict[str, Any],
    response: dict[str, Any] | None,
    where: SourcePos,
    *,
    conv_id: str,
    warnings: Warnings,
) -> Conversation:
    ids = _GeminiIds()
    messages: list[MessageBuilder] = []
    system = as_dict(request.get("systemInstruction", request.get("system_instruction")))
    system_text = "\n".join(as_str(as_dict(p).get("text")) for p in as_list(system.get("parts")))
    if system_text:
        messages.append(
            MessageBuilder(Role.SYSTEM, [Block(BlockKind.TEXT, text=system_text)], where)
        )
    for content in as_list(request.get("contents")):
        built = _gemini_content(content, ids, where)
        if built is not None:
            messages.append(built)
    model = ""
    if response is not None:
        candidate = as_dict(next(iter(as_list(response.get("candidates"))), None))
        reply = _gemini_content(candidate.get("content"), ids, where)
        if reply is not None:
            reply.role = Role.ASSISTANT
            reply.usage = _gemini_usage(response.get("usageMetadata"))
            reply.model = model = as_str(response.get("modelVersion"))
            messages.append(reply)
    if not messages:
        raise TranscriptError("no Gemini contents", file=where.file, expected="contents[]")
    declared = []
    tools = request.get("tools")
    for entry in tools if isinstance(tools, list) else [tools]:
        e = as_dict(entry)
        declared.extend(as_list(e.get("function_declarations", e.get("functionDeclarations"))))
    return Conversation(
        id=conv_id,
        title=title_from(messages, shorten(conv_id)),
        messages=tuple(m.build() for m in messages),
        tools=tool_defs(declared),
        model=model,
        usage_convention="gemini",
    )


_BUILDERS: dict[str, Callable[..., Conversation]] = {
    "anthropic": anthropic.conversation,
    "responses": openai_responses.conversation,
    "chat": _chat,
    "gemini": _gemini,
}
