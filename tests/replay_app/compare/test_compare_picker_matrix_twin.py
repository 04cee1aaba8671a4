"""The compare picker (``/compare/`` without runs) and the fate matrix detail
(``/compare/matrix/``) each render one page object and serialise that same object as their
JSON twin: a value set only on the object (after it was read from the database) shows in
both, and is gone once the builder is restored."""

from __future__ import annotations

import re
from typing import Any

import pytest
from inspect_helpers import make_run

from replay_app.compare import views
from replay_app.compare.matrix_page import MatrixPage
from replay_app.compare.picker_page import PickerPage
from replay_app.models import Run

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

MARK = "value-set-on-the-page-object"


def test_compare_picker_and_json_twin_read_one_object(
    client: Any, user: Any, transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = [make_run(user, transcript, s) for s in ("cowagent", "copaw")]
    client.force_login(user)
    build = views.picker_page

    def marked(user: Any, group: str = "") -> PickerPage:
        page = build(user, group)
        entry = page.picker[0]
        entry["runs"] = entry["runs"][:1]  # narrowed on the object only
        entry["runs"][0].label = MARK
        return page

    monkeypatch.setattr(views, "picker_page", marked)
    html = client.get("/compare/").content.decode()
    data = client.get("/compare/", {"format": "json"}).json()
    shown = data["transcripts"][0]["runs"]
    assert [r["label"] for r in shown] == [MARK] and MARK in html
    assert html.count('name="runs"') == 1
    monkeypatch.undo()
    plain = client.get("/compare/", {"format": "json"}).json()
    assert {r["id"] for r in plain["transcripts"][0]["runs"]} == {r.pk for r in runs}
    assert MARK not in str(plain) and MARK not in client.get("/compare/").content.decode()


def test_compare_matrix_and_json_twin_read_one_object(
    client: Any, user: Any, transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = [make_run(user, transcript, s) for s in ("cowagent", "copaw")]
    ids = ",".join(str(r.pk) for r in runs)
    client.force_login(user)
    build = views.matrix_page

    def marked(runs: list[Run], start: int | None, end: int | None) -> MatrixPage:
        page = build(runs, start, end)
        page.rows = page.rows[1:2]
        page.rows[0].preview = MARK
        return page

    monkeypatch.setattr(views, "matrix_page", marked)
    query = {"runs": ids, "start": "0", "end": "5"}
    html = client.get("/compare/matrix/", query).content.decode()
    data = client.get("/compare/matrix/", {**query, "format": "json"}).json()
    assert [m["index"] for m in data["messages"]] == [1]
    assert data["messages"][0]["preview"] == MARK and MARK in html
    assert html.count('<td class="num mono">') == 1 and 'class="message-link"' in html
    assert re.search(
        r'<td class="num mono"><a href="[^"]*message=1#message-1"[^>]*>1</a></td>', html
    )
    monkeypatch.undo()
    plain = client.get("/compare/matrix/", {**query, "format": "json"}).json()
    assert [m["index"] for m in plain["messages"]] == [0, 1, 2, 3, 4]
    # The previews are the transcript's own, in both the page and the JSON.
    first = transcript.messages.get(index=0).preview
    assert plain["messages"][0]["preview"] == first and MARK not in str(plain)
    assert len(plain["messages"][0]["fates"]) == len(runs)


def test_compare_picker_lists_the_newest_runs_newest_transcript_first(
    client: Any, user: Any, transcript: Any, small_transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The picker took the first runs by transcript id, so once a user had more runs than
    it lists, the newest ones (a suite's hundreds) were the ones left out."""
    from replay_app.compare import picker_page

    old = [make_run(user, transcript, s) for s in ("cowagent", "copaw", "qwenpaw")]
    new = [make_run(user, small_transcript, s) for s in ("picoclaw", "baseagent")]
    monkeypatch.setattr(picker_page, "PICKER_RUNS", 3)
    client.force_login(user)
    data = client.get("/compare/", {"format": "json"}).json()
    listed = [[r["id"] for r in t["runs"]] for t in data["transcripts"]]
    assert listed == [[new[1].pk, new[0].pk], [old[2].pk]]
