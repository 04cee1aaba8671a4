"""Issue 31, item 15, in a real browser: the compare page's fate matrix is one tab stop
whose cells the arrow keys move through (each labelled), and Enter on a cell (or a click)
opens the step view scrolled to that cell's message, its row highlighted; two ticked
summaries diff from a button that stays in view, section by section."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared test data
from replay_testdata import agent_chat, import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)


def _runs(username: str, strategies: tuple[str, ...] = ("cowagent", "qwenpaw")) -> list[Any]:
    from django.contrib.auth import get_user_model

    from replay_app.runs import executor, services

    user = get_user_model().objects.get(username=username)
    transcript = import_transcript(user, agent_chat(turns=60, size=6000, seed=3))
    runs = []
    for strategy in strategies:
        run = services.run_create(
            owner=user, transcript=transcript, spec=services.RunSpec(strategy=strategy),
            enqueue=False,
        )  # fmt: skip
        runs.append(executor.run_execute(run=run))
        assert runs[-1].status == "done", runs[-1].error
    return runs


def _active(page: Any) -> dict[str, Any]:
    return dict(
        page.evaluate(
            """() => { const a = document.activeElement;
            return {cell: a.classList.contains('fate-cell'), message: a.dataset.message || '',
                    run: a.closest('tr') ? a.closest('tr').dataset.run || '' : '',
                    label: a.getAttribute('aria-label') || ''}; }"""
        )
    )


def _in_view(page: Any, selector: str) -> bool:
    return bool(
        page.evaluate(
            """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
            return r.top >= 0 && r.bottom <= window.innerHeight; }""",
            selector,
        )
    )


def test_matrix_keyboard_and_landing_on_the_message(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    login()
    runs = _runs("alice")
    ids = ",".join(str(r.pk) for r in runs)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/compare/?runs={ids}")
    page.wait_for_selector(".fate-matrix .fate-cell")
    cells = page.locator(".fate-matrix .fate-cell").count()
    assert cells > 40
    # one tab stop for the whole matrix, not one per cell
    stops = page.evaluate(
        'document.querySelectorAll(\'.fate-matrix a:not([tabindex="-1"]), '
        '.fate-matrix [tabindex="0"]\').length'
    )
    assert stops == 1
    page.locator('.fate-matrix .fate-cell[tabindex="0"]').focus()
    start = _active(page)
    assert start["cell"] and start["run"] == str(runs[0].pk) and start["message"] == "0"
    assert start["label"].startswith(f"run {runs[0].pk}")
    for _ in range(30):
        page.keyboard.press("ArrowRight")
    moved = _active(page)
    assert moved["cell"] and moved["run"] == str(runs[0].pk) and int(moved["message"]) > 0
    page.keyboard.press("ArrowDown")  # the same column in the next run's row
    below = _active(page)
    assert below["run"] == str(runs[1].pk) and below["message"] == moved["message"]
    assert page.url.endswith(f"/compare/?runs={ids}")  # the step keys did not navigate
    page.keyboard.press("Tab")  # out of the matrix in one press
    assert not _active(page)["cell"]
    page.keyboard.press("Shift+Tab")  # back to the cell last moved to
    assert _active(page) == below
    message = below["message"]
    page.keyboard.press("Enter")
    page.wait_for_url(f"**message={message}#message-{message}")
    row = page.locator(f"#message-{message}")
    row.wait_for()
    assert "focus-message" in (row.get_attribute("class") or "")
    assert row.get_attribute("aria-current") == "true"
    assert _in_view(page, f"#message-{message}")
    screenshot("matrix-landing")

    # a mouse click on another cell lands on its own message too
    page.go_back()
    page.wait_for_selector(".fate-matrix .fate-cell")
    cell = page.locator(f'.fate-matrix tr[data-run="{runs[0].pk}"] .fate-cell').nth(45)
    other = cell.get_attribute("data-message")
    cell.click()
    page.wait_for_url(f"**message={other}#message-{other}")
    assert "focus-message" in (page.locator(f"#message-{other}").get_attribute("class") or "")
    assert _in_view(page, f"#message-{other}")
    assert page.errors == []


def test_matrix_detail_message_opens_the_step_view_on_it(
    page: Any, live_server: Any, login: Any
) -> None:
    login()
    runs = _runs("alice")
    ids = ",".join(str(r.pk) for r in runs)
    page.goto(f"{live_server.url}/compare/matrix/?runs={ids}&start=60&end=120")
    page.locator('tr[data-index="95"] a.message-link').click()
    page.wait_for_url("**message=95#message-95")
    assert "focus-message" in (page.locator("#message-95").get_attribute("class") or "")
    assert _in_view(page, "#message-95")


def test_two_ticked_summaries_diff_from_a_button_in_view(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    """The diff button is in a sticky bar: with the first row's two summaries ticked, it
    is on screen without scrolling past the table; the diff has a Goal-beside-Goal table."""
    login()
    runs = _runs("alice", ("copaw", "cowagent"))
    ids = ",".join(str(r.pk) for r in runs)
    page.set_viewport_size({"width": 1280, "height": 700})
    page.goto(f"{live_server.url}/compare/?runs={ids}")
    picks = page.locator(".ordinal-table tbody tr").first.locator("input.diff-pick")
    picks.first.wait_for()
    assert picks.count() == 2
    picks.nth(0).check()
    assert "1 summary ticked" in page.locator("#diff-ticked").inner_text()
    picks.nth(1).check()
    assert "2 summaries ticked" in page.locator("#diff-ticked").inner_text()
    assert page.evaluate(
        "document.querySelector('#compare-summaries table').getBoundingClientRect().bottom"
        " > window.innerHeight"
    ), "the table runs past the screen (the button used to sit under it)"
    assert _in_view(page, "#diff-chosen")
    page.click("#diff-chosen")
    page.wait_for_selector("#summary-diff .section-diff")
    headings = page.locator("#summary-diff .section-diff tbody th").all_inner_texts()
    assert any("Goal" in h for h in headings), headings
    screenshot("summary-diff-sections")
    assert page.errors == []


def test_summary_page_gives_input_and_output_room(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    """The summary page: input and output side by side across a wide screen (not in the
    1,200 px column), each pane about as tall as the screen and scrolling on its own."""
    from replay_app.models import RunSummary

    login()
    run = _runs("alice", ("copaw",))[0]
    summary = RunSummary.objects.filter(run=run).order_by("seq").first()
    assert summary is not None
    page.set_viewport_size({"width": 1800, "height": 1000})
    page.goto(f"{live_server.url}/runs/{run.pk}/summaries/{summary.seq}/")
    boxes = page.evaluate(
        """() => ['.summary-input', '.summary-output'].map((sel) => {
            const el = document.querySelector(sel), r = el.getBoundingClientRect();
            return {w: r.width, h: r.height, max: getComputedStyle(el).maxHeight,
                    scrolls: el.scrollHeight > el.clientHeight,
                    overflow: getComputedStyle(el).overflowY}; })"""
    )
    inp, out = boxes
    assert inp["w"] > 750 and out["w"] > 750, boxes  # was ~560 each in the 1,200 px column
    assert float(inp["max"].removesuffix("px")) > 700, boxes  # about the screen's height
    assert inp["scrolls"] and inp["overflow"] == "auto", boxes  # a long input scrolls in place
    assert page.locator(".summary-input").get_attribute("tabindex") == "0"
    screenshot("summary-page")
