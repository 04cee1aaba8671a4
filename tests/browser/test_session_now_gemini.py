"""Your session, now, for Gemini CLI in a real browser (issue 38): the real corpus session
shows its zones against Gemini CLI's own compression threshold and the turns to
compression with its range; the same session grown through a compression (its records
repeated, the reported prompts crossing the threshold: Gemini CLI's files record no
compression) marks it, and the forecast counts from it and names what the next one takes."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.engine.evaluate.test_session_now_gemini import PROMPTS, SESSION, _grown

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared helpers
from replay_testdata import import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)


def _owner(username: str) -> Any:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=username)


def test_a_real_gemini_session_against_its_compression_threshold(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    login()
    transcript = import_transcript(_owner("alice"), SESSION.read_bytes(), name=SESSION.name)
    # the newest step chosen by number: the test server has no websocket to follow it with
    page.goto(f"{live_server.url}/transcripts/{transcript.pk}/now/?step=14")
    assert page.locator("#now-live").get_attribute("data-steps") == "15"
    agent = page.locator("#now-agent")
    assert agent.get_attribute("data-agent") == "gemini_cli"
    assert "734,003" in agent.inner_text() and "2025-10-27" in agent.inner_text()
    zones = page.locator("#now-zones").inner_text()
    assert "Above the compression threshold" in zones  # the legend, and the line under it:
    assert "above the compression threshold 314,573" in zones and "buffer" not in zones
    turns = page.locator("#now-turns")
    assert int(turns.get_attribute("data-turns") or 0) > 1000  # 9,198 of 734,003
    assert "to compression" in turns.inner_text()
    assert re.search(r"likely \d+-\d+", page.locator("#now-turns-range").inner_text())
    assert int(page.locator("#now-summarised").inner_text()) > 0
    assert page.locator("#now-compactions").count() == 0  # none in this session
    screenshot("gemini-session-now")
    assert page.errors == []


def test_a_gemini_compression_is_marked_and_the_forecast_counts_from_it(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    login()
    prompts = PROMPTS
    data = json.dumps(_grown(prompts)).encode()
    transcript = import_transcript(_owner("alice"), data, name="session-grown.json")
    base = f"{live_server.url}/transcripts/{transcript.pk}/now/"
    twin = page.request.get(f"{base}?format=json").json()
    page.goto(f"{base}?step={twin['steps'] - 1}")  # the newest (no websocket here)
    row = page.locator("#now-compactions tr[data-inferred=true]")
    assert row.count() == 1 and "606,000" in row.inner_text()
    assert "not in the file" in row.inner_text()
    turns = page.locator("#now-turns")
    expected = -(-(524_288 - prompts[-1]) // 3_000)  # growth since the compression only
    assert turns.get_attribute("data-turns") == str(expected)
    assert "3,000 a turn" in turns.inner_text()
    # the call right after it says so; the JSON twin reads the same object
    first_after = row.locator("a").inner_text()
    page.goto(f"{base}?step={first_after}")
    assert page.locator("#now-compacted").get_attribute("data-kind") == "compression"
    twin = page.request.get(f"{base}?format=json").json()
    assert twin["agent"]["event"] == "compression" and twin["agent"]["threshold"] == 524_288
    assert twin["agent_compactions"][0]["inferred"] is True
    assert twin["forecast"]["turns_to_auto_compact"]["turns"] == expected
    screenshot("gemini-compression-marked")
    assert page.errors == []
