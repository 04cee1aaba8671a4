"""Run page paging: events (kind filter), summaries (output previews, full output on demand),
findings grouped by kind, the JSON twin's documented event pages, the live fragment's ids."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pytest
from inspect_helpers import make_run

from replay_app.models import Run, RunEvent, RunFinding, RunStatus, RunSummary, change_to_dict
from replay_app.runs import textstore
from replay_app.runs.consumers import render_run
from replay_app.runs.pages import runpage

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def run(user: Any, transcript: Any) -> Run:
    run = make_run(user, transcript, "qwenpaw")
    assert run.events_count > runpage.EVENTS_PER_PAGE, "the fixture needs two event pages"
    return run


def event_ids(html: str) -> list[int]:
    return [int(seq) for seq in re.findall(r'<tr id="event-(\d+)">', html)]


# --- events ------------------------------------------------------------------------------


def test_run_page_events_first_page_and_links_without_js(auth_client: Any, run: Run) -> None:
    html = auth_client.get(f"/runs/{run.pk}/").content.decode()
    seqs = list(run.events.order_by("seq").values_list("seq", flat=True))
    assert event_ids(html) == seqs[: runpage.EVENTS_PER_PAGE]
    assert 'href="?page=2#run-events"' in html and 'hx-get="?page=2"' in html
    second = auth_client.get(f"/runs/{run.pk}/?page=2").content.decode()
    assert event_ids(second) == seqs[runpage.EVENTS_PER_PAGE : 2 * runpage.EVENTS_PER_PAGE]
    assert 'href="?page=1#run-events"' in second


@pytest.mark.parametrize("page", ["0", "abc", "999"], ids=["zero", "junk", "past-the-end"])
def test_run_page_events_page_param_is_clamped(auth_client: Any, run: Run, page: str) -> None:
    response = auth_client.get(f"/runs/{run.pk}/?page={page}")
    assert response.status_code == 200
    assert event_ids(response.content.decode())


def test_run_page_events_kind_filter(auth_client: Any, run: Run) -> None:
    last = run.events.order_by("seq").last()
    assert last is not None
    RunEvent.objects.bulk_create(  # a second kind
        RunEvent(run=run, seq=last.seq + k, step=last.step, kind="note") for k in (1, 2, 3)
    )
    kinds = dict(runpage.events_page(run, page=1).kinds)
    assert kinds["note"] == 3 and len(kinds) == 2
    kind = "note"
    response = auth_client.get(f"/runs/{run.pk}/?kind={kind}", HTTP_HX_TARGET="run-events", **HX)
    html = response.content.decode()
    expected = list(run.events.filter(kind=kind).order_by("seq").values_list("seq", flat=True))
    assert event_ids(html) == expected[: runpage.EVENTS_PER_PAGE]
    assert "<h1>" not in html and f'data-kind="{kind}"' in html
    assert 'aria-current="true" data-kind="note"' in html  # the filter shows its choice
    empty = auth_client.get(f"/runs/{run.pk}/?kind=no_such_kind").content.decode()
    assert event_ids(empty) == [] and "No events of kind no_such_kind" in empty


@pytest.mark.parametrize("status", [RunStatus.DONE, RunStatus.RUNNING], ids=["fate-log", "live"])
def test_events_page_fate_counts_match_the_stored_changes(run: Run, status: str) -> None:
    Run.objects.filter(pk=run.pk).update(status=status)
    run.refresh_from_db()
    expected = {e.seq: e.fate_counts for e in RunEvent.objects.filter(run=run)}
    got: dict[int, dict[str, int]] = {}
    page = 1
    while True:
        events = runpage.events_page(run, page=page)
        got.update({row.seq: row.fate_counts for row in events.rows})
        if not events.page.has_next():
            break
        page += 1
    assert got == expected and any(got.values())


def test_run_json_events_pages_follow_next_to_every_event(auth_client: Any, run: Run) -> None:
    url: str | None = f"/runs/{run.pk}/?format=json"
    seen: list[int] = []
    changes: dict[int, Any] = {}
    while url:
        data = auth_client.get(url).json()
        events = data["events"]
        assert "page" in events["paging"] and "kind" in events["paging"]
        assert events["count"] == run.events_count == events["total"]
        assert events["kind"] is None  # no filter
        seen += [item["seq"] for item in events["items"]]
        changes.update({item["seq"]: item["changes"] for item in events["items"]})
        url = events["next"]
    assert seen == list(run.events.order_by("seq").values_list("seq", flat=True))
    # modified messages as the engine made them (stored by reference: replay_app.runs.textstore)
    assert changes == {
        e.id: [change_to_dict(c) for c in e.changes] for e in textstore.run_events(run)
    }
    assert any("message" in c for items in changes.values() for c in items)
    last = auth_client.get(f"/runs/{run.pk}/?format=json&page=2").json()["events"]
    assert last["previous"] == f"/runs/{run.pk}/?format=json&page=1"


def test_run_json_events_kind_filter_and_counts(auth_client: Any, run: Run) -> None:
    kinds = dict(runpage.events_page(run, page=1).kinds)
    kind = next(iter(kinds))
    events = auth_client.get(f"/runs/{run.pk}/?format=json&kind={kind}").json()["events"]
    assert events["kind"] == kind and events["kinds"] == kinds
    assert events["count"] == kinds[kind] and {i["kind"] for i in events["items"]} == {kind}


# --- summaries ---------------------------------------------------------------------------


def add_summaries(run: Run, count: int, *, chars: int) -> list[RunSummary]:
    RunSummary.objects.filter(run=run).delete()
    return RunSummary.objects.bulk_create(
        RunSummary(
            run=run,
            seq=seq,
            step=seq,
            input=f"input {seq} " * 100,
            output=(f"summary {seq}: " + "x" * chars)[:chars] + f"END{seq}",
            messages=[1, 2, 3],
        )
        for seq in range(count)
    )


def test_run_page_summaries_paged_with_previews(auth_client: Any, run: Run) -> None:
    add_summaries(run, 25, chars=3 * runpage.SUMMARY_PREVIEW_CHARS)
    html = auth_client.get(f"/runs/{run.pk}/").content.decode()
    shown = [int(s) for s in re.findall(r'<details class="summary-item" id="summary-(\d+)"', html)]
    assert shown == list(range(runpage.SUMMARIES_PER_PAGE))
    assert "END0" not in html, "only a preview of each output"
    assert f'hx-get="/runs/{run.pk}/?summary=0"' in html  # the full output on demand
    assert f'href="/runs/{run.pk}/summaries/0/"' in html  # ... and without JS
    assert "Summaries <span" in html and "(25)" in html
    last = auth_client.get(f"/runs/{run.pk}/?spage=3", HTTP_HX_TARGET="run-summaries", **HX)
    fragment = last.content.decode()
    assert fragment.lstrip().startswith('<div id="run-summaries"') and "<h1>" not in fragment
    assert re.findall(r'id="summary-(\d+)"', fragment)[0] == "20"
    assert 'href="?spage=2#run-summaries"' in fragment


def test_run_page_summary_param_opens_the_page_listing_it(auth_client: Any, run: Run) -> None:
    add_summaries(run, 25, chars=100)
    html = auth_client.get(f"/runs/{run.pk}/?summary=13").content.decode()
    assert 'id="summary-13"' in html and 'id="summary-0"' not in html
    assert 'data-page="2"' in html


def test_run_page_summary_full_output_fragment(auth_client: Any, run: Run) -> None:
    (summary,) = add_summaries(run, 1, chars=5000)
    response = auth_client.get(
        f"/runs/{run.pk}/?summary=0", HTTP_HX_TARGET="summary-0-output", **HX
    )
    html = response.content.decode()
    assert html.startswith('<div id="summary-0-output">') and "END0" in html
    missing = auth_client.get(f"/runs/{run.pk}/?summary=7", HTTP_HX_TARGET="summary-7-output", **HX)
    assert missing.status_code == 404


def test_run_page_short_summary_output_is_shown_whole(auth_client: Any, run: Run) -> None:
    add_summaries(run, 1, chars=100)
    html = auth_client.get(f"/runs/{run.pk}/").content.decode()
    assert "END0" in html and "?summary=0" not in html


def test_run_json_lists_every_summary_without_inputs(auth_client: Any, run: Run) -> None:
    add_summaries(run, 25, chars=3000)
    summaries = auth_client.get(f"/runs/{run.pk}/?format=json").json()["summaries"]
    assert [s["seq"] for s in summaries] == list(range(25))
    assert all(s["output"].endswith(f"END{s['seq']}") and "input" not in s for s in summaries)
    assert summaries[3]["input_url"] == f"/runs/{run.pk}/summaries/3/"


# --- findings ----------------------------------------------------------------------------


def add_findings(run: Run, counts: dict[str, int]) -> None:
    RunFinding.objects.filter(run=run).delete()
    RunFinding.objects.bulk_create(
        RunFinding(run=run, step=step, kind=kind, messages=[step, step + 1], detail={"n": step})
        for kind, n in counts.items()
        for step in range(n)
    )


def finding_groups(html: str) -> dict[str, tuple[int, list[int]]]:
    groups = {}
    for kind, count, body in re.findall(
        r'<section class="finding-group" data-kind="([^"]+)" data-count="(\d+)">(.*?)</section>',
        html,
        re.S,
    ):
        steps = [int(s) for s in re.findall(r"#scrubber\">(\d+)</a>", body)]
        groups[kind] = (int(count), steps)
    return groups


def test_run_page_findings_grouped_by_kind_with_first_rows(auth_client: Any, run: Run) -> None:
    add_findings(run, {"tool_pair": 25, "latest_user": 3})
    html = auth_client.get(f"/runs/{run.pk}/").content.decode()
    per = runpage.FINDINGS_PER_PAGE
    assert finding_groups(html) == {
        "tool_pair": (25, list(range(per))),
        "latest_user": (3, [0, 1, 2]),
    }
    assert "(28 in 2 kinds)" in html
    assert 'href="?fkind=tool_pair&amp;fpage=2#run-findings"' in html


def test_run_page_findings_group_paging_fragment(auth_client: Any, run: Run) -> None:
    add_findings(run, {"tool_pair": 25, "latest_user": 3})
    response = auth_client.get(
        f"/runs/{run.pk}/?fkind=tool_pair&fpage=3", HTTP_HX_TARGET="run-findings", **HX
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="run-findings">') and "<h1>" not in html
    per = runpage.FINDINGS_PER_PAGE
    assert finding_groups(html) == {
        "tool_pair": (25, list(range(2 * per, 25))),
        "latest_user": (3, [0, 1, 2]),  # other groups stay on their first page
    }


def test_run_json_lists_every_finding(auth_client: Any, run: Run) -> None:
    add_findings(run, {"tool_pair": 600})
    findings = auth_client.get(f"/runs/{run.pk}/?format=json").json()["findings"]
    assert len(findings) == 600 and findings[-1]["step"] == 599


# --- small helpers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("indexes", "limit", "text"),
    [
        ([], 12, ""),
        ([4], 12, "4"),
        ([0, 1, 2, 5, 7, 8], 12, "0–2, 5, 7–8"),
        ([3, 1, 2, 2], 12, "1–3"),
        ([0, 2, 4, 6], 2, "0, 2, …"),
        (list(range(5000)), 12, "0–4999"),
    ],
    ids=["empty", "one", "runs", "unsorted-dupes", "limit", "long-run"],
)
def test_index_ranges(indexes: list[int], limit: int, text: str) -> None:
    assert runpage.index_ranges(indexes, limit=limit) == text


def test_detail_text_cuts_long_values() -> None:
    text = runpage.detail_text({"a": 1, "b": "x" * 100, "c": [1, 2]}, limit=10)
    assert text == "a=1; b=xxxxxxxxx…; c=[1, 2]"


# --- the live fragment -------------------------------------------------------------------


class _TopLevel(HTMLParser):
    """Top-level elements of a fragment: (tag, id)."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.top: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth == 0:
            self.top.append((tag, dict(attrs).get("id")))
        self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        self.depth -= 1


def test_live_fragment_top_level_elements_all_have_ids(run: Run) -> None:
    from replay_app.runs import progress

    html = render_run(progress.run_state(run), detail=True)
    parser = _TopLevel()
    parser.feed(html)
    # every top-level element is an OOB swap target (htmx's ws extension swaps each one by
    # id); a bare <tbody> would be dropped by the browser's parser, leaving id-less cells
    assert [tag for tag, _ in parser.top] == ["div", "table", "div"]
    assert all(id_ for _, id_ in parser.top), parser.top
    assert f'id="run-{run.pk}-latest"' in html and "<td" in html
