"""Compare page: 2-6 runs on one transcript, metrics with best values, fate matrix,
aligned summaries, retention, CSV, errors and isolation."""

from __future__ import annotations

import csv
import io
import re
from html import escape as html_escape
from typing import Any

import pytest
from inspect_helpers import make_run
from replay_testdata import agent_chat, import_transcript

from replay_app.compare import overview, pieces
from replay_app.models import Run

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]


@pytest.fixture
def three(user: Any, transcript: Any) -> list[Run]:
    return [make_run(user, transcript, s) for s in ("cowagent", "picoclaw", "copaw")]


def ids(runs: list[Run]) -> str:
    return ",".join(str(r.pk) for r in runs)


def test_compare_page_shows_every_run(client: Any, user: Any, three: list[Run]) -> None:
    client.force_login(user)
    response = client.get(f"/compare/?runs={ids(three)}")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="compare-plot"' in html and "plotly/plotly.min.js" in html
    for run in three:
        assert f'data-run="{run.pk}"' in html
    # the fate matrix comes in its own request (htmx, as the page's section asks for it)
    assert 'id="compare-matrix" hx-get=' in html and '<tr data-run="' not in html
    matrix = client.get(
        f"/compare/?runs={ids(three)}", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="compare-matrix"
    ).content.decode()
    assert matrix.count('<tr data-run="') == 3  # one fate-matrix row per run
    assert matrix.startswith('<section class="panel" id="compare-matrix">')
    # without scripts: the same matrix inline at the final step
    final = three[0].steps_total - 1
    inline = client.get(f"/compare/?runs={ids(three)}&at={final}").content.decode()
    assert inline.count('<tr data-run="') == 3


def test_compare_metrics_best_highlighted(client: Any, user: Any, three: list[Run]) -> None:
    client.force_login(user)
    data = client.get(f"/compare/?runs={ids(three)}&format=json").json()
    rows = {m["key"]: m for m in data["metrics"]}
    peak = rows["peak_reference"]
    values = peak["values"]
    assert peak["better"] == "lower"
    if len(set(values)) > 1:
        assert peak["best"] == [v == min(values) for v in values]
    html = client.get(f"/compare/?runs={ids(three)}").content.decode()
    row = re.search(r'<tr data-metric="peak_reference">.*?</tr>', html, re.S)
    assert row is not None
    assert row.group(0).count('class="num best"') == sum(peak["best"])


@pytest.mark.parametrize(
    ("better", "values", "best"),
    [
        pytest.param("lower", [3, 1, 2], [False, True, False], id="lower"),
        pytest.param("higher", [0.5, 0.9, 0.9], [False, True, True], id="higher-ties"),
        pytest.param("lower", [4, 4, 4], [False, False, False], id="all-equal"),
        pytest.param("lower", [None, 2, 5], [False, True, False], id="missing"),
    ],
)
def test_metric_rows_best(better: str, values: list[Any], best: list[bool]) -> None:
    class FakeRun:
        def __init__(self, value: Any) -> None:
            self.metrics = {"thrash" if better == "lower" else "mean_steps_between": value}

    runs = [FakeRun(v) for v in values]
    rows = overview.metric_rows(runs, [{}] * len(runs))  # type: ignore[arg-type]
    key = "thrash" if better == "lower" else "mean_steps_between"
    row = next(r for r in rows if r.key == key)
    assert row.best == best


def test_compare_json_has_retention_matrix_and_summaries(
    client: Any, user: Any, three: list[Run]
) -> None:
    client.force_login(user)
    data = client.get(f"/compare/?runs={ids(three)}&format=json").json()
    assert set(data["retention"]) == {str(r.pk) for r in three}
    for run in three:
        score = data["retention"][str(run.pk)]
        assert score is None or 0 <= score <= 1
        assert data["lost"][str(run.pk)]["at_risk"] >= data["lost"][str(run.pk)]["retained"]
    messages = three[0].transcript.message_count
    for cells in data["matrix"]["runs"].values():
        assert sum(sum(c["counts"].values()) for c in cells) == messages
    # cowagent drops messages: some cell of its row is not all-kept
    cow = data["matrix"]["runs"][str(three[0].pk)]
    assert any(set(c["counts"]) - {"kept"} for c in cow)
    # summaries aligned by step: one row per step where any run summarised
    rows = data["summaries"]["rows"]
    assert rows, "copaw, picoclaw and cowagent summarise on this transcript"
    for row in rows:
        assert len(row["cells"]) == 3
        assert any(cell is not None for cell in row["cells"])
    steps = [row["step"] for row in rows]
    assert steps == sorted(set(steps))


def test_compare_summaries_diff_against_row_baseline(
    client: Any, user: Any, three: list[Run]
) -> None:
    client.force_login(user)
    rows, _, _ = overview.summary_rows(three, per_page=1000)
    shared = [r for r in rows if sum(c is not None for c in r.cells) >= 2]
    for row in shared:
        present = [c for c in row.cells if c is not None]
        assert present[0].diff == []
        for cell in present[1:]:
            assert (cell.output == present[0].output) == (cell.diff == [])


