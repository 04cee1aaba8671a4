"""Read models for the compare page: 2-6 runs over one transcript, side by side.

Costs stay O(steps + events + messages/bucket) per run: curves and fate logs come from
``inspect`` (cached for finished runs), summaries are read for the visible rows only, and
the fate matrix aggregates messages into at most ``MATRIX_COLUMNS`` buckets.
"""

from __future__ import annotations

import csv
import functools
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import router
from django.http import Http404

from ctxlab.engine.core import catalogue
from ctxlab.engine.core.catalogue import METRICS as METRIC_ROWS
from ctxlab.engine.core.catalogue import Better, metric_best_flags
from ctxlab.engine.core.catalogue import best_flags as catalogue_best_flags
from ctxlab.engine.core.records import Fate
from ctxlab.engine.evaluate.lost import FactIndex
from ctxlab.serving.prepared import INT64, Prepared, instance
from replay_app import memo, run_rows
from replay_app.compare import inputs
from replay_app.compare.compare_steps import fates_at, message_link
from replay_app.compare.pieces import Compaction, MatrixCell, bucket_size, matrix_cells
from replay_app.display import vocabulary
from replay_app.display.charts import EventPoint, RunCurve, Series
from replay_app.models import Run, RunSummary
from replay_app.runs import replicates
from replay_app.runs.ordinals import compaction_ordinals_of
from replay_app.steps import fatelog, lost_analysis, message_diffs, run_curve
from replay_app.steps.lost_links import with_links

MIN_RUNS = 2
MAX_RUNS = 6
SUMMARY_ROWS = 10
# key, label, which value is better, help: every row from the engine's metric catalogue.
METRICS: tuple[tuple[str, str, Better, str], ...] = tuple(
    (key, METRIC_ROWS[key].label, METRIC_ROWS[key].better, METRIC_ROWS[key].meaning)
    for key in vocabulary.COMPARE_KEYS
)


class CompareError(ValueError):
    """A bad ``runs`` parameter; the message says what to fix."""


def parse_ids(raw: str) -> list[int]:
    ids: list[int] = []
    for part in raw.replace(" ", ",").split(","):
        if not part:
            continue
        try:
            value = int(part)
        except ValueError:
            raise CompareError(f"run ids are numbers: {part!r} is not") from None
        if value not in ids:
            ids.append(value)
    return ids


# The ledger and ground truth (up to ~1 MB of JSON per run) load only if read.
COMPARED_FIELDS = run_rows.run_fields(without=("ledger", "ground_truth"))
# The step view reads only these (its memo key's, its headings', the step count): the
# metrics, parameters and LLM settings (JSON to decode) stay in the database.
STEP_VIEW_FIELDS = run_rows.run_fields(
    only=("transcript_id", "label", "strategy", "status", "steps_total", "attempts", "created_at",
          "finished_at")
)  # fmt: skip


@functools.cache
def _owned_runs_query(fields: tuple[str, ...], count: int) -> Prepared:
    """``count`` runs of one owner in one query (compiled once per process and shape)."""
    names = tuple(f"run{i}" for i in range(count))

    def make(owner: int, **ids: int) -> Any:
        wanted = [ids[name] for name in names]
        return Run.objects.filter(owner_id=owner, pk__in=wanted).values_list(*fields)

    samples = {"owner": 1, **{name: 2 + i for i, name in enumerate(names)}}
    others = {"owner": 1000, **{name: 2000 + i for i, name in enumerate(names)}}
    return Prepared(make, samples, others)


def _owned_runs(user: Any, ids: list[int], fields: tuple[str, ...]) -> dict[int, Run]:
    """The runs of ``ids`` that ``user`` owns, by id (one query; another user's run is
    absent, as a run that does not exist)."""
    if not getattr(user, "is_authenticated", False):
        return {}
    if any(not 0 < pk <= INT64[1] for pk in ids):  # no row holds it: each on its own
        found: dict[int, Run] = {}
        for pk in ids:
            try:
                found[pk] = run_rows.owned_run(user, pk, fields)
            except Http404:
                continue
        return found
    using = router.db_for_read(Run)
    arguments = {f"run{i}": pk for i, pk in enumerate(ids)}
    rows = _owned_runs_query(fields, len(ids)).rows(using, owner=int(user.pk), **arguments)
    id_at = fields.index("id")
    return {row[id_at]: instance(Run, fields, row, using) for row in rows}


