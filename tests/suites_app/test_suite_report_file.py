"""The suite report: one HTML file with the leaderboard, the Pareto and heatmap charts,
every metric as median [quartiles], survival and probe scores, each transcript's runs;
nothing fetched from anywhere, secrets masked, a hostile title inert. Written by
``manage.py report --suite`` and served by the suite results page."""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from suite_report_testdata import GRID, HOSTILE, LINK_TEXT, MASKED_PREFIX, RAW_KEY, make_suite

from ctxlab.web.display import number
from suites_app import report, results

pytestmark = pytest.mark.django_db

# Any attribute or CSS url() that would make the browser fetch something.
FETCHING = re.compile(
    r"""(?:\b(?:src|href|action|srcset|poster|data)\s*=\s*["']?\s*(?:https?:)?//)|url\(\s*["']?\s*(?:https?:)?//""",
    re.I,
)


@pytest.fixture
def suite(user: Any) -> Any:
    return make_suite(user)


def _markup(text: str) -> str:
    """The file without the inlined scripts' bodies (plotly.js holds URLs it never fetches)."""
    return re.sub(r"(<script[^>]*>).*?</script>", r"\1</script>", text, flags=re.S)


def _table(text: str, table_id: str) -> str:
    match = re.search(rf'<table id="{table_id}">(.*?)</table>', text, flags=re.S)
    assert match is not None, f"no table {table_id}"
    return match.group(1)


def test_report_command_writes_one_self_contained_file(
    user: Any, suite: Any, tmp_path: Path
) -> None:
    out = tmp_path / "suite.html"
    call_command("report", suite=str(suite.pk), user=user.username, out=str(out))
    text = out.read_text(encoding="utf-8")
    markup = _markup(text)
    assert FETCHING.search(markup) is None, FETCHING.search(markup)
    assert "<link" not in markup and "@import" not in markup
    # The only http(s) text outside the scripts is the transcript's own link, as plain text.
    shown = [m.group(0) for m in re.finditer(r"https?://[^\s<\"']+", markup)]
    assert shown and all(LINK_TEXT.startswith(u.rstrip("…")) for u in shown), shown
    assert re.search(r"=\s*[\"']?" + re.escape(LINK_TEXT), markup) is None
    assert "Plotly" in text and len(text) > 3_000_000  # plotly.js inlined
    # Two chart data blocks, plotly.js, the draw script: nothing else runs.
    assert re.findall(r"<script[^>]*>", text) == [
        '<script type="application/json" id="suite-pareto-figure">',
        '<script type="application/json" id="suite-heatmap-figure">',
        "<script>",
        "<script>",
    ]
    for section in ("Leaderboard", "Charts", "Survival and probes", "Every metric, per "
                    "configuration", "Configurations", "Per transcript"):  # fmt: skip
        assert f"<h2>{section}</h2>" in text
    page = results.build(suite)
    # Leaderboard: every configuration in rank order, each linking its section in the file.
    ranks = re.findall(r'<tr data-config="(\d+)"', _table(text, "leaderboard"))
    assert ranks == [str(c.index) for c in page.leaderboard] and len(ranks) == 4
    for c in page.configs:
        assert f'id="config-{c.index}"' in text and f'href="#config-{c.index}"' in text
    # The heatmap table: 2 × 2 cells of the default metric's medians.
    heat = _table(text, "heatmap-table")
    assert len(re.findall(r'class="heat-cell"', heat)) == 4
    assert GRID["max_input_length"].split(",") == re.findall(r'<th class="num">(\d+)</th>', heat)
    # Median [p25–p75] of every metric per configuration, as the results object has them.
    aggregates = _table(text, "aggregates")
    assert len(page.columns) >= 10
    for column in page.columns:
        row = re.search(
            rf"<tr><th [^>]*>{re.escape(column.label)}(?: <span[^>]*>[^<]*</span>)?</th>.*?</tr>",
            aggregates,
            flags=re.S,
        )
        assert row is not None, column.key
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0))
        for c, cell in zip(page.configs, cells, strict=True):
            stat = c.stats.get(column.key)
            if stat is None:
                assert cell == "—"
                continue
            quartiles = f"[{number(stat.p25)}–{number(stat.p75)}]"
            assert cell.startswith(f'{number(stat.median)} <span class="muted small quartiles">'
                                   f"{quartiles}</span>"), (column.key, c.label, cell)  # fmt: skip
    # One table per transcript, a row per configuration, each run named.
    sections = re.findall(r'<details class="panel transcript" id="transcript-(\d+)"', text)
    assert sorted(map(int, sections)) == sorted(
        set(suite.items.values_list("transcript_id", flat=True))
    )
    for item in suite.items.all():
        assert f"#{item.run_id} done" in text
    assert 'format: "svg"' in text  # the shell's SVG button beside plotly's PNG


