"""The compare page, its JSON twin and its CSV are built from one ``ComparePage``: runs and a
matrix step set only on that object show in all of them."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import QueryDict
from inspect_helpers import make_run

from replay_app.compare import views
from replay_app.compare.compare_page import ComparePage
from replay_app.models import Run

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

MARK = "label-set-on-the-compare-object"


class MarkedPage(ComparePage):
    """Relabels the first run and puts the matrix at step 1, on the object only."""

    def __init__(self, runs: list[Run], query: QueryDict) -> None:
        super().__init__(runs, QueryDict("at=1"))
        runs[0].label = MARK


def test_compare_page_json_and_csv_read_one_object(
    client: Any, user: Any, transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = [make_run(user, transcript, s) for s in ("cowagent", "copaw")]
    ids = ",".join(str(r.pk) for r in runs)
    client.force_login(user)
    monkeypatch.setattr(views, "ComparePage", MarkedPage)
    html = client.get("/compare/", {"runs": ids}).content.decode()
    data = client.get("/compare/", {"runs": ids, "format": "json"}).json()
    csv_text = client.get("/compare/", {"runs": ids, "format": "csv"}).content.decode()
    assert MARK in html and data["runs"][0]["label"] == MARK and MARK in csv_text
    assert data["matrix"]["step"] == 1 and "Message fates at step 1" in html
    monkeypatch.undo()
    plain = client.get("/compare/", {"runs": ids, "format": "json"}).json()
    assert plain["runs"][0]["label"] != MARK and plain["matrix"]["step"] is None
