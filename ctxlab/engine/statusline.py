"""``ctxlab statusline``: one short line for Claude Code's status line.

Claude Code runs the ``statusLine`` command after each assistant message with the session's
JSON on stdin (``transcript_path``, ``version``, ``model``, ``context_window`` with
``context_window_size`` ...: https://code.claude.com/docs/en/statusline) and shows the first
line it prints. This prints::

    ctx 150.8k/200k 75% | auto-compact in ~4 turns (155k, 3-7) | 2 instructions at risk

- *context used*: the count Claude Code's auto-compact compares with its threshold after the
  last response (``_claude_code_versions.count_after_response``, the rule of the
  ``claude_code`` strategy and of the session page: the reported usage, prompt + output,
  plus the final output a stream-start usage line does not hold and, in 2.1.64 and 2.1.69+, the
  response's own later lines), of the window (the JSON's ``context_window_size``, else
  200,000, or 1,000,000 for a ``[1m]`` model);
- *turns to auto-compact*: ``evaluate.forecast.turns_to_trigger`` (the rule the session page
  reads) over the responses since the last ``compact_boundary`` / ``microcompact_boundary``,
  against the threshold of the JSON's Claude Code version (``_claude_code_versions``);
- *instructions at risk*: the instruction sources (skills, the user's constraints:
  ``evaluate.instructions``) in the span the next compaction would summarise (with a
  partial compaction's kept segment, written before its boundary); CLAUDE.md contents are
  not, Claude Code puts them back (``forecast.reattached``).

Fast: the span since the last compaction boundary is read where it lies (the file mapped,
the boundary found backwards: a 5 MB session compacted once reads only what followed; only
response lines and user lines without a tool result are copied and looked at), only the
lines that matter are JSON-decoded, a user text reaches the instruction rule only when it
may hold a source (``evaluate.instruction_marks``), and nothing of Django or the strategy
registry is imported (the version table is loaded on its own). Successive calls read only
what the file gained: the span's state is kept per transcript in the user's cache directory
(``cached_status_of``: ``$XDG_CACHE_HOME/ctxlab/statusline``; ``--no-cache`` or
``CTXLAB_STATUSLINE_CACHE=0`` read the file without it). ``--file PATH`` reads a session
without the JSON (tmux, a shell prompt); ``--json`` prints the figures as JSON. Never fails
loudly: a status line that raises shows nothing, so errors print a short line.
"""

from __future__ import annotations

import importlib.util
import json
import mmap
import os
import re
import sys
import time
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO, NamedTuple, TextIO

from .evaluate.forecast import (
    RATE_TURNS,
    TurnsEstimate,
    claude_code_threshold,
    reattached,
    turns_to_trigger,
)
from .evaluate.instruction_marks import constraint_sources, injected_sources, may_hold_source
from .stages.own_counts import RawBlock, block_tokens

Buffer = bytes | mmap.mmap  # a file's bytes read, or mapped
CHUNK = 1 << 20  # bytes read per step backwards
DEFAULT_WINDOW = 200_000
LARGE_WINDOW = 1_000_000
# Claude Code writes compact JSON; other writers of the same records put spaces after colons
BOUNDARY = re.compile(rb'"subtype":\s*"(?:micro)?compact_boundary"')
MARK_MAX = 40  # bytes of the longest boundary mark (the chunk overlap)
ASSISTANT = re.compile(rb'"type":\s*"assistant"')
USER = re.compile(rb'"type":\s*"user"')
SIDECHAIN = re.compile(rb'"isSidechain":\s*true')
# The first "type" of a line: a response's message object comes before the record's own
# type ("message"), a user record's type comes first; a progress line (a sub-agent's
# messages nested in it) says "progress" first.
FIRST_TYPE = re.compile(rb'"type":\s*"([a-z_-]+)"')


def _first_type(raw: Buffer, start: int = 0, end: int | None = None) -> bytes:
    """The first "type" of the line ``raw[start:end]``."""
    found = _search(FIRST_TYPE, raw, start, len(raw) if end is None else end)
    return found.group(1) if found else b""


_KEYS: dict[re.Pattern[bytes], bytes] = {}


