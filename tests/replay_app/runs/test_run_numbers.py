"""Run and group pages on a real Claude Code session (no system prompt, no tools in the
log): one number format, zones that say why a part is empty, summaries carrying their
event's before/after, and a run that never compacts saying why."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.template import Context, Template
from replay_testdata import import_transcript

from ctxlab.web import display
from replay_app.display.quiet import quiet_reason
from replay_app.models import RunGroup
from replay_app.runs import executor, services
from replay_app.steps import zone_bar

pytestmark = pytest.mark.django_db

SESSION = (
    Path(__file__).resolve().parents[2]
    / "data"
    / "corpus"
    / "claude-code"
    / "agentcmd-full-session-four.jsonl"
)


@pytest.fixture
def group(user: Any, fresh_memo: None) -> RunGroup:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    group = services.group_create(
        enqueue=False,
        owner=user,
        transcript=transcript,
        specs=[
            # compacts twice: Claude Code's threshold is 60,000 - 20,000 - 13,000
            services.RunSpec(strategy="claude_code", params={"context_window": 60_000}),
            # never compacts: at the default 200K window the trigger is 167,000
            services.RunSpec(strategy="claude_code"),
        ],
    )
    for run in group.runs.all():
        executor.run_execute(run=run)
    return group


def _runs(group: RunGroup) -> tuple[Any, Any]:
    cc, qp = group.runs.order_by("pk")
    assert cc.status == qp.status == "done", (cc.error, qp.error)
    return cc, qp


def test_small_and_rounding_floats_never_show_an_exponent() -> None:
    """Costs such as $0.000076 were shown as ``7.6e-05``, and 999.7 as ``1e+03``."""
    values = (7.6e-05, -7.7e-05, 0.0122, 999.7, 999.4, 0.99951, 123.456, 1e-12, 0.1 + 0.2)
    assert [display.number(v) for v in values] == [
        "0.000076", "-0.000077", "0.0122", "1,000", "999", "1", "123", "0", "0.3",
    ]  # fmt: skip


def test_money_puts_the_sign_before_the_dollar() -> None:
    """The ledger showed a compaction that saved money as ``$-0.0003``."""
    assert [display.usd(v) for v in (-0.00030001, 0.0174, 0, None)] == [
        "-$0.0003", "$0.0174", "$0.0000", "—",
    ]  # fmt: skip
    assert display.usd(-0.000001) == "$0.0000"  # rounds to zero: no lone minus sign
    html = Template("{{ v|usd:5 }}").render(Context({"v": -0.0003}))
    assert html == "-$0.00030"


def test_number_and_time_formats_are_one_helper() -> None:
    assert [display.number(v) for v in (1234567, 0, None, 0.5, 12345.6, True, "98765")] == [
        "1,234,567",
        "0",
        "—",
        "0.5",
        "12,346",
        "yes",
        "98,765",
    ]
    moment = datetime(2026, 11, 25, 16, 8, 26, tzinfo=UTC)
    html = Template("{{ t|when }} {{ n|num }}").render(Context({"t": moment, "n": 13907}))
    assert html == (
        '<time datetime="2026-11-25T16:08:26+00:00" title="2026-11-25 16:08 UTC">'
        "2026-11-25 16:08 UTC</time> 13,907"
    )


def test_run_page_zone_bar_and_summaries_agree_with_events(
    auth_client: Any, group: RunGroup
) -> None:
    cc, _ = _runs(group)
    first = cc.events.filter(kind="compact").order_by("seq").first()
    page = auth_client.get(f"/runs/{cc.pk}/?step={first.step}").content.decode()
    # zones: the overhead is its own zone, the empty parts say why, never "0"
    legend = re.search(r'<ul class="zone-legend">(.*?)</ul>', page, re.S).group(1)
    assert 'data-zone="unseen"' in legend and "Strategy overhead <strong" in legend
    for key in ("system", "tools"):
        item = re.search(rf'data-zone="{key}"[^>]*>(.*?)</li>', legend, re.S).group(1)
        assert "not in transcript" in item and "<strong" not in item
    # events table and summaries list: the same figures, thousands separators
    figures = f"{first.tokens_before:,} → {first.tokens_after:,}"
    assert first.tokens_before >= 1000 and page.count(figures) >= 2
    assert "summariser read" in page
    data = auth_client.get(f"/runs/{cc.pk}/?format=json").json()
    event = data["summaries"][0]["event"]
    assert (event["tokens_before"], event["tokens_after"]) == (
        first.tokens_before,
        first.tokens_after,
    )


def test_zone_segments_name_what_the_transcript_lacks() -> None:
    zones = {"system": 0, "tools": 0, "unseen": 500, "compactable": 100, "window": 1000}
    absent = zone_bar.zone_segments(zones, zone_bar.TranscriptParts(system=False, tools=False))
    notes = {s.key: s.note for s in absent}
    assert notes["system"] == notes["tools"] == "not in transcript"
    assert notes["unseen"] == "" and [s.tokens for s in absent if s.key == "unseen"] == [500]
    present = zone_bar.zone_segments(zones, zone_bar.TranscriptParts(system=True, tools=False))
    assert {s.key: s.note for s in present}["system"] == "not counted by this strategy"
    none = zone_bar.zone_segments({**zones, "unseen": 0}, None)
    assert "unseen" not in {s.key for s in none}


def test_a_run_that_never_compacts_says_why(auth_client: Any, group: RunGroup) -> None:
    cc, qp = _runs(group)
    assert quiet_reason(cc.metrics) == ""
    reason = quiet_reason(qp.metrics, qp.strategy)
    peak, threshold = qp.metrics["peak_strategy"], qp.metrics["threshold"]
    assert peak < threshold
    assert f"peaked at {peak:,}" in reason and f"trigger {threshold:,}" in reason
    page = auth_client.get(f"/runs/{qp.pk}/").content.decode()
    assert 'id="quiet-reason"' in page and f"peaked at {peak:,}" in page
    assert 'id="quiet-reason"' not in auth_client.get(f"/runs/{cc.pk}/").content.decode()
    table = auth_client.get(f"/runs/groups/{group.pk}/").content.decode()
    row = re.search(r'<tr data-metric="quiet">(.*?)</tr>', table, re.S).group(1)
    cells = re.findall(r'<td class="small quiet-cell">(.*?)</td>', row, re.S)
    assert len(cells) == 2 and "—" in cells and any(f"peaked at {peak:,}" in c for c in cells)


def test_quiet_reason_without_a_threshold_and_when_reached() -> None:
    base = {"steps": 10, "compaction_count": 0, "peak_strategy": 5000}
    assert "no token threshold" in quiet_reason({**base, "threshold": None})
    assert "reached 5,000" in quiet_reason({**base, "threshold": 4000})
    assert quiet_reason({**base, "compaction_count": 1, "threshold": 4000}) == ""
