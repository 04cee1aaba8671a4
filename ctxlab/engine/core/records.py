"""What a replay produces: steps, events, summaries, findings, as frozen values.

Storage grows with steps + events, never with steps x context size: a step's context is a
tuple of half-open source-index ranges (past ``RangeChunks.CHUNK`` of them, chunks shared
with the steps before: ``RangeChunks``), and a message's fate is not stored per step but
carried by the event that changed it (``Event.changes``). ``fates_at(events, step)``
replays those changes on demand (``apply_change`` is the one rule for how they combine).
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, TypeVar, overload

from .model import Message
from .packed import PackedTexts

Ranges = tuple[tuple[int, int], ...]  # half-open [start, end) source-index ranges


class Fate(StrEnum):
    """What a strategy did to one source message (``kept`` is the default, never stored)."""

    KEPT = "kept"
    TRUNCATED = "truncated"  # content cut in place; the modified text is in Change.message
    OFFLOADED = "offloaded"  # cut and the full text written to a file (ReplayResult.offloads)
    PRUNED = "pruned"  # replaced by a placeholder in the request view only
    SUMMARISED = "summarised"  # removed from the context and fed to a summariser
    DROPPED = "dropped"  # removed from the context without being summarised
    RESTORED = "restored"  # a request-view prune was lifted (BaseAgent recomputes per request)


REMOVED_FATES = frozenset({Fate.SUMMARISED, Fate.DROPPED})


@dataclass(frozen=True, slots=True)
class Change:
    """One message's new fate, set by an event. ``message`` is the modified message for
    truncated / offloaded / pruned fates (diff it against the original)."""

    index: int
    fate: Fate
    reason: str = ""
    message: Message | None = None
    offload_path: str = ""  # the file the notice points to (key of ReplayResult.offloads)


@dataclass(frozen=True, slots=True)
class Event:
    """Every action a strategy took. ``step`` is the first step whose request reflects it.
    ``tokens_before``/``tokens_after`` are the whole request as the strategy counts it
    (``ReplayContext.counted_tokens``: what its trigger compares), as on the run's curve."""

    id: int
    step: int
    kind: str
    messages: tuple[int, ...] = ()
    tokens_before: int = 0
    tokens_after: int = 0
    detail: Mapping[str, Any] = field(default_factory=dict)
    changes: tuple[Change, ...] = ()
    summary_id: int | None = None  # the SummaryRecord this event produced, if any