def _key(pattern: re.Pattern[bytes]) -> bytes:
    """The literal key every match of ``pattern`` opens with (``"type":``)."""
    key = _KEYS.get(pattern)
    if key is None:
        key = _KEYS[pattern] = pattern.pattern.split(rb"\s", 1)[0]
    return key


def _search(
    pattern: re.Pattern[bytes], data: Buffer, start: int = 0, end: int | None = None
) -> re.Match[bytes] | None:
    """``pattern.search(data, start, end)``: the pattern's key found by ``find`` (many
    times faster over long lines than the regex engine's scan), the pattern tried only
    there."""
    key = _key(pattern)
    end = len(data) if end is None else end
    at = data.find(key, start, end)
    while at >= 0:
        found = pattern.match(data, at, end)
        if found is not None:
            return found
        at = data.find(key, at + 1, end)
    return None


def _last(pattern: re.Pattern[bytes], data: Buffer) -> int:
    """Where the last match of ``pattern`` in ``data`` starts (-1: none): its key found
    backwards. For ``BOUNDARY``, whose matches cannot overlap (no match holds its key
    twice), that is the last of ``finditer``'s."""
    key = _key(pattern)
    at = data.rfind(key)
    while at >= 0:
        if pattern.match(data, at) is not None:
            return at
        at = data.rfind(key, 0, at + len(key) - 1)
    return -1


def _versions() -> ModuleType:
    """``strategies/_claude_code_versions.py`` without the strategy registry (whose import
    discovers every strategy: ~100 ms)."""
    name = "ctxlab.engine.strategies._claude_code_versions"
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    path = Path(__file__).resolve().parent / "strategies" / "_claude_code_versions.py"
    spec = importlib.util.spec_from_file_location("_ctxlab_statusline_versions", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return module


def tail_lines(path: Path) -> tuple[list[bytes], bool]:
    """The file's lines from its last compaction boundary (that line first) to its end,
    read backwards in chunks, each searched once; (lines, whether a boundary was found)."""
    with path.open("rb") as handle:
        data, _, found = _tail(handle)
    return data.splitlines(), found


def _tail(handle: BinaryIO) -> tuple[bytes, int, bool]:
    """The bytes from the last compaction boundary's line to the end, where that end is
    (the file's size when read) and whether a boundary was found."""
    chunks: list[bytes] = []
    end = position = handle.seek(0, os.SEEK_END)
    while position > 0:
        step = min(CHUNK, position)
        position -= step
        handle.seek(position)
        chunk = handle.read(step)
        # a mark cut by the chunk's end is found with the start of the next chunk
        window = chunk + (chunks[0][: MARK_MAX - 1] if chunks else b"")
        cut = _last(BOUNDARY, window)
        if cut < 0:
            chunks.insert(0, chunk)
            continue
        start = chunk.rfind(b"\n", 0, cut) + 1
        if start == 0 and position > 0:
            # the boundary line starts in an earlier chunk: read back to its start
            head = _line_start(handle, position)
            return head + chunk + b"".join(chunks), end, True
        return chunk[start:] + b"".join(chunks), end, True
    return b"".join(chunks), end, False


def _line_start(handle: BinaryIO, position: int) -> bytes:
    """The bytes from the start of the line that holds ``position`` up to it."""
    parts: list[bytes] = []
    while position > 0:
        step = min(CHUNK, position)
        position -= step
        handle.seek(position)
        chunk = handle.read(step)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            parts.insert(0, chunk[newline + 1 :])
            break
        parts.insert(0, chunk)
    return b"".join(parts)


class Status(NamedTuple):
    used: int | None
    window: int
    version: str
    turns: TurnsEstimate
    instructions: tuple[str, ...]
    compacted: bool  # the span starts at a compaction boundary
    event: str = "auto-compact"  # what the agent calls its compaction (Gemini CLI: compression)

    def line(self) -> str:
        parts = []
        if self.used is None:
            parts.append(f"ctx ?/{_k(self.window)}")
        else:
            share = round(100 * self.used / self.window) if self.window else 0
            parts.append(f"ctx {_k(self.used)}/{_k(self.window)} {share}%")
        t = self.turns
        threshold = f" ({_k(t.threshold)})" if t.threshold else ""
        if t.turns is None:
            parts.append(f"{self.event}: ?{threshold}")
        elif t.turns == 0:
            parts.append(f"{self.event} next{threshold}")
        else:
            plural = "turn" if t.turns == 1 else "turns"
            about = [_k(t.threshold)] if t.threshold else []
            about += [t.range_text] if t.range_text else []
            detail = f" ({', '.join(about)})" if about else ""
            parts.append(f"{self.event} in ~{t.turns} {plural}{detail}")
        n = len(self.instructions)
        parts.append(f"{n} instruction{'' if n == 1 else 's'} at risk")
        return " | ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "used": self.used,
            "window": self.window,
            "version": self.version,
            "turns_to_auto_compact": self.turns.as_dict(),
            "instructions_at_risk": list(self.instructions),
            "since_compaction": self.compacted,
            "event": self.event,
        }


