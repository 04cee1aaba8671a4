"""A run's own probe set that is missing or outdated (the run finished before the probe
generator last changed) is made by a Celery task, never in the web request: the run's
probe page shows a pending note that polls and reloads once the set is there, the compare
pages mark the run's row pending, and the request itself reads stored rows only."""

from __future__ import annotations

from typing import Any

import pytest

from judge_app import services, shared, shared_jobs
from judge_app.models import ProbeSet, SharedScoring
from sessions_app.models import Transcript

pytestmark = pytest.mark.django_db


def _outdate(*runs: Any) -> None:
    """As when a run finished before ``GENERATOR`` went up."""
    ProbeSet.objects.filter(run__in=runs).update(generator=services.GENERATOR - 1)


def _refuse_generation(monkeypatch: Any) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the web request made a probe set")

    monkeypatch.setattr(Transcript, "to_conversation", refuse)
    monkeypatch.setattr(services, "generate", refuse)


def _running(key: str, total: int) -> SharedScoring:
    from django.utils import timezone

    return SharedScoring.objects.create(
        runs=key, status="running", total_runs=total, requested_at=timezone.now()
    )


def test_stale_runs_are_the_finished_ones_without_a_current_set(
    qwen_run: Any, cow_run: Any
) -> None:
    assert services.stale_runs([qwen_run.pk, cow_run.pk]) == []
    _outdate(qwen_run)
    assert services.stale_runs([qwen_run.pk, cow_run.pk]) == [qwen_run.pk]
    type(cow_run).objects.filter(pk=cow_run.pk).update(attempts=cow_run.attempts + 1)
    assert services.stale_runs([qwen_run.pk, cow_run.pk]) == sorted([qwen_run.pk, cow_run.pk])
    type(cow_run).objects.filter(pk=cow_run.pk).update(status="running")
    assert services.stale_runs([qwen_run.pk, cow_run.pk]) == [qwen_run.pk]  # not finished


def test_run_page_polls_while_a_task_makes_the_set_then_reloads(
    auth_client: Any, qwen_run: Any, monkeypatch: Any
) -> None:
    before = auth_client.get(f"/runs/{qwen_run.pk}/probes/?format=json").json()
    _outdate(qwen_run)
    key = shared_jobs.OWN_PREFIX + str(qwen_run.pk)
    _running(key, 1)  # a task is at work on it: the page queues no other one
    _refuse_generation(monkeypatch)
    body = auth_client.get(f"/runs/{qwen_run.pk}/probes/?format=json").json()
    assert body["probes"] is None and body["offline"] is None
    assert body["pending"]["status"] == "running" and body["pending"]["total_runs"] == 1
    page = auth_client.get(f"/runs/{qwen_run.pk}/probes/").content.decode()
    poll = auth_client.get(f"/runs/{qwen_run.pk}/probes/?fragment=pending")
    for html in (page, poll.content.decode()):
        assert 'data-testid="own-pending"' in html and 'hx-trigger="every 1s"' in html
        assert "fragment=pending" in html
    assert "HX-Refresh" not in poll.headers
    assert not poll.content.decode().lstrip().startswith("<!DOCTYPE")  # the note alone
    monkeypatch.undo()

    assert shared.generate_sets([qwen_run.pk], key) == "done"  # what the worker runs
    row = SharedScoring.objects.get(runs=key)
    assert row.status == "done" and row.done_runs == 1
    assert ProbeSet.objects.get(run=qwen_run).generator == services.GENERATOR
    poll = auth_client.get(f"/runs/{qwen_run.pk}/probes/?fragment=pending")
    assert poll.headers["HX-Refresh"] == "true" and "own-pending" not in poll.content.decode()
    after = auth_client.get(f"/runs/{qwen_run.pk}/probes/?format=json").json()
    assert after["pending"] is None and after["offline"] == before["offline"]
    assert [p["key"] for p in after["probes"]] == [p["key"] for p in before["probes"]]


def test_run_page_queues_the_task_itself(auth_client: Any, qwen_run: Any) -> None:
    """No task at work: the page queues one (eager here, so it is done by the answer)."""
    _outdate(qwen_run)
    body = auth_client.get(f"/runs/{qwen_run.pk}/probes/?format=json").json()
    assert body["pending"] is None and body["probes"]
    row = SharedScoring.objects.get(runs=shared_jobs.OWN_PREFIX + str(qwen_run.pk))
    assert row.status == "done" and row.total_runs == 1
    assert services.current_set(qwen_run) is not None


def test_a_failed_task_is_said_without_polling(
    auth_client: Any, qwen_run: Any, monkeypatch: Any
) -> None:
    _outdate(qwen_run)
    monkeypatch.setattr(
        services, "generate", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("disk full"))
    )
    html = auth_client.get(f"/runs/{qwen_run.pk}/probes/").content.decode()
    assert 'data-testid="own-error"' in html and "RuntimeError: disk full" in html
    assert "hx-trigger" not in html
    # Claude scoring is refused meanwhile, with a reason
    response = auth_client.post(f"/runs/{qwen_run.pk}/probes/claude/", follow=True)
    assert "being made" in response.content.decode()
    monkeypatch.undo()
    assert auth_client.get(f"/runs/{qwen_run.pk}/probes/?format=json").json()["probes"]


