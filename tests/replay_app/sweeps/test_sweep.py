"""Parameter sweeps: the start form's validation, the group it creates, the sweep table on
the group page (values = each run's stored metrics), its JSON/CSV, the CLI, ownership and
escaping."""

from __future__ import annotations

import csv
import io
import re
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from replay_app.configs import services as config_services
from replay_app.display import charts
from replay_app.models import Run, RunGroup, RunStatus
from replay_app.runs import executor, services
from replay_app.runs.services import RunSpec
from replay_app.sweeps import sweep, sweep_chart

pytestmark = pytest.mark.django_db

KEY = "max_input_length"
VALUES = [20000, 60000, 131072]  # on the 60-turn transcript: 20000 removes most


def _post(client: Client, transcript: Any, **fields: str) -> Any:
    data = {
        "transcript": str(transcript.pk),
        "base": "preset:qwenpaw",
        "param": "compact_threshold_ratio",
        "summarizer": "offline",
        **fields,
    }
    return client.post("/runs/sweep/new/", data)


def _error_beside(html: str, field: str) -> str:
    start = html.index(f'id="field-{field}"')
    return html[start : html.index("</fieldset>" if field == "range" else "</div>", start)]


def _sweep_group(user: Any, transcript: Any, on_commit: Any, **kwargs: Any) -> RunGroup:
    base = sweep.Base(strategy="qwenpaw")
    with on_commit(execute=True):  # the runs execute eagerly once the group commits
        return services.group_create(
            owner=user, transcript=transcript, specs=sweep.specs(base, KEY, VALUES), **kwargs
        )


# --- the form -----------------------------------------------------------------------------


def test_sweep_form_lists_numeric_params_of_the_base(auth_client: Client, transcript: Any):
    html = auth_client.get(f"/runs/sweep/new/?transcript={transcript.pk}").content.decode()
    start = html.index('id="id_param"')
    select = html[start : html.index("</select>", start)]
    assert '<option value="compact_threshold_ratio" selected>' in select
    assert 'value="pruning_recent_n"' in select
    assert 'value="language"' not in select  # a str parameter does not sweep
    assert "Range: 0.1..0.9." in html and "In qwenpaw: 0.8." in html
    # Choosing another base (htmx re-renders this block) lists that strategy's params.
    html = auth_client.get("/runs/sweep/new/?base=preset:copaw&param=pruning_recent_n").content
    assert b'<option value="memory_compact_ratio" selected>' in html
    assert b'value="pruning_recent_n"' not in html
    # The run form links here.
    assert b'href="/runs/sweep/new/' in auth_client.get("/runs/new/").content


@pytest.mark.parametrize(
    ("fields", "where", "message"),
    [
        ({"values": "0.5, abc"}, "values", "compact_threshold_ratio=&#x27;abc&#x27; is not a valid float (0.1..0.9)"),
        ({"values": "0.5, 0.95"}, "values", "compact_threshold_ratio=0.95 is out of range (0.1..0.9)"),
        ({"values": "0.5"}, "values", "give 2 to 12 values (got 1)"),
        ({"values": ",".join(f"0.{i}" for i in range(1, 10)) + ",0.15,0.25,0.35,0.45"}, "values",
         "give 2 to 12 values (got 13)"),
        ({"values": "0.5, 0.50"}, "values", "values repeat (0.5)"),
        ({"values": ""}, "values", "give the values to try"),
        ({"start": "0.2", "stop": "0.8", "step": "0.05"}, "range", "makes 13 values; at most 12"),
        ({"start": "0.5", "stop": "0.95", "step": "0.15"}, "range", "compact_threshold_ratio=0.95 is out of range"),
        ({"start": "0.5", "stop": "0.8"}, "range", "start, stop and step are all needed"),
        ({"start": "0.8", "stop": "0.5", "step": "0.1"}, "range", "step 0.1 never gets from 0.8 to 0.5"),
        ({"param": "pruning_recent_n", "start": "1", "stop": "3", "step": "0.5"}, "range",
         "pruning_recent_n=&#x27;0.5&#x27; is not a valid int (1..10)"),
        ({"param": "language", "values": "1,2"}, "param",
         "language is a str parameter: only int and float parameters can be swept"),
        ({"param": "nope", "values": "1,2"}, "param", "qwenpaw has no parameter &#x27;nope&#x27;"),
    ],
    ids=["not-a-number", "out-of-range", "too-few", "too-many", "repeat", "empty", "range-too-many",
         "range-out-of-range", "range-incomplete", "range-wrong-way", "int-fraction", "str-param",
         "unknown-param"],
)  # fmt: skip
def test_sweep_form_errors_beside_the_field(
    auth_client: Client,
    user: Any,
    transcript: Any,
    fields: dict[str, str],
    where: str,
    message: str,
):
    response = _post(auth_client, transcript, **fields)
    assert response.status_code == 400
    assert message in _error_beside(response.content.decode(), where)
    assert not RunGroup.objects.filter(owner=user).exists()


