"""One transcript's page (``/transcripts/N/``): a page of its messages, its facts, children,
usage chart and search hits. One ``TranscriptPage`` feeds both the template and the
``?format=json`` twin, so they cannot disagree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page
from django.urls import reverse

from ctxlab.engine.importers.claude_code import FORKS_AFTER_LINE

from . import charts, conversation, huge, media_thumbs
from .models import Message, Transcript
from .upload_pages import transcript_summary_json


@dataclass
class TranscriptPage:
    transcript: Transcript
    page: Page[Message]
    per_page: int
    search: dict[str, Any] | None  # conversation.search's result; None without a query
    subagents: list[Transcript]
    alternates: list[Transcript]

    def next_url(self, *, json: bool) -> str | None:
        if not self.page.has_next():
            return None
        fmt = "format=json&" if json else ""
        return (
            f"{reverse('transcript-detail', args=[self.transcript.pk])}?{fmt}"
            f"page={self.page.next_page_number()}&per_page={self.per_page}"
            f"{conversation.search_keep(self.search)}"
        )

    def as_json(self) -> dict[str, Any]:
        t = self.transcript
        return {
            "transcript": _transcript_json(t, self.subagents, self.alternates),
            "messages": [_message_json(m, t.source_file) for m in self.page],
            "page": self.page.number,
            "per_page": self.per_page,
            "pages": self.page.paginator.num_pages,
            "count": self.page.paginator.count,
            "next": self.next_url(json=True),
            **_search_json(self.search),
        }

    def messages_context(self) -> dict[str, Any]:
        """What the message list (the htmx ``message-page`` fragment) needs."""
        for message in self.page:
            message.display_blocks = _display_blocks(message)  # type: ignore[attr-defined]
        conversation.decorate_page(self.transcript, list(self.page))
        return {
            "transcript": self.transcript,
            "search": self.search,
            "compaction_links": conversation.compaction_links(self.transcript, self.per_page),
            "page_obj": self.page,
            "per_page": self.per_page,
            "next_url": self.next_url(json=False),
            "search_keep": conversation.search_keep(self.search),
        }

    def context(self) -> dict[str, Any]:
        t = self.transcript
        usage_rows = list(
            t.messages.filter(has_usage=True)
            .order_by("index")
            .values_list(
                "index",
                "usage_input_uncached",
                "usage_cache_read",
                "usage_cache_write_5m",
                "usage_cache_write_1h",
                "usage_output",
            )
        )
        return {
            **self.messages_context(),
            "usage_chart": charts.usage_chart_html(usage_rows, compactions=t.compactions)
            if usage_rows
            else "",
            "usage_points": len(usage_rows),
            "children": self.subagents,
            "alternates": self.alternates,
            "forks_after_line": _forks_after_line(t),
            "facts": {"conversation_id": t.conversation_id, "format": t.format, "model": t.model},
        }


def transcript_page(
    transcript: Transcript, page: Page[Message], per_page: int, search: dict[str, Any] | None
) -> TranscriptPage:
    subagents, alternates = _children(transcript)
    return TranscriptPage(transcript, page, per_page, search, subagents, alternates)


def _forks_after_line(t: Transcript) -> int | None:
    """The line an alternate branch forks after (None: not an alternate branch)."""
    for pair in t.metadata:
        if len(pair) == 2 and pair[0] == FORKS_AFTER_LINE and str(pair[1]).isdigit():
            return int(pair[1])
    return None


def _children(t: Transcript) -> tuple[list[Transcript], list[Transcript]]:
    """``(sub-agent threads, alternate branches)`` of a transcript, in file order."""
    subagents: list[Transcript] = []
    alternates: list[Transcript] = []
    for child in t.children.order_by("position").only(
        "pk", "title", "conversation_id", "message_count", "metadata"
    ):
        child.forks_after_line = _forks_after_line(child)  # type: ignore[attr-defined]
        (subagents if child.forks_after_line is None else alternates).append(child)  # type: ignore[attr-defined]
    return subagents, alternates


def _transcript_json(
    t: Transcript, subagents: list[Transcript], alternates: list[Transcript]
) -> dict[str, Any]:
    return {
        **transcript_summary_json(t),
        "upload": t.upload_id,
        "position": t.position,
        "model": t.model,
        "usage_convention": t.usage_convention,
        "source_file": t.source_file,
        "parent": t.parent_id,
        "parent_conversation_id": t.parent_conversation_id,
        "children": [c.pk for c in (*subagents, *alternates)],
        "forks_after_line": _forks_after_line(t),
        "alternates": [
            {
                "id": c.pk,
                "title": c.title,
                "messages": c.message_count,
                "forks_after_line": c.forks_after_line,  # type: ignore[attr-defined]
                "url": c.get_absolute_url(),
            }
            for c in alternates
        ],
        "tools": t.tools,
        "compactions": t.compactions,
        "metadata": t.metadata,
        "secret_locations": t.secrets,
    }


def _message_json(m: Message, default_file: str) -> dict[str, Any]:
    usage = m.usage
    return {
        "index": m.index,
        "role": m.role,
        "blocks": [
            media_thumbs.json_block(b)
            for b in huge.clipped_blocks(m.blocks, transcript_id=m.transcript_id, index=m.index)
        ],
        "reference_tokens": m.reference_tokens,
        "source": {
            "file": default_file if m.source_file is None else m.source_file,
            "line": m.source_line,
            "record": m.source_record,
        },
        "timestamp": m.timestamp,
        "model": m.model,
        "id": m.source_id,
        "name": m.name,
        "usage": None
        if usage is None
        else {
            "input_uncached": usage.input_uncached,
            "cache_read": usage.cache_read,
            "cache_write_5m": usage.cache_write_5m,
            "cache_write_1h": usage.cache_write_1h,
            "output": usage.output,
            "reasoning": usage.reasoning,
            "convention": usage.convention,
            "prompt_tokens": usage.prompt_tokens,
        },
        "flags": m.flags,
        "secrets": m.secrets,
    }


def _display_blocks(m: Message) -> list[dict[str, Any]]:
    """Blocks as the template shows them: codec dicts plus a few display-only facts.

    A huge text or tool input shows as its head and tail (``huge_text`` / ``huge_input``:
    size and the full-text link), never whole. An image with its bytes is a thumbnail
    (``image``; a tool result's image parts: ``images``), or says why not (``refused``)."""
    shown = []
    for b, block in enumerate(m.blocks):
        item = dict(block)
        item.setdefault("text", "")
        item["chars"] = len(item["text"])
        url = huge.full_text_url(m.transcript_id, m.index, b, "text", None)
        item["huge_text"] = huge.clip(item["text"], url)
        if item["huge_text"]:
            item["text"] = item["huge_text"]["head"]
        if block.get("kind") == "media":
            _media_display(item, f"m{m.index}-b{b}")
        elif block.get("kind") == "tool_result" and block.get("parts"):
            item["images"] = [
                {**t, "key": f"m{m.index}-b{b}-p{i}"}
                for i, part in enumerate(block["parts"])
                if (t := media_thumbs.thumbnail(part))
            ]
        if block.get("kind") == "tool_use":
            item["input_json"] = huge.field_text(block, "input")
            url = huge.full_text_url(m.transcript_id, m.index, b, "input", None)
            item["huge_input"] = huge.clip(item["input_json"], url)
            if item["huge_input"]:
                item["input_json"] = item["huge_input"]["head"]
        shown.append(item)
    return shown


def _media_display(item: dict[str, Any], key: str) -> None:
    image = media_thumbs.thumbnail(item)
    data = item.pop("data", None)
    item["image"] = None if image is None else {**image, "key": key}
    if image is None and isinstance(data, str):
        size = int(item.get("size") or 0)
        _, item["refused"] = media_thumbs.check(str(item.get("media_type") or ""), data, size)


def _search_json(found: dict[str, Any] | None) -> dict[str, Any]:
    if found is None:
        return {}
    hits = [{k: v for k, v in hit.items() if k != "snippet"} for hit in found["hits"]]
    return {"search": {**found, "hits": hits}}
