"""Read models for the run inspection pages: curves, the context at a step, fates, diffs.

Designed for runs over 20,000-message transcripts within the page budgets: steps are read
with ``values_list`` of a few columns; fates come from a compact *fate log* (one tuple per
change, no message bodies) built once per finished run and cached; a step's message list
reads only the visible page of messages and only the events whose modified versions it
shows. Nothing here is O(steps x context).
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, transaction

from ctxlab.engine import codec
from ctxlab.engine.extract import KINDS
from ctxlab.engine.extract import VERSION as EXTRACTOR_VERSION
from ctxlab.engine.heap import existing_heap_frozen
from ctxlab.engine.lost import (
    CompactionLoss,
    FactIndex,
    LostFact,
    Retention,
    analyse,
    analyse_parts,
)
from ctxlab.engine.lost import message_text as engine_message_text
from ctxlab.engine.lru import BoundedLRU
from ctxlab.engine.model import Message as EngineMessage
from ctxlab.engine.records import Event, Fate, ReplayResult, StepRecord, StepTokens, Zones
from sessions_app.models import Message

from .charts import EventPoint, Series
from .models import Run, RunAnalysis, RunEvent, RunStatus, RunStep

log = logging.getLogger(__name__)

PER_PAGE = 50
CACHE_ENTRIES = 256  # derived values of finished runs (curves, fate logs, retention)
FATES = tuple(f.value for f in Fate if f is not Fate.RESTORED)
ZONE_ORDER = (
    ("system", "System prompt"),
    ("tools", "Tool definitions"),
    ("unseen", "Strategy overhead"),
    ("summary", "Summary"),
    ("compactable", "Compactable history"),
    ("reserved_recent", "Reserved recent"),
    ("output_reserve", "Output reserve"),
    ("free", "Free"),
)
_FATE_CODE = {f.value: i for i, f in enumerate(Fate)}
_FATES_BY_CODE = tuple(Fate)


def _cache_key(run: Run, name: str) -> str | None:
    """Finished runs never change: cache their derived data (key includes finish time)."""
    if run.status != RunStatus.DONE or run.finished_at is None:
        return None
    return f"{name}:{run.pk}:{run.finished_at.timestamp()}"


# A small in-process LRU of immutable derived values. Not Django's cache: its backends
# pickle every value on get, which costs more than some of the pages' budgets (a fate log of
# 100K changes unpickles in ~90 ms).
MEMO: BoundedLRU[Any] = BoundedLRU(CACHE_ENTRIES)


def cached(run: Run, name: str, build: Any) -> Any:
    """``build()``, memoised while the run stays finished."""
    key = _cache_key(run, name)
    if key is None:
        return build()
    value = MEMO.get(key)
    if value is None:
        value = build()
        MEMO.set(key, value)
    return value


def cached_many(runs: Sequence[Run], name: str, build: Any) -> Any:
    """``build()`` over several runs, memoised while all of them stay finished."""
    keys = [_cache_key(run, name) for run in runs]
    if any(k is None for k in keys):
        return build()
    key = "|".join(k for k in keys if k)
    value = MEMO.get(key)
    if value is None:
        value = build()
        MEMO.set(key, value)
    return value


# --- the curve ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Curve:
    series: Series
    events: tuple[EventPoint, ...]
    window: int | None
    threshold: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": list(self.series.steps),
            "source": list(self.series.source),
            "strategy": list(self.series.strategy),
            "reference": list(self.series.reference),
            "reported": list(self.series.reported),
            "window": self.window,
            "threshold": self.threshold,
            "events": [
                {
                    "step": e.step,
                    "kind": e.kind,
                    "tokens_before": e.tokens_before,
                    "tokens_after": e.tokens_after,
                    "messages": e.messages,
                }
                for e in self.events
            ],
        }


def curve(run: Run) -> Curve:
    return cached(run, "curve", lambda: _curve(run))


def _curve(run: Run) -> Curve:
    rows = list(
        RunStep.objects.filter(run=run)
        .order_by("index")
        .values_list(
            "index", "source_index", "tokens_strategy", "tokens_reference", "tokens_reported"
        )
    )
    series = Series(
        steps=[r[0] for r in rows],
        source=[r[1] for r in rows],
        strategy=[r[2] for r in rows],
        reference=[r[3] for r in rows],
        reported=[r[4] for r in rows],
    )
    events = tuple(
        EventPoint(step, kind, before, after, len(messages))
        for step, kind, before, after, messages in RunEvent.objects.filter(run=run)
        .order_by("seq")
        .values_list("step", "kind", "tokens_before", "tokens_after", "messages")
    )
    zones: dict[str, Any] = {}
    if rows:
        zones = (
            RunStep.objects.filter(run=run, index=rows[-1][0]).values_list("zones", flat=True)[0]
            or {}
        )
    threshold = run.metrics.get("threshold") if run.metrics else None
    return Curve(
        series=series,
        events=events,
        window=zones.get("window") or None,
        threshold=threshold if threshold is not None else zones.get("threshold"),
    )


# --- the fate log ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FateLog:
    """Every change of a run without message bodies, in event order: parallel tuples
    (step, event seq, message index, fate code), plus two indexes built once: each
    message's entry positions, and the non-kept fate counts after each step with changes."""

    steps: tuple[int, ...]
    seqs: tuple[int, ...]
    indexes: tuple[int, ...]
    fates: tuple[int, ...]
    positions: dict[int, tuple[int, ...]]
    count_steps: tuple[int, ...]
    counts: tuple[dict[str, int], ...]

    def upto(self, step: int) -> int:
        """How many entries apply at ``step`` (events are ordered by step)."""
        return bisect_right(self.steps, step)

    def fates_at(
        self, step: int, indexes: Iterable[int] | None = None
    ) -> dict[int, tuple[Fate, int]]:
        """Non-kept fates in force at ``step``: index -> (fate, event seq). With
        ``indexes``, only their own entries are read."""
        if indexes is None:
            ks: Iterable[int] = range(self.upto(step))
        else:
            ks = sorted(
                k for i in indexes for k in self.positions.get(i, ()) if self.steps[k] <= step
            )
        out: dict[int, tuple[Fate, int]] = {}
        for k in ks:
            i = self.indexes[k]
            fate = _FATES_BY_CODE[self.fates[k]]
            if fate is Fate.RESTORED:
                out.pop(i, None)
            else:
                out[i] = (fate, self.seqs[k])
        return out

    def counts_at(self, step: int) -> dict[str, int]:
        """How many messages have each non-kept fate at ``step``."""
        pos = bisect_right(self.count_steps, step) - 1
        return dict(self.counts[pos]) if pos >= 0 else {}

    def final(self) -> dict[int, Fate]:
        return {i: fate for i, (fate, _) in self.fates_at(10**12).items()}


