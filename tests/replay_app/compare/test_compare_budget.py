"""The compare page at one budget: summaries aligned by compaction ordinal, the step view
across runs (HTML + JSON twin), the fate matrix at a step, the summary word diff and the
group page's link for more than 6 runs."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from ctxlab.engine.core import catalogue
from replay_app import memo
from replay_app.compare import compare_steps
from replay_app.configs import services as config_services
from replay_app.models import Run, RunEvent, RunStatus, RunSummary
from replay_app.runs import services
from replay_app.steps import fatelog

pytestmark = pytest.mark.django_db

STRATEGIES = ("qwenpaw", "copaw", "claude_code")


@pytest.fixture
def runs(user: Any, transcript: Any, django_capture_on_commit_callbacks: Any) -> list[Run]:
    memo.MEMO.clear()
    with django_capture_on_commit_callbacks(execute=True):
        group = services.group_create(
            owner=user, transcript=transcript,
            specs=[services.RunSpec(strategy=s, window=24_000) for s in STRATEGIES],
        )  # fmt: skip
    done = list(group.runs.order_by("pk"))
    assert {r.status for r in done} == {RunStatus.DONE}, [r.error for r in done]
    return done


def _ids(runs: list[Run]) -> str:
    return ",".join(str(r.pk) for r in runs)


def _kth_compaction_steps(run: Run) -> list[int]:
    """Independently of compare_steps: the step of each of the run's events in the
    catalogue's compaction category, in order (compaction K is the K-th; issue 31)."""
    return [
        step
        for step, kind in RunEvent.objects.filter(run=run)
        .order_by("seq")
        .values_list("step", "kind")
        if catalogue.is_compaction(kind)
    ]


