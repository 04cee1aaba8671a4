"""The compare-probes page's shared question set in a real browser: one row per run with
answered / asked, a question row opens to its expected answer and what each run held, the
per-run probes still below; no console error, no serious WCAG violation, no sideways
scroll on a phone."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge_app"))  # shared test data
from judge_testdata import COWAGENT, QWENPAW, finished_run, import_session  # noqa: E402
from test_share_a11y import _axe  # noqa: E402  (the vendored axe-core, serious/critical)

pytestmark = pytest.mark.django_db(transaction=True)


def test_shared_questions_render_and_open(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    from django.contrib.auth import get_user_model

    login()
    user = get_user_model().objects.get(username="alice")
    transcript = import_session(user)
    runs = [
        finished_run(user, transcript, "qwenpaw", QWENPAW),
        finished_run(user, transcript, "cowagent", COWAGENT),
        finished_run(user, transcript, "qwenpaw", {"max_input_length": 1_000_000}),  # keeps all
    ]
    ids = ",".join(str(r.pk) for r in runs)
    page.goto(f"{live_server.url}/compare/probes/?runs={ids}")
    section = page.locator("#probe-shared")
    section.wait_for()
    questions = int(section.locator("[data-testid=shared-questions]").inner_text())
    assert questions > 0
    answered = section.locator("[data-testid=shared-answered]").all_inner_texts()
    assert len(answered) == 3
    assert all(text.endswith(f"/ {questions}") for text in answered)  # same questions for all
    assert answered[2] == f"{questions} / {questions}"  # the run that kept everything
    assert section.locator("[data-testid=shared-score]").nth(2).inner_text() == "1.00"
    rows = section.locator("[data-testid=shared-questions-table] tbody tr")
    assert rows.count() == questions
    first = rows.first
    assert first.locator("td[data-run]").count() == 3
    details = first.locator("details")
    assert not details.locator("ul.probe-answers").is_visible()
    details.locator("summary").click()
    assert details.locator("ul.probe-answers").is_visible()
    assert "Raised by" in details.inner_text()
    assert page.locator("#probe-compare tbody tr").count() == 3  # each run's own probes
    assert _axe(page) == []
    screenshot("shared-probes")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.errors == []  # type: ignore[attr-defined]
