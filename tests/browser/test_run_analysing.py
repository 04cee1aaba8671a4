"""A run its worker is still analysing (done, no ``finished_at``: ``analysis_state``) in a
real browser: the run page's survival and ledger panels and the lost page say "Analysing…"
and ask again until the analysis lands, then show it without a reload."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared test data
from replay_testdata import import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
SESSION = "claude-code/agentcmd-full-session-four.jsonl"


def _analysing_run(username: str) -> tuple[Any, Any]:
    """A finished run put back into its analysing window, and a function that lands its
    analysis as the worker would (the same rows, then ``finished_at``)."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from replay_app.models import Run, RunAnalysis
    from replay_app.runs import executor, services

    user = get_user_model().objects.get(username=username)
    transcript = import_transcript(user, (CORPUS / SESSION).read_bytes(), name=Path(SESSION).name)
    run = services.run_create(
        owner=user, transcript=transcript,
        spec=services.RunSpec(strategy="qwenpaw", params={"max_input_length": 4096}),
        enqueue=False,
    )  # fmt: skip
    run = executor.run_execute(run=run)
    assert run.status == "done", run.error
    analysis = RunAnalysis.objects.get(run=run)
    ledger, finished = run.ledger, run.finished_at
    assert ledger and analysis.survival
    RunAnalysis.objects.filter(run=run).delete()
    alive = timezone.now() + timedelta(hours=1)  # a heartbeat that stays fresh
    Run.objects.filter(pk=run.pk).update(finished_at=None, ledger={}, heartbeat_at=alive)

    def land() -> None:
        analysis.save()
        Run.objects.filter(pk=run.pk).update(finished_at=finished, ledger=ledger)

    return run, land


def test_the_run_and_lost_pages_say_analysing_then_show_it(
    page: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    base = asgi_live_server.url
    login(base_url=base)
    run, land = _analysing_run("alice")
    page.goto(f"{base}/runs/{run.pk}/")
    survival, ledger = page.locator("#survival"), page.locator("#run-ledger")
    survival.get_by_text("Analysing…").wait_for()
    ledger.get_by_text("Analysing…").wait_for()
    screenshot("analysing")
    lost = page.context.new_page()
    lost.goto(f"{base}/runs/{run.pk}/lost/")
    lost.locator("#lost-analysis").get_by_text("Analysing…").wait_for()

    land()
    survival.locator("table[data-table=survival]").wait_for()  # swapped in by the panel's poll
    ledger.locator("#ledger-totals").wait_for()
    assert "Analysing…" not in (page.locator("main").text_content() or "")
    lost.locator("#lost-analysis .retention-score").wait_for()
    assert "Analysing…" not in (lost.locator("main").text_content() or "")
    screenshot("analysed")
