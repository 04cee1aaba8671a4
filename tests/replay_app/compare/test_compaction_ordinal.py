"""One ordinal per compaction (issue 31 item 9): "compaction K" is the run's K-th event in
the compaction category (``catalogue.compaction_ordinals``), and the run page's events and
summaries, the summary page, the chart markers, the compare page's rows, the step view's
``&compaction=K`` and their JSON twins all name the same K. Skips get none.

CowAgent on the agent chat first shortens texts (a compaction that writes no summary), then
drops with a summary: that summary is compaction #2 (the compare rows counted it #1, by
summaries). PicoClaw first skips (``compact_skipped``), then summarises: its first summary
call is summary #2 but compaction #1."""

from __future__ import annotations

from typing import Any

import pytest
from inspect_helpers import make_run

from ctxlab.engine.core import catalogue
from replay_app.models import Run

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]


def test_the_engine_numbers_compaction_events_only() -> None:
    events = [(0, "compact_skipped"), (1, "offload"), (2, "restore"), (3, "summarise")]
    assert catalogue.compaction_ordinals(events) == {1: 1, 3: 2}
    assert "compact_skipped" in catalogue.COMPACTION_ORDINAL


def _events(client: Any, run: Run) -> list[dict[str, Any]]:
    data = client.get(f"/runs/{run.pk}/", {"format": "json"}).json()
    assert data["events"]["pages"] == 1
    return list(data["events"]["items"])


def test_one_ordinal_on_every_page(client: Any, user: Any, transcript: Any) -> None:
    cow = make_run(user, transcript, "cowagent")
    pico = make_run(user, transcript, "picoclaw")
    client.force_login(user)

    # the run page's events (JSON twin): K for compactions, None for the skip
    cow_events, pico_events = _events(client, cow), _events(client, pico)
    assert [(e["kind"], e["compaction"]) for e in cow_events] == [
        ("compress_text_only", 1),
        ("drop", 2),
    ]
    assert pico_events[0]["kind"] == "compact_skipped" and pico_events[0]["compaction"] is None
    pico_ks = [e["compaction"] for e in pico_events[1:]]
    assert pico_ks == list(range(1, len(pico_ks) + 1))
    for run, events in ((cow, cow_events), (pico, pico_events)):
        run.refresh_from_db()
        assert max(e["compaction"] or 0 for e in events) == run.metrics["compaction_count"]
    by_seq = {e["seq"]: e for e in pico_events}
    step_of = {(run.pk, e["compaction"]): e["step"] for run, events in
               ((cow, cow_events), (pico, pico_events)) for e in events}  # fmt: skip

    # the run page's summaries and the summary page name the K of their event
    cow_summaries = client.get(f"/runs/{cow.pk}/", {"format": "json"}).json()["summaries"]
    assert [s["compaction"] for s in cow_summaries] == [2]
    pico_summaries = client.get(f"/runs/{pico.pk}/", {"format": "json"}).json()["summaries"]
    first = next(s for s in pico_summaries if s["event"] is not None)
    assert first["compaction"] == 1 and first["seq"] != 1  # summary #N is not compaction #N
    assert first["compaction"] == by_seq[first["event"]["seq"]]["compaction"]
    page = client.get(f"/runs/{pico.pk}/summaries/{first['seq']}/", {"format": "json"}).json()
    assert page["compaction"] == 1
    html = client.get(f"/runs/{pico.pk}/summaries/{first['seq']}/").content.decode()
    assert f"Compaction #1</span> · summary #{first['seq']}" in html

    # the run page's HTML: the events table's compaction column, the summaries' heading
    html = client.get(f"/runs/{cow.pk}/").content.decode()
    row = html.split('id="event-1"', 1)[1].split("</tr>", 1)[0]
    assert '<td class="num compaction-ordinal">#2</td>' in row
    assert '<span class="compaction-ordinal">Compaction #2</span> · summary #0' in html

    # the compare page: row K is compaction K of each run, the step view goes to its step
    ids = f"{cow.pk},{pico.pk}"
    data = client.get("/compare/", {"runs": ids, "format": "json"}).json()
    rows = data["summaries_by_compaction"]["rows"]
    assert len(rows) == max(len(pico_ks), 2)
    for row in rows:
        for run, cell in zip((cow, pico), row["cells"], strict=True):
            if cell is not None:
                assert cell["ordinal"] == row["ordinal"]
                assert cell["step"] == step_of[(run.pk, row["ordinal"])]
    assert rows[1]["cells"][0]["summary"]["seq"] == 0  # CowAgent's summary, in row #2
    assert rows[0]["cells"][0].get("summary") is None  # its first compaction wrote none
    at = client.get("/compare/", {"runs": ids, "compaction": 2, "format": "json"}).json()
    assert [r["step"] for r in at["runs"]] == [step_of[(cow.pk, 2)], step_of[(pico.pk, 2)]]
    assert [r["compaction"]["ordinal"] for r in at["runs"]] == [2, 2]


def test_chart_markers_name_the_compaction(client: Any, user: Any, transcript: Any) -> None:
    from replay_app.steps import run_curve

    pico = make_run(user, transcript, "picoclaw")
    markers = run_curve.curve(pico).events
    assert markers[0].kind == "compact_skipped" and markers[0].compaction is None
    assert markers[0].label == "Compaction skipped" or "compaction #" not in markers[0].label
    assert markers[1].compaction == 1 and markers[1].label.endswith("compaction #1")


def test_lost_chart_and_report_name_the_compaction(client: Any, user: Any, transcript: Any) -> None:
    cow = make_run(user, transcript, "cowagent")
    pico = make_run(user, transcript, "picoclaw")
    client.force_login(user)
    # "What was lost" (run page JSON): each compaction with its K
    for run in (cow, pico):
        lost = client.get(f"/runs/{run.pk}/lost/", {"format": "json"}).json()
        events = {e["seq"]: e for e in _events(client, run)}
        assert lost["events"]
        for entry in lost["events"]:
            assert entry["compaction"] == events[entry["event"]]["compaction"] is not None
    # the compare chart's markers and the downloaded report say "compaction #K"
    ids = f"{cow.pk},{pico.pk}"
    html = client.get("/compare/", {"runs": ids}).content.decode()
    assert " · compaction #2" in html.replace("\\u00b7", "·")
    report = client.get("/compare/", {"runs": ids, "format": "report"}).content.decode()
    lost_cow = client.get(f"/runs/{cow.pk}/lost/", {"format": "json"}).json()["events"]
    shown = [e for e in lost_cow if e["lost_count"]]
    if shown:
        assert f"Compaction #{shown[0]['compaction']}</span> · event #{shown[0]['event']}" in report