def load_runs(user: Any, raw: str, fields: tuple[str, ...] = COMPARED_FIELDS) -> list[Run]:
    """The user's runs named by ``raw`` ("1,2,3"), in that order, with ``fields`` (others
    load on first use). Another user's run is reported as missing, like a run that does
    not exist."""
    ids = parse_ids(raw)
    if not MIN_RUNS <= len(ids) <= MAX_RUNS:
        raise CompareError(f"compare {MIN_RUNS} to {MAX_RUNS} runs (got {len(ids)})")
    # One prepared lookup for them all (~0.15 ms a run each on its own, the joined
    # queryset ~2.5 ms); their transcript loads only if a view reads it.
    found = _owned_runs(user, ids, fields)
    missing = [i for i in ids if i not in found]
    if missing:
        raise LookupError(f"no such run: {', '.join(map(str, missing))}")
    runs = [found[i] for i in ids]
    transcripts = {r.transcript_id for r in runs}
    if len(transcripts) > 1:
        names = "; ".join(f"run {r.pk} on transcript {r.transcript_id}" for r in runs)
        raise CompareError(f"runs must be on the same transcript ({names})")
    return runs


# --- metrics -----------------------------------------------------------------------------


@dataclass(slots=True)
class MetricRow:
    key: str
    label: str
    better: Better
    help: str
    values: list[Any]
    best: list[bool] = field(default_factory=list)
    # Per run, its replicates' spread (``replicates.family_spreads``; None: no replicates).
    spreads: list[dict[str, Any] | None] = field(default_factory=list)

    @property
    def cells(self) -> list[tuple[Any, bool, str]]:
        """(value, best, the spread of its replicates in words or "")."""
        texts = [_spread_text(s) for s in self.spreads] or [""] * len(self.values)
        return list(zip(self.values, self.best, texts, strict=True))

    @property
    def empty(self) -> bool:
        """No run has a value (e.g. summary-call costs without Claude summaries)."""
        return all(v is None for v in self.values)

    @property
    def unit(self) -> str:
        return METRIC_ROWS[self.key].unit

    @property
    def best_rule(self) -> str:
        return METRIC_ROWS[self.key].best_rule


def metric_rows(runs: Sequence[Run], retentions: Sequence[dict[str, Any]]) -> list[MetricRow]:
    rows = []
    for key, label, better, help_text in METRICS:
        values: list[Any] = []
        for run, ret in zip(runs, retentions, strict=True):
            if key == "retention":
                values.append(ret.get("retention"))
            elif key == "facts_lost":
                values.append(ret.get("lost"))
            else:
                values.append((run.metrics or {}).get(key))
        flags = metric_best_flags(
            key, values, [run.metrics or {} for run in runs], families=replicates.families(runs)
        )
        spreads = [s.as_dict() if s else None for s in replicates.family_spreads(values, runs)]
        rows.append(MetricRow(key, label, better, help_text, values, flags, spreads))
    return rows


def _spread_text(found: dict[str, Any] | None) -> str:
    if not found:
        return ""
    return f"{found['min']:g}–{found['max']:g}, sd {found['stdev']:g} over {found['n']} replicates"


def best_flags(values: Sequence[Any], better: Better) -> list[bool]:
    """The catalogue's rule without a thrash guard: the lowest or highest number; none when
    the metric has no direction or every number is equal."""
    return catalogue_best_flags(values, better)


@dataclass(frozen=True, slots=True)
class BestNote:
    """The best rule stated next to a metrics table (compare page, its CSV, the report):
    the catalogue's one sentence and the runs it keeps out here, with why."""

    rule: str
    excluded: list[tuple[Run, list[str]]]

    @property
    def lines(self) -> list[str]:
        """The note as text lines (the CSV's header notes)."""
        out = [f"best: {self.rule}"]
        out += [f"not eligible: run {r.pk} {r.label}: {', '.join(why)}" for r, why in self.excluded]
        return out

    def as_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "not_eligible": {str(r.pk): why for r, why in self.excluded}}


def best_note(runs: Sequence[Run]) -> BestNote:
    reasons = catalogue.not_eligible([run.metrics or {} for run in runs])
    excluded = [(run, why) for run, why in zip(runs, reasons, strict=True) if why]
    return BestNote(catalogue.BEST_RULE, excluded)


# One column list for every metrics CSV (the compare page's and the group page's): the
# metric's key, its better direction, one column per run; rows in ``METRICS`` order.
CSV_COLUMNS = ("metric", "better")


