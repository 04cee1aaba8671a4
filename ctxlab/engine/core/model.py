"""The engine's vocabulary: a conversation as frozen values.

Importers build these; strategies read them and never mutate them.
Source message indexes (positions in ``Conversation.messages``) are the stable
identity every replay, event and fate refers to.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class BlockKind(StrEnum):
    TEXT = "text"
    THINKING = "thinking"
    TOOL_USE = "tool_use"
    TOOL_RESULT = "tool_result"
    # image / audio / video / file: type, size, a URL in `text` or the bytes in `data`
    MEDIA = "media"
    OPAQUE = "opaque"  # encrypted reasoning, server compaction items, unknown payloads: size only


class _JsonSlot:
    """A slot outside the dataclass fields (not compared, hashed, shown, copied nor
    pickled): the tool input's JSON, kept on its block once made (``input_json``)."""

    __slots__ = ("_input_json",)


@dataclass(frozen=True, slots=True, weakref_slot=True)  # weakref: ``BlockValues`` memos
class Block(_JsonSlot):
    """One content block.

    - text / thinking: ``text``.
    - tool_use: ``tool_id``, ``tool_name``, ``tool_input`` (parsed JSON value, or the raw
      string when the source's arguments were not valid JSON).
    - tool_result: ``tool_id`` (the call it answers), ``text`` (the model-visible output
      flattened to text), ``parts`` (the original list form when the output was a list of
      blocks), ``is_error``.
    - media: ``media_type`` and ``size`` (bytes of the decoded payload, or of the URL);
      ``text`` holds a URL when the source referenced one; ``data`` the payload as base64
      when the source embedded the bytes (kept, never counted: a media block is counted by
      its kind, size and type, as the originals do).
    - opaque: ``raw_type`` (the source's type name) and ``size`` (bytes); ``text`` may carry
      a short readable description, never the payload.
    ``raw_type`` always records the source's own block type (``redacted_thinking``,
    ``function_call_output``, ``compaction`` ...).
    """

    kind: BlockKind
    text: str = ""
    tool_id: str = ""
    tool_name: str = ""
    tool_input: Any = None
    is_error: bool = False
    media_type: str = ""
    size: int = 0
    raw_type: str = ""
    parts: tuple[Block, ...] = ()
    data: str = ""

    @property
    def input_json(self) -> str:
        """The tool input as compact-ish JSON (``json.dumps`` defaults, non-ASCII kept)."""
        tool_input = self.tool_input
        if isinstance(tool_input, str):
            return tool_input
        # Estimators ask for it again (1-5 times a call in a replay, far apart in steps):
        # kept on the block (a slot read, no memo table keyed by identity).
        known: str | None = getattr(self, "_input_json", None)
        if known is None:
            known = _ENCODE(tool_input)
            object.__setattr__(self, "_input_json", known)
        return known