# --- creating the group -------------------------------------------------------------------


def test_sweep_post_creates_one_group_with_one_param_changed(
    auth_client: Client, user: Any, transcript: Any, django_capture_on_commit_callbacks: Any
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(auth_client, transcript, values="0.3, 0.6,0.9")
    group = RunGroup.objects.get(owner=user)
    assert response.status_code == 302 and response["Location"] == f"/runs/groups/{group.pk}/"
    assert group.name == "sweep compact_threshold_ratio · qwenpaw"
    runs = list(group.runs.order_by("pk"))
    assert [r.label for r in runs] == [
        f"compact_threshold_ratio={v}" for v in ("0.3", "0.6", "0.9")
    ]
    defaults = config_services.params_validate(strategy="qwenpaw", params={})
    for run, value in zip(runs, [0.3, 0.6, 0.9], strict=True):
        assert run.strategy == "qwenpaw" and run.summarizer == "offline"
        assert run.params == {**defaults, "compact_threshold_ratio": value}
        assert run.status == RunStatus.DONE, run.error


def test_sweep_range_over_a_saved_config_keeps_its_other_params(
    auth_client: Client, user: Any, small_transcript: Any, django_capture_on_commit_callbacks: Any
):
    config = config_services.config_create(
        owner=user, name="tight", strategy="copaw", params={"memory_compact_ratio": 0.5}
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(
            auth_client, small_transcript, base=f"config:{config.pk}",
            param="tool_result_compact_keep_n", start="1", stop="7", step="3",
        )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[-3000:]
    runs = list(Run.objects.filter(owner=user).order_by("pk"))
    assert [r.params["tool_result_compact_keep_n"] for r in runs] == [1, 4, 7]
    assert all(r.params["memory_compact_ratio"] == 0.5 and r.config == config for r in runs)
    assert runs[0].group.name == "sweep tool_result_compact_keep_n · tight"


def test_sweep_float_range_has_exact_end_points():
    spec = sweep.param_spec("qwenpaw", "compact_threshold_ratio")
    assert sweep.parse_range(spec, "0.6", "0.9", "0.1") == [0.6, 0.7, 0.8, 0.9]
    assert sweep.parse_text(spec, "0.9:0.6:-0.15") == [0.9, 0.75, 0.6]


def test_sweep_refuses_another_users_config_and_transcript(
    client: Client, user: Any, other_user: Any, transcript: Any
):
    theirs = config_services.config_create(owner=other_user, name="theirs", strategy="qwenpaw")
    client.force_login(other_user)
    response = _post(client, transcript, base=f"config:{theirs.pk}", values="0.5,0.6")
    html = response.content.decode()
    assert response.status_code == 400
    assert "Select a valid choice" in _error_beside(html, "transcript")
    client.force_login(user)
    response = _post(client, transcript, base=f"config:{theirs.pk}", values="0.5,0.6")
    assert "Select a valid choice" in _error_beside(response.content.decode(), "base")
    assert not RunGroup.objects.exists()


# --- the sweep table ----------------------------------------------------------------------


@pytest.fixture
def swept(user: Any, transcript: Any, django_capture_on_commit_callbacks: Any) -> RunGroup:
    return _sweep_group(user, transcript, django_capture_on_commit_callbacks)


def test_sweep_json_equals_each_runs_stored_metrics(auth_client: Client, swept: RunGroup):
    data = auth_client.get(f"/runs/groups/{swept.pk}/sweep/?format=json").json()
    assert data["key"] == KEY and data["strategy"] == "qwenpaw" and data["finished"] is True
    assert data["param"]["name"] == KEY and data["param"]["min"] == 1024
    assert [row["value"] for row in data["rows"]] == VALUES
    runs = {r.pk: r for r in swept.runs.all()}
    for row in data["rows"]:
        run = runs[row["run"]]
        assert run.params[KEY] == row["value"] and row["url"] == f"/runs/{run.pk}/"
        metrics = row["metrics"]
        for key in ("peak_strategy", "peak_reference", "compaction_count", "messages_removed",
                    "input_tokens_total", "summary_input_tokens", "summary_output_tokens",
                    "overflow_steps", "ledger_total_cost"):  # fmt: skip
            assert metrics[key] == run.metrics[key], key
        assert metrics["findings_total"] == sum(run.metrics["findings"].values())
    # The smallest window has the lowest peaks, but its requests went over that window at
    # 9 steps: best per column (as on the compare page) is the lowest among the runs that
    # kept in their window.
    first, last = data["rows"][0], data["rows"][-1]
    assert first["metrics"]["peak_reference"] < last["metrics"]["peak_reference"]
    fits = [r for r in data["rows"] if r["metrics"]["overflow_steps"] == 0]
    assert first["metrics"]["overflow_steps"] > 0 and fits
    lowest = min(r["metrics"]["peak_reference"] for r in fits)
    assert [("peak_reference" in r["best"]) for r in data["rows"]] == [
        r in fits and r["metrics"]["peak_reference"] == lowest for r in data["rows"]
    ]
    assert data["compare"] == [r["run"] for r in data["rows"]]
    # The group's own JSON twin carries the same table.
    group = auth_client.get(f"/runs/groups/{swept.pk}/?format=json").json()
    assert group["sweep"]["rows"] == data["rows"]


def test_group_page_shows_sweep_table_chart_and_compare_link(auth_client: Client, swept: RunGroup):
    html = auth_client.get(f"/runs/groups/{swept.pk}/").content.decode()
    table = html[
        html.index('id="sweep-table"') : html.index("</table>", html.index('id="sweep-table"'))
    ]
    runs = sorted(swept.runs.all(), key=lambda r: r.params[KEY])
    for run in runs:
        assert f'<tr data-run="{run.pk}" data-value="{run.params[KEY]}">' in table
        assert f'href="/runs/{run.pk}/"' in table
    fits = [r for r in runs if r.metrics["overflow_steps"] == 0]  # overflowing runs win nothing
    peak = f"{min(r.metrics['peak_reference'] for r in fits):,}"
    assert f'<td class="num best" data-metric="peak_reference" title="best">{peak}</td>' in table
    assert 'id="sweep-plot"' in html and "/static/plotly/plotly.min.js" in html
    ids = ",".join(str(r.pk) for r in runs)
    assert f'href="/compare/?runs={ids}"' in html
    assert 'hx-trigger="every' not in html  # finished: no more polling
    assert auth_client.get(f"/compare/?runs={ids}").status_code == 200


def test_sweep_chart_is_valid_plotly_with_one_trace_per_metric(swept: RunGroup):
    found = sweep.detect(list(swept.runs.all()))
    assert found is not None
    spec = sweep_chart.figure_spec(found)
    fig = charts.figure(spec)  # raises on an invalid figure
    assert len(fig.data) == len(found.columns)
    assert [t.visible for t in fig.data].count(True) == 1
    assert list(fig.data[0].x) == VALUES
    assert list(fig.data[0].y) == [row.run.metrics["peak_strategy"] for row in found.rows]
    assert len(fig.layout.updatemenus[0].buttons) == len(found.columns)


def test_sweep_csv(auth_client: Client, swept: RunGroup):
    response = auth_client.get(f"/runs/groups/{swept.pk}/sweep/?format=csv")
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == f'attachment; filename="sweep-{swept.pk}-{KEY}.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [int(r[KEY]) for r in rows] == VALUES
    runs = {str(r.pk): r for r in swept.runs.all()}
    for row in rows:
        run = runs[row["run"]]
        assert row["label"] == run.label and row["status"] == "done"
        assert int(row["peak_reference"]) == run.metrics["peak_reference"]
        assert int(row["compaction_count"]) == run.metrics["compaction_count"]


def test_sweep_fragment_polls_until_the_group_finishes(
    auth_client: Client, user: Any, transcript: Any
):
    group = services.group_create(
        owner=user, transcript=transcript, enqueue=False,
        specs=sweep.specs(sweep.Base(strategy="qwenpaw"), KEY, VALUES),
    )  # fmt: skip
    url = f"/runs/groups/{group.pk}/sweep/"
    html = auth_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert f'hx-get="{url}?seen=0" hx-trigger="every 2s"' in html
    assert "0 of 3 runs finished" in html and "The chart appears as runs finish." in html
    unchanged = auth_client.get(f"{url}?seen=0", HTTP_HX_REQUEST="true")
    assert unchanged.status_code == 204  # nothing new: htmx keeps what it has
    run = group.runs.order_by("pk").first()
    assert run is not None
    executor.run_execute(run=run)
    html = auth_client.get(f"{url}?seen=0", HTTP_HX_REQUEST="true").content.decode()
    assert f'hx-get="{url}?seen=1"' in html and "1 of 3 runs finished" in html
    assert 'id="sweep-plot"' in html


def test_a_plain_comparison_is_not_a_sweep(auth_client: Client, user: Any, small_transcript: Any):
    group = services.group_create(
        owner=user, transcript=small_transcript, enqueue=False,
        specs=[RunSpec(strategy="qwenpaw"), RunSpec(strategy="copaw")],
    )  # fmt: skip
    assert auth_client.get(f"/runs/groups/{group.pk}/sweep/").status_code == 404
    assert auth_client.get(f"/runs/groups/{group.pk}/?format=json").json()["sweep"] is None
    assert 'id="sweep"' not in auth_client.get(f"/runs/groups/{group.pk}/").content.decode()
    two_keys = services.group_create(
        owner=user, transcript=small_transcript, enqueue=False,
        specs=[RunSpec(strategy="qwenpaw", params={KEY: 4000, "pruning_recent_n": 3}),
               RunSpec(strategy="qwenpaw", params={KEY: 8000})],
    )  # fmt: skip
    assert sweep.detect(list(two_keys.runs.all())) is None


def test_sweep_of_another_user_is_404(client: Client, other_user: Any, swept: RunGroup):
    client.force_login(other_user)
    for suffix in ("", "?format=json", "?format=csv"):
        assert client.get(f"/runs/groups/{swept.pk}/sweep/{suffix}").status_code == 404
    assert client.get(f"/runs/groups/{swept.pk}/").status_code == 404


def test_sweep_labels_are_escaped(auth_client: Client, user: Any, small_transcript: Any):
    evil = '<script>alert("x")</script>'
    group = services.group_create(
        owner=user, transcript=small_transcript, enqueue=False, name=evil,
        specs=[RunSpec(strategy="qwenpaw", params={KEY: v}, label=f"=1+{evil}{v}")
               for v in (4000, 8000)],
    )  # fmt: skip
    for run in group.runs.all():
        executor.run_execute(run=run)
    html = auth_client.get(f"/runs/groups/{group.pk}/").content.decode()
    assert 'id="sweep-table"' in html and 'id="sweep-plot"' in html
    assert "<script>alert" not in html
    assert 'title="=1+&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;4000"' in html
    fragment = auth_client.get(f"/runs/groups/{group.pk}/sweep/").content.decode()
    assert "<script>alert" not in fragment
    data = auth_client.get(f"/runs/groups/{group.pk}/sweep/?format=csv").content.decode()
    assert "'=1+<script>" in data  # a spreadsheet would otherwise run the label as a formula


def test_sweep_over_budget_with_claude_starts_nothing(
    auth_client: Client, user: Any, transcript: Any, monkeypatch: pytest.MonkeyPatch
):
    """The web create path's budget check applies to sweeps too (no request is made: the
    estimate is an offline dry-run)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-used")
    response = _post(
        auth_client, transcript, base="preset:qwenpaw", param=KEY, values="3000,4000",
        summarizer="anthropic", budget_usd="0",
    )  # fmt: skip
    assert response.status_code == 400
    assert "above the $0.00 budget per run" in _error_beside(
        response.content.decode(), "budget_usd"
    )
    assert not Run.objects.exists()


# --- CLI ----------------------------------------------------------------------------------


def _call(*args: str) -> str:
    out = StringIO()
    call_command("replay", *args, stdout=out)
    return out.getvalue()


def test_cli_sweep_saves_a_group_and_prints_the_table(small_transcript: Any):
    out = _call(
        "--transcript", str(small_transcript.pk), "--strategy", "qwenpaw",
        "--set", "pruning_recent_n=3", "--sweep", f"{KEY}=2000:6000:2000", "--save",
    )  # fmt: skip
    group = RunGroup.objects.get()
    assert out.startswith(f"sweep group {group.pk}: /runs/groups/{group.pk}/")
    runs = list(group.runs.order_by("pk"))
    assert [r.params[KEY] for r in runs] == [2000, 4000, 6000]
    assert all(r.params["pruning_recent_n"] == 3 and r.status == RunStatus.DONE for r in runs)
    assert [r.label for r in runs] == [f"{KEY}=2000", f"{KEY}=4000", f"{KEY}=6000"]
    assert f"  {runs[1].pk}  {runs[1].metrics['peak_strategy']}" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sweep", f"{KEY}=5"], "give 2 to 12 values (got 1)"),
        (["--sweep", f"{KEY}=100,2000"], "max_input_length=100 is out of range (1024..1e+07)"),
        (["--sweep", "language=en,zh"], "only int and float parameters can be swept"),
        (["--sweep", KEY], "--sweep expects key=v1,v2"),
    ],
    ids=["too-few", "out-of-range", "str-param", "no-values"],
)
def test_cli_sweep_errors(small_transcript: Any, args: list[str], message: str):
    with pytest.raises(CommandError, match=re.escape(message)):
        _call("--transcript", str(small_transcript.pk), "--strategy", "qwenpaw", *args, "--save")
    assert not RunGroup.objects.exists()


def test_cli_sweep_needs_save(small_transcript: Any):
    with pytest.raises(CommandError, match="--sweep needs --save"):
        _call("--transcript", str(small_transcript.pk), "--strategy", "qwenpaw",
              "--sweep", f"{KEY}=2000,4000")  # fmt: skip
