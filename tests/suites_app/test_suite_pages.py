"""Suite pages: the form (good and bad input), results with JSON/CSV twins from one
page-data object, the heatmap of a 2×2 grid, owner isolation, cancel/resume."""

from __future__ import annotations

import csv
import io
import statistics
from typing import Any

import pytest
from django.test import Client
from suite_testdata import import_chat

from replay_app.models import Run, RunStatus
from suites_app import configs, results, services
from suites_app.configs import Base
from suites_app.models import Suite

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_for(client: Client) -> Any:
    def login(user: Any) -> Client:
        client.force_login(user)
        return client

    return login


@pytest.fixture
def grid_suite(user: Any) -> Suite:
    transcripts = [import_chat(user, seed=s, turns=10, size=3000) for s in (1, 2, 3)]
    grid = configs.grid_configs(
        Base("qwenpaw"), {"max_input_length": "6000,20000", "compact_threshold_ratio": "0.5,0.8"}
    )
    suite = services.suite_create(
        owner=user, name="grid <b>", transcripts=transcripts, configs=grid,
        grid_keys=["max_input_length", "compact_threshold_ratio"], enqueue=False,
    )  # fmt: skip
    services.suite_enqueue(suite)  # eager Celery: runs here
    suite.refresh_from_db()
    return suite


def _post(client: Client, **fields: Any) -> Any:
    data = {"name": "s", "summarizer": "offline", "max_attempts": "2", **fields}
    return client.post("/suites/new/", data)


