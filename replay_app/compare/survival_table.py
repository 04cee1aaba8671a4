"""The survival table of the compare and run pages: one row per run (and, when the
transcript recorded its own compactions, an "original" row first), one column per fact
category (``catalogue.FACT_CATEGORIES``): the share of the facts each run's compactions
replaced that stayed available to the model, with the counts behind it.

Values come from ``replay_app.runs.survival`` (stored per run and per transcript); fact
values shown (lost examples, drift) are masked again (``secrets.mask``): they come from
stored texts and summaries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxlab.engine.core import catalogue
from ctxlab.engine.privacy import secrets

from ..models import Run
from ..runs import survival as stored

CATEGORIES = tuple(catalogue.FACT_CATEGORIES.values())


@dataclass(frozen=True, slots=True)
class Cell:
    category: str
    at_risk: int
    survived: int
    in_summary: int
    share: float | None

    @property
    def percent(self) -> str:
        return "—" if self.share is None else f"{self.share * 100:.1f}%"

    def as_dict(self) -> dict[str, Any]:
        return {
            "at_risk": self.at_risk,
            "survived": self.survived,
            "in_summary": self.in_summary,
            "share": self.share,
        }


@dataclass(frozen=True, slots=True)
class Row:
    key: str  # "original" or the run's id
    label: str
    run: Run | None
    data: dict[str, Any] | None  # RunSurvival.as_dict(); None: not available
    cells: tuple[Cell, ...] = ()
    findings: tuple[dict[str, Any], ...] = field(default=())
    drift: tuple[dict[str, Any], ...] = field(default=())
    # the first COMPACTIONS_SHOWN compactions: (where, cells); the JSON twin has them all
    per_compaction: tuple[tuple[str, tuple[Cell, ...]], ...] = field(default=())
    shown: int = 0  # findings and drifting compactions listed (0: DETAILS_SHOWN)
    n_findings: int | None = None  # all of them (None: len(findings)); see ``head``
    n_drift: int | None = None

    @property
    def findings_count(self) -> int:
        return len(self.findings) if self.n_findings is None else self.n_findings

    @property
    def drift_count(self) -> int:
        return len(self.drift) if self.n_drift is None else self.n_drift

    @property
    def is_original(self) -> bool:
        return self.run is None

    def value(self, key: str) -> Any:
        return None if self.data is None else self.data.get(key)

    @property
    def findings_shown(self) -> tuple[dict[str, Any], ...]:
        return self.findings[: self.shown or DETAILS_SHOWN]

    @property
    def drift_shown(self) -> tuple[dict[str, Any], ...]:
        return self.drift[: self.shown or DETAILS_SHOWN]

    @property
    def overall(self) -> str:
        share = self.value("survival")
        return "—" if share is None else f"{share * 100:.1f}%"

    @property
    def persistence(self) -> str:
        share = self.value("first_summary_persistence")
        return "—" if share is None else f"{share * 100:.1f}%"

    def as_dict(self) -> dict[str, Any]:
        data = self.data or {}
        return {
            "label": self.label,
            "available": self.data is not None,
            "compactions": data.get("compactions_count"),
            "survival": data.get("survival"),
            "first_summary_persistence": data.get("first_summary_persistence"),
            "drift_total": data.get("drift_total"),
            "instruction_losses": data.get("instruction_losses"),
            "categories": {c.category: c.as_dict() for c in self.cells},
            "findings": list(self.findings),
        }


def _row(key: str, label: str, run: Run | None, data: dict[str, Any] | None, shown: int = 0) -> Row:
    if data is None:
        return Row(key, label, run, None)
    cells = _cells(data.get("categories", {}))
    findings = tuple(
        {**f, "label": secrets.mask(str(f.get("label", "")))} for f in data.get("findings", ())
    )
    drifting = data.get("drifting")  # a head's (``head``), else from every compaction
    if drifting is None:
        drifting = [comp for comp in data.get("compactions", ()) if comp.get("drift_count")]
    listed = shown or DETAILS_SHOWN  # only the listed ones' facts are masked and shown
    drift = tuple(
        {
            "step": comp.get("step"),
            "source_index": comp.get("source_index"),
            "count": comp.get("drift_count", 0),
            "facts": [
                {"kind": d["kind"], "value": secrets.mask(d["value"])}
                for d in (comp.get("drift", ()) if n < listed else ())[:DRIFT_FACTS_SHOWN]
            ],
        }
        for n, comp in enumerate(drifting)
    )
    per_compaction = tuple(
        (_where(comp), _cells(comp.get("categories", {})))
        for comp in data.get("compactions", ())[: shown or COMPACTIONS_SHOWN]
    )
    return Row(
        key, label, run, data, cells, findings, drift, per_compaction, shown,
        data.get("findings_total"), data.get("drifting_total"),
    )  # fmt: skip


def head(data: dict[str, Any] | None, shown: int) -> dict[str, Any] | None:
    """What a page listing ``shown`` compactions, findings and drifts reads of a run's
    survival table (``RunSurvival.as_dict``): its figures, the first ``shown`` compactions,
    findings and drifting compactions, and how many of each there are."""
    if data is None:
        return None
    compactions = data.get("compactions", ())
    drifting = [c for c in compactions if c.get("drift_count")]
    findings = data.get("findings", ())
    return {
        **{k: v for k, v in data.items() if k not in ("compactions", "findings")},
        "compactions": list(compactions[:shown]),
        "findings": list(findings[:shown]),
        "findings_total": len(findings),
        "drifting": [
            {**c, "drift": list(c.get("drift", ())[:DRIFT_FACTS_SHOWN])} for c in drifting[:shown]
        ],
        "drifting_total": len(drifting),
    }


COMPACTIONS_SHOWN = 50
# Compactions, findings and drifts listed per run on the compare page (five or six runs
# side by side made that section ~400 KB of HTML at 50).
COMPARE_SHOWN = 10
# Findings and drifting compactions listed per run on the pages (the JSON twin has them
# all): a long run has thousands, ~700 KB of HTML on the five-run compare page.
DETAILS_SHOWN = 50
DRIFT_FACTS_SHOWN = 20  # facts listed per drifting compaction


def _cells(cats: dict[str, Any]) -> tuple[Cell, ...]:
    return tuple(
        Cell(
            c.key,
            int(cats.get(c.key, {}).get("at_risk", 0)),
            int(cats.get(c.key, {}).get("survived", 0)),
            int(cats.get(c.key, {}).get("in_summary", 0)),
            cats.get(c.key, {}).get("share"),
        )
        for c in CATEGORIES
    )


def _where(comp: dict[str, Any]) -> str:
    kind = catalogue.event_kind(str(comp.get("label", "")))
    label = kind.label if kind else str(comp.get("label", ""))
    if comp.get("step") is not None:
        return f"step {comp['step']} · {label}"
    return f"before message {comp.get('source_index')} · {label}"


def original_row(run: Run, shown: int = 0) -> Row | None:
    """The transcript's own compactions as a pseudo-run (None when it recorded none)."""
    data = stored.original_survival(run.transcript)
    if data is None:
        return None
    return _row("original", "original (the agent's own compactions)", None, data, shown)


