"""Executing a run (``run_execute``, called by the worker's task).

Streams the engine's StepRecords and writes them in batches (``BATCH_STEPS`` steps, growing
after the first two up to ``BATCH_GROWTH`` times that; at most ``BATCH_SECONDS`` apart), one
transaction per batch, so progress is visible and memory bounded. Each batch is fenced: it only commits while the run is still ``running`` under
the same ``attempts`` number, so a run that was reaped, cancelled or retried meanwhile is
never written to by a stale task.
"""

from __future__ import annotations

import json
import logging
import time
import traceback as tb
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, cast

from django.db import transaction
from django.utils import timezone

from ctxlab.engine.core.heap import existing_heap_frozen
from ctxlab.engine.core.records import event_brief
from ctxlab.engine.core.summary_request import Summarizer
from ctxlab.engine.evaluate.metrics import compute_metrics
from ctxlab.engine.replay import Replay, call_starts
from ctxlab.engine.strategies import _copaw_stored as copaw_stored
from ctxlab.engine.strategies import stored_counts
from ctxlab.engine.summarize import prompt_edit
from ctxlab.engine.summarize.offline import OfflineSummarizer
from ctxlab.engine.summarize.recorded import RecordedSummarizer, agreement_rows
from replay_app.compare import inputs as compare_inputs
from replay_app.costs import llm, run_costs
from replay_app.models import Run, RunStatus
from replay_app.runs import survival as run_survival
from replay_app.runs import textstore
from replay_app.runs.heartbeat import pulse as heartbeat_pulse
from replay_app.runs.progress import (
    LATEST_EVENTS,
    EventRow,
    ProgressSink,
    _emit,
    _latest_events,
)
from replay_app.runs.step_rows import (
    Inserts,
    NewEvent,
    NewSummary,
    Row,
    StepRows,
    finding_row,
    store_summary_inputs,
)
from replay_app.steps import lost_analysis

log = logging.getLogger(__name__)

BATCH_STEPS = 500
BATCH_SECONDS = 0.5
# After the first two batches a batch may grow, doubling up to this many times
# ``batch_steps`` (``BATCH_SECONDS`` still holds): each flush is a transaction whose commit
# rewrites the last pages of every table and index it touched, a fixed cost that 20
# batches of a fast 10,000-step replay paid every 70 ms of replay.
BATCH_GROWTH = 8
# Summarisers run in this process: their run is done seconds after it starts, and its
# summary inputs, made when read (``records._RenderedWhenRead``: formatting the compacted
# messages, ~0.2 s of a 20,000-message QwenPaw run), are rendered and stored after done
# (``_analyse``, as pieces) instead of inline while replaying; the summary page says
# "analysing" meanwhile. A run calling an API keeps them inline: it is watched for minutes.
INPUTS_AFTER_DONE = ("offline", "recorded")

# ---------------------------------------------------------------------------------------
# Execution
# ---------------------------------------------------------------------------------------


class _Stop(Exception):
    """The run is no longer ours to write (cancelled, reaped or retried meanwhile)."""

    def __init__(self, cancelled: bool) -> None:
        self.cancelled = cancelled


def make_summarizer(run: Run) -> Summarizer:
    if run.summarizer == "offline":
        return OfflineSummarizer()
    if run.summarizer == "recorded":  # the transcript's own compaction summaries
        return RecordedSummarizer()
    if run.summarizer in llm.PROVIDERS:  # Claude, an OpenAI-compatible endpoint
        options = run.llm or {}
        budget = options.get("budget_usd")
        inner = llm.make_llm(
            run.summarizer, run.summarizer_model, api=str(options.get("api") or "chat"),
            stream=bool(options.get("stream")),
        )  # fmt: skip
        inner.replicate = int(options.get("replicate") or 0)  # each replicate its own calls
        return llm.MeteredSummarizer(
            inner, budget_usd=Decimal(str(budget)) if budget is not None else llm.budget_default()
        )
    raise ValueError(f"unknown summarizer {run.summarizer!r}")


