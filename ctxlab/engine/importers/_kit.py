"""Small building kit shared by the API-shaped importers (Claude Code, Codex, Anthropic,
OpenAI Responses, cassettes): type-safe access to untrusted JSON values, a mutable message
builder that freezes into ``Message``, a counted-warning collector and title helpers.

Transcripts are untrusted: every accessor returns a neutral value instead of raising when a
field has the wrong type, so only the importers' own ``TranscriptError`` can escape.
"""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_to_bytes

from ..core.harness import is_noise_text as is_noise_text  # the importers' name for it
from ..core.harness import request_text
from ..core.model import (
    Block,
    BlockKind,
    ImportWarning,
    Message,
    Role,
    SourcePos,
    TranscriptError,
    Usage,
)
from ._common import note

TITLE_CHARS = 80
_DIGITS = re.compile(r"\s*\d{1,18}\s*")
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)


def reject_empty(data: bytes, name: str, expected: str) -> None:
    """A forced format still gets a clear error for an empty or blank file."""
    if not data.strip():
        raise TranscriptError("the file is empty", file=name, expected=expected)


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_int(value: Any) -> int:
    """Non-negative int, or 0 (bools from odd sources are not counts). A count written as
    a decimal string ("123") is read as the number, with a ``number-as-string`` warning."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and value == value and 0 <= value < 1e18:
        return int(value)
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        note("number-as-string", "number given as a string; read as the number", repr(value))
        return int(value.strip())
    return 0


def json_size(value: Any) -> int:
    """Bytes of a value serialised as compact JSON (the size of an opaque payload)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    try:
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    except (TypeError, ValueError):
        return 0


def base64_size(data: str) -> int:
    """Decoded size of a base64 payload without decoding it."""
    n = len(data.rstrip().rstrip("="))
    return n * 3 // 4


def data_url_size(url: str) -> tuple[str, int]:
    """``(media_type, decoded bytes)`` of a ``data:`` URL, or ``("", len(url))`` for others."""
    if url.startswith("data:"):
        head, _, payload = url.partition(",")
        media_type = head[5:].split(";", 1)[0]
        if ";base64" in head:
            return media_type, base64_size(payload)
        return media_type, len(payload.encode())
    return "", len(url.encode())


def data_url_base64(url: str) -> str:
    """The bytes of a ``data:`` URL as base64 (what a media block keeps in ``data``): the
    payload itself when it is base64 already, else its percent-decoded bytes encoded; ""
    for any other URL."""
    if not url.startswith("data:"):
        return ""
    head, _, payload = url.partition(",")
    if ";base64" in head:
        return payload
    return base64.b64encode(unquote_to_bytes(payload)).decode("ascii")


def opaque(raw_type: str, value: Any, *, text: str = "") -> Block:
    return Block(BlockKind.OPAQUE, text=text, raw_type=raw_type or "unknown", size=json_size(value))


def parse_arguments(arguments: Any) -> Any:
    """Tool-call arguments sent as a JSON string: the parsed value, else the raw string."""
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except ValueError:
        note(
            "tool-arguments-not-json",
            "tool-call arguments are not valid JSON; kept as the raw string",
            repr(arguments[:60]),
        )
        return arguments


def openai_usage(usage: Any) -> Usage | None:
    """OpenAI convention (prompt/input tokens *include* cached ones) -> disjoint buckets.

    Accepts Responses (``input_tokens``/``input_tokens_details``), Chat Completions
    (``prompt_tokens``/``prompt_tokens_details``) and Codex (``cached_input_tokens``,
    ``reasoning_output_tokens``) spellings.
    """
    u = as_dict(usage)
    if not u:
        return None
    prompt = as_int(u.get("input_tokens", u.get("prompt_tokens")))
    details = as_dict(u.get("input_tokens_details", u.get("prompt_tokens_details")))
    cached = as_int(u.get("cached_input_tokens", details.get("cached_tokens")))
    output = as_int(u.get("output_tokens", u.get("completion_tokens")))
    out_details = as_dict(u.get("output_tokens_details", u.get("completion_tokens_details")))
    reasoning = as_int(u.get("reasoning_output_tokens", out_details.get("reasoning_tokens")))
    cached = min(cached, prompt)
    return Usage(
        input_uncached=prompt - cached,
        cache_read=cached,
        output=output,
        reasoning=min(reasoning, output) if output else reasoning,
        convention="openai",
    )