def test_form_creates_a_grid_suite_and_runs_it(user: Any, client_for: Any) -> None:
    client = client_for(user)
    ts = [import_chat(user, seed=s, turns=4) for s in (1, 2, 3)]
    response = _post(
        client, name="team", transcripts=[t.pk for t in ts], grid_base="preset:qwenpaw",
        grid_key_1="max_input_length", grid_values_1="6000,20000",
        grid_key_2="compact_threshold_ratio", grid_values_2="0.5:0.8:0.3",
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:2000]
    suite = Suite.objects.get(owner=user, name="team")
    assert suite.grid_keys == ["max_input_length", "compact_threshold_ratio"]
    assert suite.items.count() == 12
    # Eager Celery runs on commit; the test transaction never commits: run them now.
    services.suite_enqueue(suite)
    page = client.get(f"/suites/{suite.pk}/")
    text = page.content.decode()
    assert 'id="leaderboard"' in text and 'id="heatmap-table"' in text
    assert 'data-plotly="suite-heatmap-figure"' in text


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"grid_base": "preset:qwenpaw"}, "the grid is empty"),
        (
            {"grid_base": "preset:qwenpaw", "grid_key_1": "bogus", "grid_values_1": "1,2"},
            "unknown parameter &#x27;bogus&#x27;",
        ),
        (
            {"grid_base": "preset:qwenpaw", "grid_key_1": "max_input_length",
             "grid_values_1": "1000:100000:1000"},
            "makes 100 values; at most 12",
        ),
        ({"presets": ["qwenpaw"]}, "choose at least one transcript"),
        ({"grid_key_1": "window", "grid_values_1": "1000"}, "choose what the grid varies"),
        ({}, "choose at least one configuration"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_with_a_clear_error(
    user: Any, client_for: Any, fields: dict[str, Any], message: str
) -> None:
    client = client_for(user)
    t = import_chat(user, seed=1, turns=2)
    if fields.get("presets") != ["qwenpaw"] or "grid_base" in fields:
        fields = {"transcripts": [t.pk], **fields}
    response = _post(client, **fields)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Suite.objects.exists() and not Run.objects.exists()


def test_filter_and_upload_choose_transcripts(user: Any, client_for: Any) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile
    from suite_testdata import coding_chat

    client = client_for(user)
    import_chat(user, seed=1, turns=2)
    import_chat(user, seed=2, turns=30)
    upload = SimpleUploadedFile("fresh-bugfix.json", coding_chat(seed=9, turns=3))
    response = client.post(
        "/suites/new/",
        {"name": "f", "summarizer": "offline", "max_attempts": "1", "presets": ["qwenpaw"],
         "filter_min_messages": "40", "uploads": [upload]},
    )  # fmt: skip
    assert response.status_code == 302
    suite = Suite.objects.get(name="f")
    names = sorted(suite.items.values_list("transcript__upload__name", flat=True))
    assert names == ["chat-2.json", "fresh-bugfix.json"]
    assert suite.source["filter"]["min_messages"] == 40


def test_results_json_and_csv_agree_with_the_page_data(grid_suite: Suite, client_for: Any) -> None:
    client = client_for(grid_suite.owner)
    data = client.get(f"/suites/{grid_suite.pk}/?format=json").json()
    assert data["progress"]["done"] == 12 and data["progress"]["finished"]
    configs_json = data["configurations"]
    assert len(configs_json) == 4
    page = results.build(grid_suite)
    for c in page.configs:
        row = configs_json[c.index]
        assert row["stats"]["peak_reference"]["median"] == c.median("peak_reference")
        assert row["stats"]["peak_reference"]["n"] == 3
    # The smaller window keeps the peak lower: the catalogue's "best" (lower) lands there.
    best_peak = [c for c in configs_json if "peak_reference" in c["best"]]
    assert best_peak and all(c["grid"]["max_input_length"] == 6000 for c in best_peak)
    assert sorted(c["rank"] for c in configs_json) == [1, 2, 3, 4]
    assert any(c["pareto"] for c in configs_json)
    heat = data["heatmap"]
    assert heat["x"] == "max_input_length" and heat["x_values"] == [6000, 20000]
    assert heat["y_values"] == [0.5, 0.8]
    assert (
        heat["median"]["peak_reference"][1][0]
        == configs_json[1]["stats"]["peak_reference"]["median"]
    )
    rows = list(
        csv.DictReader(
            io.StringIO(client.get(f"/suites/{grid_suite.pk}/?format=csv").content.decode())
        )
    )
    peak_rows = {
        r["configuration"]: float(r["median"]) for r in rows if r["metric"] == "peak_reference"
    }
    assert peak_rows == {c["label"]: c["stats"]["peak_reference"]["median"] for c in configs_json}


def test_pareto_front() -> None:
    assert results.pareto_front([(1, 0.5), (2, 0.9), (3, 0.8), (1, 0.4)]) == [
        True,
        True,
        False,
        False,
    ]


def test_config_page_lists_each_transcript_with_its_run(grid_suite: Suite, client_for: Any) -> None:
    client = client_for(grid_suite.owner)
    page = client.get(f"/suites/{grid_suite.pk}/configs/0/")
    text = page.content.decode()
    run_ids = list(grid_suite.items.filter(config_index=0).values_list("run_id", flat=True))
    assert len(run_ids) == 3
    for run_id in run_ids:
        assert f'href="/runs/{run_id}/"' in text
    data = client.get(f"/suites/{grid_suite.pk}/configs/0/?format=json").json()
    assert sorted(r["run"] for r in data["transcripts"]) == sorted(run_ids)
    compare = client.get(
        f"/suites/{grid_suite.pk}/transcripts/{data['transcripts'][0]['transcript']}/compare/"
    )
    assert compare.status_code == 302 and compare["Location"].startswith("/compare/?runs=")
    assert len(compare["Location"].split("=")[1].split(",")) == 4


def test_suite_name_is_escaped(grid_suite: Suite, client_for: Any) -> None:
    text = client_for(grid_suite.owner).get(f"/suites/{grid_suite.pk}/").content.decode()
    assert "grid &lt;b&gt;" in text and "grid <b>" not in text


def test_other_users_cannot_see_or_touch_a_suite(
    grid_suite: Suite, other_user: Any, client_for: Any
) -> None:
    client = client_for(other_user)
    for url in (f"/suites/{grid_suite.pk}/", f"/suites/{grid_suite.pk}/?format=json",
                f"/suites/{grid_suite.pk}/configs/0/"):  # fmt: skip
        assert client.get(url).status_code == 404
    assert client.post(f"/suites/{grid_suite.pk}/cancel/").status_code == 404
    assert client.post(f"/suites/{grid_suite.pk}/resume/").status_code == 404
    assert client.get("/suites/?format=json").json() == {"suites": []}
    assert "grid" not in client.get("/suites/").content.decode().split("<main")[1]
    # Their form does not offer this user's transcripts.
    form = client.get("/suites/new/").content.decode()
    t = grid_suite.items.first().transcript
    assert f'value="{t.pk}"' not in form


def test_anonymous_is_sent_to_login(client: Client) -> None:
    assert client.get("/suites/").status_code == 302


def test_cancel_then_resume(user: Any, client_for: Any) -> None:
    client = client_for(user)
    ts = [import_chat(user, seed=s, turns=3) for s in (1, 2)]
    suite = services.suite_create(
        owner=user, name="c", transcripts=ts,
        configs=configs.preset_configs(["qwenpaw"], window=None), enqueue=False,
    )  # fmt: skip
    client.post(f"/suites/{suite.pk}/cancel/")
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.CANCELLED}
    assert "Resume" in client.get(f"/suites/{suite.pk}/").content.decode()
    client.post(f"/suites/{suite.pk}/resume/")  # eager: runs here
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.DONE}


def test_survival_and_probe_scores_are_aggregated_when_present(
    grid_suite: Suite, client_for: Any
) -> None:
    from judge_app import services as judge_services

    item = grid_suite.items.select_related("run").filter(config_index=0).first()
    assert item is not None and item.run is not None
    probe_set = judge_services.probe_set(item.run)  # what opening its probes page does
    data = client_for(grid_suite.owner).get(f"/suites/{grid_suite.pk}/?format=json").json()
    stats = data["configurations"][0]["stats"]
    assert "survival" in stats and stats["survival"]["n"] == 3  # stored by every run
    assert probe_set is not None
    score = (probe_set.offline or {}).get("score")
    assert score is not None  # this transcript's compactions give probes
    # every run's probes are generated by the worker when it finishes
    for index, config in enumerate(data["configurations"][:2]):
        runs = [i.run for i in grid_suite.items.select_related("run").filter(config_index=index)]
        scores = [
            s
            for s in ((judge_services.current_set(r).offline or {}).get("score") for r in runs)
            if s is not None
        ]
        if scores:
            assert config["stats"]["probe_score"]["n"] == len(scores)
            assert config["stats"]["probe_score"]["median"] == statistics.median(scores)
        else:
            assert "probe_score" not in config["stats"]
    assert score in [
        (judge_services.current_set(i.run).offline or {}).get("score")
        for i in grid_suite.items.select_related("run").filter(config_index=0)
    ]


