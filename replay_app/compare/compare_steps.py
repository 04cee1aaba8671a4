"""The compare page across runs at one moment: summaries aligned by compaction ordinal,
the step view (zones and message fates of every run at step N or at its K-th compaction)
and the fate matrix at a step.

Steps align across runs: step N is the N-th inference call of the transcript, the same
request in every run. Compactions do not: run A may compact at step 12 and run B at 30,
so "the K-th compaction" picks each run's own step.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import router
from django.urls import reverse

from ctxlab.engine.core.records import Fate
from ctxlab.serving.prepared import Prepared
from replay_app import memo, run_rows
from replay_app.compare import inputs
from replay_app.compare.pieces import Compaction
from replay_app.models import Run, RunStep, RunSummary
from replay_app.steps import at_step, fatelog, zone_bar
from replay_app.steps.event_words import EventWords

STEP_MESSAGES = 60  # message rows per page of the step view
COMPACTION_ROWS = 5  # summaries table rows per page (five or six runs of summaries each)


# --- where a click on a message lands ---------------------------------------------------


def step_view_url(ids: str, step: int) -> str:
    """The step view of the runs ``ids`` (``"3,4,5"``) at ``step``."""
    return f"{reverse('run-compare')}?runs={ids}&step={step}"


def message_anchor(index: int) -> str:
    """The id of message ``index``'s row in the step view."""
    return f"message-{index}"


def message_link(step_url: str, index: int) -> str:
    """``step_url`` (``step_view_url``) opened on message ``index``: the view pages to it
    (``?message=``), scrolls to its row and highlights it. Every fate-matrix click (the
    compare page's strips, the message-by-message page) lands here."""
    return f"{step_url}&message={index}#{message_anchor(index)}"


def compactions(run: Run) -> list[Compaction]:
    """The run's compaction steps in order (stored with the run's compare inputs; cached)."""
    return memo.cached(run, "compactions", lambda: _compactions(run))


def _compactions(run: Run) -> list[Compaction]:
    return [Compaction.from_row(row) for row in inputs.for_runs([run])[0]["compactions"]]


# --- summaries aligned by compaction ordinal ----------------------------------------------