@dataclass(slots=True)
class MessageBuilder:
    """A message under construction (importers merge split lines into it)."""

    role: Role
    blocks: list[Block] = field(default_factory=list)
    source: SourcePos = SourcePos()
    timestamp: str | None = None
    model: str = ""
    usage: Usage | None = None
    id: str = ""
    name: str = ""
    flags: set[str] = field(default_factory=set)

    def build(self) -> Message:
        return Message(
            role=self.role,
            blocks=tuple(self.blocks),
            source=self.source,
            timestamp=self.timestamp,
            model=self.model,
            usage=self.usage,
            id=self.id,
            name=self.name,
            flags=frozenset(self.flags),
        )


class Warnings:
    """Counted warnings: one ``ImportWarning`` per distinct message, first place kept."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._where: dict[str, str] = {}
        self._code: dict[str, str] = {}

    def add(self, message: str, where: str = "", *, code: str = "", count: int = 1) -> None:
        """``code``: a key of ``import_warnings.CODES``; ``count``: how many it stands for."""
        self._counts[message] += count
        self._where.setdefault(message, where)
        self._code.setdefault(message, code)

    def __len__(self) -> int:
        return len(self._counts)

    def freeze(self) -> tuple[ImportWarning, ...]:
        return tuple(
            ImportWarning(message=m, where=self._where[m], count=c, code=self._code[m])
            for m, c in self._counts.items()
        )


def shorten(text: str, limit: int = TITLE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


# What a user did not type (caveats, injected elements, AGENTS.md headers, continued-session
# and multi-agent preambles): one rule in ``core.harness``, read by the summariser and the
# evaluation too (``is_noise_text``, ``request_text``).
_SLASH_COMMAND = re.compile(r"/[A-Za-z][\w:.-]*(?:\s|$)")


def is_junk_title(title: str) -> bool:
    """A title no person would give the conversation: empty, "(no content)", a slash
    command, command markup, an injected preamble or caveat boilerplate."""
    return not request_text(title) or _SLASH_COMMAND.match(title.strip()) is not None


def _typed_request(text: str) -> str:
    """Text without its injected preambles and leading slash-command lines typed as plain
    text (aider, Gemini): "/tok\n/ask why ..." -> "why ..."; "" when nothing else is there."""
    text = request_text(text)
    while text:
        typed = _SLASH_COMMAND.match(text)
        if typed is None:
            return text
        line, _, rest = text[typed.end() :].partition("\n")
        text = request_text(line if line.strip() else rest)
    return ""


def title_from(messages: Sequence[MessageBuilder] | Sequence[Message], fallback: str) -> str:
    """The one title rule for every importer: the first real user request, shortened.

    Meta lines, compaction summaries, demonstrations (SWE-agent's worked example),
    injected preambles (``request_text``), caveat boilerplate and "(no content)" are
    skipped; a slash command counts by its arguments ("/review fix the login bug" -> "fix
    the login bug"), and a bare command ("/init") by what it expanded to (the meta text
    that follows it); a meta text is also the title when nothing else was typed.
    """
    finder = TitleFinder()
    for m in messages:
        if finder.feed(m):
            break
    return finder.title(fallback)


class TitleFinder:
    """``title_from`` fed one message at a time (a streamed import never holds them all)."""

    __slots__ = ("_bare_command", "_expansion", "_found")

    def __init__(self) -> None:
        self._expansion = ""
        self._found: str | None = None
        self._bare_command = False

    def feed(self, m: MessageBuilder | Message) -> bool:
        """Look at the next message; True once the title is known (later ones can't change it)."""
        if self._found is not None:
            return True
        if m.role is not Role.USER or m.flags & {"compact_summary", "demonstration"}:
            return False
        if "meta" not in m.flags:
            self._bare_command = False  # an expansion follows its command directly
        for b in m.blocks:
            if b.kind is not BlockKind.TEXT:
                continue
            text = b.text.strip()
            if "meta" in m.flags:
                expanded = request_text(text)
                if expanded and self._bare_command:
                    self._found = shorten(expanded)
                    return True
                if expanded and not self._expansion:
                    self._expansion = expanded
                continue
            command = _COMMAND.search(text)
            if command is not None:
                args = _ARGS.search(text)
                if args and args.group(1).strip():
                    self._found = shorten(args.group(1))
                    return True
                self._bare_command = True
                continue
            request = _typed_request(text)
            if request:
                self._found = shorten(request)
                return True
        return False

    def title(self, fallback: str) -> str:
        if self._found is not None:
            return self._found
        return shorten(self._expansion) if self._expansion else fallback
