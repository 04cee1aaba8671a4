"""The results of a suite as one page-data object (the page, its JSON and CSV twins and the
CLI all read ``SuiteResults``), built from the summary rows alone (``SuiteItem.summary``),
never from the runs' step rows.

Per configuration: the distribution over transcripts of every catalogued metric (median,
quartiles, min/max); a leaderboard with the Pareto front of cost vs retention; for a
2-parameter grid a heatmap; outliers (runs that thrash or overflow) with links. Labels,
units, directions and "best" come from the engine's catalogue (``ctxlab.engine.core.catalogue``).
"""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxlab.engine.core.catalogue import (
    METRICS,
    OVERFLOW_KEYS,
    best_flags,
    overflowed,
    pathological,
    unit_note,
)
from ctxlab.engine.core.spread import SPREAD_RULE, Spread, clear_lead, spread

from .configs import fmt
from .items import summary_row
from .models import Suite, SuiteItem
from .progress import SuiteProgressData, suite_progress_data
from .replay_glue import Run, RunStatus, probe_scores

# The leaderboard's axes: money when the ledger priced the runs, tokens sent otherwise.
RETENTION_KEY = "retention"
COST_KEYS = ("ledger_total_cost", "input_tokens_total")
HEATMAP_DEFAULT = ("retention", "peak_reference", "compaction_count")


@dataclass(frozen=True, slots=True)
class Stat:
    n: int
    median: float
    p25: float
    p75: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat:
        ordered = sorted(values)
        if len(ordered) >= 2:
            p25, _, p75 = statistics.quantiles(ordered, n=4, method="inclusive")
        else:
            p25 = p75 = ordered[0]
        return cls(len(ordered), statistics.median(ordered), p25, p75, ordered[0], ordered[-1])

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "median": self.median,
            "p25": self.p25,
            "p75": self.p75,
            "min": self.low,
            "max": self.high,
        }


@dataclass(frozen=True, slots=True)
class Outlier:
    transcript_id: int
    transcript: str
    run_id: int | None
    reasons: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "transcript_id": self.transcript_id,
            "transcript": self.transcript,
            "run": self.run_id,
            "reasons": list(self.reasons),
        }


@dataclass(slots=True)
class ConfigResult:
    index: int
    label: str
    config: dict[str, Any]
    counts: dict[str, int]
    stats: dict[str, Stat]
    outliers: list[Outlier]
    best: set[str] = field(default_factory=set)
    pareto: bool = False
    rank: int = 0
    # With replicates: per metric, the spread of the replicates' medians over the
    # transcripts (replicate r's value is the median of its runs), and those values.
    spreads: dict[str, Spread] = field(default_factory=dict)
    replicate_values: dict[str, list[float]] = field(default_factory=dict)

    def median(self, key: str) -> float | None:
        stat = self.stats.get(key)
        return None if stat is None else stat.median


@dataclass(frozen=True, slots=True)
class MetricColumn:
    key: str
    label: str
    unit: str
    better: str | None
    meaning: str
    best_rule: str

    @property
    def unit_note(self) -> str:
        return unit_note(self.label, self.unit)


@dataclass(slots=True)
class Heatmap:
    x_key: str
    y_key: str
    x_values: list[Any]
    y_values: list[Any]
    # metric -> rows (one per y value) of (median or None, config index or None)
    cells: dict[str, list[list[tuple[float | None, int | None]]]]
    default: str

    @property
    def default_rows(self) -> list[tuple[Any, list[tuple[float | None, int | None]]]]:
        """The default metric's rows with their y value (the HTML table under the chart)."""
        return list(zip(self.y_values, self.cells.get(self.default, []), strict=False))