def _build_fate_log(
    steps: list[int], seqs: list[int], indexes: list[int], fates: list[int]
) -> FateLog:
    positions: dict[int, list[int]] = {}
    current: dict[int, str] = {}
    counter: Counter[str] = Counter()
    count_steps: list[int] = []
    counts: list[dict[str, int]] = []
    for k, (step, i, code) in enumerate(zip(steps, indexes, fates, strict=True)):
        positions.setdefault(i, []).append(k)
        old = current.pop(i, None)
        if old is not None:
            counter[old] -= 1
        fate = _FATES_BY_CODE[code]
        if fate is not Fate.RESTORED:
            current[i] = fate.value
            counter[fate.value] += 1
        if k + 1 == len(steps) or steps[k + 1] != step:
            count_steps.append(step)
            counts.append({f: n for f, n in counter.items() if n})
    return FateLog(
        tuple(steps),
        tuple(seqs),
        tuple(indexes),
        tuple(fates),
        {i: tuple(ks) for i, ks in positions.items()},
        tuple(count_steps),
        tuple(counts),
    )


def fate_log(run: Run) -> FateLog:
    return cached(run, "fatelog", lambda: _fate_log(run))


def _fate_log(run: Run) -> FateLog:
    steps: list[int] = []
    seqs: list[int] = []
    indexes: list[int] = []
    fates: list[int] = []
    rows = RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "step", "changes")
    for seq, step, changes in rows.iterator(chunk_size=500):
        for change in changes:
            steps.append(step)
            seqs.append(seq)
            indexes.append(int(change["index"]))
            fates.append(_FATE_CODE[change["fate"]])
    return _build_fate_log(steps, seqs, indexes, fates)