def test_summaries_by_compaction_align_the_kth_compaction_of_each_run(
    auth_client: Client, runs: list[Run]
):
    data = auth_client.get(f"/compare/?runs={_ids(runs)}&format=json").json()
    table = data["summaries_by_compaction"]
    expected = [_kth_compaction_steps(r) for r in runs]
    assert len({len(x) for x in expected}) > 1  # the runs compact a different number of times
    assert table["pages"] == -(-max(len(x) for x in expected) // compare_steps.COMPACTION_ROWS)
    for row in table["rows"]:
        k = row["ordinal"]
        assert len(row["cells"]) == len(runs)
        for run, steps, cell in zip(runs, expected, row["cells"], strict=True):
            if k > len(steps):
                assert cell is None
                continue
            assert cell["run"] == run.pk and cell["step"] == steps[k - 1]
            if cell["summary"]:
                stored = RunSummary.objects.get(run=run, seq=cell["summary"]["seq"])
                assert cell["summary"]["output"] == stored.output
                assert cell["summary"]["input_url"] == f"/runs/{run.pk}/summaries/{stored.seq}/"
    first = table["rows"][0]["cells"]
    with_summary = [c for c in first if c and c["summary"]]
    assert len(with_summary) >= 2  # two summaries of the same ordinal in one row
    assert all(c["trigger"] for c in first if c)


def test_summaries_render_markdown_escaped(auth_client: Client, runs: list[Run]):
    summary = RunSummary.objects.filter(run=runs[0]).order_by("seq").first()
    assert summary is not None
    summary.output = "## Goal\n<script>alert(1)</script> **bold** `x<y`\n- item <b>"
    summary.save()
    memo.MEMO.clear()
    # its row: the compaction K of the event that wrote it (compactions before it may
    # have written none)
    seq = RunEvent.objects.filter(run=runs[0], summary_seq=summary.seq).values_list("seq")[0][0]
    kinds = RunEvent.objects.filter(run=runs[0]).order_by("seq").values_list("seq", "kind")
    k = catalogue.compaction_ordinals(kinds)[seq]
    spage = (k - 1) // compare_steps.COMPACTION_ROWS + 1
    html = auth_client.get(f"/compare/?runs={_ids(runs)}&spage={spage}").content.decode()
    section = html[html.index('id="compare-summaries"') :]
    at = section.find("<script>alert(1)")
    assert at < 0, (
        section[at - 300 : at + 50] and "&lt;script&gt;alert(1)&lt;/script&gt;" in section
    )
    assert "<strong>bold</strong>" in section and "<code>x&lt;y</code>" in section
    assert "<li>item &lt;b&gt;</li>" in section and "<h5>Goal</h5>" in section
    assert 'class="sticky-col"' in section


def _differing_step(runs: list[Run]) -> tuple[int, int]:
    """A step and a message whose fates differ between the first two runs."""
    logs = [fatelog.fate_log(r) for r in runs[:2]]
    for step in range(runs[0].steps_total):
        a, b = (log.fates_at(step) for log in logs)
        for index in sorted(set(a) | set(b)):
            if a.get(index, (None,))[0] != b.get(index, (None,))[0]:
                return step, index
    raise AssertionError("the runs never differ")


def test_step_view_json_aligns_runs_with_fate_event_and_reason(
    auth_client: Client, runs: list[Run]
):
    step, index = _differing_step(runs)
    page = index // compare_steps.STEP_MESSAGES + 1
    data = auth_client.get(
        f"/compare/?runs={_ids(runs)}&step={step}&page={page}&format=json"
    ).json()
    assert data["step"] == step and [r["id"] for r in data["runs"]] == [r.pk for r in runs]
    fates = []
    for run_json in data["runs"]:
        assert set(run_json["zones"]) >= {"window", "threshold", "summary"}
        assert run_json["step"] == step
        row = next(m for m in run_json["messages"] if m["index"] == index)
        fates.append(row["fate"])
        if row["fate"] != "kept":
            assert row["event"] is not None and row["reason"]
            event = RunEvent.objects.get(run_id=run_json["id"], seq=row["event"])
            assert event.step <= step
            assert any(int(c["index"]) == index for c in event.changes)
    assert fates[0] != fates[1]


def test_step_view_at_the_kth_compaction_picks_each_runs_own_step(
    auth_client: Client, runs: list[Run]
):
    data = auth_client.get(f"/compare/?runs={_ids(runs)}&compaction=2&format=json").json()
    for run, run_json in zip(runs, data["runs"], strict=True):
        steps = _kth_compaction_steps(run)
        assert run_json["step"] == (steps[1] if len(steps) > 1 else None)


def test_step_view_html_has_arrow_links_and_differences(auth_client: Client, runs: list[Run]):
    step, _ = _differing_step(runs)
    html = auth_client.get(f"/compare/?runs={_ids(runs)}&step={step}").content.decode()
    assert f'rel="next" id="step-next" href="?runs={_ids(runs)}&amp;step={step + 1}"' in html
    assert 'class="differs"' in html and "zone-bar" in html
    only = auth_client.get(f"/compare/?runs={_ids(runs)}&step={step}&only=diff").content.decode()
    assert only.count("<tr data-index=") == only.count('class="differs"') > 0


@pytest.mark.parametrize("query", ["step=99999", "step=abc", "compaction=x"])
def test_step_view_refuses_bad_steps(auth_client: Client, runs: list[Run], query: str):
    response = auth_client.get(f"/compare/?runs={_ids(runs)}&{query}&format=json")
    assert response.status_code == 400 and "step" in response.json()["error"]


def test_fate_matrix_at_a_step_differs_from_the_final_one(auth_client: Client, runs: list[Run]):
    ids = _ids(runs)
    final = auth_client.get(f"/compare/?runs={ids}&format=json").json()["matrix"]
    early = auth_client.get(f"/compare/?runs={ids}&at=1&format=json").json()["matrix"]
    assert final["step"] is None and early["step"] == 1
    assert final["runs"] != early["runs"]
    kept_early = sum(c["counts"].get("kept", 0) for c in early["runs"][str(runs[0].pk)])
    kept_final = sum(c["counts"].get("kept", 0) for c in final["runs"][str(runs[0].pk)])
    assert kept_early > kept_final
    html = auth_client.get(f"/compare/?runs={ids}&at=1").content.decode()
    assert f"?runs={ids}&amp;step=1&amp;message=0#message-0" in html  # lands on its row


def test_two_chosen_summaries_diff_word_by_word(
    auth_client: Client, runs: list[Run], other_user: Any
):
    a, b = (RunSummary.objects.filter(run=r).order_by("seq").first() for r in runs[:2])
    assert a is not None and b is not None
    a.output, b.output = "keep the <tests> green", "keep the <tests> red"
    a.save(), b.save()
    picks = {"pick": [f"{runs[0].pk}:{a.seq}", f"{runs[1].pk}:{b.seq}"]}
    html = auth_client.get("/compare/diff/", picks).content.decode()
    assert "<del>green</del><ins>red</ins>" in html and "&lt;tests&gt;" in html
    assert auth_client.get("/compare/diff/", {"pick": picks["pick"][:1]}).status_code == 400
    bob = Client()
    bob.force_login(other_user)
    assert bob.get("/compare/diff/", picks).status_code == 404


def test_group_of_more_than_six_opens_the_picker_with_six_ticked(
    auth_client: Client, user: Any, small_transcript: Any
):
    group = services.group_create(
        owner=user, transcript=small_transcript, enqueue=False,
        specs=[services.RunSpec(strategy="qwenpaw", window=w) for w in range(8000, 16000, 1000)],
    )  # fmt: skip
    group.runs.update(status=RunStatus.DONE)
    html = auth_client.get(f"/runs/groups/{group.pk}/").content.decode()
    assert f'href="/compare/?group={group.pk}" id="group-compare-link"' in html
    picker = auth_client.get(f"/compare/?group={group.pk}").content.decode()
    ticked = re.findall(r'name="runs" value="(\d+)" checked', picker)
    ticked.sort(key=int)
    first_six = list(group.runs.order_by("pk").values_list("pk", flat=True))[:6]
    assert [int(x) for x in ticked] == first_six


def test_step_view_and_summaries_escape_transcript_text(
    auth_client: Client, user: Any, django_capture_on_commit_callbacks: Any
):
    import json

    from replay_testdata import import_transcript

    hostile = "<img src=x onerror=alert(1)>"
    messages = [{"role": "user", "content": f"{hostile} start"}]
    for i in range(12):
        messages += [
            {"role": "assistant", "content": f"{hostile} step {i} " + "word " * 400},
            {"role": "user", "content": f"{hostile} more {i} " + "text " * 400},
        ]
    transcript = import_transcript(user, json.dumps(messages).encode(), name="hostile.json")
    config = config_services.config_create(owner=user, name=hostile, strategy="qwenpaw")
    with django_capture_on_commit_callbacks(execute=True):
        group = services.group_create(
            owner=user, transcript=transcript,
            specs=[services.RunSpec(config=config, window=2048),
                   services.RunSpec(strategy="claude_code", window=2048)],
        )  # fmt: skip
    ids = ",".join(str(r.pk) for r in group.runs.order_by("pk"))
    for url in (f"/compare/?runs={ids}", f"/compare/?runs={ids}&step=5",
                f"/compare/?runs={ids}&compaction=1"):  # fmt: skip
        html = auth_client.get(url).content.decode()
        assert "<img src=x" not in html, url
        assert "&lt;img src=x onerror=alert(1)&gt;" in html, url