def run_execute(
    *,
    run: Run,
    on_progress: ProgressSink | None = None,
    batch_steps: int = BATCH_STEPS,
    batch_seconds: float = BATCH_SECONDS,
) -> Run:
    """Replay the run's snapshot, storing rows in fenced batches. Never raises for a
    failing replay: the error is recorded on the run (status ``failed``)."""
    attempt = run.attempts
    now = timezone.now()
    claimed = Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED, attempts=attempt).update(
        status=RunStatus.RUNNING,
        started_at=now,
        heartbeat_at=now,
        finished_at=None,
    )
    run.refresh_from_db()
    if not claimed:
        log.info("run %s not started: it is %s (attempt %s)", run.pk, run.status, run.attempts)
        return run
    _emit(on_progress, run, [])
    announced = False  # the done state, sent by _execute before the analysis
    try:
        with heartbeat_pulse(run.pk, attempt):
            announced = _execute(run, attempt, on_progress, batch_steps, batch_seconds)
    except _Stop as stop:
        if stop.cancelled:
            Run.objects.filter(pk=run.pk, attempts=attempt, status=RunStatus.RUNNING).update(
                status=RunStatus.CANCELLED, finished_at=timezone.now(), error="cancelled"
            )
    except Exception as exc:
        log.exception("run %s failed", run.pk)
        Run.objects.filter(pk=run.pk, attempts=attempt, status=RunStatus.RUNNING).update(
            status=RunStatus.FAILED,
            finished_at=timezone.now(),
            error=_readable(exc),
            traceback=_short_traceback(exc),
        )
    # A done run whose analysis raised (a database error in its last writes) still gets
    # its finished_at: the pages then build what is missing from its rows (analysis_state).
    Run.objects.filter(pk=run.pk, attempts=attempt, status=RunStatus.DONE, finished_at=None).update(
        finished_at=timezone.now()
    )
    run.refresh_from_db()
    if not announced:
        _emit(on_progress, run, _latest_events(run))
    return run


def _execute(
    run: Run,
    attempt: int,
    on_progress: ProgressSink | None,
    batch_steps: int,
    batch_seconds: float,
) -> bool:
    """Replay, write and analyse the run; True once its done state was sent to
    ``on_progress`` (the analysis follows it)."""
    # One pause of the collector (ctxlab.engine.core.heap) from the decode to the replay's
    # end: the decode makes millions of objects and none is garbage; paused only while
    # replaying, the first full collection after the decode traversed them all (seeding
    # the counts set it off: 0.5-1 s of CPU at 20,000 messages).
    writer: _BatchWriter | None = None
    try:
        with existing_heap_frozen():
            conversation = run.transcript.to_conversation()
            # The per-message counts stored at import: the replay tokenizes no message again (and
            # counts copies of long texts from their stored running counts).
            rows = run.transcript.messages.order_by("index").values_list(*stored_counts.COLUMNS)
            reference = stored_counts.seeded(conversation, stored_counts.from_rows(list(rows)))
            summarizer = make_summarizer(run)
            metered = summarizer if isinstance(summarizer, llm.MeteredSummarizer) else None
            # A prompt editor version's request edit (prompts_app), when the run has one.
            summarizer = prompt_edit.wrap(summarizer, (run.llm or {}).get("prompt_edit"))
            job = Replay(
                conversation,
                run.strategy,
                params=run.params,
                summarizer=summarizer,
                reference=reference,
            )
            if copaw_stored.wants_stored_counts(job.strategy):  # its Qwen2.5 pass, done at import
                entries = run.transcript.messages.order_by("index").values_list(
                    "qwen_counts", flat=True
                )
                copaw_stored.seed_stored_counts(conversation.messages, list(entries))
            total = len(call_starts(conversation.messages))
            Run.objects.filter(pk=run.pk).update(steps_total=total)
            run.steps_total = total
            writer = _BatchWriter(run, attempt)
            writer.texts = textstore.TextWriter(run, conversation.messages)
            writer.texts.later = []  # summary inputs inline until done, then as pieces (_analyse)
            writer.inputs_later = run.summarizer in INPUTS_AFTER_DONE  # ... or unread until then
            writer.metered = metered
            last_flush = time.monotonic()
            limit, flushes = batch_steps, 0
            for record in job:
                writer.add(record)
                if writer.pending >= limit or time.monotonic() - last_flush >= batch_seconds:
                    writer.flush(job.result.offloads)
                    last_flush = time.monotonic()
                    _emit(on_progress, run, writer.latest)
                    flushes += 1
                    if flushes >= 2:
                        limit = min(limit * 2, batch_steps * BATCH_GROWTH)
            # The last batch (often the largest) inside the pause too: after it, the young
            # collections of its rows came every 700 allocations again (10-30 ms of them).
            writer.flush(job.result.offloads)
        _emit(on_progress, run, writer.latest)  # 100 %: pages say it is finishing (metrics)
        result = job.result
        metrics = compute_metrics(
            result, threshold=job.strategy.threshold(job.ctx.view), reference=job.ctx.reference
        )
        counter = llm.make_counter(model=run.summarizer_model or None) if run.exact_counts else None
        extra = run_costs.finish(run, job, metered=writer.metered, exact_counter=counter)
        metrics = {**metrics, **extra.pop("metrics")}
        if conversation.compactions:  # the original's own compactions next to the replay's
            metrics["original_compactions"] = agreement_rows(conversation, result)
        run.metrics = _jsonable(metrics)
        done_at = timezone.now()
        # Done: its rows and metrics are there. The ledger and ``finished_at`` follow with the
        # analysis (``analysis_state``: meanwhile the pages say it is analysing, memoise nothing).
        done = Run.objects.filter(pk=run.pk, attempts=attempt, status=RunStatus.RUNNING).update(
            status=RunStatus.DONE,
            heartbeat_at=done_at,
            metrics=run.metrics,
            **_jsonable(extra),
            steps_done=len(result.steps),
            steps_total=len(result.steps),
        )
        if not done:
            raise _Stop(cancelled=False)
    except BaseException:  # stopped before done: the summary rows get their inputs inline
        if writer is not None:
            writer.store_inputs_inline()
        raise
    run.status, run.heartbeat_at = RunStatus.DONE, done_at
    run.steps_done = run.steps_total = len(result.steps)
    _emit(on_progress, run, writer.latest)
    _analyse(run, attempt, job, writer.texts, done_at)
    return True