# --- the context at a step --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ZoneSegment:
    key: str
    label: str
    tokens: int
    percent: float
    note: str = ""  # shown instead of the number: why a part has no tokens

    @property
    def hint(self) -> str:
        return ZONE_HINTS.get(self.key, "")


ZONE_HINTS = {
    "unseen": (
        "what the strategy counts beyond the transcript's messages: the provider's reported "
        "usage includes the system prompt, tool definitions and attachments the log omits"
    ),
}
NOT_IN_TRANSCRIPT = "not in transcript"
NOT_COUNTED = "not counted by this strategy"


@dataclass(frozen=True, slots=True)
class TranscriptParts:
    """Which fixed parts of a request the transcript itself carries (Claude Code and Codex
    logs usually have neither a system prompt nor tool definitions)."""

    system: bool
    tools: bool


def transcript_parts(run: Run) -> TranscriptParts:
    def build() -> TranscriptParts:
        system = Message.objects.filter(
            transcript_id=run.transcript_id, index=0, role="system"
        ).exists()
        tools = bool(run.transcript.tools)
        return TranscriptParts(system, tools)

    return cached(run, "parts", build)


def zone_segments(zones: dict[str, Any], parts: TranscriptParts | None = None) -> list[ZoneSegment]:
    """Proportional widths over the window (or over the total when the request overflows).
    A system prompt or tool zone of 0 says why instead of showing 0 (``parts``: what the
    transcript carries); the strategy overhead is listed only when there is one."""
    values = [(key, label, max(int(zones.get(key) or 0), 0)) for key, label in ZONE_ORDER]
    total = max(int(zones.get("window") or 0), sum(v for _, _, v in values), 1)
    out = []
    for key, label, tokens in values:
        note = ""
        if key == "unseen" and not tokens:
            continue
        if key in ("system", "tools") and not tokens and parts is not None:
            note = NOT_COUNTED if getattr(parts, key) else NOT_IN_TRANSCRIPT
        out.append(ZoneSegment(key, label, tokens, round(100 * tokens / total, 3), note))
    return out


@dataclass(slots=True)
class MessageRow:
    index: int
    role: str
    preview: str
    tokens: int
    name: str
    fate: str
    event: int | None  # the event seq that set the fate
    in_context: bool
    reason: str = ""
    modified_preview: str = ""
    offload_path: str = ""

    @property
    def diffable(self) -> bool:
        return self.fate in ("truncated", "offloaded", "pruned")

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "role": self.role,
            "preview": self.preview,
            "reference_tokens": self.tokens,
            "name": self.name,
            "fate": self.fate,
            "event": self.event,
            "in_context": self.in_context,
            "reason": self.reason,
            "modified_preview": self.modified_preview,
            "offload_path": self.offload_path,
        }


@dataclass(slots=True)
class StepView:
    step: int
    steps: int  # how many steps the run has
    source_index: int
    tokens: dict[str, int | None]
    zones: dict[str, Any]
    segments: list[ZoneSegment]
    context_len: int
    summary_seq: int | None
    pending: list[str]
    messages: list[MessageRow]
    page: int
    pages: int
    count: int  # messages listed over all pages (everything appended so far)
    fate_counts: dict[str, int]
    events_here: list[dict[str, Any]]

    @property
    def has_next(self) -> bool:
        return self.page < self.pages

    @property
    def has_previous(self) -> bool:
        return self.page > 1

    @property
    def prev_step(self) -> int | None:
        return self.step - 1 if self.step > 0 else None

    @property
    def next_step(self) -> int | None:
        return self.step + 1 if self.step + 1 < self.steps else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "steps": self.steps,
            "source_index": self.source_index,
            "tokens": self.tokens,
            "zones": self.zones,
            "context_len": self.context_len,
            "summary": self.summary_seq,
            "pending": self.pending,
            "fate_counts": self.fate_counts,
            "events": self.events_here,
            "page": self.page,
            "pages": self.pages,
            "count": self.count,
            "messages": [m.as_dict() for m in self.messages],
        }


