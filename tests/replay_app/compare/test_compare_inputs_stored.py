"""The compare page's per-run inputs (``replay_app.compare.inputs``): built by the worker
when a run finishes and stored with it, equal to a fresh build from the stored rows on a
real corpus session; an older run without them is built once on first view and stored;
the first view after the runs finish builds nothing per run and reads no event or step row.
"""

from __future__ import annotations

import json
import random
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from replay_testdata import import_transcript

from ctxlab.serving import abandon
from judge_app import services as probe_services
from judge_app.models import ProbeSet
from replay_app import memo
from replay_app.compare import inputs, overview, pieces, survival_table
from replay_app.compare.compare_page import SHOWN
from replay_app.models import Run, RunAnalysis
from replay_app.runs import executor, services
from replay_app.steps import lost_analysis, run_curve

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus" / "claude-code"
SESSION = "agentcmd-full-session-four.jsonl"  # a real Claude Code session (see corpus README)


def _runs(user: Any) -> list[Any]:
    transcript = import_transcript(user, (CORPUS / SESSION).read_bytes(), name=SESSION)
    group = services.group_create(
        enqueue=False,
        owner=user,
        transcript=transcript,
        specs=[
            services.RunSpec(strategy="claude_code", window=12000),
            services.RunSpec(strategy="langchain_trim", window=8000),
            services.RunSpec(strategy="qwenpaw", window=16000),
        ],
        summarizer="offline",
    )
    runs = list(group.runs.order_by("pk"))
    for run in runs:
        executor.run_execute(run=run)
        run.refresh_from_db()
        assert run.status == "done", run.error
    memo.MEMO.clear()
    return runs


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def test_worker_stores_what_a_fresh_build_from_the_rows_gives(user: Any) -> None:
    runs = _runs(user)
    assert inputs.BUILT["worker"] >= len(runs)
    for run in runs:
        stored = RunAnalysis.objects.get(run=run).compare
        assert inputs.current(stored) and stored.pop("attempts") == run.attempts
        assert stored == _plain(inputs.build(run))
        # each piece equals what the page computed before from the rows
        rows = inputs._event_rows(run)
        assert [pieces.Compaction.from_row(r) for r in stored["compactions"]] == (
            pieces.compactions_from_rows(rows)
        )
        messages = run.transcript.message_count
        size = pieces.bucket_size(messages)
        fresh = overview._matrix_row(run, messages, size)
        assert [pieces.MatrixCell.from_row(c) for c in stored["matrix"]["cells"]] == fresh
        full = run_curve.curve(run)
        curve = stored["curve"]
        assert curve["points"] == len(full.series.steps)
        assert curve["events"] == [
            [e.seq, e.step, e.kind, e.tokens_before, e.tokens_after, e.messages]
            for e in full.events
        ]
        assert (curve["window"], curve["threshold"]) == (full.window, full.threshold)
        at = {s: k for k, s in enumerate(full.series.steps)}
        for step, ref, own in zip(
            curve["steps"], curve["reference"], curve["strategy"], strict=True
        ):  # every kept point is the full curve's
            assert (full.series.reference[at[step]], full.series.strategy[at[step]]) == (
                ref,
                own,
            )
        retention = lost_analysis.retention(run)
        lost = stored["lost"]
        assert lost["events_total"] == len(retention["events"])
        assert (lost["retention"], lost["lost"]) == (retention["retention"], retention["lost"])
        for head, whole in zip(lost["events"], retention["events"], strict=False):
            assert head["lost"] == whole["lost"][: inputs.LOST_FACTS]
    assert any(RunAnalysis.objects.get(run=r).compare["compactions"] for r in runs)
    assert any(RunAnalysis.objects.get(run=r).compare["lost"]["lost"] for r in runs)


