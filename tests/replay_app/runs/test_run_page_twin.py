"""The run page and its JSON twin are built from one ``RunPage``: a value set only on that
object (not in the request, not in the database) shows in both."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import QueryDict
from inspect_helpers import make_run

from replay_app.models import Run
from replay_app.runs import views
from replay_app.runs.pages import runpage
from replay_app.runs.pages.run_list import RunListPage
from replay_app.runs.pages.run_page import RunPage

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

MARK = "label-set-on-the-page-object"


class MarkedPage(RunPage):
    """Relabels the run and turns to the second events page, on the object only."""

    def __init__(self, run: Run, query: QueryDict) -> None:
        super().__init__(run, QueryDict("page=2"))
        run.label = MARK


def test_run_page_and_json_twin_read_one_object(
    auth_client: Any, user: Any, transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = make_run(user, transcript, "qwenpaw")
    assert run.events_count > runpage.EVENTS_PER_PAGE, "the run needs two event pages"
    monkeypatch.setattr(views, "RunPage", MarkedPage)
    url = run.get_absolute_url()
    html = auth_client.get(url).content.decode()
    data = auth_client.get(url, {"format": "json"}).json()
    assert MARK in html and data["label"] == MARK
    second = [e["seq"] for e in data["events"]["items"]]
    assert data["events"]["page"] == 2 and second
    assert f'id="event-{second[0]}"' in html
    monkeypatch.undo()
    first = auth_client.get(url, {"format": "json"}).json()
    assert first["label"] != MARK and first["events"]["page"] == 1


def test_run_list_and_json_twin_read_one_object(
    auth_client: Any, user: Any, small_transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = (make_run(user, small_transcript, s) for s in ("cowagent", "copaw"))

    class OnlyFirst(RunListPage):
        """Lists only the first run, on the object only (the request asks for all)."""

        def runs(self) -> Any:
            return super().runs().filter(pk=first.pk)

    monkeypatch.setattr(views, "RunListPage", OnlyFirst)
    html = auth_client.get("/runs/").content.decode()
    data = auth_client.get("/runs/", {"format": "json"}).json()
    assert [r["id"] for r in data["runs"]] == [first.pk] and data["count"] == 1
    assert f'href="/runs/{first.pk}/"' in html and f'href="/runs/{second.pk}/"' not in html