@dataclass(slots=True)
class SuiteResults:
    suite: Suite
    progress: SuiteProgressData
    columns: list[MetricColumn]
    configs: list[ConfigResult]
    cost_key: str | None
    heatmap: Heatmap | None

    @property
    def leaderboard(self) -> list[ConfigResult]:
        return sorted(self.configs, key=lambda c: c.rank)

    @property
    def replicates(self) -> int:
        return int(self.suite.replicates or 1)

    @property
    def best_rule(self) -> str:
        """How "best" is decided here: the catalogue's rule, and with replicates also
        ``core/spread.py``'s (only a lead larger than the spread)."""
        return SPREAD_RULE if self.replicates > 1 else "the catalogue's rule"

    def as_json(self) -> dict[str, Any]:
        return {
            "suite": {"id": self.suite.pk, "name": self.suite.name},
            "replicates": self.replicates,
            "best_rule": self.best_rule,
            "progress": dict(self.progress),
            "metrics": [
                {"key": c.key, "label": c.label, "unit": c.unit, "better": c.better}
                for c in self.columns
            ],
            "cost_metric": self.cost_key,
            "configurations": [
                {
                    "index": c.index,
                    "label": c.label,
                    "strategy": c.config.get("strategy"),
                    "grid": c.config.get("grid") or {},
                    "window": c.config.get("window"),
                    "counts": c.counts,
                    "rank": c.rank,
                    "pareto": c.pareto,
                    "best": sorted(c.best),
                    "stats": {k: s.as_dict() for k, s in c.stats.items()},
                    "spread": {k: s.as_dict() for k, s in c.spreads.items()},
                    "outliers": [o.as_dict() for o in c.outliers],
                }
                for c in self.configs
            ],
            "heatmap": None
            if self.heatmap is None
            else {
                "x": self.heatmap.x_key,
                "y": self.heatmap.y_key,
                "x_values": self.heatmap.x_values,
                "y_values": self.heatmap.y_values,
                "median": {
                    k: [[v for v, _ in row] for row in rows]
                    for k, rows in self.heatmap.cells.items()
                },
            },
        }

    def as_csv(self) -> str:
        """One row per configuration × metric: the same numbers as the page."""
        out = io.StringIO()
        writer = csv.writer(out)
        with_spread = self.replicates > 1  # the replicates' spread: 5 more columns
        spread_head = ["replicates", "spread mean", "spread min", "spread max", "spread sd"]
        writer.writerow(
            ["configuration", "rank", "pareto", "metric", "unit", "n", "median", "p25", "p75",
             "min", "max", "best", *(spread_head if with_spread else [])]
        )  # fmt: skip
        for c in self.leaderboard:
            for column in self.columns:
                stat = c.stats.get(column.key)
                if stat is None:
                    continue
                row = [_csv_text(c.label), c.rank, c.pareto, column.key, column.unit, stat.n,
                       stat.median, stat.p25, stat.p75, stat.low, stat.high, column.key in c.best]  # fmt: skip
                if with_spread:
                    sp = c.spreads.get(column.key)
                    row += ["", "", "", "", ""] if sp is None else [
                        sp.n, round(sp.mean, 6), sp.low, sp.high, round(sp.stdev, 6)
                    ]  # fmt: skip
                writer.writerow(row)
        return out.getvalue()


def _csv_text(text: str) -> str:
    # A label starting with = + - @ would be a formula in a spreadsheet.
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def _items(suite: Suite) -> list[SuiteItem]:
    items = list(
        suite.items.select_related("transcript", "run").only(
            "suite", "config_index", "replicate", "status", "summary", "run", "transcript",
            "run__status", "transcript__title", "transcript__source_file",
        )
    )  # fmt: skip
    _fill_unrecorded(items)
    # Probes are scored after a run finished (judge_app): merged in when present.
    late = probe_scores([it.run_id for it in items if it.run_id and _run_done(it)])
    for it in items:
        if it.run_id in late:
            it.summary = {**(it.summary or {}), **late[it.run_id]}
    return items


# Metrics whose 0 means "the transcript reports none" (no provider usage in the log):
# missing, as the transcript pages show "—", never a 0 pulling the median down.
ABSENT_AT_ZERO = frozenset({"peak_reported"})


def metric_value(summary: dict[str, Any], key: str) -> float | None:
    """One run's value of ``key`` as the results aggregate it, or None (missing)."""
    value = summary.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    if value == 0 and key in ABSENT_AT_ZERO:
        return None
    return float(value)


def _shown(summary: dict[str, Any], key: str) -> Any:
    """A per-transcript cell: the run's value, None where it is missing (``metric_value``)."""
    value = summary.get(key)
    return None if key in ABSENT_AT_ZERO and value == 0 else value


def _run_done(item: SuiteItem) -> bool:
    return item.run is not None and item.run.status == RunStatus.DONE


def _fill_unrecorded(items: list[SuiteItem]) -> None:
    """Items whose run is done but whose summary row is not recorded yet get it from the
    run itself. The progress counts the runs' own status, so without this a page fetched
    in between (a run just committed ``done``, its suite task not yet past ``_record``)
    would show that run as done with no numbers."""
    unrecorded = {
        it.run_id: it
        for it in items
        if it.run_id is not None and _run_done(it) and it.status != RunStatus.DONE
    }
    if not unrecorded:
        return
    for run in Run.objects.filter(pk__in=list(unrecorded), status=RunStatus.DONE).only("metrics"):
        unrecorded[run.pk].summary = summary_row(run)


def transcript_name(item: SuiteItem) -> str:
    t = item.transcript
    return t.title or t.source_file or f"transcript {t.pk}"


def outlier_reasons(summary: dict[str, Any], status: str) -> tuple[str, ...]:
    if status == "failed":
        return ("failed",)
    reasons = []
    if pathological(summary):
        reasons.append("thrash")
    if overflowed(summary):  # in cl100k or in the strategy's own count
        reasons.append("overflow")
    return tuple(reasons)


