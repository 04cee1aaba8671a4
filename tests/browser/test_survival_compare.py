"""Fact survival on the compare page in a real browser: on a real Claude Code /compact
(its summary recorded in the session), the original agent's own row sits beside two
replays' rows, each with a cell per category, and the run page shows its own row."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared test data
from replay_testdata import import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = (
    Path(__file__).resolve().parents[1] / "data" / "recorded" / "claude-trace-req34-compacted.jsonl"
)


def _runs(username: str) -> list[Any]:
    from django.contrib.auth import get_user_model

    from replay_app.runs import executor, services

    user = get_user_model().objects.get(username=username)
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    group = services.group_create(
        enqueue=False,
        owner=user,
        transcript=transcript,
        specs=[
            services.RunSpec(strategy="claude_code", window=8000),
            services.RunSpec(strategy="langchain_trim", window=6000),
        ],
        summarizer="recorded",
    )
    runs = [executor.run_execute(run=r) for r in group.runs.order_by("pk")]
    assert all(r.status == "done" for r in runs), [r.error for r in runs]
    return runs


def _cells(row: Any) -> dict[str, str]:
    return {
        cell.get_attribute("data-category"): cell.inner_text().strip()
        for cell in row.locator("td[data-category]").all()
    }


def test_original_row_beside_the_replays(
    page: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    base = asgi_live_server.url
    login(base_url=base)
    runs = _runs("alice")
    page.goto(f"{base}/compare/?runs={runs[0].pk},{runs[1].pk}")
    table = page.locator('#survival table[data-table="survival"]')
    table.wait_for()
    keys = [r.get_attribute("data-survival-row") for r in table.locator("tbody tr").all()]
    assert keys == ["original", str(runs[0].pk), str(runs[1].pk)]
    original = _cells(table.locator('tr[data-survival-row="original"]'))
    claude = _cells(table.locator(f'tr[data-survival-row="{runs[0].pk}"]'))
    trim = _cells(table.locator(f'tr[data-survival-row="{runs[1].pk}"]'))
    assert len(original) == len(claude) == len(trim) == 9
    # the replay answered with the original's own summary keeps the same paths
    assert original["paths"] == claude["paths"] != "—"
    assert original["instructions"] == "100.0%" and trim["paths"] == "0.0%"
    title = table.locator('tr[data-survival-row="original"] td[data-category="paths"]')
    assert "of 19 survived" in (title.get_attribute("title") or "")
    full = screenshot("survival-compare")
    page.locator("#survival").screenshot(path=str(full.with_name(full.stem + "-section.png")))
    page.goto(f"{base}/runs/{runs[0].pk}/")
    own = page.locator('#survival table[data-table="survival"] tbody tr')
    own.first.wait_for()
    assert [r.get_attribute("data-survival-row") for r in own.all()] == [str(runs[0].pk)]