def _input_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False)`` with the C encoder made once, not at each
    call (``JSONEncoder.encode`` makes one per value: a tenth of the realistic 20k
    transcript's 9,500 inputs' cost); no cycle check (a parsed value has none; one would
    raise RecursionError instead of ValueError)."""
    plain = json.JSONEncoder(ensure_ascii=False, check_circular=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # (no C accelerator: the encoder's own path)
        return plain.encode
    encode = make(
        None, plain.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, True
    )
    join = "".join

    def dumps(value: Any) -> str:
        if isinstance(value, str):
            return plain.encode(value)
        return join(encode(value, 0))

    return dumps


_ENCODE = _input_encoder()


class _MemoRef(weakref.ref[Block]):
    __slots__ = ("key", "value")
    key: int
    value: Any


class BlockValues(Generic[V]):
    """Values derived from blocks, each kept while its block lives (keyed by identity:
    blocks are compared by value and may hold unhashable tool inputs, which are never
    mutated after import)."""

    __slots__ = ("_refs",)

    def __init__(self) -> None:
        self._refs: dict[int, _MemoRef] = {}

    def peek(self, block: Block) -> V | None:
        ref = self._refs.get(id(block))
        if ref is not None and ref() is block:
            value: V = ref.value
            return value
        return None

    def put(self, block: Block, value: V) -> None:
        ref = _MemoRef(block, self._forget)
        ref.key, ref.value = id(block), value
        self._refs[ref.key] = ref

    def _forget(self, ref: weakref.ref[Block]) -> None:
        key = getattr(ref, "key", None)
        if key is not None and self._refs.get(key) is ref:
            del self._refs[key]


class BlockMemo(BlockValues[str]):
    """A string derived from a block, cached while the block lives (``BlockValues``)."""

    __slots__ = ()

    def get(self, block: Block, derive: Callable[[Block], str]) -> str:
        ref = self._refs.get(id(block))  # ``peek`` inlined: estimators ask at every step
        if ref is not None and ref() is block:
            known: str = ref.value
            return known
        text = derive(block)
        self.put(block, text)
        return text


INPUT_JSON_KEPT_MAX = 1024  # characters (``input_json_unkept``)


def input_json_unkept(block: Block) -> str:
    """``block.input_json`` for a caller that memoises what it derives from it (the
    reference counts of a modified message): the kept string when there is one, and a
    long one (at least ``INPUT_JSON_KEPT_MAX`` characters) is not kept for it. Asked only
    there (observation_masking, complexity_trap_summary, openhands_condenser ...), every
    call's JSON stayed for the whole replay: 17 MiB on the realistic 20k transcript."""
    tool_input = block.tool_input
    if isinstance(tool_input, str):
        return tool_input
    known: str | None = getattr(block, "_input_json", None)
    if known is None:
        known = _ENCODE(tool_input)
        if len(known) < INPUT_JSON_KEPT_MAX:
            object.__setattr__(block, "_input_json", known)
    return known


@dataclass(frozen=True, slots=True)
class Usage:
    """Provider-reported usage of one API call, normalised to disjoint buckets.

    ``input_uncached + cache_read + cache_write_5m + cache_write_1h`` is the whole prompt
    (the context size the provider saw). ``reasoning`` is the part of ``output`` spent on
    reasoning when the source reports it (it is *included* in ``output``).
    ``convention`` records how the source reported it, e.g. ``anthropic`` (input excludes
    cache buckets) or ``openai`` (prompt tokens include cached tokens).
    """

    input_uncached: int = 0
    cache_read: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    output: int = 0
    reasoning: int = 0
    convention: str = ""

    @property
    def prompt_tokens(self) -> int:
        return self.input_uncached + self.cache_read + self.cache_write_5m + self.cache_write_1h

    @property
    def context_tokens(self) -> int:
        """What the request plus its answer occupied in the window."""
        return self.prompt_tokens + self.output


@dataclass(frozen=True, slots=True)
class SourcePos:
    """Where a message came from: file name plus 1-based line, or 0-based record index."""

    file: str = ""
    line: int | None = None
    record: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else f"record {self.record}"
        return f"{self.file}:{where}" if self.file else where


# The first message of a turn whose user message sent the model nothing (OpenCode: only
# ``ignored`` text, a plugin's notice): not imported, yet a turn the agent counts.
UNSENT_USER_TURN = "unsent_user_turn"


@dataclass(frozen=True, slots=True)
class Message:
    """One message. ``flags`` mark special messages: ``meta`` (injected, not typed by the
    user), ``demonstration`` (SWE-agent few-shot), ``compact_summary`` (a summary the
    original agent injected), ``sidechain``, ``UNSENT_USER_TURN``."""

    role: Role
    blocks: tuple[Block, ...]
    source: SourcePos = SourcePos()
    timestamp: str | None = None  # ISO-8601 as in the source
    model: str = ""
    usage: Usage | None = None
    id: str = ""  # the source's own id (uuid, msg_…, event id)
    name: str = ""  # author / tool name where the source has one
    flags: frozenset[str] = frozenset()

    @property
    def text(self) -> str:
        """All text-like content joined, for display and search."""
        return "\n".join(b.text for b in self.blocks if b.text)

    @property
    def tool_uses(self) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.kind is BlockKind.TOOL_USE)

    @property
    def tool_results(self) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.kind is BlockKind.TOOL_RESULT)


