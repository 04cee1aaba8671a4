"""Your session, now (issue 38) in a real browser: a Claude Code session that grows while
its page is open shows the new turns, the updated zones and the updated forecast.

The session file grows on disk and is re-imported inside the server process (issue 35's
``services.import_path``, which appends what the file gained and announces
``transcript.grown`` to ``transcript-<id>``): the in-memory channel layer is per process, so
the growth has to happen where the page's websocket consumer listens. A thread started in
the server waits for a trigger file, then re-imports (a condition, never a fixed wait).
"""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from sessions_app import services
from tests.browser.conftest import _daphne
from tests.waiting import WAIT_SECONDS, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

DATA = Path(__file__).resolve().parents[1] / "data"
# Claude Code 2.1.14: a microcompact (line 33), then an auto compact_boundary (line 155)
SESSION = DATA / "agreement" / "entireio-cli" / "76" / "62d755ef9f" / "2" / "full.jsonl"
BEFORE, AFTER = 100, 135  # lines: both after the microcompact, before the auto-compact


def _grow_when_asked(trigger: Path, session: Path, username: str) -> None:
    """In the server process: once ``trigger`` exists, re-import the grown ``session``."""
    from channels.testing.live import set_database_connection

    set_database_connection()

    def watch() -> None:
        from django.contrib.auth import get_user_model

        wait_until(trigger.exists, "the test to grow the session file", interval=0.1)
        owner = get_user_model().objects.get(username=username)
        outcome, refreshed = services.import_path(owner=owner, path=session)
        trigger.with_suffix(".done").write_text(f"{outcome.ok} {refreshed!r}")

    threading.Thread(target=watch, daemon=True).start()


def _lines(count: int) -> bytes:
    return b"\n".join(SESSION.read_bytes().splitlines()[:count]) + b"\n"


def test_a_growing_claude_code_session_updates_the_open_page(
    page: Any, login: Any, screenshot: Any, tmp_path: Path, django_user_model: Any
) -> None:
    session = tmp_path / "session.jsonl"
    session.write_bytes(_lines(BEFORE))
    trigger = tmp_path / "grow"
    server = _daphne(partial(_grow_when_asked, trigger, session, "alice"))
    base = next(server).url
    try:
        login(base_url=base)
        owner = django_user_model.objects.get(username="alice")
        outcome, _ = services.import_path(owner=owner, path=session)
        assert outcome.ok, outcome.error
        transcript_id = outcome.conversations[0].transcript_id
        page.add_init_script(
            "document.addEventListener('htmx:wsOpen', () => document.body.dataset.ws = 'open');"
        )
        page.goto(f"{base}/transcripts/{transcript_id}/now/")
        page.wait_for_selector("body[data-ws=open]", state="attached")
        live = page.locator("#now-live")
        steps_before = int(live.get_attribute("data-steps") or 0)
        turns_before = page.locator("#now-turns").get_attribute("data-turns")
        messages_before = int(live.get_attribute("data-messages") or 0)
        newest_before = max(
            int(i)
            for i in page.locator("#now-recent li").evaluate_all(
                "els => els.map(e => e.dataset.index)"
            )
        )
        bar = page.locator("#now-zones .zone-bar span[data-zone=compactable]")
        messages_zone_before = int(bar.get_attribute("data-tokens") or 0)
        assert steps_before > 2 and turns_before  # a forecast is shown before the growth
        screenshot("before")

        session.write_bytes(_lines(AFTER))  # the agent keeps working
        trigger.write_text("grow")
        wait_until(trigger.with_suffix(".done").exists, "the server to re-import the grown file")
        page.wait_for_function(
            f"() => Number(document.querySelector('#now-live').dataset.steps) > {steps_before}",
            timeout=WAIT_SECONDS * 1000,
        )
        assert int(live.get_attribute("data-messages") or 0) > messages_before
        newest_after = max(
            int(i)
            for i in page.locator("#now-recent li").evaluate_all(
                "els => els.map(e => e.dataset.index)"
            )
        )
        assert newest_after > newest_before  # the new turns are listed
        messages_zone_after = int(bar.get_attribute("data-tokens") or 0)
        assert messages_zone_after > messages_zone_before  # the zones grew with them
        turns_after = page.locator("#now-turns").get_attribute("data-turns")
        assert turns_after and int(turns_after) < int(turns_before)  # closer to the trigger
        assert "/now/" in page.url and "step=" not in page.url  # no reload, still following
        assert not page.errors
        screenshot("after")
        # the README's pictures (docs/images/session-now-*.png are copies of these)
        shots = screenshot("after").parent
        page.set_viewport_size({"width": 1280, "height": 900})
        for part in ("now-zones", "now-forecast"):
            page.locator(f"#{part}").screenshot(path=str(shots / f"session-now-{part}.png"))
    finally:
        next(server, None)