def metrics_csv(runs: Sequence[Run], rows: Sequence[MetricRow]) -> str:
    """Header notes (lines starting with "#": the best rule and the runs it keeps out),
    then ``CSV_COLUMNS`` and a column per run; with replicates, a ``<key> spread`` row under
    a metric's row gives each run's family spread."""
    out = io.StringIO()
    writer = csv.writer(out)
    for line in best_note(runs).lines:
        writer.writerow([f"# {line}"])
    writer.writerow([*CSV_COLUMNS, *[f"run {r.pk} {r.label}" for r in runs]])
    for row in rows:
        writer.writerow([row.key, row.better or "", *["" if v is None else v for v in row.values]])
        if any(row.spreads):  # replicates: their spread under the values (``cells``)
            writer.writerow([f"{row.key} spread", "", *[text for _, _, text in row.cells]])
    return out.getvalue()


def runs_metrics_csv(runs: Sequence[Run]) -> str:
    """``metrics_csv`` of finished runs, from their stored compare inputs (what the compare
    page reads): the group page's CSV, the same columns, rows and values."""
    heads = lost_heads(runs, inputs.for_runs(runs))
    return metrics_csv(runs, metric_rows(runs, heads))


# --- curves ------------------------------------------------------------------------------


def curves(runs: Sequence[Run]) -> list[RunCurve]:
    out = []
    for run in runs:
        c = run_curve.curve(run)
        out.append(RunCurve(f"{run.pk} {run.label}", c.series, c.events, c.window, c.threshold))
    return out


# --- summaries side by side --------------------------------------------------------------


@dataclass(slots=True)
class SummaryCell:
    seq: int
    output: str
    error: str
    output_tokens: int
    diff: list[tuple[str, str]]  # against the row's first summary (empty for the first)


@dataclass(slots=True)
class SummaryRow:
    step: int
    cells: list[SummaryCell | None]


