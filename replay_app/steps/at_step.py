"""The request at one step: zones and one page of messages with their fates.

Designed for runs over 20,000-message transcripts within the page budgets: steps are read
with ``values_list`` of a few columns; fates come from the run's cached fate log; a step's
message list reads only the visible page of messages and only the events whose modified
versions it shows. Nothing here is O(steps x context).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from ctxlab.engine.core import codec
from ctxlab.engine.core.records import Fate, event_brief, in_ranges
from ctxlab.engine.evaluate.lost import message_text as engine_message_text
from replay_app import memo, run_rows
from replay_app.models import Run, RunEvent, RunStatus, RunStep
from replay_app.runs import textstore
from replay_app.steps.fatelog import FATES, fate_log
from replay_app.steps.zone_bar import ZoneModel, transcript_parts, zone_model

PER_PAGE = 50
MODIFIED = ("truncated", "offloaded", "pruned")  # fates whose message has a modified version


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
        return self.fate in MODIFIED

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
    zone: ZoneModel  # the one zone model (zone_bar.zone_model), as the compare view's
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
            "zone_bar": self.zone.as_dict(),
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


def step_view(
    run: Run, step: int, *, page: int | None = None, per_page: int = PER_PAGE
) -> StepView:
    """The request at ``step``: zones, and one page of the messages appended so far (each
    with its fate then). ``page=None`` shows the last page (the most recent messages)."""
    found = run_rows.step_row(run, step)
    if found is None:
        last = step_count(run) - 1
        steps = f"steps 0 to {last}" if last >= 0 else "no steps"
        raise LookupError(f"run {run.pk} has no step {step} ({steps})")
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
    ) = found
    total_steps = step_count(run)
    counts = {"strategy": t_strategy, "reference": t_reference, "reported": t_reported}
    count = source_index  # messages 0..source_index-1 were appended before this call
    pages = max(1, -(-count // per_page))
    page = pages if page is None else min(max(page, 1), pages)
    start = (page - 1) * per_page
    end = min(start + per_page, count)
    log = fate_log(run)
    fates = log.fates_at(step, range(start, end))
    rows = run_rows.message_rows(run.transcript_id, start, end)
    # Modified versions shown on this page: only their events are read.
    modified_seqs = {seq for fate, seq in fates.values() if fate.value in MODIFIED}
    versions: dict[int, dict[str, Any]] = {}
    if modified_seqs:
        stored = RunEvent.objects.filter(run=run, seq__in=modified_seqs).values_list(
            "seq", "changes"
        )
        # Only this page's changes are resolved: an event may change thousands of messages,
        # and resolving each one's text read its stored blocks (~10 ms for a large event).
        shown = [
            [c for c in changes if fates.get(int(c["index"]), (None, None))[1] == seq]
            for seq, changes in stored
        ]
        for changes in textstore.resolve_changes(run.transcript_id, shown):
            for change in changes:
                versions[int(change["index"])] = change
    messages: list[MessageRow] = []
    for index, role, preview, tokens, name in rows:
        fate, event_seq = fates.get(index, (Fate.KEPT, None))
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
                event=event_seq,
                in_context=in_ranges(ranges, index),
                reason=change.get("reason", ""),
                modified_preview=modified,
                offload_path=change.get("offload_path", ""),
            )
        )
    fate_counts = log.counts_at(step)
    fate_counts["kept"] = max(count - sum(fate_counts.values()), 0)
    events_here = events_at(run, step)
    return StepView(
        step=step,
        steps=total_steps,
        source_index=source_index,
        tokens=counts,
        zones=zones,
        zone=zone_model(zones, counts, transcript_parts(run)),
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


def events_at(run: Run, step: int) -> list[dict[str, Any]]:
    """Briefs of the events that first apply at ``step``. A finished run's are grouped by
    step once (memo): their query was ~0.8 ms of a step view's ~8 ms of CPU."""
    if not memo.keeps(run):
        return _event_briefs(RunEvent.objects.filter(run=run, step=step)).get(step, [])
    return memo.cached(run, "events-by-step", lambda: _event_briefs(run.events.all())).get(step, [])


def _event_briefs(events: QuerySet[RunEvent]) -> dict[int, list[dict[str, Any]]]:
    rows = events.order_by("seq").values_list(
        "seq", "step", "kind", "tokens_before", "tokens_after", "messages"
    )
    by_step: dict[int, list[dict[str, Any]]] = {}
    for seq, step, kind, before, after, messages in rows.iterator(chunk_size=500):
        by_step.setdefault(step, []).append(
            event_brief(seq, step, kind, before, after, len(messages))
        )
    return by_step


def _preview(message: Any, limit: int = 200) -> str:
    text = engine_message_text(message)
    return text if len(text) <= limit else text[: limit - 1] + "…"
