"""replay_app.charts: specs are valid plotly, hover texts are escaped, lines where asked."""

from __future__ import annotations

import pytest

from replay_app.display.charts import (
    EventPoint,
    RunCurve,
    Series,
    chart_html,
    compare_curves,
    event_hover,
    figure,
    token_curve,
)

SERIES = Series(steps=[0, 1, 2], strategy=[10, 20, 30], reference=[11, 21, 31])
EVENT = EventPoint(step=1, kind="drop", tokens_before=30, tokens_after=10, messages=3)
OWN = "e count (compared with the threshold)"
REFERENCE = "reference cl100k (transcript only, not compared)"


@pytest.mark.parametrize(
    ("reported", "events", "names"),
    [
        pytest.param((), (), [OWN, REFERENCE], id="bare"),
        pytest.param(
            (None, 5, None),
            (EVENT,),
            [
                OWN,
                REFERENCE,
                "reported by the provider",
                "before → after",
                "events (at the count they acted on)",
            ],
            id="reported-and-events",
        ),
    ],
)
def test_token_curve_traces(reported: tuple, events: tuple, names: list[str]) -> None:
    series = Series(SERIES.steps, SERIES.strategy, SERIES.reference, reported)
    fig = figure(token_curve(series, events, window=100, threshold=80, estimator="e"))
    assert [t.name for t in fig.data] == names


def test_token_curve_threshold_and_window_lines() -> None:
    fig = figure(token_curve(SERIES, (), window=100, threshold=80))
    assert sorted(s.y0 for s in fig.layout.shapes) == [80, 100]


def test_token_curve_markers_sit_at_the_count_the_event_acted_on() -> None:
    fig = figure(token_curve(SERIES, (EVENT,), window=100, threshold=25, estimator="e"))
    markers = next(t for t in fig.data if t.mode == "markers")
    assert list(markers.y) == [EVENT.tokens_before]  # above its threshold line, not below
    drops = next(t for t in fig.data if t.meta == {"role": "drops"})
    assert list(drops.y) == [EVENT.tokens_before, EVENT.tokens_after, None]
    notes = [a.text for a in fig.layout.annotations]
    assert "e threshold 25" in notes


def test_token_curve_no_threshold_no_line() -> None:
    fig = figure(token_curve(SERIES, (), window=100, threshold=None))
    assert [s.y0 for s in fig.layout.shapes] == [100]


def test_event_hover_escapes_kind_and_fates() -> None:
    event = EventPoint(1, "<img src=x onerror=alert(1)>", 30, 10, 1, {"<b>": 1})
    text = event_hover(event)
    assert "<img" not in text
    assert "&lt;img" in text
    assert "&lt;b&gt; 1" in text
    assert "30 → 10 tokens (+20 saved)" in text


def test_compare_curves_one_group_per_run() -> None:
    runs = [RunCurve("a", SERIES, (EVENT,), 100, 80), RunCurve("b", SERIES, (), 100, None)]
    fig = figure(compare_curves(runs))
    assert [t.name for t in fig.data] == [
        "a",
        "a (own estimate)",
        "a events",
        "b",
        "b (own estimate)",
    ]
    assert [s.y0 for s in fig.layout.shapes] == [80, 100]  # a's threshold, one shared window


def test_chart_html_has_png_button_config_and_no_plotlyjs() -> None:
    html = chart_html(token_curve(SERIES, (EVENT,), window=None, threshold=None), div_id="curve")
    assert 'id="curve"' in html and 'data-plotly="curve-figure"' in html
    assert '"toImageButtonOptions":{"format":"png"' in html
    assert "plotly.min.js" not in html and "cdn.plot.ly" not in html
    assert "Plotly.newPlot" not in html  # data only: static/js/plots.js draws it


def test_compare_threshold_labels_are_short_in_own_slots_with_the_run_on_hover() -> None:
    runs = [RunCurve(f"{pk} run <{pk}>", SERIES, (), 15000, 12000 - pk) for pk in (7, 8, 9)]
    notes = figure(compare_curves(runs)).layout.annotations
    thresholds = [n for n in notes if "threshold" in n.text]
    assert [n.text for n in thresholds] == ["7 threshold 11,993", "8 threshold 11,992",
                                            "9 threshold 11,991"]  # fmt: skip
    # One slot each along the line, left of the window's label at the right edge.
    assert [n.x for n in thresholds] == [0.25, 0.5, 0.75]
    assert [n.x for n in notes if n.text.startswith("window")] == [1]
    assert thresholds[0].hovertext == "7 run &lt;7&gt; threshold (on its own count): 11,993"


def test_short_count_axes_tick_whole_numbers_only() -> None:
    from ctxlab.web.plots import whole_number_axis
    from sessions_app.charts import usage_figure

    # plotly ticked a 3-message usage chart at 2, 2.5, 3, 3.5, 4 (a real Anthropic cassette)
    fig = usage_figure([(2, 220, 0, 0, 0, 9), (4, 240, 0, 0, 0, 11)])
    assert (fig.layout.xaxis.dtick, fig.layout.xaxis.tick0) == (1, 0)
    assert figure(token_curve(SERIES, (), window=None, threshold=None)).layout.xaxis.dtick == 1
    long = Series(list(range(40)), [1] * 40, [1] * 40)
    assert figure(token_curve(long, (), window=None, threshold=None)).layout.xaxis.dtick is None
    assert whole_number_axis([]) == {}