def run_row(run: Run, shown: int = 0) -> Row:
    return _row(str(run.pk), f"run {run.pk} · {run.label}", run, stored.run_survival(run), shown)


# the run-level columns after the categories, labelled by the catalogue
METRICS = tuple(
    catalogue.metric(k)
    for k in ("survival", "first_summary_persistence", "drift_total", "instruction_losses")
)


@dataclass(frozen=True, slots=True)
class Table:
    rows: tuple[Row, ...]
    categories: tuple[catalogue.FactCategory, ...] = CATEGORIES
    metrics: tuple[catalogue.Metric, ...] = METRICS

    def as_json(self) -> dict[str, Any]:
        """The JSON twin's ``survival``: the categories, then per run (and ``original``)."""
        return {
            "categories": [
                {"key": c.key, "label": c.label, "meaning": c.meaning} for c in self.categories
            ],
            "original": next((r.as_dict() for r in self.rows if r.is_original), None),
            "runs": {r.key: r.as_dict() for r in self.rows if not r.is_original},
        }


def table_of_heads(
    runs: Sequence[Run], heads: Sequence[dict[str, Any] | None], shown: int
) -> Table:
    """``table(runs, shown=shown)`` for the page, from the runs' stored ``head``s."""
    rows = [
        _row(str(r.pk), f"run {r.pk} · {r.label}", r, data, shown)
        for r, data in zip(runs, heads, strict=True)
    ]
    first = original_row(runs[0], shown) if runs else None
    return Table(tuple([first, *rows] if first is not None else rows))


def table(runs: Sequence[Run], *, original: bool = True, shown: int = 0) -> Table:
    """The original row (if any and ``original``) then one row per run, in order.
    ``shown``: compactions, findings and drifts listed per row (0: the run page's
    ``COMPACTIONS_SHOWN`` and ``DETAILS_SHOWN``; the JSON twin has them all)."""
    rows = [run_row(r, shown) for r in runs]
    first = original_row(runs[0], shown) if runs and original else None
    return Table(tuple([first, *rows] if first is not None else rows))
