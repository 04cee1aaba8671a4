"""PicoClaw's reactive context-error path on the run page, in a real browser: on a real
Codex rollout (one long turn) the provider's rejection shows as the user notice and a
forced compression, the scrubber at that step holds only the user message, and a call
that cannot be saved shows as a failed compaction."""

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
CODEX = (
    CORPUS
    / "codex-rollout"
    / ("agentcmd-rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl")
)
SNIFFLY = CORPUS / "claude-code" / "sniffly-d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"


def _run(username: str, path: Path, **params: Any) -> Any:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    transcript = import_transcript(user, path.read_bytes(), name=path.name)
    return make_run(user, transcript, "picoclaw", **params)


def _event_rows(page: Any, kind: str) -> list[str]:
    return page.locator("#run-events tr").evaluate_all(
        f"els => els.filter(e => e.querySelector('.badge[data-kind]')?.dataset.kind === '{kind}')"
        ".map(e => e.textContent)"
    )


def test_picoclaw_llm_retry_on_a_codex_rollout(
    page: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    login(base_url=asgi_live_server.url)
    run = _run("alice", CODEX, context_window=15_000, max_tokens=3750)
    comps = list(run.events.filter(kind="force_compression").order_by("step"))
    assert len(comps) >= 2 and all(c.detail["retry"] == 1 for c in comps)
    first = comps[0]
    page.goto(f"{asgi_live_server.url}/runs/{run.pk}/?step={first.step}#scrubber")
    page.wait_for_selector("#token-curve-plot .main-svg")
    rows = _event_rows(page, "force_compression")
    assert len(rows) == len(comps)
    assert f"{first.tokens_before:,}" in rows[0] and f"{first.tokens_after:,}" in rows[0]
    assert "compress_reason=llm_retry" in rows[0]
    assert len(_event_rows(page, "warning")) == len(comps)
    page.wait_for_selector(f'#step-context[data-step="{first.step}"]')
    # one long turn: the retry request is the system message and the user message
    kept = page.locator("#step-context .ctx-message:not([data-fate=dropped])")
    assert kept.count() >= 1
    screenshot("codex-rollout")
    events = screenshot("codex-rollout").with_name("picoclaw-retry-events.png")
    page.locator("#run-events").screenshot(path=str(events))
    assert page.errors == []


def test_picoclaw_failed_retry_shows_as_failed_compaction(
    page: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    login(base_url=asgi_live_server.url)
    run = _run("alice", SNIFFLY, context_window=20_000, max_tokens=2000)
    (failed,) = run.events.filter(kind="compact_failed")
    assert "refusing to drop active turn messages" in failed.detail["error"]
    page.goto(f"{asgi_live_server.url}/runs/{run.pk}/?step={failed.step}#scrubber")
    page.wait_for_selector("#token-curve-plot .main-svg")
    (row,) = _event_rows(page, "compact_failed")
    # long detail values are shortened in the table; their heads name the failure
    assert "error=context window still exceeded" in row
    assert "outcome=the LLM call fails" in row
    screenshot("sniffly-failed")
    assert page.errors == []
