"""Compare at one budget in a real browser, on a real Claude Code session from the corpus:
the run form's one window field for seven strategies, the group's Compare link (7 runs:
the picker with 6 ticked), the compare page at 1440 px, a click on a curve point opens the
step view, the arrow key steps on, two runs' fates differ for one message, and the
summaries table holds two summaries of the same ordinal in one row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = (
    Path(__file__).resolve().parents[1]
    / "data/corpus/claude-code/sniffly-d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"
)
EXTRA = ("codex", "claude_code")  # ticked besides the five seed presets: seven strategies


def _import(username: str) -> Any:
    from django.contrib.auth import get_user_model

    from sessions_app import services

    user = get_user_model().objects.get(username=username)
    outcome = services.upload_import(owner=user, name=SESSION.name, data=SESSION.read_bytes())
    assert outcome.error is None and outcome.upload is not None
    return outcome.upload.transcripts.order_by("position").first()


def test_compare_at_one_budget_step_view_and_summaries(
    page: Any, asgi_worker_server: Any, login: Any, screenshot: Any
) -> None:
    from ctxlab.engine import budget

    base = asgi_worker_server.url
    page.set_viewport_size({"width": 1440, "height": 900})
    login(base_url=base)
    transcript = _import("alice")
    window = budget.peak_reference_tokens(transcript.to_conversation()) // 2 // 1000 * 1000

    page.goto(f"{base}/runs/new/?transcript={transcript.pk}")
    hint = page.locator("#window-hint")
    assert "largest request is" in hint.inner_text() and "25/50/75 %" in hint.inner_text()
    assert page.locator("#id_transcript").is_checked()
    page.fill("#id_window", str(window))
    for name in EXTRA:
        page.check(f"input[name=presets][value={name}]")
    assert page.locator("input[name=presets]:checked").count() == 7
    screenshot("run-form")
    page.click("#start-runs")
    page.wait_for_url("**/runs/groups/*/")
    page.wait_for_selector("#group-compare-link")

    page.click("#group-compare-link")  # 7 runs: the picker, the first 6 ticked
    ticked = page.locator("input[name=runs]:checked")
    assert ticked.count() == 6
    ticked.first.locator("xpath=ancestor::form").locator("button[type=submit]").click()
    page.wait_for_selector("#compare-metrics")
    assert page.locator(".compare-runs .compare-run").count() == 6
    page.wait_for_selector("#compare-plot .main-svg")
    page.wait_for_function("document.querySelector('#compare-plot').dataset.stepLinks === 'true'")
    # One legend entry per run (curve, own estimate and events toggle together).
    assert page.locator("#compare-plot .legend .traces").count() == 6

    # Two summaries of the same compaction ordinal in one row.
    first_row = page.locator(".ordinal-table tbody tr").first
    assert first_row.locator(".summary-md").count() >= 2
    # Two ticked summaries of that row, word by word (htmx swaps the diff in).
    picks = first_row.locator("input.diff-pick")
    picks.nth(0).check()
    picks.nth(1).check()
    page.click("#diff-chosen")
    page.wait_for_selector("#summary-diff .word-diff")
    assert page.locator("#summary-diff .word-diff ins, #summary-diff .word-diff del").count() > 0
    screenshot("compare")
    for section in ("compare-curves", "compare-summaries", "compare-matrix"):
        page.locator(f"#{section}").screenshot(
            path=str(screenshot("compare").parent / f"budget-{section}.png")
        )

    # A click on an event marker of the curves opens the step view at that step.
    point = page.locator("#compare-plot .scatterlayer .point").first
    page.locator("#compare-curves").scroll_into_view_if_needed()
    box = point.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_url("**/compare/?runs=*&step=*")
    step = int(page.url.rsplit("step=", 1)[1].split("&")[0])
    assert page.locator("#step-title").inner_text().startswith(f"Step {step}")
    assert page.locator("#step-zones .zone-bar").count() == 6

    page.keyboard.press("ArrowRight")  # the next step
    page.wait_for_url(f"**&step={step + 1}")
    assert page.locator("#step-title").inner_text().startswith(f"Step {step + 1}")

    # Somewhere the runs disagree about a message: only the differences, two fates in a row.
    page.click("#toggle-differences")
    page.wait_for_url("**only=diff*")
    row = page.locator(".step-table tbody tr.differs").first
    fates = row.locator("td").evaluate_all("cells => cells.map(c => c.dataset.fate)")
    assert len({f for f in fates if f}) >= 2, fates
    assert row.locator(".reason").first.inner_text().strip()
    screenshot("step-view")
    page.locator("#step-messages").screenshot(
        path=str(screenshot("step-view").parent / "budget-step-messages.png")
    )
    assert not page.errors, page.errors


def test_transcript_search_and_window_suggestions(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))
    from django.contrib.auth import get_user_model
    from replay_testdata import agent_chat, import_transcript

    login()
    real = _import("alice")
    user = get_user_model().objects.get(username="alice")
    import_transcript(user, agent_chat(turns=4, size=200), name="other-chat.json")
    page.goto(f"{live_server.url}/runs/new/")
    assert page.locator("#window-hint").count() == 0  # nothing chosen yet
    page.fill("#id_transcript_q", "sniffly")
    page.wait_for_function(
        "() => document.querySelectorAll('#transcript-options input[type=radio]').length === 1"
    )
    page.check(f"#transcript-options input[value='{real.pk}']")
    page.wait_for_selector("#window-hint")
    # Suggested from what the agent sent (the provider's reported usage), not the messages.
    assert "largest request is 105,951 tokens" in page.locator("#window-hint").inner_text()
    options = page.locator("#window-suggestions option").evaluate_all(
        "opts => opts.map(o => Number(o.value))"
    )
    assert len(options) == 3 and options == sorted(options)
    screenshot("picker")
    assert not page.errors, page.errors
