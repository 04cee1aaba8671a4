"""The run page (``/runs/<id>/``): one object that both its template and its JSON twin read,
so the page and ``?format=json`` can never disagree.

Sections are computed on first use (``cached_property``): the JSON twin, an htmx fragment
(one section) and the full page each touch only what they show. Long lists are paged
(``runpage``): events by ``?page``/``?kind``, summaries by ``?spage`` (or ``?summary=N``:
the page showing N), finding groups by ``?fkind``/``?fpage``; the scrubber's step by
``?step``/``?mpage``.
"""

from __future__ import annotations

from functools import cached_property, partial
from typing import Any

from django.core.paginator import Page
from django.http import QueryDict

from ctxlab.engine.budget import window_param_names
from ctxlab.engine.strategies import get_strategy_class
from ctxlab.web.http import int_param
from replay_app import memo
from replay_app.compare import originals as agreement
from replay_app.compare import survival_table
from replay_app.costs import run_costs
from replay_app.display import charts, vocabulary
from replay_app.models import Run, RunStatus
from replay_app.runs import analysis_state, progress
from replay_app.runs.pages import runpage
from replay_app.steps import at_step, run_curve

LEDGER_ROWS_SHOWN = 50  # per-compaction ledger rows on the page (all of them in the JSON)
# (metrics key, label, what it means): headline metrics in display order, from the catalogue.
METRICS: list[tuple[str, str, str]] = vocabulary.label_rows(vocabulary.RUN_KEYS)

# htmx targets answered with one section of the page (the links work without JS too).
FRAGMENTS = {
    "run-events": "replay_app/runs/_events.html#run-events",
    "run-summaries": "replay_app/runs/_summaries.html#run-summaries",
    "run-findings": "replay_app/runs/_findings.html#run-findings",
}


