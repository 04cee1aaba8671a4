"""A run is done as soon as its rows, metrics and ledger are written; its analysis follows in
the same task (``executor._analyse``) and lands with ``finished_at``. Meanwhile the pages say
"analysing…" from the one rule (``analysis_state.pending``) instead of computing a second
copy, nothing of the run is memoised, and a retried run is never written by the stale
attempt; a run whose worker stopped in between reads like a run whose analysis failed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone
from inspect_helpers import make_run
from waiting import wait_until

from replay_app import memo
from replay_app.compare import inputs as compare_inputs
from replay_app.models import Run, RunAnalysis, RunStatus, RunSummary
from replay_app.runs import analysis_state, executor, textstore
from replay_app.runs.heartbeat import pulse
from replay_app.steps import lost_analysis
from sessions_app.models import Transcript
from tests.engine.builders import SMALL_WINDOWS as SMALL

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]


def in_the_window(monkeypatch: pytest.MonkeyPatch, look: Any) -> None:
    """Call ``look(run_id)`` when the worker starts analysing a done run."""
    real = executor.run_survival.finished

    def finished(run: Run, *args: Any) -> Any:
        look(run.pk)
        return real(run, *args)

    monkeypatch.setattr(executor.run_survival, "finished", finished)


def test_a_run_is_done_before_its_analysis_and_the_pages_say_analysing(
    monkeypatch: pytest.MonkeyPatch, client: Any, user: Any, session_four: Transcript
) -> None:
    client.force_login(user)
    seen: dict[str, Any] = {}
    computed: list[int] = []
    real_retention = lost_analysis._retention
    monkeypatch.setattr(
        lost_analysis,
        "_retention",
        lambda run, index: computed.append(run.pk) or real_retention(run, index),
    )

    def look(pk: int) -> None:
        run = Run.objects.get(pk=pk)
        seen["status"], seen["finished_at"] = run.status, run.finished_at
        seen["pending"], seen["keeps"] = analysis_state.pending(run), memo.keeps(run)
        seen["metrics"] = "compaction_count" in run.metrics, "ledger_total_cost" in run.metrics
        seen["ledger"] = run.ledger
        seen["json"] = client.get(f"/runs/{pk}/?format=json").json()
        seen["html"] = client.get(f"/runs/{pk}/").content.decode()
        seen["lost"] = client.get(f"/runs/{pk}/lost/?format=json").json()
        seen["lost_html"] = client.get(f"/runs/{pk}/lost/").content.decode()
        seen["stored"] = RunAnalysis.objects.filter(run_id=pk).exists()
        seen["memo"] = memo.MEMO.chars

    def inputs_not_stored(run: Run, *args: Any) -> None:
        # (an in-process run's summary inputs are stored after done, first thing: executor)
        rows = list(RunSummary.objects.filter(run_id=run.pk).order_by("seq"))
        seen["unstored"] = all(not r.input and not r.input_parts for r in rows) and bool(rows)
        page = f"/runs/{run.pk}/summaries/{rows[0].seq}/"
        seen["summary"] = client.get(f"{page}?format=json").json()
        seen["summary_html"] = client.get(page).content.decode()
        real_store(run, *args)

    real_store = executor._store_inputs
    monkeypatch.setattr(executor, "_store_inputs", inputs_not_stored)
    in_the_window(monkeypatch, look)
    run = make_run(user, session_four, "qwenpaw", **SMALL["qwenpaw"])
    assert seen["status"] == RunStatus.DONE and seen["finished_at"] is None
    assert seen["pending"] and not seen["keeps"]
    assert seen["metrics"] == (True, False) and seen["ledger"] == {}, "the ledger comes after"
    assert seen["json"]["status"] == "done" and seen["json"]["analysis_pending"] is True
    assert seen["json"]["survival"] is None
    assert "Analysing…" in seen["html"] and 'hx-trigger="every 2s"' in seen["html"]
    assert 'id="run-ledger"' in seen["html"] and seen["json"]["cost"]["ledger"] == {}
    assert seen["lost"]["pending"] is True and seen["lost"]["events"] == []
    assert "Analysing…" in seen["lost_html"]
    assert not seen["stored"] and seen["memo"] == 0, "nothing stored or memoised meanwhile"
    assert computed == [], "no page computed a second copy from the rows"
    # ... and once the task returns: analysed, stored, finished at the time it was done.
    assert run.finished_at is not None and run.heartbeat_at is not None
    assert run.finished_at <= run.heartbeat_at
    assert not analysis_state.pending(run)
    stored = RunAnalysis.objects.get(run=run)
    assert stored.retention["events"] and stored.survival and compare_inputs.current(stored.compare)
    data = client.get(f"/runs/{run.pk}/?format=json").json()
    assert data["analysis_pending"] is False and data["survival"] is not None
    assert data["cost"]["ledger"]["totals"] and "ledger_total_cost" in data["metrics"]
    if "original_compactions" in data["metrics"]:  # the keys in the order they always had
        assert list(data["metrics"])[-1] == "original_compactions"
    assert "Analysing…" not in client.get(f"/runs/{run.pk}/").content.decode()
    assert computed == []
    # The summary inputs: not stored while it was analysed (the summary page said so), as
    # pieces after, the texts the replay made.
    assert seen["unstored"] and seen["summary"]["input_pending"] is True
    assert seen["summary"]["input"] == "" and "Analysing…" in seen["summary_html"]
    rows = list(RunSummary.objects.filter(run=run).order_by("seq"))
    assert all(r.input == "" and r.input_parts for r in rows)
    assert textstore.summary_inputs(run.transcript_id, rows) == {
        s.id: s.input for s in rows_of(run)
    }
    summary = client.get(f"/runs/{run.pk}/summaries/{rows[0].seq}/?format=json").json()
    assert summary["input_pending"] is False and summary["input"] == rows_of(run)[0].input


def rows_of(run: Run) -> list[Any]:
    """The summary records of the same replay, made again in memory."""
    from ctxlab.engine.replay import run as replay_run

    result = replay_run(run.transcript.to_conversation(), run.strategy, params=run.params)
    return list(result.summaries)


def test_a_run_retried_while_analysed_is_never_written_by_the_stale_attempt(
    monkeypatch: pytest.MonkeyPatch, user: Any, session_four: Transcript
) -> None:
    def retried(pk: int) -> None:  # what services.run_retry does to the row
        Run.objects.filter(pk=pk).update(status=RunStatus.QUEUED, attempts=2)

    in_the_window(monkeypatch, retried)
    from replay_app.runs import services

    run = services.run_create(
        owner=user, transcript=session_four,
        spec=services.RunSpec(strategy="cowagent", params=SMALL["cowagent"]), enqueue=False,
    )  # fmt: skip
    run = executor.run_execute(run=run)
    assert run.status == RunStatus.QUEUED and run.attempts == 2
    assert run.finished_at is None
    assert not RunAnalysis.objects.filter(run=run).exists()


def test_a_done_run_whose_worker_stopped_while_analysing_reads_as_analysis_missing(
    client: Any, user: Any, session_four: Transcript
) -> None:
    run = make_run(user, session_four, "cowagent", **SMALL["cowagent"])
    expected = RunAnalysis.objects.get(run=run).retention
    RunAnalysis.objects.filter(run=run).delete()
    stopped = timezone.now() - timedelta(minutes=10)
    Run.objects.filter(pk=run.pk).update(finished_at=None, heartbeat_at=stopped)
    run.refresh_from_db()
    assert not analysis_state.pending(run)
    assert Run.objects.get(pk=run.pk).finished_at == stopped, "settled at its last heartbeat"
    client.force_login(user)
    data = client.get(f"/runs/{run.pk}/lost/?format=json").json()  # computed from the rows
    assert "pending" not in data and data["events"]
    assert RunAnalysis.objects.get(run=run).retention == expected


def test_a_summary_input_lost_with_a_stopped_worker_says_so(
    client: Any, user: Any, session_four: Transcript
) -> None:
    """Inputs are stored after done: a worker stopped in between leaves none, and the page
    says so instead of an empty input or "analysing" forever."""
    run = make_run(user, session_four, "qwenpaw", **SMALL["qwenpaw"])
    seq = RunSummary.objects.filter(run=run).order_by("seq").values_list("seq", flat=True)[0]
    page = f"/runs/{run.pk}/summaries/{seq}/"
    client.force_login(user)
    assert client.get(f"{page}?format=json").json()["input_missing"] is False
    RunSummary.objects.filter(run=run).update(input="", input_parts=[])
    stopped = timezone.now() - timedelta(minutes=10)
    Run.objects.filter(pk=run.pk).update(finished_at=None, heartbeat_at=stopped)
    data = client.get(f"{page}?format=json").json()
    assert data["input"] == "" and data["input_pending"] is False and data["input_missing"]
    html = client.get(page).content.decode()
    assert "was not stored" in html and "Analysing…" not in html


@pytest.mark.django_db(transaction=True)
@override_settings(CTXLAB_RUN_HEARTBEAT_SECONDS=0.05)
def test_the_heartbeat_pulses_while_a_done_run_is_analysed_and_stops_after(
    user: Any, session_four: Transcript
) -> None:
    run = make_run(user, session_four, "cowagent", **SMALL["cowagent"])
    old = timezone.now() - timedelta(minutes=5)
    Run.objects.filter(pk=run.pk).update(finished_at=None, heartbeat_at=old)
    with pulse(run.pk, run.attempts):
        wait_until(
            lambda: Run.objects.get(pk=run.pk).heartbeat_at > old + timedelta(minutes=4),
            "a heartbeat while the done run is analysed",
            seen=lambda: Run.objects.get(pk=run.pk).heartbeat_at,
            interval=0.05,
        )
    assert analysis_state.pending(Run.objects.get(pk=run.pk))
    Run.objects.filter(pk=run.pk).update(finished_at=timezone.now(), heartbeat_at=old)
    with pulse(run.pk, run.attempts):  # a finished run: nothing to stamp
        wait_until(lambda: True, "one pulse interval")
    assert Run.objects.get(pk=run.pk).heartbeat_at == old


def _second_still_analysing(group: Any) -> tuple[list[Run], Any]:
    """Run the group's runs here, then put the second back in its analysis window (its
    worker alive, no ``finished_at``): (the runs, the ``finished_at`` it had)."""
    runs = list(group.runs.order_by("pk"))
    for run in runs:
        executor.run_execute(run=run)
    finished = Run.objects.get(pk=runs[1].pk).finished_at
    alive = timezone.now() + timedelta(hours=1)  # its worker still analysing it
    Run.objects.filter(pk=runs[1].pk).update(finished_at=None, heartbeat_at=alive)
    return runs, finished


def test_a_comparison_waits_for_its_runs_analysis_before_its_table_and_csv(
    client: Any, user: Any, session_four: Transcript
) -> None:
    from replay_app.runs import services

    group = services.group_create(
        owner=user, transcript=session_four, specs=services.preset_specs()[:2], enqueue=False
    )
    runs, finished = _second_still_analysing(group)
    client.force_login(user)
    url = f"/runs/groups/{group.pk}/"
    results = client.get(url + "?fragment=results").content.decode()
    assert "Analysing…" in results and 'hx-trigger="every 2s"' in results
    assert 'id="group-metrics"' not in results
    assert client.get(url + "?format=csv").status_code == 409
    assert client.get(url + "?format=json").json()["analysing"] is True
    Run.objects.filter(pk=runs[1].pk).update(finished_at=finished)  # landed
    results = client.get(url + "?fragment=results").content.decode()
    assert 'id="group-metrics"' in results and "Analysing…" not in results
    assert client.get(url + "?format=csv").status_code == 200
    assert client.get(url + "?format=json").json()["analysing"] is False


def test_a_sweep_keeps_polling_until_its_runs_are_analysed(
    client: Any, user: Any, session_four: Transcript
) -> None:
    from replay_app.runs import services
    from replay_app.sweeps import sweep

    group = services.group_create(
        owner=user, transcript=session_four, enqueue=False,
        specs=sweep.specs(sweep.Base(strategy="qwenpaw"), "max_input_length", ["4096", "8192"]),
    )  # fmt: skip
    runs, finished = _second_still_analysing(group)
    client.force_login(user)
    url = f"/runs/groups/{group.pk}/sweep/"
    html = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert f'hx-get="{url}?seen=1" hx-trigger="every 2s"' in html, "one run settled"
    assert client.get(f"{url}?seen=1", HTTP_HX_REQUEST="true").status_code == 204
    Run.objects.filter(pk=runs[1].pk).update(finished_at=finished)  # landed
    html = client.get(f"{url}?seen=1", HTTP_HX_REQUEST="true").content.decode()
    assert 'data-finished="true"' in html and "hx-trigger" not in html.split(">")[0]


def test_a_run_whose_analysis_writes_fail_is_still_done_and_finished(
    monkeypatch: pytest.MonkeyPatch, client: Any, user: Any, session_four: Transcript
) -> None:
    from django.db import DatabaseError

    def locked(*args: Any, **kwargs: Any) -> bool:
        raise DatabaseError("database is locked")

    # Fault injection: the analysis's last writes fail (no real input does that).
    monkeypatch.setattr(executor.compare_inputs, "store", locked)
    run = make_run(user, session_four, "cowagent", **SMALL["cowagent"])
    assert run.status == RunStatus.DONE and run.finished_at is not None
    assert not analysis_state.pending(run)
    monkeypatch.undo()
    client.force_login(user)
    data = client.get(f"/runs/{run.pk}/lost/?format=json").json()  # built from its rows
    assert "pending" not in data and data["events"]
