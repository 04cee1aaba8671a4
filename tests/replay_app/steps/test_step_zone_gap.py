"""A step's zone bar and the count written above it: where a strategy compares a count
that leaves part of the request out (Gemini CLI counts the history before the messages
since the last model call), the step view says what the bar adds up to and how far the
count is from it; where they agree (every preset), nothing is added. Trial: the real
Gemini CLI session at a 3,000-token window read "Request: 973 tokens" over a bar of
712 + 354 = 1,066."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from inspect_helpers import make_run

from replay_app.steps.zone_bar import request_total
from sessions_app import services as session_services

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

GEMINI = (
    Path(settings.BASE_DIR)
    / "tests/data/corpus/gemini-cli/agentcmd-session-2025-10-27T19-55-981c87cb.json"
)
GAP = re.compile(r'class="zone-gap" data-bar-total="(\d+)"')


@pytest.fixture
def gemini(user: Any) -> Any:
    outcome = session_services.upload_import(owner=user, name=GEMINI.name, data=GEMINI.read_bytes())
    assert outcome.upload is not None
    return outcome.upload.transcripts.get()


def _views(client: Any, run: Any) -> list[tuple[dict[str, Any], str]]:
    out = []
    for step in range(run.steps_total):
        data = client.get(f"/runs/{run.pk}/steps/{step}/?format=json").json()
        html = client.get(f"/runs/{run.pk}/steps/{step}/").content.decode()
        out.append((data, html))
    return out


def test_the_step_view_names_a_count_that_leaves_part_of_the_bar_out(
    client: Any, user: Any, gemini: Any
) -> None:
    run = make_run(user, gemini, "gemini_cli", token_limit=3000)
    client.force_login(user)
    gaps = 0
    for data, html in _views(client, run):
        bar, counted = request_total(data["zones"]), data["tokens"]["strategy"]
        found = GAP.findall(html)
        if bar == counted:
            assert found == []
            continue
        gaps += 1
        assert found == [str(bar)]
        word = "leaves out" if bar > counted else "adds"
        assert f'the count {word} <span class="num">{abs(bar - counted):,}</span>' in html
    assert gaps > 0  # this strategy's count leaves the newest messages out


def test_a_preset_whose_bar_adds_up_shows_no_note(client: Any, user: Any, gemini: Any) -> None:
    run = make_run(user, gemini, "qwenpaw", max_input_length=3000)
    client.force_login(user)
    for data, html in _views(client, run):
        assert request_total(data["zones"]) == data["tokens"]["strategy"]
        assert "zone-gap" not in html
