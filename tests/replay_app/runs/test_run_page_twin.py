"""The run page and its JSON twin are built from one ``RunPage``: a value set only on that
object (not in the request, not in the database) shows in both."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import QueryDict
from inspect_helpers import make_run

from replay_app.models import Run
from replay_app.runs import runpage, views
from replay_app.runs.run_page import RunPage

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