def test_secrets_are_masked_and_a_hostile_title_is_inert(suite: Any) -> None:
    text = report.report_html(suite)
    markup = _markup(text)
    assert RAW_KEY not in text and RAW_KEY[:30] not in text
    assert text.count(MASKED_PREFIX) >= 2  # the suite name and the transcript's title
    assert "<script>alert" not in text and "<img src=x" not in text
    assert "<b>bold</b>" not in markup and "&lt;b&gt;bold&lt;/b&gt;" in markup
    assert "&lt;script&gt;alert(&quot;suite&quot;)&lt;/script&gt;" in markup
    assert HOSTILE not in text


def test_chart_labels_in_the_data_blocks_are_masked(user: Any, suite: Any) -> None:
    # A configuration label carrying a key (a saved configuration's name could): masked in
    # the tables and in the Pareto chart's hover texts.
    suite.configs[0]["label"] = f"mine {RAW_KEY}"
    suite.save(update_fields=["configs"])
    text = report.report_html(suite)
    assert RAW_KEY not in text and RAW_KEY[:30] not in text
    assert "mine sk-ant…[masked" in text


def test_probe_scores_show_where_present(suite: Any) -> None:
    from judge_app import services as judge_services

    item = suite.items.select_related("run").filter(config_index=0).first()
    probe_set = judge_services.probe_set(item.run)
    assert probe_set is not None and (probe_set.offline or {}).get("score") is not None
    quality = _table(report.report_html(suite), "quality")
    rows = {
        m.group(1): m.group(0)
        for m in re.finditer(r"<tr><th [^>]*>([^<]+?) <span.*?</tr>", quality)
    }
    assert "Probe score (offline)" in rows and "Fact survival" in rows
    cells = re.findall(r"<td[^>]*>(.*?)</td>", rows["Probe score (offline)"])
    # every run's probes are generated by the worker when it finishes: each configuration
    # shows the median of its runs' scores, "—" where none gave probes
    for index, cell in enumerate(cells):
        scores = [
            s
            for s in (
                (judge_services.current_set(i.run).offline or {}).get("score")
                for i in suite.items.select_related("run").filter(config_index=index)
            )
            if s is not None
        ]
        assert cell.startswith(number(statistics.median(scores))) if scores else cell == "—"
    assert cells[0] != "—"


def test_report_command_by_name_and_refusals(
    user: Any, other_user: Any, suite: Any, tmp_path: Path
) -> None:
    out = tmp_path / "x.html"
    call_command("report", suite=suite.name, user=user.username, output=str(out))
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    out.unlink()
    with pytest.raises(CommandError, match="no suite"):
        call_command("report", suite=str(suite.pk), user=other_user.username, output=str(out))
    with pytest.raises(CommandError, match="no suite"):
        call_command("report", suite="99999", user=user.username, output=str(out))
    with pytest.raises(CommandError, match="--suite: not allowed with argument --runs"):
        call_command("report", "--runs", "1,2", "--suite", "1", output=str(out))
    assert not out.exists()