def test_compare_matrix_buckets_for_large_transcripts() -> None:
    assert pieces.bucket_size(20_000) == 100
    assert pieces.bucket_size(129) == 1
    assert pieces.bucket_size(201) == 2


def test_compare_matrix_detail(client: Any, user: Any, three: list[Run]) -> None:
    client.force_login(user)
    url = f"/compare/matrix/?runs={ids(three)}&start=0&end=20"
    data = client.get(url + "&format=json").json()
    assert [m["index"] for m in data["messages"]] == list(range(20))
    assert all(len(m["fates"]) == 3 for m in data["messages"])
    assert client.get(url).status_code == 200


def test_compare_csv(client: Any, user: Any, three: list[Run]) -> None:
    client.force_login(user)
    response = client.get(f"/compare/?runs={ids(three)}&format=csv")
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    notes = [row for row in rows if row and row[0].startswith("# ")]
    assert notes and notes[0][0].startswith("# best: ")  # the header notes: the best rule
    table = rows[len(notes) :]
    assert table[0][:2] == ["metric", "better"] and len(table[0]) == 5
    keys = [row[0] for row in table[1:]]
    assert "peak_reference" in keys and "retention" in keys
    peak = next(row for row in table if row[0] == "peak_reference")
    assert peak[2:] == [str(r.metrics["peak_reference"]) for r in three]


def test_compare_picker_lists_runs_by_transcript(client: Any, user: Any, three: list[Run]) -> None:
    client.force_login(user)
    html = client.get("/compare/").content.decode()
    assert 'name="runs"' in html
    for run in three:
        assert f'value="{run.pk}"' in html
    data = client.get("/compare/?format=json").json()
    assert [r["id"] for r in data["transcripts"][0]["runs"]] == sorted(
        (r.pk for r in three), reverse=True
    )


def test_compare_checkbox_form_params_work(client: Any, user: Any, three: list[Run]) -> None:
    client.force_login(user)
    response = client.get("/compare/", {"runs": [str(r.pk) for r in three[:2]]})
    assert response.status_code == 200
    assert "Compare 2 runs" in response.content.decode()


def test_compare_different_transcripts_is_400(client: Any, user: Any, transcript: Any) -> None:
    other = import_transcript(user, agent_chat(turns=8, seed=2), name="other.json")
    a = make_run(user, transcript, "baseagent")
    b = make_run(user, other, "baseagent")
    client.force_login(user)
    response = client.get(f"/compare/?runs={a.pk},{b.pk}")
    assert response.status_code == 400
    assert "same transcript" in response.content.decode()
    data = client.get(f"/compare/?runs={a.pk},{b.pk}&format=json")
    assert data.status_code == 400 and "same transcript" in data.json()["error"]


@pytest.mark.parametrize(
    ("count", "message"),
    [
        pytest.param(1, "compare 2 to 6 runs (got 1)", id="one"),
        pytest.param(7, "compare 2 to 6 runs (got 7)", id="seven"),
    ],
)
def test_compare_run_count_errors(
    client: Any, user: Any, small_transcript: Any, count: int, message: str
) -> None:
    runs = [make_run(user, small_transcript, "baseagent") for _ in range(count)]
    client.force_login(user)
    response = client.get(f"/compare/?runs={ids(runs)}")
    assert response.status_code == 400
    assert message in response.content.decode()


def test_compare_bad_ids_400(client: Any, user: Any) -> None:
    client.force_login(user)
    response = client.get("/compare/?runs=1,abc")
    assert response.status_code == 400
    assert "&#x27;abc&#x27; is not" in response.content.decode()


def test_compare_other_users_runs_404(client: Any, other_user: Any, three: list[Run]) -> None:
    client.force_login(other_user)
    assert client.get(f"/compare/?runs={ids(three)}").status_code == 404
    assert client.get(f"/compare/?runs={ids(three)}&format=csv").status_code == 404
    assert client.get(f"/compare/matrix/?runs={ids(three)}").status_code == 404
    html = client.get("/compare/").content.decode()
    assert f'value="{three[0].pk}"' not in html


def test_metrics_no_run_has_are_named_below_the_table_not_shown_as_dashes(
    client: Any, user: Any, three: list[Run]
) -> None:
    client.force_login(user)
    data = client.get(f"/compare/?runs={ids(three)}&format=json").json()
    empty = [m for m in data["metrics"] if all(v is None for v in m["values"])]
    assert empty  # offline summaries: no summary call has a cost
    html = client.get(f"/compare/?runs={ids(three)}").content.decode()
    table = html[
        html.index('class="metrics-table"') : html.index(
            "</table>", html.index('class="metrics-table"')
        )
    ]
    note = re.search(r'<p class="small muted" id="metrics-without-values">(.*?)</p>', html, re.S)
    assert note is not None
    for m in data["metrics"]:
        shown = f'data-metric="{m["key"]}"' in table
        assert shown is (m not in empty), m["key"]
    listed = note.group(1).removeprefix("No run has a value for ").split(" (rows left out")[0]
    assert listed.split(", ") == [html_escape(m["label"]) for m in empty]
