"""In Chromium, a hostile summary on the summary page and the compare page shows as
formatted markdown and runs nothing (no dialog, no image request, no javascript: link)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "share"))
from share_testdata import make_comparison  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "alice-pass-123"
HOSTILE = (
    "## Goal\n- **fix** `src/app.py`\n- keep the tests\n\n<script>alert(1)</script>\n"
    '<img src=x onerror="alert(2)">\n[click](javascript:alert(3))\n'
)


def test_hostile_summary_is_formatted_and_inert(
    page: Any,
    login: Any,
    live_server: Any,
    django_user_model: Any,
    django_capture_on_commit_callbacks: Any,
    screenshot: Any,
) -> None:
    from replay_app.models import RunSummary

    user = django_user_model.objects.create_user(username="alice", password=PASSWORD)
    runs = make_comparison(user, django_capture_on_commit_callbacks)
    # claude_code's first summary is its compaction #1: on the compare page's first rows
    # (qwenpaw's offloads are compactions too, so its one summary is many rows down).
    run = next(r for r in runs if r.strategy == "claude_code")
    summary = RunSummary.objects.filter(run=run).order_by("seq").first()
    assert summary is not None
    summary.output = HOSTILE
    summary.save(update_fields=["output"])
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    login("alice", PASSWORD)
    ids = ",".join(str(r.pk) for r in runs)
    for url, box in (
        (f"/runs/{run.pk}/summaries/{summary.seq}/", ".summary-output.summary-md"),
        (f"/compare/?runs={ids}", "#compare-summaries .summary-md"),
    ):
        page.goto(live_server.url + url)
        md = page.locator(box).filter(has_text="Goal").first
        md.wait_for()
        assert md.locator("h5").inner_text() == "Goal"
        assert md.locator("li strong").first.inner_text() == "fix"
        assert md.locator("li code").first.inner_text() == "src/app.py"
        text = md.inner_text()
        assert "<script>alert(1)</script>" in text and 'onerror="alert(2)"' in text
        assert md.locator("script, img, a").count() == 0
        screenshot("summary-markdown-" + ("compare" if "compare" in url else "page"))
    assert dialogs == []