def build(suite: Suite) -> SuiteResults:
    # Progress first, rows after: rows are never older than the progress the page shows
    # with them (a run that was done then is done in the rows too).
    progress = suite_progress_data(suite)
    items = _items(suite)
    by_config: dict[int, list[SuiteItem]] = {i: [] for i in range(len(suite.configs))}
    for item in items:
        by_config.setdefault(item.config_index, []).append(item)
    keys = [k for k in METRICS if any(k in (it.summary or {}) for it in items)]
    columns = [
        MetricColumn(k, m.label, m.unit, m.better, m.meaning, m.best_rule)
        for k, m in ((k, METRICS[k]) for k in keys)
    ]
    results = []
    for index, members in by_config.items():
        counts: dict[str, int] = {}
        for it in members:
            status = it.run.status if it.run is not None else it.status
            counts[status] = counts.get(status, 0) + 1
        stats = {}
        for key in keys:
            found = (metric_value(it.summary or {}, key) for it in members)
            values = [v for v in found if v is not None]
            if values:
                stats[key] = Stat.of(values)
        per_replicate, spreads = _replicate_spreads(members, keys, suite.replicates or 1)
        outliers = []
        for it in members:
            status = it.run.status if it.run is not None else it.status
            reasons = outlier_reasons(it.summary or {}, status)
            if reasons:
                outliers.append(Outlier(it.transcript_id, transcript_name(it), it.run_id, reasons))
        config = suite.configs[index] if index < len(suite.configs) else {}
        result = ConfigResult(
            index, str(config.get("label", index)), config, counts, stats, outliers
        )
        result.spreads, result.replicate_values = spreads, per_replicate
        results.append(result)
    _mark_best(results, columns, replicates=suite.replicates or 1)
    cost_key = next((k for k in COST_KEYS if any(k in c.stats for c in results)), None)
    _rank(results, cost_key)
    return SuiteResults(
        suite,
        progress,
        columns,
        results,
        cost_key,
        _heatmap(suite, results, keys),
    )


def _replicate_spreads(
    members: list[SuiteItem], keys: list[str], replicates: int
) -> tuple[dict[str, list[float]], dict[str, Spread]]:
    """With replicates, per metric: each replicate's median over the transcripts it has a
    value for (replicate r of every transcript is one pass of the configuration), and the
    spread of those medians. Without replicates: nothing."""
    if replicates < 2:
        return {}, {}
    values: dict[str, list[float]] = {}
    spreads: dict[str, Spread] = {}
    for key in keys:
        medians = []
        for r in range(replicates):
            found = (metric_value(it.summary or {}, key) for it in members if it.replicate == r)
            numbers = [v for v in found if v is not None]
            if numbers:
                medians.append(statistics.median(numbers))
        described = spread(medians)
        if described is not None and described.n > 1:
            values[key], spreads[key] = medians, described
    return values, spreads


def beyond_spread(
    flags: Sequence[bool],
    numbers: Sequence[float | None],
    families: Sequence[int],
    better: str | None,
) -> list[bool]:
    """Best flags kept only where ``core.spread.clear_lead`` agrees: the family (a
    configuration's replicates) leads every other by more than the spread. ``flags`` and
    ``numbers`` are per value, ``families`` names each value's configuration."""
    if better not in ("lower", "higher"):
        return list(flags)
    leads = clear_lead(numbers, families, better)  # type: ignore[arg-type]
    lead = {f for f, ok in zip(families, leads, strict=True) if ok}
    return [flag and family in lead for flag, family in zip(flags, families, strict=True)]


def _mark_best(
    results: list[ConfigResult], columns: list[MetricColumn], replicates: int = 1
) -> None:
    """Best per the catalogue's rule on the medians; with replicates, a configuration so
    marked keeps it only when its replicates lead beyond the spread
    (``core.spread.clear_lead``, the one rule the run pages use too)."""
    for column in columns:
        medians = [c.median(column.key) for c in results]
        # A configuration whose median run thrashes cannot win a guarded metric, nor one
        # whose median run overflows its window any metric (catalogue.best_flags).
        guard = [
            {
                "steps": c.median("steps") or 0,
                "thrash": c.median("thrash") or 0,
                **{key: c.median(key) or 0 for key in OVERFLOW_KEYS},
            }
            for c in results
        ]
        flags = best_flags(
            medians, column.better, guarded=METRICS[column.key].guarded, runs=guard,  # type: ignore[arg-type]
            overflow_guard=column.key not in OVERFLOW_KEYS,
        )  # fmt: skip
        if replicates > 1:
            numbers: list[float | None] = []
            families: list[int] = []
            for c in results:
                for v in c.replicate_values.get(column.key, []):
                    numbers.append(v)
                    families.append(c.index)
            kept = beyond_spread([True] * len(numbers), numbers, families, column.better)
            lead = {f for f, ok in zip(families, kept, strict=True) if ok}
            flags = [flag and c.index in lead for c, flag in zip(results, flags, strict=True)]
        for c, flag in zip(results, flags, strict=True):
            if flag:
                c.best.add(column.key)


