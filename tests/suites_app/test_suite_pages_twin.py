"""The suite list, a suite's results page and a configuration's page each render the
objects they serialise as their JSON twin: values set only on those objects (after they
were built from the database) show in both."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from suite_testdata import import_chat

from suites_app import configs, results, services, views
from suites_app.configs import Base
from suites_app.models import Suite

pytestmark = pytest.mark.django_db

MARK = "label-set-on-the-page-object"


@pytest.fixture
def small_suite(user: Any) -> Suite:
    transcripts = [import_chat(user, seed=s, turns=8, size=3000) for s in (1, 2)]
    grid = configs.grid_configs(Base("qwenpaw"), {"max_input_length": "6000,20000"})
    suite = services.suite_create(
        owner=user, name="twin suite", transcripts=transcripts, configs=grid,
        grid_keys=["max_input_length"], enqueue=False,
    )  # fmt: skip
    services.suite_enqueue(suite)  # eager Celery: runs here
    suite.refresh_from_db()
    return suite


def test_suite_results_and_json_twin_read_one_object(
    auth_client: Any, small_suite: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = results.build

    def marked(suite: Suite) -> results.SuiteResults:
        page = build(suite)
        page.configs[1].label = MARK
        page.configs[1].rank = 7
        return page

    monkeypatch.setattr(results, "build", marked)
    url = f"/suites/{small_suite.pk}/"
    html = auth_client.get(url).content.decode()
    data = auth_client.get(url, {"format": "json"}).json()
    assert [(c["label"], c["rank"]) for c in data["configurations"]][1] == (MARK, 7)
    assert f">{MARK}</a>" in html and '<td class="num">7</td>' in html
    monkeypatch.undo()
    plain = auth_client.get(url, {"format": "json"}).json()
    assert MARK not in [c["label"] for c in plain["configurations"]]


def test_suite_config_page_and_json_twin_read_one_object(
    auth_client: Any, small_suite: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = results.transcript_rows

    def marked(*args: Any) -> list[results.TranscriptRow]:
        first = build(*args)[0]
        return [dataclasses.replace(first, name=MARK)]

    monkeypatch.setattr(results, "transcript_rows", marked)
    url = f"/suites/{small_suite.pk}/configs/0/"
    html = auth_client.get(url).content.decode()
    data = auth_client.get(url, {"format": "json"}).json()
    (row,) = data["transcripts"]
    assert row["name"] == MARK and f"<td>{MARK}" in html
    assert html.count('class="run-link"') == 1 and f'href="/runs/{row["run"]}/"' in html
    monkeypatch.undo()
    assert len(auth_client.get(url, {"format": "json"}).json()["transcripts"]) == 2


def test_suite_list_and_json_twin_read_one_object(
    auth_client: Any, small_suite: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    progress = views.suite_progress_data

    def marked(suite: Suite) -> Any:
        return {**progress(suite), "failed": 987}

    monkeypatch.setattr(views, "suite_progress_data", marked)
    html = auth_client.get("/suites/").content.decode()
    (row,) = auth_client.get("/suites/", {"format": "json"}).json()["suites"]
    assert row["id"] == small_suite.pk and row["failed"] == 987
    assert '<td class="num">987</td>' in html
    monkeypatch.undo()
    assert auth_client.get("/suites/", {"format": "json"}).json()["suites"][0]["failed"] == 0
