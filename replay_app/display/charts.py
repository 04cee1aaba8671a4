"""Pure chart builders: a run's per-step series and events -> a plotly figure.

Builders return the figure as a plain plotly dict (``{"data": [...], "layout": {...}}``):
for 10,000 steps, ``go.Figure`` validation costs ~40-130 ms where the dict costs nothing,
and the run page has a 150 ms budget. ``figure(spec)`` turns one into a validated
``go.Figure`` (tests use it to prove the specs are valid plotly).

Hover texts are HTML in plotly (``<br>``, ``<b>`` ...), so every string that could come
from a transcript or a strategy goes through ``html.escape`` before it lands in one.
``chart_html`` renders data, not script (``ctxlab.web.plots``): the figure goes into a JSON
data block escaped so that no string can close it, and ``static/js/plots.js`` draws it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go

from ctxlab.engine.core.catalogue import event_category
from ctxlab.web.plots import figure_html, whole_number_axis
from replay_app.display import thinning
from replay_app.display.vocabulary import event_label

# Colours per fate/zone live in CSS too (ctxlab/inspect.css); these are the chart's.
STRATEGY_COLOUR = "#2563eb"
REFERENCE_COLOUR = "#0f766e"
REPORTED_COLOUR = "#9ca3af"
EVENT_COLOUR = "#b45309"
RUN_COLOURS = ("#2563eb", "#dc2626", "#059669", "#7c3aed", "#d97706", "#0891b2")
CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "responsive": True,
    "displayModeBar": True,  # always show it: the PNG download is its toImage button
    "modeBarButtonsToRemove": ["select2d", "lasso2d"],
    "toImageButtonOptions": {"format": "png", "scale": 2},
}


@dataclass(frozen=True, slots=True)
class Series:
    """Per-step values of one run, in step order (``reported`` entries may be None)."""

    steps: Sequence[int]
    strategy: Sequence[int]
    reference: Sequence[int]
    reported: Sequence[int | None] = ()
    source: Sequence[int] = ()  # source message index of each step


@dataclass(frozen=True, slots=True)
class EventPoint:
    step: int
    kind: str
    tokens_before: int
    tokens_after: int
    messages: int  # messages touched
    fates: dict[str, int] = field(default_factory=dict)
    seq: int | None = None  # the event's seq (None: a marker not from a stored run)
    compaction: int | None = None  # its K (``runs.ordinals``); None: not a compaction

    @property
    def label(self) -> str:
        """The marker's name: the kind's label, and "compaction #K" for a compaction."""
        name = event_label(self.kind)
        return name if self.compaction is None else f"{name} · compaction #{self.compaction}"


@dataclass(frozen=True, slots=True)
class RunCurve:
    """One run on the compare chart."""

    label: str
    series: Series
    events: Sequence[EventPoint] = ()
    window: int | None = None
    threshold: int | None = None


def event_hover(event: EventPoint) -> str:
    fates = ", ".join(f"{html.escape(k)} {v}" for k, v in sorted(event.fates.items()))
    saved = event.tokens_before - event.tokens_after
    return (
        f"<b>{html.escape(event.label)}</b> · step {event.step}<br>"
        f"{event.tokens_before:,} → {event.tokens_after:,} tokens ({saved:+,} saved)<br>"
        f"{event.messages} message{'s' if event.messages != 1 else ''} touched"
        + (f"<br>{fates}" if fates else "")
    )


# "Compaction skipped" and the other skip-category events (a compaction was due or prepared
# and the strategy did nothing): open grey circles with their own legend entry, never the
# diamonds of events that acted.
SKIP_COLOUR = "#6b7280"
SKIPPED_NAME = "compactions skipped (open circles: due, nothing done)"


def split_skips(events: Sequence[EventPoint]) -> tuple[list[EventPoint], list[EventPoint]]:
    """(events that acted, skip-category events) in their order (``catalogue`` categories)."""
    acted: list[EventPoint] = []
    skipped: list[EventPoint] = []
    for e in events:
        (skipped if event_category(e.kind) == "skip" else acted).append(e)
    return acted, skipped


def _skip_trace(events: Sequence[EventPoint], *, name: str, colour: str) -> dict[str, Any]:
    trace = _event_trace(events, name=name, colour=colour)
    trace["marker"] = {"color": colour, "size": 10, "symbol": "circle-open", "line": {"width": 2}}
    trace["meta"] = {"role": "skipped"}
    return trace


def _event_trace(events: Sequence[EventPoint], *, name: str, colour: str) -> dict[str, Any]:
    # At tokens_before: the count the strategy had when it acted (what its trigger compared
    # with the threshold); the curve at that step already shows tokens_after.
    return {
        "type": "scatter",
        "mode": "markers",
        "name": name,
        "x": [e.step for e in events],
        "y": [e.tokens_before for e in events],
        "hovertext": [event_hover(e) for e in events],
        "hoverinfo": "text",
        "marker": {"color": colour, "size": 9, "symbol": "diamond", "line": {"width": 1}},
        "meta": {"role": "events"},
    }


# event_hover's text, filled in by plotly from each marker's values: a run's 1,500 events
# carried ~115 bytes of hover HTML each, more than its three thinned lines together.
COMPACT_EVENT_HOVER = (
    "<b>%{customdata[0]}</b> · step %{x}<br>%{y:,} → %{customdata[1]:,} tokens "
    "(%{customdata[2]:+,} saved)<br>%{customdata[3]} touched<extra></extra>"
)


def _compact_hover(trace: dict[str, Any], events: Sequence[EventPoint]) -> dict[str, Any]:
    """The events trace with ``customdata`` and one ``hovertemplate`` instead of a hover
    text per marker (same words; an event's fates, when it has some, keep the text)."""
    if any(e.fates for e in events):
        return trace
    del trace["hovertext"], trace["hoverinfo"]
    trace["customdata"] = [
        [
            html.escape(e.label),
            e.tokens_after,
            e.tokens_before - e.tokens_after,
            f"{e.messages} message{'s' if e.messages != 1 else ''}",
        ]
        for e in events
    ]
    trace["hovertemplate"] = COMPACT_EVENT_HOVER
    return trace


def _drops(events: Sequence[EventPoint], colour: str) -> dict[str, Any]:
    """A vertical stroke per event from its before to its after count: a step's point on
    the curve is the request after its events, so the count they acted on shows here."""
    x: list[int | None] = []
    y: list[int | None] = []
    for e in events:
        if e.tokens_before != e.tokens_after:
            x += [e.step, e.step, None]
            y += [e.tokens_before, e.tokens_after, None]
    return {
        "type": "scatter",
        "mode": "lines",
        "name": "before → after",
        "x": x,
        "y": y,
        "line": {"color": colour, "width": 1, "dash": "dot"},
        "hoverinfo": "skip",
        "showlegend": False,
        "meta": {"role": "drops"},
    }


def _line(
    name: str, x: Sequence[int], y: Sequence[Any], colour: str, **extra: Any
) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": list(x),
        "y": list(y),
        "line": {"color": colour, "width": 1.5, **extra.pop("line", {})},
        "hovertemplate": f"{html.escape(name)}: %{{y:,}}<br>step %{{x}}<extra></extra>",
        **extra,
    }