def test_worker_builds_them_from_the_replay_in_memory_as_the_rows_give(
    user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker reads the finished replay's events and steps in memory, not their rows
    (read back and decoded after done, they were a third of its compare inputs' time)."""

    def no_rows(run: Any) -> Any:
        raise AssertionError("the worker read the stored event rows")

    with monkeypatch.context() as patched:
        patched.setattr(inputs, "_event_rows", no_rows)
        runs = _runs(user)
    for run in runs:
        stored = RunAnalysis.objects.get(run=run).compare
        assert inputs.current(stored), run.strategy  # stored: built without the rows
        stored.pop("attempts")
        assert stored == _plain(inputs.build(run))  # equal to a build from the rows


def test_worker_probe_set_equals_one_from_the_stored_rows(user: Any) -> None:
    run = _runs(user)[2]
    made = ProbeSet.objects.get(run=run)  # by the worker, from the replay in memory
    keys = list(made.probes.order_by("seq").values_list("key", "question", "answers"))
    offline, tokens = made.offline, made.tokens
    again = probe_services.generate(run)  # read back from the stored rows
    assert list(again.probes.order_by("seq").values_list("key", "question", "answers")) == keys
    assert (again.offline, again.tokens) == (offline, tokens)


def test_older_run_is_built_once_on_first_view_and_stored(user: Any, auth_client: Any) -> None:
    runs = _runs(user)
    ids = ",".join(str(r.pk) for r in runs)
    first = auth_client.get(f"/compare/?runs={ids}").content.decode()
    RunAnalysis.objects.filter(run=runs[0]).update(compare={})  # as before this field
    memo.MEMO.clear()
    before = inputs.BUILT["view"]
    again = auth_client.get(f"/compare/?runs={ids}").content.decode()
    assert inputs.BUILT["view"] == before + 1  # that run only
    assert inputs.current(RunAnalysis.objects.get(run=runs[0]).compare)

    def body(html: str) -> str:  # after the head; CSRF tokens differ per request
        return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html.split("<h1>", 1)[1])

    assert body(again) == body(first)  # the same page from the rebuilt inputs
    memo.MEMO.clear()
    auth_client.get(f"/compare/?runs={ids}")
    assert inputs.BUILT["view"] == before + 1  # stored: not built again


def test_first_view_after_the_runs_finish_builds_nothing_per_run(
    user: Any, auth_client: Any
) -> None:
    runs = _runs(user)
    ids = ",".join(str(r.pk) for r in runs)
    before = inputs.BUILT["view"]
    sets = ProbeSet.objects.count()
    with CaptureQueriesContext(connection) as queries:
        page = auth_client.get(f"/compare/?runs={ids}")
    assert page.status_code == 200
    assert inputs.BUILT["view"] == before
    assert ProbeSet.objects.count() == sets  # generated by the worker, not by the page
    sql = " ".join(q["sql"] for q in queries.captured_queries)
    assert "replay_app_runevent" not in sql and "replay_app_runstep" not in sql
    body = page.content.decode()
    for run in runs:
        assert f'data-run="{run.pk}"' in body


def test_a_retried_run_never_reads_an_older_attempts_inputs(user: Any) -> None:
    run = _runs(user)[0]
    older = RunAnalysis.objects.get(run=run).compare
    Run.objects.filter(pk=run.pk).update(attempts=run.attempts + 1)
    RunAnalysis.objects.filter(run=run).update(attempts=run.attempts + 1)  # as a retention store
    run.refresh_from_db()
    before = inputs.BUILT["view"]
    (data,) = inputs.for_runs([run])
    assert inputs.BUILT["view"] == before + 1 and older["attempts"] == run.attempts - 1
    assert RunAnalysis.objects.get(run=run).compare["attempts"] == run.attempts


def test_thin_keeps_every_buckets_extremes() -> None:
    rng = random.Random(7)
    count = 5_000
    a = [rng.randrange(10_000) for _ in range(count)]
    b = [rng.randrange(10_000) for _ in range(count)]
    keep = inputs.thin(count, a, b, buckets=100)
    assert keep[0] == 0 and keep[-1] == count - 1 and keep == sorted(set(keep))
    assert len(keep) <= 4 * 100 + 2
    width = -(-count // 100)
    for start in range(0, count, width):
        span = range(start, min(start + width, count))
        kept = [k for k in keep if k in span]
        for line in (a, b):
            assert max(line[k] for k in kept) == max(line[k] for k in span)
            assert min(line[k] for k in kept) == min(line[k] for k in span)
    assert inputs.thin(10, a, b, buckets=100) == list(range(10))


def test_compare_page_and_report_stop_for_a_client_that_went_away(
    user: Any, auth_client: Any
) -> None:
    runs = _runs(user)[:2]
    ids = ",".join(str(r.pk) for r in runs)
    RunAnalysis.objects.filter(run=runs[0]).update(compare={})
    gone = threading.Event()
    gone.set()
    token = abandon._FLAG.set(gone)  # as AbandonWatch sets it when the client disconnects
    try:
        assert auth_client.get(f"/compare/?runs={ids}").status_code == 499
        assert auth_client.get(f"/compare/?runs={ids}&format=report").status_code == 499
    finally:
        abandon._FLAG.reset(token)
    assert not inputs.current(RunAnalysis.objects.get(run=runs[0]).compare)  # built nothing
    assert auth_client.get(f"/compare/?runs={ids}").status_code == 200


def test_survival_section_from_the_stored_heads_equals_the_whole_tables(user: Any) -> None:
    runs = _runs(user)
    heads = [piece["survival"] for piece in inputs.for_runs(runs)]
    whole = survival_table.table(runs, shown=SHOWN).rows
    shown = survival_table.table_of_heads(runs, heads, SHOWN).rows
    assert [r.key for r in shown] == [r.key for r in whole]
    for a, b in zip(shown, whole, strict=True):
        assert (a.cells, a.per_compaction, a.findings_shown, a.drift_shown) == (
            b.cells,
            b.per_compaction,
            b.findings_shown,
            b.drift_shown,
        )
        assert (a.findings_count, a.drift_count, a.overall, a.persistence) == (
            b.findings_count,
            b.drift_count,
            b.overall,
            b.persistence,
        )
    assert any(r.per_compaction for r in whole)