def summary_rows(
    runs: Sequence[Run], *, page: int = 1, per_page: int = SUMMARY_ROWS
) -> tuple[list[SummaryRow], int, int]:
    """Rows = the steps at which any run summarised; cells = each run's summary there.
    Returns (rows of the page, page, pages)."""
    by_run = {r.pk: i for i, r in enumerate(runs)}
    keys = list(
        RunSummary.objects.filter(run__in=runs)
        .values_list("run_id", "step", "seq")
        .order_by("step", "seq")
    )
    steps = sorted({step for _, step, _ in keys})
    pages = max(1, -(-len(steps) // per_page))
    page = min(max(page, 1), pages)
    visible = set(steps[(page - 1) * per_page : page * per_page])
    wanted = [(run_id, seq) for run_id, step, seq in keys if step in visible]
    outputs: dict[tuple[int, int], tuple[int, str, str, int]] = {}
    if wanted:
        from django.db.models import Q

        query = Q()
        for run_id, seq in wanted:
            query |= Q(run_id=run_id, seq=seq)
        for run_id, seq, step, output, error, tokens in RunSummary.objects.filter(
            query
        ).values_list("run_id", "seq", "step", "output", "error", "output_tokens"):
            outputs[(run_id, seq)] = (step, output, error, tokens)
    rows: dict[int, SummaryRow] = {s: SummaryRow(s, [None] * len(runs)) for s in sorted(visible)}
    for (run_id, seq), (step, output, error, tokens) in sorted(
        outputs.items(), key=lambda kv: kv[0][1]
    ):
        row = rows[step]
        col = by_run[run_id]
        if row.cells[col] is None:  # a run's first summary at that step
            row.cells[col] = SummaryCell(seq, output, error, tokens, [])
    for row in rows.values():
        base = next((c for c in row.cells if c is not None), None)
        for cell in row.cells:
            if cell is not None and base is not None and cell is not base:
                cell.diff = message_diffs.diff_lines(base.output, cell.output, context=1)
    return list(rows.values()), page, pages


# --- the fate matrix ---------------------------------------------------------------------


def final_fates(run: Run) -> dict[int, Fate]:
    return fatelog.fate_log(run).final()


def matrix(
    runs: Sequence[Run],
    messages: int,
    *,
    size: int | None = None,
    step: int | None = None,
    stored: Sequence[dict[str, Any]] | None = None,
) -> tuple[int, list[list[MatrixCell]]]:
    """Per run, one cell per bucket of ``size`` messages: the fate of each message at
    ``step`` (None: the final fate, the last change over the run; never changed = kept).
    ``stored``: the runs' compare inputs (``inputs.for_runs``), whose final fates at the
    default size are used as they are."""
    size = size or bucket_size(messages)
    if step is None and stored is not None:
        found = [piece["matrix"] for piece in stored]
        if all(m["messages"] == messages and m["size"] == size for m in found):
            return size, [[MatrixCell.from_row(c) for c in m["cells"]] for m in found]
    grid = [
        memo.cached(
            run,
            f"matrix:{messages}:{size}:{step}",
            functools.partial(_matrix_row, run, messages, size, step),
        )
        for run in runs
    ]
    return size, grid


def _matrix_row(run: Run, messages: int, size: int, step: int | None = None) -> list[MatrixCell]:
    return matrix_cells(fates_at(run, step), messages, size)


def matrix_strip(cells: Sequence[MatrixCell], *, href: str, name: str, first: bool) -> str:
    """One run's row of the matrix as HTML (2,000+ cells: a template loop costs ~100 ms).
    Each cell links its first message in the step view at ``href``
    (``compare_steps.message_link``). The matrix is one tab stop: only the very first cell
    (``first``: this is the first run's row) is in the tab order, the arrow keys move
    between cells (``compare_step.js``); each cell's label names the run (``name``), its
    messages and their fates. Only fate names and numbers go in; the rest is escaped."""
    run = html.escape(name)
    return "".join(
        f'<a class="fate-cell cell-{c.fate}" data-fate="{c.fate}" data-message="{c.start}" '
        f'href="{html.escape(message_link(href, c.start))}" '
        f'tabindex="{0 if first and i == 0 else -1}" '
        f'title="{html.escape(c.title)}" aria-label="{run}: {html.escape(c.title)}"></a>'
        for i, c in enumerate(cells)
    )


def matrix_detail(runs: Sequence[Run], start: int, end: int) -> list[tuple[int, list[str]]]:
    """Message by message for ``[start, end)``: (index, [fate per run])."""
    finals = [final_fates(r) for r in runs]
    return [(i, [f.get(i, Fate.KEPT).value for f in finals]) for i in range(start, end)]


# --- what was lost -----------------------------------------------------------------------


def lost_heads(runs: Sequence[Run], stored: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The page's "What was lost" per run: the stored head of its analysis (figures, first
    compactions, first lost facts of each) with its links."""
    return [
        with_links(run, lost_analysis.in_display_order(piece["lost"]), ordinals=ordinals(piece))
        for run, piece in zip(runs, stored, strict=True)
    ]


def ordinals(piece: dict[str, Any]) -> dict[int, int]:
    """Event seq -> compaction K from a run's stored compare inputs (numbered there by
    ``catalogue.compaction_ordinals``): the compare page reads no event row."""
    return {c.seq: c.ordinal for c in map(Compaction.from_row, piece["compactions"])}


def stored_curves(runs: Sequence[Run], stored: Sequence[dict[str, Any]]) -> list[RunCurve]:
    """The chart's curves from the runs' stored (thinned) curves."""
    out = []
    for run, piece in zip(runs, stored, strict=True):
        c = piece["curve"]
        series = Series(steps=c["steps"], strategy=c["strategy"], reference=c["reference"])
        # each compaction's K, as its row in "Summaries by compaction" has it
        ordinals_of = ordinals(piece)
        events = [
            EventPoint(
                step, kind, before, after, messages, seq=seq, compaction=ordinals_of.get(seq)
            )
            for seq, step, kind, before, after, messages in c["events"]
        ]
        out.append(RunCurve(f"{run.pk} {run.label}", series, events, c["window"], c["threshold"]))
    return out


def retentions(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """``inspect.retention`` per run. Usually stored by the worker; the transcript's
    messages are loaded (at most once) only when a run's analysis has to be computed."""
    if not runs:
        return []
    # load_runs: every run is on one transcript, read (row and messages) only if needed
    shared_index = functools.cache(lambda: FactIndex(runs[0].transcript.to_conversation().messages))

    numbers = functools.cache(lambda: compaction_ordinals_of(runs))  # one query for all

    def linked(run: Run) -> dict[str, Any]:
        data = lost_analysis.retention(run, fact_index=shared_index)
        return with_links(run, data, ordinals=numbers()[run.pk])

    # Finished runs never change: link their ~20,000 lost facts once, not per view.
    return [memo.cached(run, "retention-links", functools.partial(linked, run)) for run in runs]
