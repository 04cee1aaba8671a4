"""Runs through the real embedded worker (threads, memory:// broker, SQLite file with WAL)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from replay_testdata import agent_chat, import_transcript
from waiting import join, wait_until

from replay_app.models import Run, RunGroup, RunStatus, RunStep
from replay_app.runs import services
from sessions_app.models import Upload

TERMINAL = {RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED}


def _wait_for_runs(expected: int) -> list[Run]:
    def finished() -> list[Run]:
        runs = list(Run.objects.order_by("pk"))
        return runs if len(runs) == expected and all(r.status in TERMINAL for r in runs) else []

    return wait_until(
        finished, f"{expected} finished runs",
        seen=lambda: list(Run.objects.values_list("pk", "status", "steps_done", "steps_total")),
    )  # fmt: skip


def test_group_executes_on_real_embedded_worker(celery_worker_embedded: Any, user: Any):
    transcript = import_transcript(user, agent_chat(turns=20, size=4000))
    group = services.group_create(owner=user, transcript=transcript, specs=services.preset_specs())
    runs = _wait_for_runs(5)
    assert [r.status for r in runs] == [RunStatus.DONE] * 5, [r.error for r in runs]
    for run in runs:
        assert run.group_id == group.pk and run.task_id
        assert RunStep.objects.filter(run=run).count() == run.steps_total > 0
        assert run.metrics["steps"] == run.steps_total


def _in_thread(fn: Callable[[], Any], errors: list[BaseException]) -> threading.Thread:
    def target() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connection.close()

    return threading.Thread(target=target)


def test_ten_uploads_and_five_comparisons_at_once(celery_worker_embedded: Any, user: Any):
    """The issue's concurrency bar: nothing fails, "database is locked" included."""
    transcripts = [
        import_transcript(user, agent_chat(turns=12, size=3000, seed=100 + i), name=f"base{i}.json")
        for i in range(5)
    ]
    base_uploads = Upload.objects.count()
    errors: list[BaseException] = []
    responses: list[Any] = []
    start = threading.Barrier(15)

    def upload(i: int) -> Callable[[], None]:
        def go() -> None:
            client = Client()
            client.force_login(user)
            data = agent_chat(turns=8, size=2000, seed=i)
            start.wait()
            response = client.post(
                "/transcripts/upload/", {"files": [SimpleUploadedFile(f"up{i}.json", data)]}
            )
            responses.append(response)
            assert response.status_code == 200, response.content[:500]

        return go

    def compare(transcript_id: int) -> Callable[[], None]:
        def go() -> None:
            client = Client()
            client.force_login(user)
            start.wait()
            response = client.post(
                "/runs/new/",
                {
                    "transcript": transcript_id,
                    "presets": ["qwenpaw", "copaw", "cowagent", "picoclaw", "baseagent"],
                    "summarizer": "offline",
                },
            )
            responses.append(response)
            assert response.status_code == 302, response.content[:500]

        return go

    threads = [_in_thread(upload(i), errors) for i in range(10)]
    threads += [_in_thread(compare(t.pk), errors) for t in transcripts]
    for thread in threads:
        thread.start()
    for thread in threads:
        join(thread, "the upload and compare requests")
    assert not errors, errors
    assert len(responses) == 15
    assert Upload.objects.count() == base_uploads + 10
    assert all(b"database is locked" not in r.content for r in responses)
    runs = _wait_for_runs(25)
    assert RunGroup.objects.count() == 5
    failed = [(r.pk, r.error) for r in runs if r.status != RunStatus.DONE]
    assert not failed, failed
    for run in runs:
        assert RunStep.objects.filter(run=run).count() == run.steps_total > 0
