"""Summaries read as markdown wherever they are shown (run page, compare page, summary
page, report): formatted, yet a hostile summary stays inert text; JSON twins keep the raw
output."""

from __future__ import annotations

import re
from typing import Any

import pytest
from share_testdata import MASKED_PREFIX, RAW_KEY, make_comparison

from replay_app.compare import report

pytestmark = pytest.mark.django_db

HOSTILE_SUMMARY = (
    "## Goal\n"
    "- **fix** `src/app.py`\n"
    "- keep the tests\n"
    "\n"
    "<script>alert(1)</script>\n"
    '<img src=x onerror="alert(2)">\n'
    "[click](javascript:alert(3))\n"
    f"key {RAW_KEY}\n"
)
FORMATTED = ("<h5>Goal</h5>", "<li><strong>fix</strong> <code>src/app.py</code></li>")


@pytest.fixture
def runs(user: Any, django_capture_on_commit_callbacks: Any) -> list[Any]:
    from replay_app.models import RunSummary

    runs = make_comparison(user, django_capture_on_commit_callbacks)
    # claude_code's first summary is its compaction #1, on the compare page's first rows
    # (qwenpaw's offloads are compactions too: its one summary is many rows down).
    run = next(r for r in runs if r.strategy == "claude_code")
    summary = RunSummary.objects.filter(run=run).order_by("seq").first()
    assert summary is not None, "the claude_code run summarised"
    summary.output = HOSTILE_SUMMARY
    summary.save(update_fields=["output"])
    return [run, *(r for r in runs if r != run)]  # the planted run first


def assert_formatted_and_inert(html: str) -> None:
    for tag in FORMATTED:
        assert tag in html, tag
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html
    assert not re.search(r"<img[^>]*onerror", html, re.I)
    assert "&lt;img src=x onerror=&quot;alert(2)&quot;&gt;" in html
    assert not re.search(r"""href\s*=\s*["']?\s*javascript:""", html, re.I)
    assert RAW_KEY not in html and MASKED_PREFIX in html


def test_summary_page_renders_the_output_as_safe_markdown(
    client: Any, user: Any, runs: list[Any]
) -> None:
    client.force_login(user)
    seq = runs[0].summaries.order_by("seq").values_list("seq", flat=True)[0]
    html = client.get(f"/runs/{runs[0].pk}/summaries/{seq}/").content.decode()
    output = html.split('class="summary-text summary-output summary-md"', 1)[1]
    assert_formatted_and_inert(output.split("</section>", 1)[0])
    twin = client.get(f"/runs/{runs[0].pk}/summaries/{seq}/?format=json").json()
    assert twin["output"] == HOSTILE_SUMMARY  # the twin stays raw text


def test_run_page_full_output_renders_as_safe_markdown(
    client: Any, user: Any, runs: list[Any]
) -> None:
    client.force_login(user)
    seq = runs[0].summaries.order_by("seq").values_list("seq", flat=True)[0]
    page = client.get(f"/runs/{runs[0].pk}/").content.decode()
    assert "<h5>Goal</h5>" in page and "<script>alert(1)" not in page
    full = client.get(f"/runs/{runs[0].pk}/?summary={seq}", HTTP_HX_REQUEST="true")
    assert_formatted_and_inert(full.content.decode())


def test_compare_page_cells_render_as_safe_markdown(
    client: Any, user: Any, runs: list[Any]
) -> None:
    client.force_login(user)
    ids = ",".join(str(r.pk) for r in runs)
    html = client.get(f"/compare/?runs={ids}").content.decode()
    section = html.split('id="compare-summaries"', 1)[1].split("</section>", 1)[0]
    assert_formatted_and_inert(section)
    twin = client.get(f"/compare/?runs={ids}&format=json").content.decode()
    assert "<h5>Goal</h5>" not in twin and "## Goal" in twin


def test_report_summaries_render_as_safe_markdown(runs: list[Any]) -> None:
    text = report.report_html(runs)
    section = text.split("<h2>Summaries side by side</h2>", 1)[1].split("</section>", 1)[0]
    assert_formatted_and_inert(section)