class _RenderedWhenRead:
    """A text field that may be given as a function making it, called at each read and
    never kept: a replay's summary inputs (the compacted history joined into one text,
    4 bytes a character once one emoji is in it) were most of a long replay's memory,
    and the worker reads each once to store it. Readers always get a ``str``."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> str:
        if obj is None:  # the dataclass asks for a default: there is none
            raise AttributeError(self.slot)
        source: str | Callable[[], str] = obj.__dict__[self.slot]
        return source if isinstance(source, str) else source()

    def __set__(self, obj: Any, value: str | Callable[[], str]) -> None:
        obj.__dict__[self.slot] = value  # (the record stays frozen: no other setter)


class SourceIndexes(Sequence[int]):
    """Source message indexes held as runs of consecutive ones, read as the tuple they
    stand for (iteration, ``len``, indexing, ``in``; equal to that tuple, hashed as it).

    A summary of earlier summaries lists every source message behind them again (Aider's:
    7.6 million indexes over the 640 summaries of a 20,000-message replay, 58 MiB as
    tuples); as runs each takes the room of its gaps. ``join`` chains a summary's sources
    from the earlier ones' runs without expanding them."""

    __slots__ = ("_bounds", "_len")

    def __init__(self, bounds: Iterable[int] = ()) -> None:
        """``bounds``: flat half-open runs ``start0, end0, start1, end1 ...``, each
        non-empty and not adjacent to the next (as ``join`` makes them)."""
        self._bounds = array("q", bounds)
        b = self._bounds
        self._len = sum(b[k + 1] - b[k] for k in range(0, len(b), 2))

    @classmethod
    def join(cls, parts: Iterable[int | Sequence[int]]) -> SourceIndexes:
        """The indexes of ``parts`` one after another (an int is one index)."""
        bounds = array("q")
        for part in parts:
            if isinstance(part, int):
                if bounds and bounds[-1] == part:
                    bounds[-1] = part + 1
                else:
                    bounds.extend((part, part + 1))
                continue
            if not isinstance(part, SourceIndexes):
                part = cls.join(part)
            more = part._bounds
            if not more:
                continue
            if bounds and bounds[-1] == more[0]:
                bounds[-1] = more[1]
                bounds.extend(more[2:])
            else:
                bounds.extend(more)
        return cls(bounds)

    @property
    def runs(self) -> Ranges:
        b = self._bounds
        return tuple((b[k], b[k + 1]) for k in range(0, len(b), 2))

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[int]:
        b = self._bounds
        return itertools.chain.from_iterable(map(range, b[::2], b[1::2]))

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[int, ...]: ...
    def __getitem__(self, i: int | slice) -> int | tuple[int, ...]:
        if isinstance(i, slice):
            return tuple(self)[i]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("SourceIndexes index out of range")
        b = self._bounds
        for k in range(0, len(b), 2):
            size = b[k + 1] - b[k]
            if i < size:
                return b[k] + i
            i -= size
        raise AssertionError("unreachable")  # pragma: no cover

    def __contains__(self, value: object) -> bool:
        b = self._bounds
        return isinstance(value, int) and any(b[k] <= value < b[k + 1] for k in range(0, len(b), 2))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SourceIndexes):
            return self._bounds == other._bounds  # runs are canonical (never adjacent)
        if isinstance(other, tuple):
            return len(other) == self._len and tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"SourceIndexes(runs={self.runs!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (SourceIndexes, (self._bounds,))


class RangeChunks(Sequence[tuple[int, int]]):
    """A step's context ranges when there are many, read as the tuple they stand for
    (iteration, ``len``, indexing, ``in``; equal to that tuple, hashed as it).

    A strategy that keeps most messages but drops scattered ones (Vercel's
    ``pruneMessages`` removing emptied tool messages) leaves thousands of ranges; a tuple
    of them per step made a replay O(steps x ranges) in time and memory (125 million
    range references over a 40,000-message replay). Here the ranges are immutable chunks
    of ``CHUNK`` (the last one shorter), and consecutive steps share every chunk the
    context did not change (``ReplayContext`` makes them, see ``context_ranges``)."""

    __slots__ = ("_chunks", "_len")
    CHUNK = 128

    def __init__(self, chunks: tuple[Ranges, ...]) -> None:
        """``chunks``: every one of exactly ``CHUNK`` ranges but the last (non-empty)."""
        self._chunks = chunks
        self._len = (len(chunks) - 1) * self.CHUNK + len(chunks[-1]) if chunks else 0

    @property
    def chunks(self) -> tuple[Ranges, ...]:
        return self._chunks

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return itertools.chain.from_iterable(self._chunks)

    def __reversed__(self) -> Iterator[tuple[int, int]]:
        return itertools.chain.from_iterable(map(reversed, reversed(self._chunks)))

    @overload
    def __getitem__(self, i: int) -> tuple[int, int]: ...
    @overload
    def __getitem__(self, i: slice) -> Ranges: ...
    def __getitem__(self, i: int | slice) -> tuple[int, int] | Ranges:
        if isinstance(i, slice):
            return tuple(self)[i]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("RangeChunks index out of range")
        return self._chunks[i // self.CHUNK][i % self.CHUNK]

    def __contains__(self, value: object) -> bool:
        return any(value in chunk for chunk in self._chunks)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RangeChunks):
            return self._len == other._len and tuple(self) == tuple(other)
        if isinstance(other, tuple):
            return len(other) == self._len and tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"RangeChunks({tuple(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (RangeChunks, (self._chunks,))