def test_compare_page_marks_outdated_runs_pending_and_reloads_when_made(
    auth_client: Any, qwen_run: Any, cow_run: Any, monkeypatch: Any
) -> None:
    ids = f"{qwen_run.pk},{cow_run.pk}"
    auth_client.get(f"/compare/probes/?runs={ids}")  # everything made and scored
    _outdate(cow_run)
    key = shared_jobs.runs_key([qwen_run.pk, cow_run.pk])
    SharedScoring.objects.filter(runs=key).delete()
    _running(key, 2)
    _refuse_generation(monkeypatch)
    body = auth_client.get(f"/compare/probes/?runs={ids}&format=json").json()
    rows = {r["run"]: r for r in body["runs"]}
    assert rows[cow_run.pk]["pending"] is True and rows[cow_run.pk]["probes"] is None
    assert rows[qwen_run.pk]["pending"] is False and rows[qwen_run.pk]["probes"]
    assert body["own_pending"] == 1 and body["shared"]["own_pending"] is True
    page = auth_client.get(f"/compare/probes/?runs={ids}").content.decode()
    assert page.count('data-testid="own-row-pending"') == 1
    assert 'data-testid="own-pending"' in page and "its row fills in by itself" in page
    assert "fragment=shared&amp;own=1" in page
    poll = auth_client.get(f"/compare/probes/?runs={ids}&fragment=shared&own=1")
    assert "HX-Refresh" not in poll.headers and "fragment=shared&amp;own=1" in poll.content.decode()
    monkeypatch.undo()

    assert shared.score([qwen_run.pk, cow_run.pk]) == "done"  # makes the own set first
    assert services.current_set(cow_run) is not None
    poll = auth_client.get(f"/compare/probes/?runs={ids}&fragment=shared&own=1")
    assert poll.headers["HX-Refresh"] == "true"
    body = auth_client.get(f"/compare/probes/?runs={ids}&format=json").json()
    assert body["own_pending"] == 0 and all(r["probes"] for r in body["runs"])
    assert "own_pending" not in body["shared"]


def test_runs_of_different_transcripts_get_their_own_sets_made(
    auth_client: Any, user: Any, qwen_run: Any
) -> None:
    """No shared set to score there, yet the task still makes the outdated own sets."""
    from judge_testdata import QWENPAW, coding_session, finished_run, import_session

    transcript = import_session(user, coding_session(rounds=5), name="other.json")
    other = finished_run(user, transcript, "qwenpaw", QWENPAW)
    assert other.transcript_id != qwen_run.transcript_id
    _outdate(qwen_run, other)
    body = auth_client.get(f"/compare/probes/?runs={qwen_run.pk},{other.pk}&format=json").json()
    assert body["shared"]["available"] is False  # different transcripts
    assert services.stale_runs([qwen_run.pk, other.pk]) == []  # the (eager) task made them
    assert body["own_pending"] == 0 and all(r["probes"] for r in body["runs"])


def test_replay_compare_panel_reads_only_and_queues_the_task(
    auth_client: Any, qwen_run: Any, cow_run: Any, monkeypatch: Any
) -> None:
    from judge_app.templatetags import judge_tags

    _outdate(cow_run)
    _running(shared_jobs.OWN_PREFIX + str(cow_run.pk), 1)
    _refuse_generation(monkeypatch)
    context = judge_tags.probe_compare([qwen_run, cow_run])
    assert context["data"]["own_pending"] == 1 and context["data"]["job"]["status"] == "running"
    monkeypatch.undo()
    SharedScoring.objects.all().delete()
    context = judge_tags.probe_compare([qwen_run, cow_run])  # eager: queued and done
    assert context["data"]["own_pending"] == 0 and context["data"]["job"] is None
    assert services.current_set(cow_run) is not None


def test_a_run_still_being_analysed_waits_for_its_worker_set(
    auth_client: Any, qwen_run: Any, monkeypatch: Any
) -> None:
    # Done, its analysis (and with it the probe set) still coming from its worker:
    # the page polls and no task makes a second set meanwhile.
    from django.utils import timezone

    ProbeSet.objects.filter(run=qwen_run).delete()
    type(qwen_run).objects.filter(pk=qwen_run.pk).update(
        finished_at=None, heartbeat_at=timezone.now()
    )
    _refuse_generation(monkeypatch)
    body = auth_client.get(f"/runs/{qwen_run.pk}/probes/?format=json").json()
    assert body["pending"]["status"] == "analysing" and body["pending"]["total_runs"] == 1
    poll = auth_client.get(f"/runs/{qwen_run.pk}/probes/?fragment=pending")
    html = poll.content.decode()
    assert 'data-testid="own-pending"' in html and "being analysed" in html
    assert "fragment=pending" in html and "HX-Refresh" not in poll.headers
    assert not SharedScoring.objects.exists()  # no task queued
    monkeypatch.undo()

    # the worker's analysis lands (its set, its finished_at): the poll reloads the page
    services.generate(qwen_run)
    type(qwen_run).objects.filter(pk=qwen_run.pk).update(finished_at=timezone.now())
    poll = auth_client.get(f"/runs/{qwen_run.pk}/probes/?fragment=pending")
    assert poll.headers["HX-Refresh"] == "true"
    assert not SharedScoring.objects.exists()


def test_a_stopped_analysing_worker_lets_a_task_make_the_set(qwen_run: Any) -> None:
    # heartbeat long gone: the run is settled and its missing set is a task's again
    from datetime import timedelta

    from django.utils import timezone

    ProbeSet.objects.filter(run=qwen_run).delete()
    old = timezone.now() - timedelta(hours=2)
    type(qwen_run).objects.filter(pk=qwen_run.pk).update(finished_at=None, heartbeat_at=old)
    assert services.analysing_runs([qwen_run.pk]) == set()
    qwen_run.refresh_from_db()
    assert qwen_run.finished_at == old  # settled at its last sign of life
