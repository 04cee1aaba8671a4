"""The transcript page as a conversation: markdown, tool calls with their results, search.

- Markdown: message text is rendered by markdown-it-py (CommonMark + tables, raw HTML off,
  so any tag in a transcript is shown as text) and the result is cleaned by nh3 (Ammonia)
  with no images and only http/https/mailto links (``rel="noopener noreferrer nofollow"``).
  Transcripts are untrusted: two maintained libraries instead of a hand-written renderer,
  and nh3 as the last word on what tags and attributes may reach the page.
- Tool calls: each call is shown with its result (matched by tool id, looking a few
  messages past the page so a pair split by a page break still meets); the collapsed row
  previews the command, file path or query.
- Search: server-side over the stored (already masked) block texts, paged; each hit is an
  escaped snippet with the match in ``<mark>``.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from .models import Message

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
_TAGS = set(nh3.ALLOWED_TAGS) - {"img", "area", "map"}  # nothing that loads from elsewhere
_ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}, "ol": {"start"}}

# Tool-input keys whose value says what a call did, most telling first.
PREVIEW_KEYS = (
    "command", "cmd", "file_path", "path", "filePath", "notebook_path", "pattern", "query",
    "url", "prompt", "description",
)  # fmt: skip
PREVIEW_CHARS = 120
SNIPPET_RADIUS = 60
HITS_PER_PAGE = 20


def render_markdown(text: str) -> SafeString:
    """Untrusted markdown as safe HTML (see the module docstring)."""
    rendered = _MD.render(text)
    clean = nh3.clean(
        rendered,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(clean)  # noqa: S308 - nh3 output: only the allowed tags and attributes


def tool_preview(tool_input: Any) -> str:
    """One line saying what a tool call did: its command, path or query (else its input)."""
    if isinstance(tool_input, dict):
        for key in PREVIEW_KEYS:
            value = tool_input.get(key)
            if isinstance(value, list):
                value = " ".join(str(v) for v in value)
            if isinstance(value, str) and value.strip():
                return _one_line(value)
        for value in tool_input.values():
            if isinstance(value, str) and value.strip():
                return _one_line(value)
        return _one_line(json.dumps(tool_input, ensure_ascii=False)) if tool_input else ""
    return _one_line(str(tool_input or ""))


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…"


def parse_time(value: str | None) -> datetime | None:
    """A source timestamp (ISO 8601, or epoch seconds/milliseconds) or None."""
    if not value:
        return None
    text = str(value).strip()
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    try:
        return datetime.fromtimestamp(number / 1000 if number > 1e11 else number, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def pair_tool_calls(
    messages: list[Any], lookahead: Iterable[tuple[int, list[dict[str, Any]]]]
) -> None:
    """Attach each tool call's result to the call (``b["result"]``, ``b["result_at"]``) and
    mark each paired result (``b["paired_with"]``: the call's message index).

    ``messages`` carry ``display_blocks``; ``lookahead`` is ``(index, blocks)`` of messages
    after the page, whose results are attached but not shown here."""
    calls: dict[str, tuple[int, dict[str, Any]]] = {}
    for m in messages:
        for b in m.display_blocks:
            if b.get("kind") == "tool_use":
                b["preview"] = tool_preview(b.get("tool_input"))
                if b.get("tool_id"):
                    calls[b["tool_id"]] = (m.index, b)
            elif b.get("kind") == "tool_result" and b.get("tool_id") in calls:
                at, call = calls.pop(b["tool_id"])
                call["result"], call["result_at"] = b, m.index
                b["paired_with"] = at
    for index, blocks in lookahead:
        if not calls:
            break
        for block in blocks:
            if block.get("kind") == "tool_result" and block.get("tool_id") in calls:
                _, call = calls.pop(block["tool_id"])
                call["result_at"] = index  # shown on the next page: link, not content


@dataclass(frozen=True)
class Hit:
    index: int
    block: int
    before: str
    match: str
    after: str

    @property
    def snippet(self) -> SafeString:
        """Escaped text around the match, the match in ``<mark>``."""
        parts = (html.escape(self.before), html.escape(self.match), html.escape(self.after))
        return mark_safe("{}<mark>{}</mark>{}".format(*parts))  # noqa: S308 - escaped


def block_texts(blocks: list[dict[str, Any]]) -> Iterator[tuple[int, str]]:
    for b, block in enumerate(blocks):
        yield b, str(block.get("text") or "")
        if block.get("kind") == "tool_use" and block.get("tool_input") is not None:
            value = block["tool_input"]
            yield b, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        for part in block.get("parts") or []:
            yield b, str(part.get("text") or "")


def _hit(index: int, b: int, text: str, start: int, end: int) -> Hit:
    left = max(0, start - SNIPPET_RADIUS)
    right = min(len(text), end + SNIPPET_RADIUS)
    before = ("…" if left else "") + text[left:start]
    after = text[end:right] + ("…" if right < len(text) else "")
    return Hit(index, b, before, text[start:end], after)


def find_hits(rows: Iterable[tuple[int, list[dict[str, Any]]]], query: str) -> Iterator[Hit]:
    """Every case-insensitive occurrence of ``query`` in message order (one hit per
    occurrence, so "next hit" moves through a long message too)."""
    pattern = re.compile(re.escape(query), re.IGNORECASE)
    for index, blocks in rows:
        for b, text in block_texts(blocks):
            for match in pattern.finditer(text):
                yield _hit(index, b, text, match.start(), match.end())


def db_prefilter_safe(query: str) -> bool:
    """Whether a LIKE over the stored JSON can pre-select messages: the query must read the
    same inside JSON text (ASCII without quotes, backslashes or control characters)."""
    return query.isascii() and not any(c in query for c in '"\\') and query.isprintable()


# Page assembly (the view's part: what the template and the JSON twin show)

LOOKAHEAD_MESSAGES = 20


def decorate_page(transcript: Any, messages: list[Any]) -> None:
    """Add the conversation view's facts to a page of messages whose ``display_blocks``
    are set: markdown HTML of each text block, a parsed time, tool calls paired."""
    for m in messages:
        m.time = parse_time(m.timestamp)
        for b in m.display_blocks:
            if b.get("kind") == "text" and b.get("text"):
                b["html"] = render_markdown(b["text"])
    if not messages:
        return
    _link_subagents(transcript, messages)
    after = (
        transcript.messages.filter(index__gt=messages[-1].index)
        .order_by("index")
        .values_list("index", "blocks")[:LOOKAHEAD_MESSAGES]
    )
    pair_tool_calls(messages, after)


def _link_subagents(transcript: Any, messages: list[Any]) -> None:
    """A sub-agent thread shows where it was launched: its first user text is the prompt
    of the call that started it (the Claude Code importer links threads the same way)."""
    prompts = {
        b["tool_input"]["prompt"]: b
        for m in messages
        for b in m.display_blocks
        if b.get("kind") == "tool_use"
        and isinstance(b.get("tool_input"), dict)
        and isinstance(b["tool_input"].get("prompt"), str)
    }
    if not prompts:
        return
    children = {c.pk: c for c in transcript.children.only("pk", "title", "message_count")}
    if not children:
        return
    firsts = Message.objects.filter(transcript_id__in=list(children), index=0).values_list(
        "transcript_id", "blocks"
    )
    for child_id, blocks in firsts:
        text = next((str(b.get("text") or "") for b in blocks if b.get("kind") == "text"), "")
        call = prompts.get(text)
        if call is not None:
            call["subagent"] = children[child_id]


def page_of(index: int, per_page: int) -> int:
    """The page holding message ``index`` (indexes run 0..n-1 in transcript order)."""
    return index // per_page + 1


def message_url(base: str, index: int, per_page: int) -> str:
    return f"{base}?page={page_of(index, per_page)}&per_page={per_page}#m{index}"


def compaction_links(transcript: Any, per_page: int) -> list[dict[str, Any]]:
    base = transcript.get_absolute_url()
    return [
        {**c, "url": message_url(base, int(c.get("before_index") or 0), per_page)}
        for c in transcript.compactions or []
        if isinstance(c, dict)
    ]


def hit_url(base: str, query: str, number: int, index: int, per_page: int) -> str:
    """Hit ``number`` (1-based, over all hits): its message's page, scrolled to it, with the
    search kept so the page can offer the previous and next hit."""
    hits_page = (number - 1) // HITS_PER_PAGE + 1
    return (
        f"{base}?page={page_of(index, per_page)}&per_page={per_page}&q={quote(query)}"
        f"&hits={hits_page}&hit={number}#m{index}"
    )


def search_keep(found: dict[str, Any] | None) -> str:
    """The search to carry on every link that stays in the transcript (the pages of
    messages, as links and htmx loads): ``&q=…&hits=…&hit=…``, or "" without a search. A
    reader who opened a hit and reads on keeps the query, the hits page and the hit."""
    if not found:
        return ""
    keep = f"&q={quote(found['query'])}&hits={found['page']}"
    current = found.get("current")
    return keep + (f"&hit={current['number']}" if current else "")


def search(
    transcript: Any, query: str, hit_page: int, per_page: int, current: int | None = None
) -> dict[str, Any]:
    """One page of hits for ``query`` (``HITS_PER_PAGE`` each), with links to each hit's
    message and to the previous/next page of hits; ``current`` (a hit number) adds the
    links to the hits before and after it."""
    rows = transcript.messages.order_by("index")
    if db_prefilter_safe(query):
        rows = rows.filter(blocks__icontains=query)
    hits = list(find_hits(rows.values_list("index", "blocks").iterator(chunk_size=200), query))
    pages = max(1, -(-len(hits) // HITS_PER_PAGE))
    hit_page = min(max(1, hit_page), pages)
    base = transcript.get_absolute_url()
    first = (hit_page - 1) * HITS_PER_PAGE
    shown = hits[first : first + HITS_PER_PAGE]

    def url(number: int) -> str:
        return hit_url(base, query, number, hits[number - 1].index, per_page)

    found: dict[str, Any] = {
        "query": query,
        "count": len(hits),
        "messages": len({h.index for h in hits}),
        "page": hit_page,
        "pages": pages,
        "first": first + 1,
        "hits": [
            {
                "number": first + i + 1,
                "index": h.index,
                "block": h.block,
                "before": h.before,
                "match": h.match,
                "after": h.after,
                "snippet": h.snippet,
                "url": url(first + i + 1),
            }
            for i, h in enumerate(shown)
        ],
        "current": None,
    }
    if current is not None and 1 <= current <= len(hits):
        found["current"] = {
            "number": current,
            "index": hits[current - 1].index,
            "previous": url(current - 1) if current > 1 else None,
            "next": url(current + 1) if current < len(hits) else None,
        }
    return found
