"""The summary page and the run's "what was lost" page each render one object and serialise
that same object as their JSON twin: a value set only on the object (after it was read from
the database) shows in both."""

from __future__ import annotations

from typing import Any

import pytest
from inspect_helpers import make_run

from replay_app.models import Run
from replay_app.steps import lost_links, summary_page, views
from replay_app.steps.summary_page import SummaryPage

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

MARK = "value-set-on-the-page-object"


@pytest.fixture
def cow_run(user: Any, transcript: Any) -> Any:
    return make_run(user, transcript, "cowagent")


def test_summary_page_and_json_twin_read_one_object(
    auth_client: Any, cow_run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = cow_run.summaries.order_by("seq").first()
    assert summary is not None, "cowagent summarises the test transcript"
    build = summary_page.summary_page

    def marked(run: Run, seq: int) -> SummaryPage:
        page = build(run, seq)
        page.summary.output = MARK
        page.summary.step = 4242
        return page

    monkeypatch.setattr(summary_page, "summary_page", marked)
    url = f"/runs/{cow_run.pk}/summaries/{summary.seq}/"
    html = auth_client.get(url).content.decode()
    data = auth_client.get(url, {"format": "json"}).json()
    assert data["output"] == MARK and data["step"] == 4242
    # The output's element (plain or rendered markdown): the mark is inside it.
    assert MARK in html.split("summary-output", 1)[1]
    assert "at step 4242" in html
    monkeypatch.undo()
    plain = auth_client.get(url, {"format": "json"}).json()
    assert plain["output"] == summary.output != MARK and plain["step"] == summary.step


def test_missing_summary_is_404_on_both(auth_client: Any, cow_run: Run) -> None:
    url = f"/runs/{cow_run.pk}/summaries/9999/"
    assert auth_client.get(url).status_code == 404
    assert auth_client.get(url, {"format": "json"}).status_code == 404


def test_run_lost_page_and_json_twin_read_one_object(
    auth_client: Any, cow_run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = lost_links.with_links

    def marked(run: Run, data: dict[str, Any]) -> dict[str, Any]:
        found = build(run, data)
        found["retention"] = 0.125
        first = next(e for e in found["events"] if e["lost_count"])
        found["events"] = [first]
        first["lost"] = [{**first["lost"][0], "value": MARK}]
        return found

    monkeypatch.setattr(views, "with_links", marked)
    url = f"/runs/{cow_run.pk}/lost/"
    html = auth_client.get(url).content.decode()
    data = auth_client.get(url, {"format": "json"}).json()
    assert data["retention"] == 0.125 and 'retention-score">0.125<' in html
    assert [e["event"] for e in data["events"]] == [first_event(data)]
    assert html.count('class="lost-event"') == 1
    assert data["events"][0]["lost"][0]["value"] == MARK and f"<code>{MARK}</code>" in html
    monkeypatch.undo()
    plain = auth_client.get(url, {"format": "json"}).json()
    assert plain["retention"] != 0.125 and MARK not in str(plain)


def first_event(data: dict[str, Any]) -> int:
    return int(data["events"][0]["event"])
