"""The run form's window suggestions say what they are: three windows are the fixed part
plus 25/50/75 % of the rest of the transcript's peak; a small transcript's collapse into fewer (rounded to thousands, at
least 1,000), and the hint says so instead of labelling one number "25/50/75 %" (trial:
an OpenHands trajectory peaking at 1,988 tokens)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from replay_testdata import agent_chat, import_transcript

pytestmark = pytest.mark.django_db


def _hint(client: Any, transcript: Any) -> str:
    html = client.get("/runs/new/window/", {"transcript": transcript.pk}).content.decode()
    found = re.search(r'<span id="window-hint">(.*?)</span>', html, re.S)
    assert found is not None
    return re.sub(r"<[^>]+>", "", found[1])


def test_the_hint_names_its_shares_only_for_three_windows(client: Any, user: Any) -> None:
    small = import_transcript(user, agent_chat(turns=2, size=300), name="small.json")
    large = import_transcript(user, agent_chat(turns=40, size=6000), name="large.json")
    client.force_login(user)
    few = _hint(client, small)
    assert "(the fixed part + 25/50/75 % of the rest, rounded to whole thousands above" in few
    three = _hint(client, large)
    assert three.endswith("(the fixed part + 25/50/75 % of the rest).")
    assert three.count(" · ") == 2
