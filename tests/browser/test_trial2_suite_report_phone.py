"""The saved suite report at phone width (390 px), for a suite over real transcripts (the
tau-bench airline conversation and the claude-trace request) × presets with a window: each
configuration's parameter list (a two-column grid, "model context window" beside its value)
made the page 15 px wider than the screen; now the columns wrap and nothing scrolls
sideways."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared helpers
from replay_testdata import import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[1] / "data/corpus"
FILES = (
    CORPUS / "openai-chat/taubench-gpt-4o-airline-task2-messages.json",
    CORPUS / "anthropic-messages/claude-trace-req34-request.json",
)


def test_suite_report_fits_a_phone(page: Any, django_user_model: Any, tmp_path: Path) -> None:
    from suites_app import configs, report, services

    user = django_user_model.objects.create_user(username="carol", password="pw-carol-123")
    transcripts = [import_transcript(user, f.read_bytes(), name=f.name) for f in FILES]
    presets = configs.preset_configs(["observation_masking", "claude_code"], window=16000)
    suite = services.suite_create(
        owner=user, name="phone", transcripts=transcripts, configs=presets, enqueue=False
    )
    services.suite_enqueue(suite)  # eager Celery: runs here
    assert suite.items.filter(status="done").count() == 4
    path = tmp_path / "suite.html"
    path.write_text(report.report_html(suite), encoding="utf-8")

    page.set_viewport_size({"width": 390, "height": 844})
    page.context.set_offline(True)
    page.goto(path.as_uri())
    params = page.locator("dl.params").first
    params.wait_for()
    assert "model context window" in params.inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = params.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390
    assert page.errors == []