def run_json(run: Run, *, full: bool = False) -> dict[str, Any]:
    """A run as JSON: the run list and group pages list it short, the run page in full."""
    data: dict[str, Any] = {
        "id": run.pk,
        "url": run.get_absolute_url(),
        "transcript": {"id": run.transcript_id, "title": str(run.transcript)},
        "group": run.group_id,
        "label": run.label,
        "strategy": run.strategy,
        "config": run.config_id,
        "window": run.window,  # the comparison's window (None: the config's own values)
        "summarizer": run.summarizer,
        "status": run.status,
        "error": run.error,
        "attempts": run.attempts,
        "steps_done": run.steps_done,
        "steps_total": run.steps_total,
        "percent": run.percent,
        "events_count": run.events_count,
        "created_at": run.created_at.isoformat(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "duration_seconds": run.duration_seconds,
        "metrics": run.metrics,
    }
    if full:
        data["params"] = run.params
        data["estimator"] = run.estimator
        data["summarizer_model"] = run.summarizer_model
        data["cost"] = run_costs.run_costs_json(run)
        # The run page's metric table as the catalogue labels it (label, unit, direction).
        data["metric_rows"] = [
            {**vocabulary.metric_json(key), "value": (run.metrics or {}).get(key)}
            for key in vocabulary.RUN_KEYS
        ]
    return data


def load_ledger(run: Run) -> None:
    """A finished run's ledger (up to ~1 MB of JSON, per-step arrays) is parsed once and
    kept in the memo, like the run's curve: never re-parsed per page view."""
    run.ledger = memo.cached(run, "ledger", lambda: _ledger(run.pk))


def _ledger(pk: int) -> dict[str, Any]:
    return Run.objects.filter(pk=pk).values_list("ledger", flat=True).first() or {}


class RunPage:
    """Everything ``runs/run_detail.html`` (and its sections) and the JSON twin show."""

    def __init__(self, run: Run, query: QueryDict) -> None:
        self.run = run
        self.query = query

    # --- the sections ------------------------------------------------------------------

    @cached_property
    def events(self) -> runpage.EventsPage:
        page = runpage.page_number(self.query.get("page"))
        return runpage.events_page(self.run, page=page, kind=self.query.get("kind", ""))

    @cached_property
    def summaries(self) -> Page[Any]:
        seq = self.query.get("summary", "")
        spage = runpage.page_number(self.query.get("spage"))
        if seq.isdigit() and "spage" not in self.query:  # ?summary=N: the page showing N
            spage = runpage.summary_page_of(self.run, int(seq))
        return runpage.summaries_page(self.run, page=spage)

    @cached_property
    def findings(self) -> runpage.Findings:
        return runpage.findings_groups(
            self.run,
            kind=self.query.get("fkind", ""),
            page=runpage.page_number(self.query.get("fpage")),
        )

    @cached_property
    def state(self) -> progress.RunProgressData:
        # A finished run's progress never changes (its latest events read whole rows).
        return memo.cached(self.run, "progress", lambda: progress.run_state(self.run))

    @cached_property
    def metrics(self) -> list[tuple[str, str, str, Any]]:
        values = self.run.metrics or {}
        return [(key, label, hint, values.get(key)) for key, label, hint in METRICS]

    @cached_property
    def originals(self) -> list[agreement.OriginalRow]:
        """The transcript's own compactions beside this run's (its stored rows)."""
        return agreement.run_rows(self.run)

    @cached_property
    def costs(self) -> dict[str, Any]:
        load_ledger(self.run)  # read only when the section is built (not from the memo)
        context = run_costs.page_context(self.run)
        if context.get("ledger_rows"):  # the first rows; every row is in the JSON twin
            context["ledger_rows"] = context["ledger_rows"][:LEDGER_ROWS_SHOWN]
        return context

    @cached_property
    def window_keys(self) -> tuple[str, ...]:
        return tuple(window_param_names(self.run.strategy)) if self.run.window else ()

    @cached_property
    def param_rows(self) -> list[tuple[str, Any, str]]:
        """Each snapshot value beside its parameter's help: a 0 often means "the model's"
        or "unset" (aider's max_chat_history_tokens 0 is 1/16 of the window), which the
        bare number does not say."""
        try:
            helps = {p.name: p.help for p in get_strategy_class(self.run.strategy).PARAMS}
        except ValueError:  # a strategy no longer in the library: values alone
            helps = {}
        return [(k, v, helps.get(k, "")) for k, v in (self.run.params or {}).items()]

    @cached_property
    def analysis_pending(self) -> bool:
        """Done, and its worker is still analysing it (``analysis_state``): the survival
        panel says so (and asks again) instead of computing a second copy."""
        return analysis_state.pending(self.run)

    @cached_property
    def survival(self) -> survival_table.Table | None:
        if self.run.status != RunStatus.DONE or self.analysis_pending:
            return None
        return survival_table.table([self.run], original=False)

    # --- the inspection section: token curve and step scrubber ---------------------------

    @cached_property
    def steps(self) -> int:
        return at_step.step_count(self.run)

    @cached_property
    def view(self) -> at_step.StepView | None:
        steps = self.steps
        if not steps:
            return None
        step = int_param(self.query.get("step"), steps - 1) or 0
        step = min(max(step, 0), steps - 1)
        return at_step.step_view(self.run, step, page=int_param(self.query.get("mpage")))

    @cached_property
    def chart(self) -> str:
        if not self.steps:
            return ""
        return memo.cached(self.run, "curve-html", lambda: curve_html(self.run))

    # --- the two renderings ------------------------------------------------------------

    def summary_output(self, seq: int) -> str | None:
        return runpage.summary_output(self.run, seq)

    def context(self, target: str | None = None) -> dict[str, Any]:
        """The template's context: every section, or only the one an htmx ``target``
        (a ``FRAGMENTS`` key) swaps in. The full page's sections are callables the template
        calls when it renders them: a finished run's sections come rendered from the memo
        (``memo_runs`` in ``run_detail.html``) without building them."""
        if target in FRAGMENTS:
            context: dict[str, Any] = {"run": self.run, "events": self.events}
            if target == "run-summaries":
                context["summaries"] = self.summaries
            if target == "run-findings":
                context["findings"] = self.findings
            return context
        sections = (
            "events", "summaries", "findings", "metrics", "originals", "costs", "survival", "chart",
        )  # fmt: skip
        context = {name: partial(getattr, self, name) for name in (*sections, "view")}
        context.update(run=self.run, state=self.state, window_keys=self.window_keys,
                       summarizer_label=run_costs.summarizer_label(self.run))  # fmt: skip
        context["param_rows"] = lambda: self.param_rows  # built only when rendered
        context["analysis_pending"] = self.analysis_pending
        return context

    def as_json(self) -> dict[str, Any]:
        run = self.run
        data = run_json(run, full=True)
        data["events"] = runpage.event_json(run, self.events, url=run.get_absolute_url())
        data["summaries"] = runpage.summaries_json(run)
        data["findings"] = [
            {"step": f.step, "kind": f.kind, "messages": f.messages, "detail": f.detail}
            for f in run.findings.order_by("step", "id")
        ]
        data["analysis_pending"] = self.analysis_pending  # then "survival" is None: not yet
        (row,) = survival_table.table([run], original=False).rows
        data["survival"] = row.as_dict() if row.data is not None else None
        # The original agent's compactions as the page's table shows them (the stored rows
        # are in ``metrics``).
        data["original_compactions"] = [r.as_dict() for r in self.originals]
        # Every step's counts: the page's chart draws a thinned view of this same curve.
        data["curve"] = run_curve.curve(run).as_dict() if self.steps else None
        return data


def curve_html(run: Run) -> str:
    """The run's token curve as an embeddable plotly chart."""
    curve = run_curve.curve(run)
    spec = charts.token_curve(
        curve.series,
        curve.events,
        window=curve.window,
        threshold=curve.threshold,
        estimator=run.strategy,
        thin=True,  # what a chart can draw; the JSON twin's "curve" has every step
    )
    return charts.chart_html(spec, div_id="token-curve-plot", filename=f"run-{run.pk}-curve")
