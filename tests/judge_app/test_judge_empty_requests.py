"""A run whose requests held no transcript message says why on its probe pages: on the
corpus Codex rollout LangChain's trim_messages recipe (max_tokens 384, start_on human)
keeps nothing at 57 of its 58 requests, since the messages within 384 tokens are tool
calls and results and the rollout's human messages are its first two and last two.
langchain-core 0.3.72's own trim_messages, run on the same state before each call,
returns [] at the same 57 requests (and the same messages at every request): not a bug
of the port, so the page explains the empty requests instead of looking broken."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from judge_testdata import import_session

from judge_app import services
from replay_app.models import RunStep
from replay_app.runs.executor import run_execute
from replay_app.runs.services import RunSpec, run_create

pytestmark = pytest.mark.django_db

ROLLOUT = (
    Path(__file__).resolve().parents[1] / "data" / "corpus" / "codex-rollout"
    / "agentcmd-rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl"
)  # fmt: skip


def _run(user: Any, transcript: Any, strategy: str, **params: Any) -> Any:
    spec = RunSpec(strategy=strategy, params=params, window=20_000)
    run = run_execute(run=run_create(owner=user, transcript=transcript, spec=spec, enqueue=False))
    assert run.status == "done", run.error
    return run


def test_empty_requests_are_counted_and_explained(auth_client: Any, user: Any) -> None:
    transcript = import_session(user, ROLLOUT.read_bytes(), name=ROLLOUT.name)
    trim = _run(user, transcript, "langchain_trim")
    codex = _run(user, transcript, "codex")
    row = services.current_set(trim)
    assert row is not None
    assert (row.tokens["empty_requests"], row.tokens["requests"]) == (57, 58)
    assert services.current_set(codex).tokens["empty_requests"] == 0
    # a request holding a summary and no message is not empty (a summarising strategy's)
    step = RunStep.objects.filter(run=trim, context=[]).order_by("index").first()
    RunStep.objects.filter(pk=step.pk).update(summary_seq=0)
    assert services.empty_requests(trim) == {"requests": 58, "empty_requests": 56}
    RunStep.objects.filter(pk=step.pk).update(summary_seq=None)
    body = auth_client.get(f"/runs/{trim.pk}/probes/?format=json").json()
    assert body["empty_note"].startswith("57 of 58 requests held no transcript message")
    assert "max_tokens (384, whatever the window)" in body["empty_note"]
    assert "start_on ('human')" in body["empty_note"]
    html = auth_client.get(f"/runs/{trim.pk}/probes/").content.decode()
    assert 'data-testid="empty-requests"' in html and "trim_messages keeps" in html
    assert auth_client.get(f"/runs/{codex.pk}/probes/?format=json").json()["empty_note"] is None
    ids = f"{trim.pk},{codex.pk}"
    rows = auth_client.get(f"/compare/probes/?runs={ids}&format=json").json()["runs"]
    assert [r["empty_note"] is not None for r in rows] == [True, False]
    page = auth_client.get(f"/compare/probes/?runs={ids}").content.decode()
    assert page.count('data-testid="empty-requests"') == 1
    assert f'data-run="{trim.pk}"' in page
    # a set stored before the count was kept: the page counts them itself
    row.tokens = {k: v for k, v in row.tokens.items() if k not in ("requests", "empty_requests")}
    row.save(update_fields=["tokens"])
    again = auth_client.get(f"/runs/{trim.pk}/probes/?format=json").json()["empty_note"]
    assert again == body["empty_note"]
    # a larger budget keeps messages at more requests: fewer empty ones, said so
    wide = _run(user, transcript, "langchain_trim", max_tokens=20_000)
    assert services.current_set(wide).tokens["empty_requests"] == 26  # the original: 26 too
