"""What was lost, linked: each compaction to its row in the run's events table, each lost
fact to the transcript row of the message that held it (compare page, run-lost page and
their JSON twins), on a real Claude Code corpus session."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest
from inspect_helpers import make_run
from replay_testdata import import_transcript

from replay_app.models import Run
from sessions_app.models import Transcript
from tests.engine.builders import SMALL_WINDOWS as SMALL

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SESSION = "claude-code/agentcmd-full-session-four.jsonl"


@pytest.fixture
def runs(user: Any) -> list[Run]:
    transcript: Transcript = import_transcript(
        user, (CORPUS / SESSION).read_bytes(), name=Path(SESSION).name
    )
    return [make_run(user, transcript, p, **SMALL[p]) for p in ("qwenpaw", "baseagent")]


def test_compare_json_links_every_lost_fact_to_its_message_and_event(
    client: Any, user: Any, runs: list[Run]
) -> None:
    client.force_login(user)
    ids = ",".join(str(r.pk) for r in runs)
    data = client.get(f"/compare/?runs={ids}&format=json").json()
    checked_events = checked_facts = 0
    for run in runs:
        for event in data["lost"][str(run.pk)]["events"]:
            url = event["event_url"]
            assert url.startswith(f"/runs/{run.pk}/?page=") and url.endswith(
                f"#event-{event['event']}"
            )
            if checked_events < 3:  # the row is on the page the link names
                page = client.get(url.split("#")[0]).content.decode()
                assert f'id="event-{event["event"]}"' in page
                checked_events += 1
            for fact in event["lost"]:
                transcript = runs[0].transcript_id
                assert fact["message_url"].startswith(f"/transcripts/{transcript}/?page=")
                assert fact["message_url"].endswith(f"#m{fact['message']}")
                if checked_facts < 5:
                    page = client.get(fact["message_url"].split("#")[0]).content.decode()
                    assert f'id="m{fact["message"]}"' in page
                    checked_facts += 1
    assert checked_events and checked_facts, "the small windows make both runs lose facts"


def test_compare_and_run_lost_pages_render_the_links(
    client: Any, user: Any, runs: list[Run]
) -> None:
    client.force_login(user)
    run = runs[0]
    data = client.get(f"/runs/{run.pk}/lost/?format=json").json()
    event = next(e for e in data["events"] if e["lost"])
    fact = event["lost"][0]
    for url in (f"/runs/{run.pk}/lost/", f"/compare/?runs={runs[0].pk},{runs[1].pk}"):
        page = client.get(url).content.decode()
        assert f'href="{html.escape(event["event_url"])}"' in page
        assert f'href="{html.escape(fact["message_url"])}"' in page
        assert f"<code>{html.escape(fact['value'])}</code>" in page
        assert "user instructions, file paths, commands" in page