def test_admin_lists_suites_and_items(grid_suite: Suite, staff_user: Any, client: Client) -> None:
    from django.contrib import admin

    from suites_app.models import SuiteItem

    assert admin.site.is_registered(Suite) and admin.site.is_registered(SuiteItem)
    client.force_login(staff_user)
    assert "grid &lt;b&gt;" in client.get("/admin/suites_app/suite/").content.decode()
    item = grid_suite.items.first()
    assert client.get("/admin/suites_app/suiteitem/").status_code == 200
    assert client.get(f"/admin/suites_app/suiteitem/{item.pk}/change/").status_code == 200


def test_results_read_a_fixed_number_of_queries(
    grid_suite: Suite, django_assert_max_num_queries: Any
) -> None:
    # Summary rows only: no query per item (a 2,400-run suite builds in one pass).
    with django_assert_max_num_queries(8):
        page = results.build(grid_suite)
        results.transcript_rows(grid_suite, 0, page.columns)


def test_every_metric_row_has_a_cell_per_configuration_and_no_repeated_unit(
    grid_suite: Suite, client_for: Any
) -> None:
    """A configuration without a metric shows "—" (the cell was empty), and a unit the
    label already says is not printed again beside it ("Steps steps", "Total $ USD")."""
    import re

    html = client_for(grid_suite.owner).get(f"/suites/{grid_suite.pk}/").content.decode()
    table = html[html.index('id="aggregates"') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr><th scope=\"row\"[^>]*>(.*?)</th>(.*?)</tr>", table, re.S)
    assert len(rows) == len(results.build(grid_suite).columns)
    for head, cells in rows:
        tds = re.findall(r"<td[^>]*>(.*?)</td>", cells, re.S)
        assert len(tds) == 4 and all(td.strip() for td in tds), head
    heads = {re.sub(r"<[^>]+>", "", h).split()[0]: h for h, _ in rows}
    assert 'class="muted small unit"' not in heads["Steps"]
    assert "events</span>" in heads["Compactions"]
    unit = re.compile(r'<span class="muted small unit">(.*?)</span>')
    for head, _ in rows:
        label = unit.sub("", head).strip().lower()
        for shown in unit.findall(head):
            assert shown.rstrip("s").lower() not in label and not (shown == "USD" and "$" in label)


def test_suite_form_lists_a_few_transcripts_searches_and_keeps_the_checked(
    user: Any, other_user: Any, client_for: Any
) -> None:
    """A user with many conversations gets the newest few as checkboxes and a search box
    (every conversation was a checkbox: 6 s for 1,134 real aider sessions); a search keeps
    what is checked, and another user's transcripts are never listed nor accepted."""
    import re

    from replay_app.runs.transcript_picker import RESULTS

    mine = [import_chat(user, seed=s, turns=1, size=200) for s in range(RESULTS + 3)]
    theirs = import_chat(other_user, seed=99, turns=1, size=200)
    client = client_for(user)
    html = client.get("/suites/new/").content.decode()
    boxes = re.findall(r'<input type="checkbox" name="transcripts" value="(\d+)"', html)
    assert len(boxes) == RESULTS and str(theirs.pk) not in boxes
    assert 'hx-get="/runs/new/transcripts/?picker=transcripts&amp;multiple=1"' in html
    oldest, newest = mine[0], mine[-1]
    found = client.get(
        "/runs/new/transcripts/",
        {
            "picker": "transcripts",
            "multiple": "1",
            "transcript_q": "chat-0.json",
            "transcripts": [newest.pk],
        },  # fmt: skip
    ).content.decode()
    checked = re.findall(r'name="transcripts" value="(\d+)" id="[^"]+" checked', found)
    listed = re.findall(r'name="transcripts" value="(\d+)"', found)
    assert checked == [str(newest.pk)] and listed == [str(newest.pk), str(oldest.pk)]
    # Another user's id is refused by the field, with nothing created.
    response = client.post(
        "/suites/new/",
        {"name": "x", "summarizer": "offline", "max_attempts": "1", "presets": ["qwenpaw"],
         "transcripts": [str(theirs.pk)]},
    )  # fmt: skip
    assert response.status_code == 200 and not Suite.objects.filter(name="x").exists()
    assert str(theirs.pk) not in re.findall(
        r'name="transcripts" value="(\d+)"', response.content.decode()
    )