@dataclass(frozen=True, slots=True)
class ToolDef:
    name: str
    description: str = ""
    parameters: Any = None  # JSON schema as in the source


@dataclass(frozen=True, slots=True)
class OriginalCompaction:
    """A compaction the original agent really performed (Claude Code compact_boundary,
    Codex ``compacted``, OpenHands condensation, server-side compaction blocks)."""

    before_index: int  # index of the first message after the compaction
    kind: str  # e.g. "compact_boundary", "compacted", "condensation", "server_compaction"
    trigger: str = ""  # auto / manual where known
    pre_tokens: int | None = None
    summary_index: int | None = None  # message holding the summary, if any
    source: SourcePos = SourcePos()
    # The user's focus text of a manual compaction (Claude Code ``/compact <text>``).
    instructions: str = ""
    # Microcompaction (Claude Code ``microcompact_boundary``): the tool calls whose results
    # were cleared, and the tokens the agent says that saved.
    cleared_tool_ids: tuple[str, ...] = ()
    tokens_saved: int | None = None
    # The agent's version that wrote this compaction (Claude Code ``version``, Codex
    # ``cli_version``), when the line says.
    agent_version: str = ""
    # Small facts of the original's own (Codex window ids, replaced item counts, ...).
    detail: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation in request order. A system prompt, when the source has one, is the
    first message with role ``system``."""

    id: str
    title: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDef, ...] = ()
    parent_id: str | None = None  # sub-agent threads point at their parent conversation
    compactions: tuple[OriginalCompaction, ...] = ()
    model: str = ""
    metadata: tuple[tuple[str, str], ...] = ()  # small key/value facts (cwd, cli version …)
    usage_convention: str = ""

    @property
    def tool_call_count(self) -> int:
        return sum(len(m.tool_uses) for m in self.messages)

    @property
    def tool_result_count(self) -> int:
        return sum(len(m.tool_results) for m in self.messages)


@dataclass(frozen=True, slots=True)
class ImportWarning:
    message: str
    where: str = ""  # "line 12", "record 3"
    count: int = 1
    code: str = ""  # a key of ``import_warnings.CODES`` (its label and meaning); "" = none


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """What an importer returns for one file."""

    format: str
    conversations: tuple[Conversation, ...]
    warnings: tuple[ImportWarning, ...] = field(default=())


class TranscriptError(ValueError):
    """A file could not be imported. Says which file, where, and what was expected."""

    def __init__(
        self,
        message: str,
        *,
        file: str = "",
        line: int | None = None,
        offset: int | None = None,
        expected: str = "",
        looks_like: str = "",
        declined: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.file, self.line, self.offset, self.expected = file, line, offset, expected
        self.reason = message
        self.looks_like = looks_like  # the format the file was read as, when one was
        # When no importer took the file: each format considered, and what it looks for
        # that the file's start does not have (not part of the one-line message).
        self.declined = declined
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.file:
            where.append(self.file)
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.offset is not None:
            where.append(f"byte {self.offset}")
        text = self.reason
        said = [f"looks like: {self.looks_like}"] if self.looks_like else []
        if self.expected:
            said.append(f"expected {self.expected}")
        if said:
            text += f" ({'; '.join(said)})"
        return f"{', '.join(where)}: {text}" if where else text

    def with_file(self, file: str) -> TranscriptError:
        return TranscriptError(
            self.reason,
            file=file,
            line=self.line,
            offset=self.offset,
            expected=self.expected,
            looks_like=self.looks_like,
            declined=self.declined,
        )
