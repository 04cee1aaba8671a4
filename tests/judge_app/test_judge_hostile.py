"""Transcript text on the probe pages is untrusted: escaped everywhere, secrets masked."""

from __future__ import annotations

import json
from typing import Any

import pytest
from judge_testdata import QWENPAW, coding_session, finished_run, import_session

pytestmark = pytest.mark.django_db

TOKEN = "ghp_" + "Zq7Rk2Lm9Xv4Tw8Pn3Bc6Hd1Jf5Gs0Ya2UeW"  # a GitHub token shape
HOSTILE = "<img src=x onerror=alert(1)>"


def test_probe_pages_escape_and_mask(auth_client: Any, user: Any) -> None:
    data = json.loads(coding_session())
    for m in data:
        if m["role"] == "tool" and "ValueError" in m.get("content", ""):
            m["content"] = m["content"].replace("bad token", f"bad token {HOSTILE} with {TOKEN}")
    transcript = import_session(user, json.dumps(data).encode(), name="hostile.json")
    run = finished_run(user, transcript, "qwenpaw", QWENPAW)
    page = auth_client.get(f"/runs/{run.pk}/probes/").content.decode()
    assert "ValueError: bad token &lt;img src=x onerror=alert(1)&gt;" in page
    at = page.find(HOSTILE)
    assert at < 0, page[max(0, at - 300) : at + 100]
    assert TOKEN not in page
    twin = auth_client.get(f"/runs/{run.pk}/probes/?format=json").content.decode()
    assert TOKEN not in twin
    compare = auth_client.get(f"/compare/probes/?runs={run.pk}").content.decode()
    assert HOSTILE not in compare and TOKEN not in compare
    # the shared question set shows the same answers, escaped and masked, page and JSON
    shared = compare[compare.index('id="probe-shared"') : compare.index('id="probe-compare"')]
    assert "ValueError: bad token &lt;img src=x onerror=alert(1)&gt;" in shared
    twin = auth_client.get(f"/compare/probes/?runs={run.pk}&format=json").json()["shared"]
    answers = [a for p in twin["probes"] for a in p["answers"]]
    assert any(HOSTILE in a for a in answers)  # JSON keeps the text (escaped by consumers)
    assert TOKEN not in json.dumps(twin) and not any(TOKEN in a for a in answers)
