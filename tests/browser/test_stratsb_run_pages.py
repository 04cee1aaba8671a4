"""The run pages of the OpenHands condenser and Anthropic server-side compaction on real
transcripts, in a real browser: each compaction is in the events table with its figures,
the OpenHands summary is listed beside its prompt, and nothing on the page errors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared helpers
from inspect_helpers import make_run  # noqa: E402
from replay_testdata import import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
SESSION = CORPUS / "claude-code" / "agentcmd-full-session-four.jsonl"
CASSETTE = CORPUS / "api-cassettes" / "pydanticai-test_anthropic_compaction_end_to_end.yaml"


def _run(username: str, path: Path, strategy: str, **params: Any) -> Any:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    transcript = import_transcript(user, path.read_bytes(), name=path.name)
    return make_run(user, transcript, strategy, **params)


def _event_rows(page: Any, kind: str) -> list[str]:
    return page.locator("#run-events tr").evaluate_all(
        f"els => els.filter(e => e.querySelector('.badge[data-kind]')?.dataset.kind === '{kind}')"
        ".map(e => e.textContent)"
    )


def test_openhands_condenser_run_page(
    page: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    login(base_url=asgi_live_server.url)
    run = _run("alice", SESSION, "openhands_condenser", max_size=40, keep_first=4)
    (event,) = run.events.filter(kind="summarise")
    page.goto(f"{asgi_live_server.url}/runs/{run.pk}/?step={event.step}#scrubber")
    page.wait_for_selector("#token-curve-plot .main-svg")
    (row,) = _event_rows(page, "summarise")
    assert f"{event.tokens_before:,}" in row and f"{event.tokens_after:,}" in row
    summaries = page.locator("#run-summaries-panel").inner_text()
    assert run.summaries.count() == 1 and summaries.strip()
    screenshot("openhands-condenser")
    assert page.errors == []


def test_anthropic_server_compaction_run_page(
    page: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    login(base_url=asgi_live_server.url)
    run = _run("alice", CASSETTE, "anthropic_server_compaction", trigger=50_000)
    (event,) = run.events.filter(kind="compact")
    assert event.tokens_before >= 50_000 > event.tokens_after
    page.goto(f"{asgi_live_server.url}/runs/{run.pk}/?step={event.step}#scrubber")
    page.wait_for_selector("#token-curve-plot .main-svg")
    (row,) = _event_rows(page, "compact")
    assert f"{event.tokens_before:,}" in row and f"{event.tokens_after:,}" in row
    screenshot("anthropic-server-compaction")
    assert page.errors == []
