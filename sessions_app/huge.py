"""Huge block content is never rendered whole: the transcript page and its JSON twin show
the head and the tail of any text over ``HUGE_CHARS`` with its size and a link to the full
text, which ``block_text`` serves as plain text, whole or a page at a time.

A 30 MiB tool result used to be written into the page (and the JSON) in full: megabytes of
HTML per message, a browser tab that never finished laying out.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.http import content_disposition_header

HUGE_CHARS = 100_000
HEAD_CHARS = 20_000
TAIL_CHARS = 5_000
# Fields that can be huge: the block's text and a tool call's input (as shown: JSON text).
FIELDS = ("text", "input")


def field_text(block: dict[str, Any], field: str) -> str:
    if field == "input":
        value = block.get("tool_input")
        if value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
    return str(block.get("text") or "")


def full_text_url(transcript_id: int, index: int, block: int, field: str, part: int | None) -> str:
    url = reverse("message-block-text", args=[transcript_id, index, block])
    query = f"?field={field}" + ("" if part is None else f"&part={part}")
    return url + query


def clip(text: str, url: str) -> dict[str, Any] | None:
    """The shown head/tail of ``text`` when it is huge, else None."""
    if len(text) <= HUGE_CHARS:
        return None
    return {
        "head": text[:HEAD_CHARS],
        "tail": text[-TAIL_CHARS:],
        "chars": len(text),
        "bytes": len(text.encode("utf-8", "surrogatepass")),
        "omitted_chars": len(text) - HEAD_CHARS - TAIL_CHARS,
        "full_text": url,
    }


def clipped_blocks(
    blocks: list[dict[str, Any]], *, transcript_id: int, index: int
) -> list[dict[str, Any]]:
    """Codec blocks for the JSON twin: a huge text becomes its head, plus ``truncated``
    (size, tail and the URL of the full text); parts likewise. Small blocks are unchanged."""
    out = []
    for b, block in enumerate(blocks):
        out.append(_clip_block(block, transcript_id, index, b, None))
    return out


def _clip_block(
    block: dict[str, Any], transcript_id: int, index: int, b: int, part: int | None
) -> dict[str, Any]:
    changed: dict[str, Any] | None = None
    for field in FIELDS:
        text = field_text(block, field)
        clipped = clip(text, full_text_url(transcript_id, index, b, field, part))
        if clipped is None:
            continue
        changed = dict(block) if changed is None else changed
        key = "text" if field == "text" else "tool_input"
        changed[key] = clipped["head"]
        changed.setdefault("truncated", {})[key] = {k: v for k, v in clipped.items() if k != "head"}
    parts = block.get("parts") or []
    if part is None and parts:
        new_parts = [_clip_block(p, transcript_id, index, b, i) for i, p in enumerate(parts)]
        if any(new is not old for new, old in zip(new_parts, parts, strict=True)):
            changed = dict(block) if changed is None else changed
            changed["parts"] = new_parts
    return block if changed is None else changed


def text_response(request: HttpRequest, text: str, *, name: str) -> HttpResponse:
    """``text`` as UTF-8 plain text: ``?start=&length=`` pages through it in characters
    (``X-Total-Chars`` says how many there are), ``?download=1`` saves it as ``name``."""
    try:
        start = max(0, int(request.GET.get("start", 0)))
        length = int(request.GET["length"]) if request.GET.get("length") else None
    except ValueError:
        return HttpResponse("start and length are numbers of characters\n", status=400)
    piece = text[start:] if length is None else text[start : start + max(0, length)]
    response = HttpResponse(piece, content_type="text/plain; charset=utf-8")
    response["X-Total-Chars"] = str(len(text))
    header = content_disposition_header(bool(request.GET.get("download")), name)
    if header is not None:  # None only without a file name
        response["Content-Disposition"] = header
    return response