def _k(tokens: int) -> str:
    if tokens >= 1_000_000:  # 1M, 1.05M (Gemini's 1,048,576)
        return f"{tokens / 1_000_000:.2f}".rstrip("0").rstrip(".") + "M"
    if tokens >= 1000:
        value = f"{tokens / 1000:.1f}".removesuffix(".0")
        return f"{value}k"
    return str(tokens)


_VERSION = re.compile(rb'"version":\s*"([0-9][0-9.]*)"')


def _version(raw: bytes) -> str:
    """The Claude Code version a line names ("": none)."""
    found = _search(_VERSION, raw)
    return found.group(1).decode() if found else ""


_USAGE_KEYS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)


def _usage_numbers(usage: Any) -> tuple[int, int] | None:
    """(prompt + output, output) of a response line's usage object; None: no usage."""
    if not isinstance(usage, dict):
        return None
    total = sum(v for key in _USAGE_KEYS if type(v := usage.get(key)) is int)
    output = usage.get("output_tokens")
    return total, output if type(output) is int else 0


def block_estimate(value: Any) -> int:
    """``roughTokenCountEstimationForBlock`` of a content block as Claude Code writes it:
    the ``claude_code`` strategy's own rule (``stages.own_counts.block_tokens``) of the
    block read as the importer reads it (``RawBlock``), without building the engine's
    values."""
    return block_tokens(RawBlock(value))


def _user_record(raw: bytes) -> dict[str, Any] | None:
    """A user line that may hold instructions (not a tool result), decoded."""
    if b'"tool_result"' in raw:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None  # a line still being written, or not JSON
    return record if isinstance(record, dict) else None


def _user_texts(record: dict[str, Any]) -> list[str]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        str(b.get("text") or "")
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and b.get("text")
    ]


def is_claude_code(path: Path) -> bool:
    """A Claude Code session file: its records carry ``sessionId`` (a Codex rollout's
    first line is its ``session_meta``; a Gemini CLI session names its ``projectHash``)."""
    with path.open("rb") as handle:
        head = handle.read(65_536)
    return b'"sessionId"' in head and not (b'"session_meta"' in head or b'"projectHash"' in head)


def status_of_any(path: Path) -> Status:
    """Another agent's session (a Codex rollout, for ``--file``): parsed whole by the
    engine's importer and read by the session page's own code (slower: no status line
    of theirs runs a command, so no time budget applies)."""
    from . import importers
    from .evaluate.session_now import forecast, session_now

    parsed = importers.parse(path.read_bytes(), name=path.name)
    main = next(c for c in parsed.conversations if c.parent_id is None)
    now = session_now(main, parsed.format)
    rules = now.rules
    if not now.steps:
        turns = turns_to_trigger([], rules.threshold)
        return Status(None, rules.window, rules.version, turns, (), False, rules.event)
    last = now.steps[-1]
    ahead = forecast(now, last)
    labels = tuple(str(i["label"]) for i in ahead.instructions_at_risk)
    compacted = last.span_start > 0
    used = last.count if last.count is not None else ahead.turns.count  # the last reported
    return Status(used, rules.window, rules.version, ahead.turns, labels, compacted, rules.event)