def pareto_front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """Which (cost, retention) points no other point dominates (cost ≤ and retention ≥,
    one of them strictly)."""
    front = []
    for i, (cost, kept) in enumerate(points):
        dominated = any(
            c2 <= cost and r2 >= kept and (c2 < cost or r2 > kept)
            for j, (c2, r2) in enumerate(points)
            if j != i
        )
        front.append(not dominated)
    return front


def _rank(results: list[ConfigResult], cost_key: str | None) -> None:
    scored = [
        c
        for c in results
        if cost_key and c.median(cost_key) is not None and c.median(RETENTION_KEY) is not None
    ]
    points = [(c.median(cost_key or "") or 0.0, c.median(RETENTION_KEY) or 0.0) for c in scored]
    for c, on_front in zip(scored, pareto_front(points), strict=True):
        c.pareto = on_front

    def order_key(c: ConfigResult) -> tuple[bool, float, float, int]:
        kept = c.median(RETENTION_KEY)
        spent = c.median(cost_key) if cost_key else None
        return (
            not c.pareto,
            -(kept if kept is not None else -1.0),
            spent if spent is not None else float("inf"),
            c.index,
        )

    order = sorted(results, key=order_key)
    for rank, c in enumerate(order, 1):
        c.rank = rank


def _heatmap(suite: Suite, results: list[ConfigResult], keys: list[str]) -> Heatmap | None:
    if len(suite.grid_keys) != 2:
        return None
    x_key, y_key = suite.grid_keys
    grids = [(c, c.config.get("grid") or {}) for c in results]
    if not all(x_key in g and y_key in g for _, g in grids):
        return None
    x_values = _distinct(g[x_key] for _, g in grids)
    y_values = _distinct(g[y_key] for _, g in grids)
    at = {(fmt(g[x_key]), fmt(g[y_key])): c for c, g in grids}
    cells: dict[str, list[list[tuple[float | None, int | None]]]] = {}
    for key in keys:
        rows = []
        for y in y_values:
            row: list[tuple[float | None, int | None]] = []
            for x in x_values:
                c = at.get((fmt(x), fmt(y)))
                row.append((None, None) if c is None else (c.median(key), c.index))
            rows.append(row)
        cells[key] = rows
    default = next((k for k in HEATMAP_DEFAULT if k in cells), keys[0] if keys else "")
    return Heatmap(x_key, y_key, x_values, y_values, cells, default)


def _distinct(values: Any) -> list[Any]:
    seen: dict[str, Any] = {}
    for v in values:
        seen.setdefault(fmt(v), v)
    return sorted(seen.values())


@dataclass(frozen=True, slots=True)
class TranscriptRow:
    item: SuiteItem
    name: str
    status: str
    values: list[Any]
    reasons: tuple[str, ...]


def transcript_rows(suite: Suite, index: int, columns: list[MetricColumn]) -> list[TranscriptRow]:
    """The per-transcript table behind one configuration's aggregates."""
    return all_transcript_rows(suite, columns).get(index, [])


def all_transcript_rows(
    suite: Suite, columns: list[MetricColumn]
) -> dict[int, list[TranscriptRow]]:
    """Every configuration's per-transcript rows, by configuration index (one query)."""
    rows: dict[int, list[TranscriptRow]] = {}
    for it in _items(suite):
        status = it.run.status if it.run is not None else it.status
        summary = it.summary or {}
        rows.setdefault(it.config_index, []).append(
            TranscriptRow(
                it, transcript_name(it), status, [_shown(summary, c.key) for c in columns],
                outlier_reasons(summary, status),
            )
        )  # fmt: skip
    return rows


def runs_of_transcript(suite: Suite, transcript_id: int) -> list[int]:
    """Every finished run of one transcript in the suite (for /compare/, which takes 2-6)."""
    return list(
        suite.items.filter(transcript_id=transcript_id, run__status="done")
        .order_by("config_index", "replicate")
        .values_list("run_id", flat=True)
    )


def stat_rows(
    configs: Sequence[ConfigResult], columns: Sequence[MetricColumn]
) -> list[dict[str, Any]]:
    """One row per metric: each configuration's Stat (or None: no run of it has the
    metric), whether it is best and, with replicates, the spread of its replicates. The
    suite page and its report both show these."""
    return [
        {
            "column": col,
            "cells": [
                (c.stats.get(col.key), col.key in c.best, c.spreads.get(col.key)) for c in configs
            ],
        }
        for col in columns
    ]
