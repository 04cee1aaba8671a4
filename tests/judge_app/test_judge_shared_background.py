"""The compare-probes page's shared question set is scored by a Celery task, never in the
web request: a pending section that polls (htmx) until the scores are stored, the same
state in the JSON twin, failures said. On the real Codex rollout in the corpus, whose
sandbox refusals make ambiguous Recall answers (noted under their questions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from judge_testdata import import_session
from waiting import wait_until

from judge_app import shared, shared_jobs
from judge_app.models import ProbeSet, SharedScoring
from replay_app.models import Run
from replay_app.runs.executor import run_execute
from replay_app.runs.services import RunSpec, run_create
from sessions_app.models import Transcript

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
ROLLOUT = (
    CORPUS / "codex-rollout"
    / "agentcmd-rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl"
)  # fmt: skip
STRATEGIES = ("cowagent", "claude_code", "codex", "langchain_trim")


def _runs(user: Any) -> list[Run]:
    transcript = import_session(user, ROLLOUT.read_bytes(), name=ROLLOUT.name)
    out = []
    for strategy in STRATEGIES:
        run = run_create(owner=user, transcript=transcript,
                         spec=RunSpec(strategy=strategy, window=20_000), enqueue=False)  # fmt: skip
        run = run_execute(run=run)
        assert run.status == "done", run.error
        out.append(run)
    return out


def _ids(runs: list[Run]) -> str:
    return ",".join(str(r.pk) for r in runs)


@pytest.mark.django_db
def test_a_task_at_work_shows_a_polling_section_until_its_scores_are_stored(
    auth_client: Any, user: Any, monkeypatch: Any
) -> None:
    runs = _runs(user)
    ids = _ids(runs)
    # a task is at work on this set (queued a moment ago): the page queues no other one
    SharedScoring.objects.create(runs=shared_jobs.runs_key([r.pk for r in runs]),
                                 status="running", done_runs=1, total_runs=4,
                                 requested_at=_now())  # fmt: skip

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the web request read the transcript to score")

    monkeypatch.setattr(Transcript, "to_conversation", refuse)
    # Reads rows only: ``refuse`` fails any request that reads a transcript to score it.
    body = auth_client.get(f"/compare/probes/?runs={ids}&format=json").json()["shared"]
    page = auth_client.get(f"/compare/probes/?runs={ids}").content.decode()
    poll = auth_client.get(f"/compare/probes/?runs={ids}&fragment=shared").content.decode()
    assert body["pending"] is True and body["job"]["status"] == "running"
    assert (body["job"]["done_runs"], body["job"]["total_runs"]) == (1, 4)
    assert sorted(body["waiting"]) == sorted(r.pk for r in runs)
    for html in (page, poll):
        assert 'data-pending="true"' in html and 'hx-trigger="every 1s"' in html
        assert "fragment=shared" in html and "1 of 4 runs scored" in html
    assert not poll.lstrip().startswith("<!DOCTYPE")  # the section alone
    monkeypatch.undo()

    assert shared.score([r.pk for r in runs]) == "done"  # what the worker runs
    row = SharedScoring.objects.get()
    assert row.status == "done" and row.done_runs == 4 and row.finished_at is not None
    ready = auth_client.get(f"/compare/probes/?runs={ids}&fragment=shared").content.decode()
    assert "data-pending" not in ready and "hx-trigger" not in ready
    assert 'data-testid="shared-table"' in ready
    body = auth_client.get(f"/compare/probes/?runs={ids}&format=json").json()["shared"]
    assert body["pending"] is False and body["questions"] == ready.count('<tr data-kind="')
    assert body == shared.shared_data(runs, compute=False)
    # the sandbox refusals: ambiguous answers, said so under their questions
    ambiguous = [p for p in body["probes"] if p["other_outputs"]]
    assert ambiguous and all(p["kind"] == "recall" for p in ambiguous)
    assert ready.count('data-testid="shared-ambiguous"') == len(ambiguous)
    cells = {c["run"]: c for p in ambiguous for c in p["runs"] if c["run"] == runs[0].pk}
    assert cells  # cowagent is asked them too
    # a run's scores gone after the task finished (as when it is retried): a poll says so
    # instead of queueing a task at every poll; the page the reader reloads scores again
    ProbeSet.objects.filter(run=runs[1]).update(shared={})
    poll = auth_client.get(f"/compare/probes/?runs={ids}&fragment=shared").content.decode()
    assert 'data-testid="shared-error"' in poll and "The runs changed" in poll
    assert SharedScoring.objects.get().finished_at == row.finished_at  # nothing queued
    assert (
        'data-testid="shared-table"'
        in auth_client.get(f"/compare/probes/?runs={ids}").content.decode()
    )
    assert ProbeSet.objects.get(run=runs[1]).shared["scores"]
    # cowagent's own probe page says the same under its own sandbox-refusal questions
    own = auth_client.get(f"/runs/{runs[0].pk}/probes/?format=json").json()["probes"]
    noted = [p for p in own if p["offline"]["other_outputs"]]
    assert noted and all(p["kind"] == "recall" for p in noted)
    html = auth_client.get(f"/runs/{runs[0].pk}/probes/").content.decode()
    assert html.count('data-testid="probe-ambiguous"') == len(noted)


@pytest.mark.django_db
def test_a_failed_scoring_is_said_and_a_reload_tries_again(
    auth_client: Any, user: Any, monkeypatch: Any
) -> None:
    runs = _runs(user)[:2]
    ids = _ids(runs)
    monkeypatch.setattr(
        shared, "_run_scores", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("disk full"))
    )
    body = auth_client.get(f"/compare/probes/?runs={ids}&format=json").json()["shared"]
    assert body["pending"] is False and "RuntimeError: disk full" in body["error"]
    # a poll or a JSON read does not queue it again; the page says it
    poll = auth_client.get(f"/compare/probes/?runs={ids}&fragment=shared").content.decode()
    assert 'data-testid="shared-error"' in poll and "disk full" in poll
    assert "hx-trigger" not in poll
    monkeypatch.undo()
    page = auth_client.get(f"/compare/probes/?runs={ids}").content.decode()  # a reload
    assert 'data-testid="shared-table"' in page and "shared-error" not in page
    assert SharedScoring.objects.get().status == "done"
    assert all(ProbeSet.objects.get(run=r).shared["scores"] for r in runs)


def test_a_real_worker_scores_the_set_while_the_page_polls(
    client: Any, user: Any, celery_worker_embedded: Any
) -> None:
    client.force_login(user)
    runs = _runs(user)
    ids = _ids(runs)
    first = client.get(f"/compare/probes/?runs={ids}&format=json").json()["shared"]
    polled = [first]

    def settled() -> bool:
        if polled[-1]["pending"]:
            client.get(f"/compare/probes/?runs={ids}&fragment=shared")
            polled.append(client.get(f"/compare/probes/?runs={ids}&format=json").json()["shared"])
        return not polled[-1]["pending"]

    wait_until(settled, "the shared scoring to finish (the page polling)",
               seen=lambda: polled[-1], interval=0.2)  # fmt: skip
    body = polled[-1]
    assert body["pending"] is False and "error" not in body, body.get("error")
    assert first["pending"] or first == body  # pending, unless the worker was quicker
    # the task marks its row done just after storing the last scores the page reads
    wait_until(lambda: SharedScoring.objects.filter(status="done").count() == 1,
               "the scoring task's row marked done",
               seen=lambda: list(SharedScoring.objects.values_list("status", flat=True)))  # fmt: skip
    assert SharedScoring.objects.count() == 1
    assert {r["run"] for r in body["runs"]} == {r.pk for r in runs}
    assert all(r["asked"] == body["questions"] > 0 for r in body["runs"])


def _now() -> Any:
    from django.utils import timezone

    return timezone.now()