# A step's context: a tuple of ranges, or ``RangeChunks`` (read the same) when there are
# more than ``RangeChunks.CHUNK``.
StepRanges = Ranges | RangeChunks


# Not slots: the ``input`` descriptor needs the class attribute a slot would replace.
@dataclass(frozen=True)
class SummaryRecord:
    """One summariser call: the exact input (system prompt + messages, rendered as text)
    and the output, with usage. ``error`` is set when the call failed. ``input`` may be
    given as a function rendering it (``_RenderedWhenRead``); it reads as a ``str``."""

    id: int
    step: int
    # Required all the same (its ``__get__`` gives the dataclass no default): mypy reads
    # the descriptor as one.
    input: _RenderedWhenRead = _RenderedWhenRead()
    output: str  # type: ignore[misc]
    input_tokens: int = 0
    output_tokens: int = 0
    usage_estimated: bool = True
    error: str = ""
    summarizer: str = ""
    # Source messages the summariser was shown: a tuple, or ``SourceIndexes`` (as runs)
    # when a strategy chains them from earlier summaries'.
    messages: Sequence[int] = ()


@dataclass(frozen=True, slots=True)
class Finding:
    """A broken invariant at one step."""

    step: int
    kind: str  # see FINDING_KINDS in findings.py
    messages: tuple[int, ...] = ()
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Zones:
    """How the request at one step divides the window, in strategy-estimator tokens."""

    system: int
    tools: int
    summary: int
    compactable: int
    reserved_recent: int
    output_reserve: int
    free: int
    window: int
    threshold: int | None
    # What the strategy counts beyond the parts above: a provider's reported usage includes
    # a system prompt, tool definitions and attachments the transcript does not show.
    unseen: int = 0
    # Of what the usage reports, context the transcript file does not hold at all (a file
    # that starts after a compaction, a checkpoint cut from a longer session): its own zone,
    # not strategy overhead.
    not_in_file: int = 0

    def as_dict(self) -> dict[str, int | None]:
        # ``not_in_file`` only where a strategy found some: every other step's record (and
        # the digests that pin them) reads as it did before the zone existed.
        out = {
            "system": self.system,
            "tools": self.tools,
            "unseen": self.unseen,
            "summary": self.summary,
            "compactable": self.compactable,
            "reserved_recent": self.reserved_recent,
            "output_reserve": self.output_reserve,
            "free": self.free,
            "window": self.window,
            "threshold": self.threshold,
        }
        if self.not_in_file:
            out["not_in_file"] = self.not_in_file
        return out


@dataclass(frozen=True, slots=True)
class StepTokens:
    strategy: int
    reference: int
    reported: int | None = None


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One inference call of the original agent, as the strategy would have sent it.

    ``events``/``summaries``/``findings`` are those that first apply at this step, so a
    streaming consumer gets everything by reading the records alone.
    ``pending`` names asynchronous work started but not yet applied (it lands next step).
    """

    index: int
    source_index: int
    tokens: StepTokens
    zones: Zones
    context: StepRanges  # a tuple, or RangeChunks (read the same) when they are many
    summary_id: int | None = None  # the summary present in this request, if any
    events: tuple[Event, ...] = ()
    summaries: tuple[SummaryRecord, ...] = ()
    findings: tuple[Finding, ...] = ()
    pending: tuple[str, ...] = ()

    @property
    def context_indexes(self) -> list[int]:
        return expand(self.context)

    @property
    def context_len(self) -> int:
        return sum(end - start for start, end in self.context)


_T = TypeVar("_T")


def _positional_builder(cls: type[_T]) -> Callable[..., _T]:
    """A constructor taking every field positionally that sets the slots through their
    member descriptors: the frozen dataclass ``__init__`` routes each field through
    ``object.__setattr__`` by name, which dominated building a record per step. The
    instance is the same frozen value (equality, hash, repr and pickling unchanged)."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    lines = [f"def build({', '.join(names)}):", "    obj = _new(_cls)"]
    for name in names:
        namespace[f"_set_{name}"] = getattr(cls, name).__set__
        lines.append(f"    _set_{name}(obj, {name})")
    lines.append("    return obj")
    exec("\n".join(lines), namespace)  # noqa: S102 - code built from the field names only
    build: Callable[..., _T] = namespace["build"]
    return build