@dataclass(slots=True)
class SummaryCell:
    run: Run
    compaction: Compaction
    output: str = ""
    error: str = ""
    output_tokens: int = 0
    input_tokens: int = 0

    @property
    def html(self) -> str:
        from ctxlab.engine.privacy.secrets import mask
        from replay_app.display.markdown_safe import render

        return render(mask(self.output))  # masked again, as the report and run page do

    def as_dict(self) -> dict[str, Any]:
        c = self.compaction
        out: dict[str, Any] = {"run": self.run.pk, **c.as_dict()}
        if c.summary_seq is not None:
            out.update(
                summary={"seq": c.summary_seq, "output": self.output, "error": self.error,
                         "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                         "input_url": f"/runs/{self.run.pk}/summaries/{c.summary_seq}/"}
            )  # fmt: skip
        return out


@dataclass(slots=True)
class OrdinalRow:
    ordinal: int
    cells: list[SummaryCell | None] = field(default_factory=list)

    @property
    def steps(self) -> list[int | None]:
        return [c.compaction.step if c else None for c in self.cells]


def summaries_by_compaction(
    runs: Sequence[Run],
    *,
    page: int = 1,
    per_page: int = COMPACTION_ROWS,
    stored: Sequence[dict[str, Any]] | None = None,
) -> tuple[list[OrdinalRow], int, int]:
    """Row K = the K-th compaction of each run (None where a run has fewer), with the
    summary it wrote. Returns (rows of the page, page, pages); summary texts are read for
    the visible rows only. ``stored``: the runs' compare inputs, if the caller has them."""
    if stored is not None:
        lists = [[Compaction.from_row(r) for r in piece["compactions"]] for piece in stored]
    else:
        lists = [compactions(run) for run in runs]
    total = max((len(x) for x in lists), default=0)
    pages = max(1, -(-total // per_page))
    page = min(max(page, 1), pages)
    first = (page - 1) * per_page
    rows = []
    wanted: dict[tuple[int, int], SummaryCell] = {}
    for k in range(first, min(first + per_page, total)):
        row = OrdinalRow(k + 1)
        for run, found in zip(runs, lists, strict=True):
            if k >= len(found):
                row.cells.append(None)
                continue
            cell = SummaryCell(run, found[k])
            seq = found[k].summary_seq
            if seq is not None:
                wanted[(run.pk, seq)] = cell
            row.cells.append(cell)
        rows.append(row)
    if wanted:
        from django.db.models import Q

        query = Q()
        for run_id, seq in wanted:
            query |= Q(run_id=run_id, seq=seq)
        for run_id, seq, output, error, t_in, t_out in RunSummary.objects.filter(query).values_list(
            "run_id", "seq", "output", "error", "input_tokens", "output_tokens"
        ):
            cell = wanted[(run_id, seq)]
            cell.output, cell.error = output, error
            cell.input_tokens, cell.output_tokens = t_in, t_out
    return rows, page, pages


# --- the step view across runs ------------------------------------------------------------


@dataclass(slots=True)
class RunAtStep:
    run: Run
    step: int | None  # None: the run has no such compaction / step
    zones: dict[str, Any]
    zone: zone_bar.ZoneModel | None  # the run page's zone model of this step (None: no step)
    tokens: dict[str, int | None]
    compaction: Compaction | None = None
    source_index: int = 0  # messages before this request

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.run.pk,
            "label": self.run.label,
            "strategy": self.run.strategy,
            "step": self.step,
            "zones": self.zones,
            "zone_bar": self.zone.as_dict() if self.zone else None,
            "tokens": self.tokens,
            "compaction": self.compaction.as_dict() if self.compaction else None,
        }


@dataclass(slots=True)
class FateCell:
    fate: str
    event: int | None
    kind: str
    reason: str

    def as_dict(self, index: int) -> dict[str, Any]:
        return {"index": index, "fate": self.fate, "event": self.event, "kind": self.kind,
                "reason": self.reason}  # fmt: skip


@dataclass(slots=True)
class MessageLine:
    index: int
    role: str
    preview: str
    tokens: int
    cells: list[FateCell | None]  # one per run (None: the run is not at a step)

    @property
    def differs(self) -> bool:
        fates = {c.fate for c in self.cells if c is not None}
        return len(fates) > 1


@dataclass(slots=True)
class StepAcross:
    step: int | None
    compaction: int | None
    steps: int  # steps of the transcript (the runs' common count)
    runs: list[RunAtStep]
    messages: list[MessageLine]
    page: int
    pages: int
    count: int  # messages in the largest request shown
    only_differences: bool

    @property
    def prev_step(self) -> int | None:
        if self.step is None:
            return None
        return self.step - 1 if self.step > 0 else None

    @property
    def next_step(self) -> int | None:
        if self.step is None:
            return None
        return self.step + 1 if self.step + 1 < self.steps else None

    def as_json(self) -> dict[str, Any]:
        runs = []
        for col, at in enumerate(self.runs):
            data = at.as_dict()
            data["messages"] = [
                line.cells[col].as_dict(line.index)  # type: ignore[union-attr]
                for line in self.messages
                if line.cells[col] is not None
            ]
            runs.append(data)
        return {
            "step": self.step,
            "compaction": self.compaction,
            "steps": self.steps,
            "page": self.page,
            "pages": self.pages,
            "count": self.count,
            "only_differences": self.only_differences,
            "runs": runs,
        }


def _steps_of(runs: Sequence[Run]) -> int:
    return max((at_step.step_count(run) for run in runs), default=0)


def step_across(
    runs: Sequence[Run],
    *,
    step: int | None = None,
    compaction: int | None = None,
    page: int | None = None,
    only_differences: bool = False,
    per_page: int = STEP_MESSAGES,
) -> StepAcross:
    """Every run at ``step`` (or at its ``compaction``-th compaction): zones, and one page
    of the source messages with each run's fate, the event that set it and why."""
    total = _steps_of(runs)
    at: list[RunAtStep] = []
    # one step: every run's row in one query; the K-th compaction: each run's own step
    rows = _step_rows(runs, step) if compaction is None and step is not None else None
    for run in runs:
        found = None
        run_step = step
        if compaction is not None:
            listed = compactions(run)
            found = listed[compaction - 1] if 0 < compaction <= len(listed) else None
            run_step = found.step if found else None
        if run_step is not None and rows is None:
            at.append(_run_at(run, run_step, found, _step_rows([run], run_step).get(run.pk)))
        else:
            at.append(_run_at(run, run_step, found, (rows or {}).get(run.pk)))
    count = max((a.source_index for a in at if a.step is not None), default=0)
    if only_differences:  # which messages differ: every line is read
        lines = [line for line in _message_lines(runs, at, range(count)) if line.differs]
        pages = max(1, -(-len(lines) // per_page))
        page = pages if page is None else min(max(page, 1), pages)
        shown = lines[(page - 1) * per_page : page * per_page]
    else:  # the page's lines only: each run's fates of those messages, not of all of them
        pages = max(1, -(-count // per_page))
        page = pages if page is None else min(max(page, 1), pages)
        shown = _message_lines(runs, at, range((page - 1) * per_page, min(page * per_page, count)))
    _explain(runs, shown)  # events read for the shown messages only
    _fill_previews(runs[0].transcript_id, shown)
    return StepAcross(step, compaction, total, at, shown, page, pages, count, only_differences)


# What the step view reads of a step (not its context's message list: the step page's).
STEP_COLUMNS = ("source_index", "tokens_strategy", "tokens_reference", "tokens_reported", "zones")


@functools.cache
def _steps_query(count: int) -> Prepared:
    """Step ``index`` of ``count`` runs in one query (compiled once per process), each row
    the run's id and then ``STEP_COLUMNS``."""
    names = tuple(f"run{i}" for i in range(count))

    def make(index: int, **ids: int) -> Any:
        wanted = [ids[name] for name in names]
        rows = RunStep.objects.filter(run_id__in=wanted, index=index).order_by()
        return rows.values_list("run_id", *STEP_COLUMNS)  # unordered: the model's joins runs

    samples = {"index": 1, **{name: 2 + i for i, name in enumerate(names)}}
    others = {"index": 1000, **{name: 2000 + i for i, name in enumerate(names)}}
    return Prepared(make, samples, others)


def _step_rows(runs: Sequence[Run], step: int) -> dict[int, tuple[Any, ...]]:
    """Each run's ``STEP_COLUMNS`` at ``step`` by run id (absent: no such step)."""
    if not runs:
        return {}
    ids = {f"run{i}": run.pk for i, run in enumerate(runs)}
    using = router.db_for_read(RunStep)
    found = _steps_query(len(runs)).rows(using, index=step, **ids)
    return {row[0]: row[1:] for row in found}


def _run_at(
    run: Run, step: int | None, found: Compaction | None, found_row: tuple[Any, ...] | None
) -> RunAtStep:
    if step is None or found_row is None:
        return RunAtStep(run, None, {}, None, {}, found)
    source, strategy, reference, reported, stored = found_row
    zones = dict(stored or {})
    tokens = {"reference": reference, "strategy": strategy, "reported": reported}
    zone = zone_bar.zone_model(zones, tokens, zone_bar.transcript_parts(run))
    return RunAtStep(run, step, zones, zone, tokens, found, source)


_FATE_VALUES = {fate: fate.value for fate in Fate}  # (an enum's value is a slow property)


def _message_lines(
    runs: Sequence[Run], at: Sequence[RunAtStep], indexes: range
) -> list[MessageLine]:
    """One line per source message in ``indexes`` (fates of every run at its step); a
    page's range reads only its messages' entries of each run's fate log."""
    per_run: list[dict[int, tuple[Fate, int]] | None] = []
    whole = indexes.start == 0 and indexes.stop >= max((a.source_index for a in at), default=0)
    for run, a in zip(runs, at, strict=True):
        if a.step is None:
            per_run.append(None)
            continue
        log = fatelog.fate_log(run)
        per_run.append(log.fates_at(a.step) if whole else log.fates_at(a.step, indexes))
    columns = [(fates, a.source_index) for fates, a in zip(per_run, at, strict=True)]
    kept = (Fate.KEPT, None)
    lines = []
    for index in indexes:
        cells: list[FateCell | None] = []
        for fates, before in columns:
            if fates is None or index >= before:
                cells.append(None)
                continue
            fate, seq = fates.get(index, kept)
            cells.append(FateCell(_FATE_VALUES[fate], seq, "", ""))
        lines.append(MessageLine(index, "", "", 0, cells))
    return lines


def _explain(runs: Sequence[Run], lines: Sequence[MessageLine]) -> None:
    """Fill each shown cell's event kind and the reason in words (the change's own reason,
    then the trigger: 'context 27,410 ≥ threshold 26,214'), from ``fatelog.event_words``."""
    for col, run in enumerate(runs):
        events: dict[int, EventWords] | None = None
        for line in lines:
            cell = line.cells[col]
            if cell is None or cell.event is None:
                continue
            if events is None:
                events = fatelog.event_words(run)
            said = events.get(cell.event)
            if said is not None:
                cell.kind = said.kind
                cell.reason = said.reason(line.index)


def _fill_previews(transcript_id: int, lines: Sequence[MessageLine]) -> None:
    if not lines:
        return
    wanted = {line.index: line for line in lines}
    rows = run_rows.message_rows(transcript_id, min(wanted), max(wanted) + 1)
    for index, role, preview, tokens, _ in rows:
        line = wanted.get(index)
        if line is not None:
            line.role, line.preview, line.tokens = role, preview, tokens


# --- the fate matrix at a step ------------------------------------------------------------


def fates_at(run: Run, step: int | None) -> dict[int, Fate]:
    """Each message's fate at ``step`` (None: final)."""
    log = fatelog.fate_log(run)
    if step is None:
        return log.final()
    return {i: fate for i, (fate, _) in log.fates_at(step).items()}
