"""A failure that follows from the offline summary says so on the run page and in its JSON
twin (issue 31, item 14): gemini_cli's lasting "inflated" failure after the offline summary
repeated its previous snapshot."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest
from inspect_helpers import make_run
from replay_testdata import import_transcript

from ctxlab.engine.core import catalogue

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

GEMINI = (
    Path(__file__).resolve().parents[2]
    / "data/corpus/gemini-cli/agentcmd-session-2025-10-27T19-55-981c87cb.json"
)


def test_inflated_failure_notes_the_offline_summary_on_page_and_json(
    user: Any, auth_client: Any
) -> None:
    transcript = import_transcript(user, GEMINI.read_bytes(), name=GEMINI.name)
    run = make_run(user, transcript, "gemini_cli", token_limit=5000)
    failed = run.events.get(kind="compact_failed")
    assert failed.detail[catalogue.NOTE_KEY] == catalogue.OFFLINE_OUTCOME_NOTE
    page = html.unescape(auth_client.get(f"/runs/{run.pk}/").content.decode())
    row = page.split(f'<tr id="event-{failed.seq}">', 1)[1].split("</tr>", 1)[0]
    assert f"note={catalogue.OFFLINE_OUTCOME_NOTE}" in row  # whole, never cut
    data = auth_client.get(f"/runs/{run.pk}/?format=json").json()
    item = next(i for i in data["events"]["items"] if i["seq"] == failed.seq)
    assert item["detail"][catalogue.NOTE_KEY] == catalogue.OFFLINE_OUTCOME_NOTE