def test_results_page_offers_the_report_and_serves_it_as_a_download(
    user: Any, other_user: Any, suite: Any, client: Any
) -> None:
    client.force_login(user)
    page = client.get(f"/suites/{suite.pk}/").content.decode()
    assert 'id="download-report" href="?format=report" download>Download report</a>' in page
    response = client.get(f"/suites/{suite.pk}/?format=report")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    assert response["Content-Disposition"] == (
        f'attachment; filename="{report.report_filename(suite)}"'
    )
    body = response.content.decode()
    assert '<table id="leaderboard">' in body and RAW_KEY not in body
    client.force_login(other_user)
    assert client.get(f"/suites/{suite.pk}/?format=report").status_code == 404


CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "claude-code"


def test_report_of_a_suite_over_real_sessions(user: Any) -> None:
    """Two real Claude Code sessions × two presets: every transcript's table holds each
    run's own numbers and the title the lab shows, masked and escaped."""
    from django.utils.html import escape

    from ctxlab.engine.privacy.secrets import mask
    from replay_app.models import Run
    from sessions_app import services as session_services
    from suites_app import configs, services

    transcripts = []
    for name in (
        "agentcmd-full-session.jsonl",
        "agentcmd-06381696-0074-49f8-863e-6ad4fac507f9.jsonl",
    ):
        data = (CORPUS / name).read_bytes()
        outcome = session_services.upload_import(owner=user, name=name, data=data)
        assert outcome.error is None and outcome.upload is not None, outcome.error
        transcripts.append(outcome.upload.transcripts.order_by("pk").first())
    suite = services.suite_create(
        owner=user, name="corpus", transcripts=transcripts,
        configs=configs.preset_configs(["qwenpaw", "claude_code"], window=40_000), enqueue=False,
    )  # fmt: skip
    services.suite_enqueue(suite)
    text = report.report_html(suite)
    page = results.build(suite)
    assert page.heatmap is None and "<h2>Heatmap" not in text  # no 2-parameter grid
    assert 'id="suite-pareto-figure"' in text
    peak = [c.key for c in page.columns].index("peak_strategy")
    for t in transcripts:
        section = re.search(
            rf'<details class="panel transcript" id="transcript-{t.pk}".*?</details>', text, re.S
        )
        assert section is not None
        shown = re.search(r"<summary>Transcript #\d+: (.*?)</summary>", section.group(0))
        assert shown is not None and shown.group(1).rstrip("…") in escape(mask(t.display_title))
        rows = re.findall(r"<tr><td><a href=\"#config-\d+\">.*?</tr>", section.group(0))
        assert len(rows) == 2
        for item, row in zip(
            suite.items.filter(transcript=t).order_by("config_index"), rows, strict=True
        ):
            run = Run.objects.get(pk=item.run_id)
            assert run.status == "done" and f"#{run.pk} done" in row
            cells = re.findall(r'<td class="num[^"]*">(.*?)</td>', row)
            assert cells[peak].startswith(number(run.metrics["peak_strategy"]))


def test_report_of_a_suite_not_yet_run(user: Any) -> None:
    """Queued runs only: no chart, no metric, still every configuration and transcript."""
    from suite_testdata import import_chat

    from suites_app import configs, services

    transcripts = [import_chat(user, seed=s, turns=3) for s in (1, 2)]
    suite = services.suite_create(
        owner=user, name="later", transcripts=transcripts,
        configs=configs.preset_configs(["qwenpaw", "codex"], window=30_000), enqueue=False,
    )  # fmt: skip
    text = report.report_html(suite)
    assert "<h2>Charts</h2>" not in text and "-figure" not in _markup(text)
    assert re.findall(r"<script[^>]*>", text) == ["<script>", "<script>"]
    assert "0 of 4 runs done" in text
    assert len(re.findall(r'<tr data-config="\d+"', text)) == 2
    # Each transcript's row per configuration, and each configuration's run count.
    assert len(re.findall(r'<td class="mono">[^<]*queued</td>', text)) == 4
    assert text.count("Runs: 2 queued") == 2
