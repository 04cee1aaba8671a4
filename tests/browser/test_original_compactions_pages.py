"""In a real browser: a real Claude Code session with its own compactions (a microcompact
and an auto-compaction, tests/data/agreement) uploaded through the form, replayed with the
recorded summariser; the run page lists each original compaction beside the replay's and
the compare page has "the original" as a row, at desktop and at phone width (the tables
scroll in their box, the page itself never wider than the screen)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ARTIFACTS
from django.conf import settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared helpers
from replay_testdata import executed_group  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = Path(settings.BASE_DIR) / "tests/data/agreement/entireio-cli/76/62d755ef9f/2/full.jsonl"
NAME = "claude-code-2.1.14-checkpoint.jsonl"
WIDTHS = {"desktop": 1400, "phone": 390}


def _fits(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"))


def test_original_compactions_on_run_and_compare_pages(
    page: Any, live_server: Any, login: Any, screenshot: Any, django_user_model: Any,
    tmp_path: Path,
) -> None:  # fmt: skip
    from sessions_app.models import Transcript

    login()
    upload = tmp_path / NAME
    upload.write_bytes(SESSION.read_bytes())
    page.goto(f"{live_server.url}/transcripts/")
    page.set_input_files("#upload-form input[type=file]", [str(upload)])
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#upload-results .upload-result")
    assert "imported" in page.locator("#upload-results .upload-result").inner_text()

    user = django_user_model.objects.get(username="alice")
    transcript = Transcript.objects.filter(owner=user, parent__isnull=True).order_by("pk").first()
    assert transcript is not None
    runs = executed_group(
        user, transcript, [("claude_code", {}), ("claude_code", {"context_window": 1_000_000})]
    )
    first = runs[0]
    stored = first.metrics["original_compactions"]
    kinds = [row["kind_key"] for row in stored]
    assert "auto" in kinds

    for label, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/runs/{first.pk}/")
        table = page.wait_for_selector("table[data-table=original-compactions]")
        rows = page.locator("table[data-table=original-compactions] tbody tr")
        assert rows.count() == len(stored)
        auto = page.locator("table[data-table=original-compactions] tr[data-kind=auto]").first
        text = auto.inner_text()
        assert "auto-compaction" in text and "2.1.14" in text
        original_tokens = next(r["original_tokens"] for r in stored if r["kind_key"] == "auto")
        assert f"{original_tokens:,}" in text
        relation = next(r for r in stored if r["kind_key"] == "auto")["relation"]
        assert auto.locator("td.relation").inner_text() == relation
        table.scroll_into_view_if_needed()
        assert _fits(page), f"the run page is wider than a {width} px screen"
        screenshot(f"run-{label}")
        table.screenshot(path=str(ARTIFACTS / f"originals-run-{label}.png"))

        page.goto(f"{live_server.url}/compare/?runs={runs[0].pk},{runs[1].pk}")
        section = page.wait_for_selector("#compare-originals")
        original = page.locator("#compare-originals tr[data-row=original]")
        assert "the original" in original.inner_text().lower()  # th cells may be upper-cased
        for run in runs:
            assert page.locator(f"#compare-originals tr[data-row='{run.pk}']").count() == 1
        section.scroll_into_view_if_needed()
        assert _fits(page), f"the compare page is wider than a {width} px screen"
        screenshot(f"compare-{label}")
        section.screenshot(path=str(ARTIFACTS / f"originals-compare-{label}.png"))
    assert page.errors == []