# Hot-path constructors (one StepRecord per inference call): every field, in field order.
new_step_record = _positional_builder(StepRecord)
new_zones = _positional_builder(Zones)
new_step_tokens = _positional_builder(StepTokens)
new_change = _positional_builder(Change)  # one per message an event changes


@dataclass(slots=True)
class ReplayResult:
    """A whole replay (collected by ``replay.run``)."""

    strategy: str
    params: dict[str, Any]
    estimator: str
    summarizer: str
    message_count: int
    steps: list[StepRecord] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    summaries: list[SummaryRecord] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # file path -> full text; a replay's own packs the long ones (a stored one read back: a dict)
    offloads: MutableMapping[str, str] = field(default_factory=PackedTexts)
    metrics: dict[str, Any] = field(default_factory=dict)


def event_brief(
    seq: int | None, step: int, kind: str, tokens_before: int, tokens_after: int, messages: int
) -> dict[str, Any]:
    """An event in a list (live progress, the curve's markers, a step's events): the one
    short JSON shape, ``messages`` the number of messages it touched."""
    return {
        "seq": seq,
        "step": step,
        "kind": kind,
        "tokens_before": tokens_before,
        "tokens_after": tokens_after,
        "messages": messages,
    }


def event_json(event: Event, *, id_key: str = "id", summary_key: str = "summary") -> dict[str, Any]:
    """An event in full (the CLI's JSON, the run page's JSON twin, a stored run's row): the
    one long JSON shape. Stored runs call the event id ``seq`` (``id_key``) and their rows
    the summary's ``summary_seq`` (``summary_key``)."""
    return {
        id_key: event.id,
        "step": event.step,
        "kind": event.kind,
        "messages": list(event.messages),
        "tokens_before": event.tokens_before,
        "tokens_after": event.tokens_after,
        "detail": dict(event.detail),
        summary_key: event.summary_id,
    }


def expand(ranges: Iterable[tuple[int, int]]) -> list[int]:
    out: list[int] = []
    for start, end in ranges:
        out.extend(range(start, end))
    return out


def to_ranges(indexes: list[int]) -> Ranges:
    """Sorted-or-not index list -> ranges preserving order (runs of +1)."""
    out: list[tuple[int, int]] = []
    start = prev = None
    for i in indexes:
        if prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None and prev is not None:
            out.append((start, prev + 1))
        start = prev = i
    if start is not None and prev is not None:
        out.append((start, prev + 1))
    return tuple(out)


def in_ranges(ranges: Iterable[tuple[int, int]], index: int) -> bool:
    return any(start <= index < end for start, end in ranges)


V = TypeVar("V")


def apply_change(current: dict[int, V], index: int, fate: Fate, value: V) -> V | None:
    """Record message ``index``'s new fate in ``current`` (index -> value, non-kept fates
    only) and return the value it replaced. The one rule every fate reader follows: a later
    change replaces an earlier one, and ``restored`` clears an earlier request-view prune
    (the message is back to kept)."""
    old = current.pop(index, None)
    if fate is not Fate.RESTORED:
        current[index] = value
    return old


def fates_at(events: list[Event], step: int) -> dict[int, tuple[Change, int]]:
    """Every non-kept fate in force at ``step``: index -> (change, event id)."""
    out: dict[int, tuple[Change, int]] = {}
    for event in events:
        if event.step > step:
            break
        for change in event.changes:
            apply_change(out, change.index, change.fate, (change, event.id))
    return out