def _hline(y: int, label: str, colour: str, dash: str) -> tuple[dict[str, Any], dict[str, Any]]:
    shape = {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": y,
        "y1": y,
        "line": {"color": colour, "dash": dash, "width": 1},
    }
    note = {
        "xref": "paper",
        "x": 1,
        "y": y,
        "xanchor": "right",
        "yanchor": "bottom",
        "text": f"{html.escape(label)} {y:,}",
        "showarrow": False,
        "font": {"size": 10, "color": colour},
    }
    return shape, note


def _layout(*, yaxis_title: str, height: int = 360) -> dict[str, Any]:
    return {
        "template": {},
        "height": height,
        "margin": {"l": 70, "r": 20, "t": 30, "b": 40},
        "xaxis": {"title": {"text": "step (inference call)"}, "zeroline": False},
        "yaxis": {"title": {"text": yaxis_title}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": 1.14},
        "hovermode": "closest",
        "shapes": [],
        "annotations": [],
    }


def token_curve(
    series: Series,
    events: Sequence[EventPoint],
    *,
    window: int | None,
    threshold: int | None,
    estimator: str = "strategy estimate",
    thin: bool = False,
) -> dict[str, Any]:
    """Context tokens per step: the strategy's own count (what its trigger compares with
    the threshold line: one quantity), the reference tokenizer over the transcript's
    messages and the reported usage (where present) for comparison only, the window, one
    marker per event at the count it acted on. ``thin``: each line carries only what a
    chart can draw (``thinning.keep_indexes``: every bucket's extremes, every threshold
    and window crossing, the strategy's count at each event's step, exact values), every
    event marker stays and their hover texts are filled in by plotly (``_compact_hover``)."""
    levels = (threshold, window)
    position = {step: i for i, step in enumerate(series.steps)} if thin else {}
    at_events = [i for i in (position.get(e.step) for e in events) if i is not None]

    def line(
        name: str, values: Sequence[Any], colour: str, forced: Sequence[int] = (), **extra: Any
    ) -> dict[str, Any]:
        if not thin:
            return _line(name, series.steps, values, colour, **extra)
        keep = thinning.keep_indexes(values, forced=forced, levels=levels)
        x, y = thinning.pick(series.steps, keep), thinning.pick(values, keep)
        return _line(name, x, y, colour, **extra)  # type: ignore[arg-type]

    data: list[dict[str, Any]] = [
        line(
            f"{estimator} count (compared with the threshold)",
            series.strategy,
            STRATEGY_COLOUR,
            forced=at_events,  # each drop stroke ends on the line, at its step
        ),
        line(
            "reference cl100k (transcript only, not compared)", series.reference, REFERENCE_COLOUR
        ),
    ]
    if any(v is not None for v in series.reported):
        data.append(
            line(
                "reported by the provider",
                series.reported,
                REPORTED_COLOUR,
                line={"dash": "dot"},
                connectgaps=False,
            )
        )
    acted, skipped = split_skips(events)
    if acted:
        data.append(_drops(acted, EVENT_COLOUR))
        trace = _event_trace(acted, name="events (at the count they acted on)",
                             colour=EVENT_COLOUR)  # fmt: skip
        data.append(_compact_hover(trace, acted) if thin else trace)
    if skipped:
        trace = _skip_trace(skipped, name=SKIPPED_NAME, colour=SKIP_COLOUR)
        data.append(_compact_hover(trace, skipped) if thin else trace)
    layout = _layout(yaxis_title="context tokens")
    layout["xaxis"].update(whole_number_axis(series.steps))
    for value, label, colour, dash in (
        (threshold, f"{estimator} threshold", "#b91c1c", "dash"),
        (window, "window", "#111827", "solid"),
    ):
        if value:
            shape, note = _hline(value, label, colour, dash)
            layout["shapes"].append(shape)
            layout["annotations"].append(note)
    return {"data": data, "layout": layout}


def compare_curves(runs: Sequence[RunCurve]) -> dict[str, Any]:
    """Reference-tokenizer curves of several runs (one estimator for all, so they compare),
    each with its own count dotted (what its threshold line and event markers refer to)."""
    data: list[dict[str, Any]] = []
    layout = _layout(yaxis_title="context (tokens, reference cl100k)", height=460)
    ends = [step for run in runs for step in (*run.series.steps[:1], *run.series.steps[-1:])]
    layout["xaxis"].update(whole_number_axis(ends))
    # One legend entry per run: its curve, own-estimate curve and event markers share a
    # legend group, so the entry toggles all three (legible with 6 runs).
    layout["legend"] = {"orientation": "h", "y": -0.18, "groupclick": "togglegroup"}
    layout["margin"] = {**layout["margin"], "b": 90}
    shown_skips = False
    for i, run in enumerate(runs):
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        group = f"run{i}"
        data.append(
            _line(run.label, run.series.steps, run.series.reference, colour, legendgroup=group)
        )
        data.append(
            _line(
                f"{run.label} (own estimate)",
                run.series.steps,
                run.series.strategy,
                colour,
                line={"dash": "dot", "width": 1},
                legendgroup=group,
                showlegend=False,
                opacity=0.6,
            )
        )
        acted, skipped = split_skips(run.events)
        if acted:
            trace = _event_trace(acted, name=f"{run.label} events", colour=colour)
            trace["legendgroup"] = group
            trace["showlegend"] = False
            data.append(trace)
        if skipped:
            # in the run's colour but open circles, under one legend entry of their own
            trace = _skip_trace(skipped, name=SKIPPED_NAME, colour=colour)
            trace["legendgroup"] = "skipped"
            trace["showlegend"] = not shown_skips
            shown_skips = True
            data.append(trace)
        if run.threshold:
            # compared with the run's own count (its dotted line), not the reference
            # The label names the run by its number only and sits in its own slot along
            # the line (the last slot is the window's): full labels of close thresholds
            # overlapped. Hovering it gives the whole label; the colour is the run's.
            shape, note = _hline(run.threshold, f"{run.label.split(' ', 1)[0]} threshold",
                                 colour, "dash")  # fmt: skip
            note["x"] = (i + 1) / (len(runs) + 1)
            note["hovertext"] = html.escape(
                f"{run.label} threshold (on its own count): {run.threshold:,}"
            )
            layout["shapes"].append(shape)
            layout["annotations"].append(note)
    windows = {run.window for run in runs if run.window}
    for window in sorted(windows):
        shape, note = _hline(window, "window", "#111827", "solid")
        layout["shapes"].append(shape)
        layout["annotations"].append(note)
    return {"data": data, "layout": layout}


def figure(spec: dict[str, Any]) -> go.Figure:
    """A validated plotly Figure (raises ValueError on an invalid spec)."""
    return go.Figure(spec)


def chart_html(spec: dict[str, Any], *, div_id: str, filename: str = "ctxlab-chart") -> str:
    """The chart's ``<div data-plotly>`` + JSON data block (no inline script; see module doc)."""
    config = {**CONFIG, "toImageButtonOptions": {**CONFIG["toImageButtonOptions"]}}
    config["toImageButtonOptions"]["filename"] = filename
    return figure_html(spec, div_id=div_id, config=config)
