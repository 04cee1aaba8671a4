"""OpenAI Responses API items: ``{"input": [...], "output": [...]}``, a request body
(``model``/``instructions``/``input``/``tools``), a response object (``object: response``),
or a bare item array. Reasoning with ``encrypted_content`` is kept as an opaque block (size
only), ``compaction`` items as an opaque message plus a recorded compaction."""

from __future__ import annotations

from typing import Any

from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
)
from ._common import load_json
from ._kit import (
    MessageBuilder,
    Warnings,
    as_dict,
    as_str,
    openai_usage,
    reject_empty,
    shorten,
    title_from,
)
from ._openai_items import ResponsesThread, tool_defs

FORMAT = "openai-responses"
LABEL = "OpenAI Responses API items"

_EXPECTED = "Responses API items: {input, output}, a request/response body, or an item array"
_ITEM_MARKERS = (
    b'"type":"input_text"',
    b'"type":"output_text"',
    b'"type":"function_call_output"',
    b'"type":"function_call"',
    b'"type":"reasoning"',
    b'"type":"compaction"',
)


def sniff(head: bytes, name: str) -> int:
    text = head.lstrip()
    if not text.startswith((b"{", b"[")):
        return 0
    compact = text.replace(b": ", b":").replace(b":\n", b":")
    if b'"request_body"' in compact or b'"payload"' in compact:
        return 0  # cassette twins and Codex rollouts embed items too
    first, _, rest = text.partition(b"\n")
    if first.rstrip().endswith(b"}") and rest.lstrip().startswith(b"{"):
        return 0  # JSONL (legacy Codex rollouts are bare items, one per line)
    if b'"object":"response"' in compact:
        return 85
    markers = sum(m in compact for m in _ITEM_MARKERS)
    if markers and (b'"input"' in compact or b'"output"' in compact):
        return 80
    return 65 if markers else 0


def conversation(
    request: dict[str, Any],
    response: dict[str, Any] | None,
    where: SourcePos,
    *,
    conv_id: str,
    warnings: Warnings,
) -> Conversation:
    """Instructions + input items (+ the response's output items, with its usage)."""
    thread = ResponsesThread(warnings)
    instructions = as_str(request.get("instructions")) or as_str(
        as_dict(response).get("instructions")
    )
    if instructions:
        thread.messages.append(
            MessageBuilder(
                Role.SYSTEM,
                [Block(BlockKind.TEXT, text=instructions, raw_type="instructions")],
                where,
            )
        )
    items = request.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in items if isinstance(items, list) else []:
        thread.add(item, where)
    thread.close_group()
    model = as_str(request.get("model"))
    if response is not None:
        start = len(thread.messages)
        model = as_str(response.get("model")) or model
        output = response.get("output")
        for item in output if isinstance(output, list) else []:
            thread.add(item, where)
        produced = [m for m in thread.messages[start:] if m.role is Role.ASSISTANT]
        for m in produced:
            m.model = model
        if produced:
            produced[0].usage = openai_usage(response.get("usage"))
            produced[0].id = produced[0].id or as_str(response.get("id"))
    messages = thread.messages
    if not messages:
        raise TranscriptError("no Responses items found", file=where.file, expected=_EXPECTED)
    return Conversation(
        id=conv_id,
        title=title_from(messages, shorten(conv_id)),
        messages=tuple(m.build() for m in messages),
        tools=tool_defs(request.get("tools") or as_dict(response).get("tools")),
        compactions=tuple(thread.compactions),
        model=model,
        usage_convention="openai",
    )


def parse(data: bytes, *, name: str) -> ParsedFile:
    reject_empty(data, name, _EXPECTED)
    doc = load_json(data, name)
    warnings = Warnings()
    where = SourcePos(file=name, record=0)
    conv_id = name or "responses"
    if isinstance(doc, list):
        conv = conversation({"input": doc}, None, where, conv_id=conv_id, warnings=warnings)
    elif isinstance(doc, dict) and doc.get("object") == "response":
        conv = conversation({}, doc, where, conv_id=conv_id, warnings=warnings)
    elif isinstance(doc, dict) and ("input" in doc or "output" in doc):
        response = {**doc, "output": doc["output"]} if "output" in doc else None
        request = {k: v for k, v in doc.items() if k != "output"}
        conv = conversation(request, response, where, conv_id=conv_id, warnings=warnings)
    else:
        raise TranscriptError("not a Responses API document", file=name, expected=_EXPECTED)
    if len(warnings) and not any(m.blocks for m in conv.messages):
        raise TranscriptError("no Responses items found", file=name, expected=_EXPECTED)
    return ParsedFile(FORMAT, (conv,), warnings.freeze())
