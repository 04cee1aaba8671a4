"""The comparison report: one HTML file, nothing fetched from anywhere, secrets masked,
every section present; written by ``manage.py report`` and served by the compare page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from share_testdata import MASKED_PREFIX, RAW_KEY, make_comparison

from replay_app.compare import report

pytestmark = pytest.mark.django_db

# Any attribute or CSS url() that would make the browser fetch something.
FETCHING = re.compile(
    r"""(?:\b(?:src|href|action|srcset|poster|data)\s*=\s*["']?\s*(?:https?:)?//)|url\(\s*["']?\s*(?:https?:)?//""",
    re.I,
)


@pytest.fixture
def runs(user: Any, django_capture_on_commit_callbacks: Any) -> list[Any]:
    return make_comparison(user, django_capture_on_commit_callbacks)


def test_report_command_writes_one_self_contained_file(
    user: Any, runs: list[Any], tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    call_command(
        "report", runs=",".join(str(r.pk) for r in runs), user=user.username, output=str(out)
    )
    text = out.read_text(encoding="utf-8")
    # The markup (outside the inlined scripts: plotly.js holds map-attribution strings that
    # this chart never shows) points nowhere; the browser test checks no request is made.
    markup = re.sub(r"(<script[^>]*>).*?</script>", r"\1</script>", text, flags=re.S)
    assert FETCHING.search(markup) is None, FETCHING.search(markup)
    assert "<link" not in markup and "@import" not in markup
    assert RAW_KEY not in text and RAW_KEY[:30] not in text
    assert MASKED_PREFIX in text  # the request is in the summaries / lost facts, masked
    assert "Plotly" in text and len(text) > 3_000_000  # plotly.js inlined
    assert '<script type="application/json" id="report-curves-figure">' in text
    assert text.count("<script") == 3  # data block, plotly.js, the draw script: nothing else
    for section in (
        "Metrics",
        "Summaries side by side",
        "What was lost",
        "Context over the replay",
    ):
        assert f"<h2>{section}</h2>" in text
    for run in runs:
        assert f"#{run.pk} {run.label}" in text
    # Every compaction each run made has its row; the summaries are rendered markdown.
    rows = re.findall(r'<th scope="row" class="num">(\d+)</th>', text)
    assert rows == [str(i) for i in range(1, len(rows) + 1)] and len(rows) >= 1
    # The report's own draw script also offers SVG beside plotly's PNG button.
    assert 'format: "svg"' in text and '"toImageButtonOptions"' in text


def test_report_command_refuses_bad_and_foreign_runs(
    user: Any, other_user: Any, runs: list[Any], tmp_path: Path
) -> None:
    ids = ",".join(str(r.pk) for r in runs)
    with pytest.raises(CommandError, match="no such run"):
        call_command("report", runs=ids, user=other_user.username, output=str(tmp_path / "x.html"))
    with pytest.raises(CommandError, match="compare 2 to 6 runs"):
        call_command(
            "report", runs=str(runs[0].pk), user=user.username, output=str(tmp_path / "x.html")
        )
    assert not (tmp_path / "x.html").exists()


def test_a_secret_that_reached_a_summary_is_masked_again(runs: list[Any]) -> None:
    from replay_app.models import RunSummary

    summary = RunSummary.objects.filter(run=runs[0]).first()
    assert summary is not None, "the qwenpaw run summarised"
    summary.output = f"Goal: use {RAW_KEY} to call the API"  # as a careless summariser might
    summary.save(update_fields=["output"])
    text = report.report_html(runs)
    assert RAW_KEY not in text and "Goal: use sk-ant…[masked" in text


def test_compare_page_offers_the_report_and_serves_it_as_a_download(
    user: Any, other_user: Any, runs: list[Any], client: Any
) -> None:
    ids = ",".join(str(r.pk) for r in runs)
    client.force_login(user)
    page = client.get(f"/compare/?runs={ids}").content.decode()
    assert f'href="?runs={ids}&amp;format=report" download>Download report</a>' in page
    response = client.get(f"/compare/?runs={ids}&format=report")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    assert (
        response["Content-Disposition"] == f'attachment; filename="{report.report_filename(runs)}"'
    )
    body = response.content.decode()
    assert "<h2>What was lost</h2>" in body and RAW_KEY not in body and MASKED_PREFIX in body
    client.force_login(other_user)
    assert client.get(f"/compare/?runs={ids}&format=report").status_code == 404


def test_run_page_shows_summaries_as_safe_markdown(user: Any, runs: list[Any], client: Any) -> None:
    from replay_app.models import RunSummary

    summary = RunSummary.objects.filter(run=runs[0]).order_by("seq").first()
    assert summary is not None
    summary.output = "## Goal\n- **fix** `src/app.py`\n<script>alert(1)</script>"
    summary.save(update_fields=["output"])
    client.force_login(user)
    page = client.get(f"/runs/{runs[0].pk}/").content.decode()
    assert (
        "<h5>Goal</h5>" in page and "<li><strong>fix</strong> <code>src/app.py</code></li>" in page
    )
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    full = client.get(f"/runs/{runs[0].pk}/?summary={summary.seq}", HTTP_HX_REQUEST="true")
    assert "<strong>fix</strong>" in full.content.decode()