def _analyse(
    run: Run, attempt: int, job: Replay, texts: textstore.TextWriter, done_at: Any
) -> None:
    """After the run is done, from the replay still in memory: its cost ledger, what each
    compaction lost and which facts survived, by category (one pass: ``runs.survival``),
    what the compare page derives from this run alone (built once, not per view), stored
    with the run's ``finished_at``; before them, the summary inputs as pieces
    (``textstore``: until then inline, or for an in-process run not stored, the summary
    page saying it is analysing). A failure leaves the run done without the analysis
    (logged): the pages compute it from the stored rows on first view."""
    retention = survival = pieces = None
    ledger: dict[str, Any] = {}
    # As while replaying: full collections skip the heap that exists now (the conversation,
    # the replay's records: millions of objects, none of them garbage). Each part allocates
    # enough to set off several, which traversed it all every time (the ledger took twice
    # as long, the compare inputs a third longer).
    with existing_heap_frozen():
        _store_inputs(run, attempt, texts)  # first: the summary pages wait for them
        try:
            ledger = run_costs.finish_ledger(run, job)
            retention, survival = run_survival.finished(run, job.result, job.conversation.messages)
            pieces = compare_inputs.finished(run, retention, survival, job)
        finally:
            with transaction.atomic():  # the analysis and finished_at become visible together
                # fenced (and, on PostgreSQL, the run's row locked against a retry meanwhile)
                Run.objects.filter(
                    pk=run.pk, attempts=attempt, status=RunStatus.DONE, finished_at=None
                ).update(heartbeat_at=timezone.now())
                if retention is not None:
                    lost_analysis.store_retention(run, attempt, retention)
                if survival is not None:
                    run_survival.store(run, attempt, survival)
                if pieces is not None:
                    compare_inputs.store(run, attempt, pieces)
                costs: dict[str, Any] = {}
                if ledger:  # its keys where they always were: before the original's compactions
                    head = {k: v for k, v in run.metrics.items() if k != "original_compactions"}
                    tail = {k: v for k, v in run.metrics.items() if k == "original_compactions"}
                    run.metrics = {**head, **_jsonable(ledger["metrics"]), **tail}
                    costs = {"ledger": _jsonable(ledger["ledger"]), "metrics": run.metrics}
                Run.objects.filter(
                    pk=run.pk, attempts=attempt, status=RunStatus.DONE, finished_at=None
                ).update(finished_at=done_at, **costs)


def _store_inputs(run: Run, attempt: int, texts: textstore.TextWriter) -> None:
    """The summary inputs as pieces (``TextWriter.summaries_later``), in a fenced
    transaction of their own before the analysis: a run whose analysis or last writes fail
    keeps them. When the pieces could not be made or written, the inputs the rows do not
    hold yet (``INPUTS_AFTER_DONE``) are stored inline instead. Never raises (logged)."""

    def store(rows: list[tuple[int, Any]], *, inline: bool) -> None:
        with transaction.atomic():  # fenced as the analysis's writes
            ours = Run.objects.filter(
                pk=run.pk, attempts=attempt, status=RunStatus.DONE, finished_at=None
            ).update(heartbeat_at=timezone.now())
            if ours and not inline:
                texts.write()
            if ours:
                store_summary_inputs(run.pk, rows, inline=inline)

    try:
        try:
            inputs = texts.summaries_later()
            if inputs:
                store(inputs, inline=False)
            return
        except Exception:
            log.exception("run %s: summary inputs not stored as pieces", run.pk)
        unstored = texts.summaries_unstored()
        if unstored:
            store(unstored, inline=True)
    except Exception:
        log.exception("run %s: summary inputs not stored", run.pk)