def step_count(run: Run) -> int:
    if run.status == RunStatus.DONE:
        return run.steps_total  # set from the stored steps when the run finished
    return RunStep.objects.filter(run=run).count()


def _in_ranges(ranges: Sequence[Sequence[int]], index: int) -> bool:
    return any(a <= index < b for a, b in ranges)


def step_view(
    run: Run, step: int, *, page: int | None = None, per_page: int = PER_PAGE
) -> StepView:
    """The request at ``step``: zones, and one page of the messages appended so far (each
    with its fate then). ``page=None`` shows the last page (the most recent messages)."""
    row = RunStep.objects.filter(run=run, index=step).values_list(
        "index",
        "source_index",
        "tokens_strategy",
        "tokens_reference",
        "tokens_reported",
        "zones",
        "context",
        "context_len",
        "summary_seq",
        "pending",
    )
    found = list(row)
    if not found:
        raise LookupError(f"run {run.pk} has no step {step}")
    (
        _,
        source_index,
        t_strategy,
        t_reference,
        t_reported,
        zones,
        ranges,
        context_len,
        summary_seq,
        pending,
    ) = found[0]
    total_steps = step_count(run)
    count = source_index  # messages 0..source_index-1 were appended before this call
    pages = max(1, -(-count // per_page))
    page = pages if page is None else min(max(page, 1), pages)
    start = (page - 1) * per_page
    end = min(start + per_page, count)
    log = fate_log(run)
    fates = log.fates_at(step, range(start, end))
    rows = list(
        Message.objects.filter(transcript_id=run.transcript_id, index__gte=start, index__lt=end)
        .order_by("index")
        .values_list("index", "role", "preview", "reference_tokens", "name")
    )
    # Modified versions shown on this page: only their events are read.
    modified_seqs = {
        seq for fate, seq in fates.values() if fate.value in ("truncated", "offloaded", "pruned")
    }
    versions: dict[int, dict[str, Any]] = {}
    if modified_seqs:
        for seq, changes in RunEvent.objects.filter(run=run, seq__in=modified_seqs).values_list(
            "seq", "changes"
        ):
            for change in changes:
                i = int(change["index"])
                if i in fates and fates[i][1] == seq:
                    versions[i] = change
    messages: list[MessageRow] = []
    for index, role, preview, tokens, name in rows:
        fate, seq = fates.get(index, (Fate.KEPT, None))
        change = versions.get(index, {})
        modified = ""
        if change.get("message"):
            modified = _preview(codec.message_from_dict(change["message"]))
        messages.append(
            MessageRow(
                index=index,
                role=role,
                preview=preview,
                tokens=tokens,
                name=name,
                fate=fate.value,
                event=seq,
                in_context=_in_ranges(ranges, index),
                reason=change.get("reason", ""),
                modified_preview=modified,
                offload_path=change.get("offload_path", ""),
            )
        )
    fate_counts = log.counts_at(step)
    fate_counts["kept"] = max(count - sum(fate_counts.values()), 0)
    events_here = [
        {"seq": seq, "kind": kind, "tokens_before": b, "tokens_after": a, "messages": len(m)}
        for seq, kind, b, a, m in RunEvent.objects.filter(run=run, step=step)
        .order_by("seq")
        .values_list("seq", "kind", "tokens_before", "tokens_after", "messages")
    ]
    return StepView(
        step=step,
        steps=total_steps,
        source_index=source_index,
        tokens={"strategy": t_strategy, "reference": t_reference, "reported": t_reported},
        zones=zones,
        segments=zone_segments(zones, transcript_parts(run)),
        context_len=context_len,
        summary_seq=summary_seq,
        pending=list(pending),
        messages=messages,
        page=page,
        pages=pages,
        count=count,
        fate_counts={f: fate_counts.get(f, 0) for f in FATES if fate_counts.get(f, 0)},
        events_here=events_here,
    )


def _preview(message: Any, limit: int = 200) -> str:
    text = engine_message_text(message)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- one message: original vs modified --------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessageDiff:
    index: int
    fate: str
    event: int | None
    reason: str
    offload_path: str
    original: str
    modified: str
    lines: list[tuple[str, str]]  # (css class, line)

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "fate": self.fate,
            "event": self.event,
            "reason": self.reason,
            "offload_path": self.offload_path,
            "original": self.original,
            "modified": self.modified,
            "diff": [line for _, line in self.lines],
        }


def diff_lines(original: str, modified: str, *, context: int = 3) -> list[tuple[str, str]]:
    """Unified diff lines with a css class each (rendered escaped by the template)."""
    out: list[tuple[str, str]] = []
    for line in difflib.unified_diff(
        original.splitlines(),
        modified.splitlines(),
        "original",
        "as sent",
        n=context,
        lineterm="",
    ):
        if line.startswith(("+++", "---")):
            cls = "diff-file"
        elif line.startswith("@@"):
            cls = "diff-hunk"
        elif line.startswith("+"):
            cls = "diff-add"
        elif line.startswith("-"):
            cls = "diff-del"
        else:
            cls = "diff-ctx"
        out.append((cls, line))
    return out


def message_diff(
    run: Run, index: int, *, step: int | None = None, event: int | None = None
) -> MessageDiff:
    """Original text of message ``index`` against the version a strategy sent: the one set
    by ``event`` (seq), else the one in force at ``step``, else the last one."""
    original_row = list(
        Message.objects.filter(transcript_id=run.transcript_id, index=index).values_list(
            "role", "blocks"
        )
    )
    if not original_row:
        raise LookupError(f"transcript has no message {index}")
    original = engine_message_text(_row_message(original_row[0]))
    if event is None:
        fates = fate_log(run).fates_at(step if step is not None else 10**12, (index,))
        event = fates[index][1] if index in fates else None
    change: dict[str, Any] = {}
    if event is not None:
        changes = RunEvent.objects.filter(run=run, seq=event).values_list("changes", flat=True)
        for item in next(iter(changes), []):
            if int(item["index"]) == index:
                change = item
    modified = original
    if change.get("message"):
        modified = engine_message_text(codec.message_from_dict(change["message"]))
    return MessageDiff(
        index=index,
        fate=change.get("fate", "kept"),
        event=event if change else None,
        reason=change.get("reason", ""),
        offload_path=change.get("offload_path", ""),
        original=original,
        modified=modified,
        lines=diff_lines(original, modified) if modified != original else [],
    )


def _row_message(row: tuple[str, list[Any]]) -> Any:
    from ctxlab.engine.model import Message as EngineMessage
    from ctxlab.engine.model import Role

    role, blocks = row
    return EngineMessage(role=Role(role), blocks=codec.blocks_from_list(blocks))


# --- summaries and what was lost --------------------------------------------------------


def summaries(run: Run) -> list[dict[str, Any]]:
    """Each summary call with its output (inputs are loaded on demand: they can be large)."""
    return [
        {
            "seq": seq,
            "step": step,
            "output": output,
            "input_tokens": i_tok,
            "output_tokens": o_tok,
            "usage_estimated": estimated,
            "error": error,
            "summarizer": summarizer,
            "messages": len(messages),
        }
        for seq, step, output, i_tok, o_tok, estimated, error, summarizer, messages in run.summaries.order_by(
            "seq"
        ).values_list(
            "seq",
            "step",
            "output",
            "input_tokens",
            "output_tokens",
            "usage_estimated",
            "error",
            "summarizer",
            "messages",
        )
    ]


FactIndexSource = FactIndex | Callable[[], FactIndex] | None


def retention(run: Run, *, fact_index: FactIndexSource = None) -> dict[str, Any]:
    """``lost.analyse`` over the stored run, memoised for finished runs: the analysis stored
    for the run's current attempt (the worker stores it at run end), else computed from the
    stored rows and, for a finished run, stored (so an older run pays once). ``fact_index``
    (an index or a function building one, called only when computing) lets a caller
    analysing several runs of one transcript extract its facts once."""
    return cached(run, "retention", lambda: _stored_or_computed(run, fact_index))


def _stored_or_computed(run: Run, fact_index: FactIndexSource) -> dict[str, Any]:
    stored = stored_retention(run)
    if stored is not None:
        return stored
    data = _retention(run, fact_index() if callable(fact_index) else fact_index)
    if run.status == RunStatus.DONE:
        store_retention(run, run.attempts, data)
    return data


def analyse_finished(
    run: Run, result: ReplayResult, originals: Sequence[EngineMessage]
) -> dict[str, Any] | None:
    """The retention analysis of a replay that just finished, from its in-memory result
    (equal to what ``_retention`` computes from the stored rows). None when it fails: an
    analysis never fails a run; the pages then compute it on demand."""
    try:
        with existing_heap_frozen():  # as the replay: full collections skip the input
            return analyse(result, originals).as_dict()
    except Exception:
        log.exception("run %s: retention analysis failed (pages compute it on demand)", run.pk)
        return None


def stored_retention(run: Run) -> dict[str, Any] | None:
    """The analysis stored for the run's current attempt, if the run is finished."""
    if run.status != RunStatus.DONE:
        return None
    found = (
        RunAnalysis.objects.filter(run_id=run.pk, attempts=run.attempts)
        .values_list("retention", flat=True)
        .first()
    )
    if found is None or found.get("extractor") != EXTRACTOR_VERSION:
        return None  # none yet, or extracted by an older version: computed again
    return in_display_order(found)


def store_retention(run: Run, attempt: int, data: dict[str, Any]) -> bool:
    """Store ``data`` as the analysis of ``attempt`` while that attempt is the run's finished
    one (a later attempt's analysis is never overwritten by an earlier one). Never raises
    for a database error: the analysis is derived data, the pages can compute it again."""
    try:
        with transaction.atomic():  # a savepoint inside the caller's transaction
            finished = Run.objects.filter(pk=run.pk, attempts=attempt, status=RunStatus.DONE)
            if not finished.exists():
                return False
            RunAnalysis.objects.update_or_create(
                run_id=run.pk, defaults={"attempts": attempt, "retention": data}
            )
        return True
    except DatabaseError:
        log.exception("run %s: could not store its retention analysis", run.pk)
        return False


# as_dict's key order: PostgreSQL's jsonb reorders object keys, and the pages list
# lost_by_kind in this order.
_RETENTION_KEYS = tuple(Retention(0, 0, ()).as_dict())
_EVENT_KEYS = tuple(CompactionLoss(0, 0, "", 0, 0, 0, ()).as_dict())
_LOST_KEYS = tuple(f.name for f in dataclasses.fields(LostFact))


def _ordered(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out = {k: data[k] for k in keys if k in data}
    out.update((k, v) for k, v in data.items() if k not in out)
    return out


def in_display_order(data: dict[str, Any]) -> dict[str, Any]:
    """A stored analysis with its keys back in ``as_dict`` order (a no-op on SQLite)."""
    events = []
    for event in data.get("events", ()):
        event = _ordered(event, _EVENT_KEYS)
        event["lost"] = [_ordered(f, _LOST_KEYS) for f in event.get("lost", ())]
        event["lost_by_kind"] = _ordered(event.get("lost_by_kind", {}), KINDS)
        events.append(event)
    return {**_ordered(data, _RETENTION_KEYS), "events": events}


def _retention(run: Run, fact_index: FactIndex | None) -> dict[str, Any]:
    if fact_index is None:
        fact_index = FactIndex(run.transcript.to_conversation().messages)
    steps = [
        StepRecord(
            index,
            source,
            StepTokens(0, 0),
            _NO_ZONES,
            tuple((int(a), int(b)) for a, b in ctx),
            summary,
        )
        for index, source, ctx, summary in RunStep.objects.filter(run=run)
        .order_by("index")
        .values_list("index", "source_index", "context", "summary_seq")
    ]
    events: list[Event] = [e.to_event() for e in RunEvent.objects.filter(run=run).order_by("seq")]
    outputs = dict(run.summaries.values_list("seq", "output"))
    return analyse_parts(
        steps, events, outputs, fact_index.originals, fact_index=fact_index
    ).as_dict()


_NO_ZONES = Zones(0, 0, 0, 0, 0, 0, 0, 0, None)