KEPT = RATE_TURNS + 2  # responses kept: the rule reads the last RATE_TURNS + 1

# A response as the span keeps it: (message id, prompt + output of its last line with usage
# (-1: none yet), that line's output, the estimate of all its blocks, of its first block).
Response = tuple[str, int, int, int, int]


def _merge(older: Response, newer: Response) -> Response:
    """Two lines of one response (the importer's one message): the newer line's usage
    (when it has one), the blocks of both."""
    numbers = newer[1:3] if newer[1] >= 0 else older[1:3]
    return (older[0], *numbers, older[3] + newer[3], older[4])


def _same(response: Response, kept: list[Response]) -> bool:
    return bool(response[0]) and bool(kept) and kept[-1][0] == response[0]


class Span:
    """What the line needs of the lines since the last compaction boundary: the last
    ``KEPT`` responses (``Response``), the instruction sources' labels, the last line's
    ``version``. Fed line by line (``feed``: the cache's successive calls) or
    made from a tail read at once (``of_lines``): the same state either way."""

    __slots__ = ("compacted", "lines", "responses", "instructions", "version")

    compacted: bool  # the span starts at a compaction boundary
    lines: int
    responses: list[Response]  # oldest first
    instructions: list[str]
    version: str

    def __init__(
        self,
        compacted: bool = False,
        lines: int = 0,
        responses: list[Response] | None = None,
        instructions: list[str] | None = None,
        version: str = "",
    ) -> None:  # (not a dataclass: ``dataclasses`` cost each call ~10 ms)
        self.compacted, self.lines, self.version = compacted, lines, version
        self.responses = [] if responses is None else responses
        self.instructions = [] if instructions is None else instructions

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Span) and self.as_dict() == other.as_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Span({self.as_dict()!r})"

    @classmethod
    def of_lines(cls, lines: Sequence[bytes], compacted: bool) -> Span:
        """The span of a tail read (the lines from its boundary on): the responses read
        newest first, only as many as the rule needs."""
        span = cls(compacted=compacted)
        newest: list[Response] = []
        for raw in reversed(lines):
            if len(newest) > KEPT:
                break
            response = _response(raw)
            if response is not None:
                _take_older(newest, response)
        span.responses = newest[KEPT - 1 :: -1]  # (the one more read: maybe not all of it)
        for raw in lines:
            span._read(raw, responses=False)
        span.version = _version(lines[-1]) if lines else ""
        return span

    @classmethod
    def of_buffer(cls, data: Buffer, start: int, end: int, compacted: bool) -> Span:
        """``of_lines`` of the complete lines ``data[start:end]`` (each ending in a
        newline, none holding a carriage return), read where they are: only the lines
        that can matter (responses, user lines without a tool result) are copied."""
        span = cls(compacted=compacted)
        newest: list[Response] = []
        stop = end - 1  # the newline that ends the line
        while stop >= start and len(newest) <= KEPT:
            first = max(start, data.rfind(b"\n", start, stop) + 1)
            if _first_type(data, first, stop) in (b"message", b"assistant"):
                response = _response(data[first:stop])
                if response is not None:
                    _take_older(newest, response)
            stop = first - 1
        span.responses = newest[KEPT - 1 :: -1]
        at = last_at = start
        while at < end:
            stop = data.find(b"\n", at, end)
            index = span.lines
            span.lines += 1
            # the first "type" first: near the line's start, the other test reads all of it
            if _first_type(data, at, stop) == b"user" and data.find(b'"tool_result"', at, stop) < 0:
                span.instructions.extend(_user_sources(index, data[at:stop]))
            last_at, at = at, stop + 1
        if span.lines:
            span.version = _version(data[last_at : at - 1])
        return span

    def feed(self, raw: bytes) -> None:
        """One more line of the file (a boundary starts the span again)."""
        if _search(BOUNDARY, raw) is not None:
            self.compacted, self.lines = True, 0
            self.responses, self.instructions = [], []
        self.version = _version(raw)
        self._read(raw, responses=True)

    def _read(self, raw: bytes, *, responses: bool) -> None:
        index = self.lines
        self.lines += 1
        if responses:
            response = _response(raw)
            if response is not None:
                kept = self.responses
                if _same(response, kept):
                    kept[-1] = _merge(kept[-1], response)
                else:
                    kept.append(response)
                    del kept[:-KEPT]
                return
        self.instructions.extend(_user_sources(index, raw))

    def copy(self) -> Span:
        return Span(
            self.compacted, self.lines, list(self.responses), list(self.instructions), self.version
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "compacted": self.compacted,
            "lines": self.lines,
            "responses": [list(r) for r in self.responses],
            "instructions": self.instructions,
            "version": self.version,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Span:
        """A cached span; ValueError when it is not one."""
        if not isinstance(data, dict):
            raise ValueError("no span")
        compacted, lines = data.get("compacted"), data.get("lines")
        responses, found = data.get("responses"), data.get("instructions")
        version = data.get("version")
        if not (
            isinstance(compacted, bool)
            and isinstance(lines, int)
            and isinstance(version, str)
            and isinstance(found, list)
            and all(isinstance(label, str) for label in found)
            and isinstance(responses, list)
            and len(responses) <= KEPT
            and all(
                isinstance(r, list)
                and len(r) == 5
                and isinstance(r[0], str)
                and all(type(n) is int for n in r[1:])
                for r in responses
            )
        ):
            raise ValueError("not a span")
        kept = [(str(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in responses]
        return cls(compacted, lines, kept, [str(label) for label in found], version)


def _take_older(newest: list[Response], response: Response) -> None:
    """``response`` read before those of ``newest`` (newest first): one more line of the
    oldest one read, or an older response."""
    if _same(response, newest):
        newest[-1] = _merge(response, newest[-1])
    else:
        newest.append(response)


def _response(raw: bytes) -> Response | None:
    """A main-chain response line (``Response``; usage -1: the line has none)."""
    # the first "type" first: it is near the line's start, the other tests read all of it
    if _first_type(raw) not in (b"message", b"assistant"):
        return None
    if _search(ASSISTANT, raw) is None or _search(SIDECHAIN, raw) is not None:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None  # a line still being written, or not JSON
    message = record.get("message") if isinstance(record, dict) else None
    if not isinstance(message, dict) or record.get("type") != "assistant":
        return None
    numbers = _usage_numbers(message.get("usage"))
    content = message.get("content")
    if isinstance(content, str):
        blocks = [block_estimate(content)] if content else []
    elif isinstance(content, dict):
        blocks = [block_estimate(content)]
    else:
        blocks = [block_estimate(b) for b in content] if isinstance(content, list) else []
    found_id = message.get("id")
    total, output = numbers if numbers is not None else (-1, 0)
    return (found_id if isinstance(found_id, str) else "", total, output, sum(blocks),
            blocks[0] if blocks else 0)  # fmt: skip


def _user_sources(index: int, raw: bytes) -> list[str]:
    """The labels of the instruction sources of a user line (``evaluate.instructions``,
    but CLAUDE.md: Claude Code puts it back by itself)."""
    if b'"tool_result"' in raw:  # (``_user_record``'s first test, the cheapest)
        return []
    if _first_type(raw) != b"user":  # near the line's start: the next tests read it all
        return []
    if _search(USER, raw) is None or _search(SIDECHAIN, raw) is not None:
        return []
    record = _user_record(raw)
    texts = _user_texts(record) if record is not None else []
    if not any(may_hold_source(text) for text in texts):
        return []  # (most lines: the rule's machinery is not even imported)
    # ``instructions.message_sources``' rule on the texts (``instruction_marks``), with the
    # ``instructions`` facts alone: neither the engine's values nor the fact extraction
    from .core.harness import typed_text
    from .evaluate.instruction_sentences import instruction_sentences

    texts = [text for text in texts if text]  # (the message's text blocks)
    found = injected_sources(texts)
    meta = record is not None and record.get("isMeta") is True
    if not found and typed_text("\n".join(texts), {"meta"} if meta else frozenset()):
        typed = {s for text in texts for s in instruction_sentences(text)}
        found = constraint_sources(typed)
    return [label for kind, label, _ in found if not reattached("claude_code", kind)]


def _kept_head(boundary: bytes) -> str:
    """The first kept message's uuid of a partial compaction's boundary line (Claude Code
    2.1.2xx ``compactMetadata.preservedSegment``: the messages from ``headUuid`` to
    ``tailUuid``, written just before the boundary, stay in context after the summary);
    "" for a boundary that kept none."""
    if b'"preservedSegment"' not in boundary:
        return ""
    try:
        record = json.loads(boundary)
        head = record["compactMetadata"]["preservedSegment"]["headUuid"]
    except (ValueError, KeyError, TypeError):
        return ""
    return head if isinstance(head, str) else ""


def _kept_sources(data: Buffer, boundary_start: int) -> list[str]:
    """The instruction sources in the segment a partial compaction kept (the lines from its
    head's to the boundary's, ``data[:boundary_start]`` holding them): still in context,
    so at risk at the next compaction as the session page counts them."""
    end = data.find(b"\n", boundary_start)
    head = _kept_head(bytes(data[boundary_start : len(data) if end < 0 else end]))
    if not head:
        return []
    mark = re.compile(rb'"uuid":\s*"' + re.escape(head.encode()) + rb'"')
    at = data.rfind(b'"' + head.encode() + b'"', 0, boundary_start)
    while at >= 0:  # the head's own line (its uuid), not a later line's parentUuid
        line = data.rfind(b"\n", 0, at) + 1
        if _search(mark, data, line, at + len(head) + 2) is not None:
            break
        at = data.rfind(b'"' + head.encode() + b'"', 0, at)
    if at < 0:
        return []  # the segment is not in this file
    sources: list[str] = []
    while line < boundary_start:
        stop = data.find(b"\n", line, boundary_start)
        stop = boundary_start if stop < 0 else stop
        sources.extend(_user_sources(0, bytes(data[line:stop])))
        line = stop + 1
    return sources


def status_of(path: Path, payload: dict[str, Any] | None = None) -> Status:
    """The status of the Claude Code session at ``path`` (``payload``: the statusline JSON),
    from its span read at once (no cache)."""
    with path.open("rb") as handle:
        span, _, rest = _read_span(handle)
    if rest:
        span.feed(rest)
    return _status(span, payload or {})


def _read_span(handle: BinaryIO) -> tuple[Span, int, bytes]:
    """The span of the file: from the line of its last compaction boundary, read where it
    lies (the file mapped, not copied); (the span of its complete lines, the offset after
    them, the line still being written). A file with carriage returns (no Claude Code
    file has one) is split as ``tail_lines`` splits it."""
    size = os.fstat(handle.fileno()).st_size
    if size == 0:
        return Span(), 0, b""
    try:
        with mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as data:
            cut = _last(BOUNDARY, data)
            start = data.rfind(b"\n", 0, cut) + 1 if cut >= 0 else 0
            span, done, rest = _span_in(data, start, size, cut >= 0)
            if cut >= 0:
                span.instructions[:0] = _kept_sources(data, start)
            return span, done, rest
    except OSError:  # a file that cannot be mapped: read backwards in chunks
        read, end, compacted = _tail(handle)
        span, done, rest = _span_in(read, 0, len(read), compacted)
        if compacted and _kept_head(read.split(b"\n", 1)[0]):  # (rare: the whole file)
            handle.seek(0)
            whole = handle.read(end)
            span.instructions[:0] = _kept_sources(whole, end - len(read))
        return span, end - len(read) + done, rest


def _span_in(data: Buffer, start: int, size: int, compacted: bool) -> tuple[Span, int, bytes]:
    """The span of ``data[start:size]`` (from a boundary's line, or the file's start)."""
    done = max(start, data.rfind(b"\n", start, size) + 1)  # a line being written: not kept
    if data.find(b"\r", start, size) >= 0:
        span = Span.of_lines(data[start:done].splitlines(), compacted)
    else:
        span = Span.of_buffer(data, start, done, compacted)
    return span, done, data[done:size]


# --- the cache: successive calls read only what the file gained ---------------------------

CACHE_FORMAT = 2  # 2: a response keeps its output and block estimates
PRINT_BYTES = 4096  # the file's first and last bytes read, fingerprinted
CACHE_DAYS = 14  # a session's file untouched this long goes when another session starts


def cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where the spans are kept: ``$XDG_CACHE_HOME/ctxlab/statusline`` (else
    ``~/.cache/...``); None when ``CTXLAB_STATUSLINE_CACHE`` is ``0`` (or ``off``) or no
    home directory is known."""
    env = os.environ if environ is None else environ
    if env.get("CTXLAB_STATUSLINE_CACHE", "").strip().lower() in ("0", "off", "no", "false"):
        return None
    base = env.get("XDG_CACHE_HOME") or ""
    try:
        root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    except RuntimeError:  # no home directory to be found: no cache
        return None
    return root / "ctxlab" / "statusline"


def cache_file(directory: Path, path: Path) -> Path:
    """One file per transcript path (its name: two checksums of the path)."""
    name = os.fsencode(os.path.abspath(path))
    return directory / f"{zlib.crc32(name):08x}{zlib.adler32(name):08x}.json"


def _fingerprint(handle: BinaryIO, offset: int) -> list[int]:
    """Checksums of the first and the last ``PRINT_BYTES`` of the file's first ``offset``
    bytes: a file rewritten or cut since is not the one the span was read from."""
    handle.seek(0)
    head = handle.read(min(PRINT_BYTES, offset))
    start = max(0, offset - PRINT_BYTES)
    handle.seek(start)
    tail = handle.read(offset - start)
    return [zlib.crc32(head), zlib.crc32(tail), len(head) + len(tail)]


def _load(entry: Path, path: Path, handle: BinaryIO) -> tuple[Span, int] | None:
    """The cached span of ``path`` and the offset it was read up to, when the file is still
    the one it was read from (same inode, not shorter, same first and last bytes)."""
    try:
        data = json.loads(entry.read_bytes())
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
            return None
        stat = os.fstat(handle.fileno())
        offset = data.get("offset")
        if (
            data.get("path") != os.path.abspath(path)
            or data.get("file") != [stat.st_dev, stat.st_ino]
            or type(offset) is not int
            or not 0 < offset <= stat.st_size
            or data.get("print") != _fingerprint(handle, offset)
        ):
            return None
        return Span.from_dict(data.get("span")), offset
    except (OSError, ValueError, RecursionError):
        return None  # no cache, a corrupt one: read the file


def _save(entry: Path, path: Path, handle: BinaryIO, span: Span, offset: int) -> None:
    """Write the span atomically (a temporary file renamed); never fails."""
    try:
        stat = os.fstat(handle.fileno())
        data = {
            "format": CACHE_FORMAT,
            "path": os.path.abspath(path),
            "file": [stat.st_dev, stat.st_ino],
            "offset": offset,
            "print": _fingerprint(handle, offset),
            "span": span.as_dict(),
        }
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
        try:  # the user's own: the labels quote their instructions
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w") as out:
                out.write(json.dumps(data))
            os.replace(temporary, entry)
        finally:
            temporary.unlink(missing_ok=True)
    except (OSError, ValueError):
        pass  # an unwritable cache: the next call reads the file again


def _prune(directory: Path) -> None:
    """Remove the files of sessions not read for ``CACHE_DAYS`` (run on a full read only:
    a session new to the cache); never fails."""
    oldest = time.time() - CACHE_DAYS * 86_400
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name.endswith(".json") and entry.stat().st_mtime < oldest:
                    os.unlink(entry.path)
    except OSError:
        pass


def cached_status_of(
    path: Path, payload: dict[str, Any] | None = None, directory: Path | None = None
) -> Status:
    """``status_of``, reading only the bytes the file gained since the last call (the span
    kept in ``directory``, default ``cache_dir()``); the same status."""
    directory = directory or cache_dir()
    if directory is None:
        return status_of(path, payload)
    entry = cache_file(directory, path)
    with path.open("rb") as handle:
        cached = _load(entry, path, handle)
        if cached is None:
            span, offset, rest = _read_span(handle)
            done = offset
        else:
            span, offset = cached
            handle.seek(offset)
            gained = handle.read()
            done = gained.rfind(b"\n") + 1
            lines = gained[:done].splitlines()
            if any(b'"preservedSegment"' in raw and _search(BOUNDARY, raw) for raw in lines):
                # a partial compaction keeps lines read before: the file is read again
                span, offset, rest = _read_span(handle)
            else:
                for raw in lines:
                    span.feed(raw)
                offset, rest = offset + done, gained[done:]
        if offset and (done or cached is None):  # (nothing new: the cache stands)
            _save(entry, path, handle, span, offset)
        if cached is None:
            _prune(directory)
    if rest:
        span = span.copy()
        span.feed(rest)
    return _status(span, payload or {})


def _status(span: Span, payload: dict[str, Any]) -> Status:
    version = str(payload.get("version") or "") or span.version
    cv = _versions()
    rules = cv.rules_for(version)
    # the count after each response, by the claude_code strategy's rule
    counts = [
        cv.count_after_response(rules, total, output, own, own - first)
        for _, total, output, own, first in span.responses
        if total > 0
    ][-(RATE_TURNS + 1) :]
    window = _window(payload)
    threshold = claude_code_threshold(window, rules.output_reserve, rules.buffer)
    turns = turns_to_trigger(counts, threshold)
    found = tuple(span.instructions)
    return Status(counts[-1] if counts else None, window, version, turns, found, span.compacted)


def _window(payload: dict[str, Any]) -> int:
    context = payload.get("context_window")
    size = context.get("context_window_size") if isinstance(context, dict) else None
    if isinstance(size, int) and size > 0:
        return size
    model = payload.get("model")
    model_id = str(model.get("id") or "") if isinstance(model, dict) else ""
    return LARGE_WINDOW if "[1m]" in model_id.lower() else DEFAULT_WINDOW


USAGE = """\
usage: ctxlab statusline [--file PATH] [--json | --hook] [--no-cache]

Reads Claude Code's statusline JSON on stdin (its transcript_path), or the session
at PATH, and prints: context used / window, turns to auto-compact, instructions at risk.
What was read of a session is kept in $XDG_CACHE_HOME/ctxlab/statusline (~/.cache/...),
so the next call reads only what the file gained; --no-cache (or the environment variable
CTXLAB_STATUSLINE_CACHE=0) reads the file without it. --hook prints the line as a hook's
{"systemMessage": ...} (Gemini CLI's hooks get the same transcript_path on stdin).
"""


def main(argv: Sequence[str] | None = None, stdin: TextIO | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if {"-h", "--help"} & set(args):
        print(USAGE, end="")
        return 0
    as_json = "--json" in args
    hook = "--hook" in args and not as_json

    def say(line: str) -> None:  # a hook prints JSON only (shown to the user, not the model)
        print(json.dumps({"systemMessage": line}) if hook else line)

    path: Path | None = None
    if "--file" in args:
        at = args.index("--file")
        if at + 1 >= len(args):
            say("ctxlab statusline: --file needs a path")
            return 2
        path = Path(args[at + 1]).expanduser()
    payload: dict[str, Any] = {}
    if path is None:
        try:
            payload = json.loads((stdin or sys.stdin).read() or "{}")
        except ValueError:
            say("ctxlab: no statusline JSON on stdin")
            return 0
        given = payload.get("transcript_path") if isinstance(payload, dict) else None
        if not given:
            say("ctxlab: no transcript_path yet")
            return 0
        path = Path(str(given)).expanduser()
    if not path.is_file():
        say(f"ctxlab: no transcript at {path.name}")
        return 0
    try:
        if not is_claude_code(path):
            status = status_of_any(path)
        elif "--no-cache" in args:
            status = status_of(path, payload)
        else:
            status = cached_status_of(path, payload)
    except (OSError, ValueError, StopIteration) as exc:  # a status line must print something
        say(f"ctxlab: {type(exc).__name__}")
        return 0
    if as_json:
        print(json.dumps(status.as_dict()))
    else:
        say(status.line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