class _BatchWriter:
    """Buffers rows between flushes; each flush is one fenced transaction. The rows are
    plain values (``step_rows``: one prepared INSERT per table and flush), the events and
    summaries light rows that the costs and the textstore annotate first."""

    def __init__(self, run: Run, attempt: int) -> None:
        self.run, self.attempt = run, attempt
        self.step_rows = StepRows(run)
        self.inserts = Inserts(run)
        self.steps: list[Row] = []
        self.events: list[NewEvent] = []
        self.summaries: list[NewSummary] = []
        self.findings: list[Row] = []
        self.offloaded: set[str] = set()
        self.steps_done = 0
        self.events_count = 0
        self.latest: list[EventRow] = []
        self.metered: llm.MeteredSummarizer | None = None
        self.texts: textstore.TextWriter | None = None  # long texts by reference (set by _execute)
        # Summary rows written without their input, the texts kept the records to store
        # it after done (``INPUTS_AFTER_DONE``; only with ``texts``).
        self.inputs_later = False

    @property
    def pending(self) -> int:
        return len(self.steps)

    def add(self, record: Any) -> None:
        self.steps.append(self.step_rows.row(record))
        if record.events or record.summaries:
            events = [NewEvent.of(e) for e in record.events]
            later = self.inputs_later and self.texts is not None
            summaries = [NewSummary.of(s, with_input=not later) for s in record.summaries]
            if summaries:
                run_costs.annotate(record, summaries, events, self.metered)
            if self.texts is not None:
                for event in events:
                    self.texts.event(event)
                for summary, source in zip(summaries, record.summaries, strict=True):
                    self.texts.summary(summary, source if later else None)
            self.events.extend(events)
            self.summaries.extend(summaries)
        if record.findings:
            self.findings.extend(map(finding_row, record.findings))

    def store_inputs_inline(self) -> None:
        """The inputs of the summary rows written without them (``inputs_later``), inline,
        while the run is still ours: a run stopped before done (failed, cancelled) keeps
        them as before. Never raises (logged): the stop's own error is what the run shows."""
        if self.texts is None or not self.inputs_later:
            return
        try:
            unstored = self.texts.summaries_unstored()
            with transaction.atomic():
                fenced = Run.objects.filter(
                    pk=self.run.pk, attempts=self.attempt, status=RunStatus.RUNNING
                )
                if fenced.update(heartbeat_at=timezone.now()):
                    store_summary_inputs(self.run.pk, unstored, inline=True)
        except Exception:
            log.exception("run %s: summary inputs not stored", self.run.pk)

    def flush(self, offloads: Mapping[str, str]) -> None:
        new_offloads: list[Row]
        if self.texts is not None:
            new_offloads = self.texts.offloads(offloads, self.offloaded)
        else:
            new_offloads = [
                (path, offloads[path], []) for path in offloads if path not in self.offloaded
            ]
        steps_done = self.steps_done + len(self.steps)
        events_count = self.events_count + len(self.events)
        with transaction.atomic():
            fenced = Run.objects.filter(
                pk=self.run.pk, attempts=self.attempt, status=RunStatus.RUNNING
            )
            if not fenced.update(
                steps_done=steps_done, events_count=events_count, heartbeat_at=timezone.now()
            ):
                raise _Stop(cancelled=False)
            if self.texts is not None:
                self.texts.write()
            self.step_rows.write(self.steps)
            self.inserts.write(self.events, self.summaries, self.findings, new_offloads)
            cancel = Run.objects.filter(pk=self.run.pk).values_list("cancel_requested", flat=True)[
                0
            ]
        self.offloaded.update(row[0] for row in new_offloads)
        if self.events:
            latest = [_latest_row(e) for e in self.events[-LATEST_EVENTS:]]
            self.latest = (self.latest + latest)[-LATEST_EVENTS:]
        self.steps_done, self.events_count = steps_done, events_count
        self.run.steps_done, self.run.events_count = steps_done, events_count
        self.steps, self.events, self.summaries, self.findings = [], [], [], []
        if cancel:
            raise _Stop(cancelled=True)


def _latest_row(event: NewEvent) -> EventRow:
    """What the progress message shows of an event (as ``progress._event_row`` of its
    stored row)."""
    row = event_brief(
        event.seq, event.step, event.kind, event.tokens_before, event.tokens_after,
        len(event.messages),
    )  # fmt: skip
    return cast(EventRow, row)


def _readable(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, ValueError | KeyError | TypeError | RuntimeError):
        return f"{type(exc).__name__}: {text}"[:2000]
    return text[:2000]


def _short_traceback(exc: BaseException) -> str:
    lines = tb.format_exception(type(exc), exc, exc.__traceback__)
    text = "".join(lines)
    return text[-8000:]


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
