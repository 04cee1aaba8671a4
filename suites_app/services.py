"""Named actions on suites (views, the task, the CLI and the bench all go through these).

Fan-out: ``suite_enqueue`` sends one Celery group per suite, one ``execute_item`` task per
(transcript × configuration). No chord: a chord needs its header's results and does not
survive a lost worker; instead each finishing item checks whether it was the last one
(``items.maybe_finish``). Every item is safe to execute twice: the run's claim (queued ->
running, fenced by its attempt number) lets one executor in, a duplicate finds it running
or done and only records what it sees. So a redelivered task (``acks_late`` after a
SIGKILLed worker), a resumed suite and a second ``suite run`` never duplicate a run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from celery import group
from celery.signals import worker_ready
from django.conf import settings
from django.db import transaction

from sessions_app.models import Transcript

from . import items
from . import replay_glue as glue
from .configs import SuiteInputError, check_size
from .models import Suite, SuiteItem
from .progress import SuiteProgress, SuiteProgressData, suite_progress_data
from .tasks import execute_item

log = logging.getLogger(__name__)

NAME_MAX = 200
WORKER_LOST = ("worker stopped", "worker restarted")  # replay_app's reaper messages


def suite_create(
    *,
    owner: Any,
    name: str,
    transcripts: Sequence[Transcript],
    configs: Sequence[Mapping[str, Any]],
    summarizer: str = "offline",
    grid_keys: Sequence[str] = (),
    source: Mapping[str, Any] | None = None,
    max_attempts: int = 2,
    enqueue: bool = True,
    llm: glue.LLMOptions | None = None,
    replicates: int = 1,
) -> Suite:
    """A suite with one queued run per transcript × configuration (all or nothing);
    ``replicates``: N runs of each with a model summariser (one family per transcript ×
    configuration: ``replay_app/runs/replicates.py``)."""
    name = name.strip()
    if not name:
        raise SuiteInputError("give the suite a name")
    if len(name) > NAME_MAX:
        raise SuiteInputError(f"the name is {len(name)} characters; at most {NAME_MAX}")
    if summarizer not in glue.SUMMARIZERS:
        known = ", ".join(glue.SUMMARIZERS)
        raise SuiteInputError(f"unknown summarizer {summarizer!r} for a suite (known: {known})")
    if not 1 <= replicates <= glue.MAX_REPLICATES:
        raise SuiteInputError(f"replicates: 1 to {glue.MAX_REPLICATES}, not {replicates}")
    if replicates > 1 and summarizer not in glue.llm.PROVIDERS:
        raise SuiteInputError(
            f"replicates need a model summariser: the {summarizer} summaries are the same "
            "every time"
        )
    unique = list({t.pk: t for t in transcripts}.values())
    if any(t.owner_id != owner.pk for t in unique):
        raise SuiteInputError("a suite can only hold your own transcripts")
    check_size(configs, len(unique), replicates)
    if Suite.objects.filter(owner=owner, name=name).exists():
        raise SuiteInputError(f"you already have a suite named {name!r}")
    with transaction.atomic():
        suite = Suite.objects.create(
            owner=owner,
            name=name,
            summarizer=summarizer,
            configs=[dict(c) for c in configs],
            grid_keys=list(grid_keys),
            source=dict(source or {}),
            max_attempts=max(1, max_attempts),
            replicates=replicates,
        )
        for transcript in unique:
            for index, config in enumerate(configs):
                family = f"suite-{suite.pk}-t{transcript.pk}-c{index}"
                for replicate in range(replicates):
                    try:
                        run = glue.create_run(
                            owner=owner, transcript=transcript, config=config,
                            summarizer=summarizer, llm=llm,
                            replicate=(replicate, replicates, family) if replicates > 1 else None,
                        )  # fmt: skip
                    except ValueError as exc:
                        raise SuiteInputError(str(exc)) from None
                    SuiteItem.objects.create(
                        suite=suite, transcript=transcript, config_index=index,
                        replicate=replicate, run=run,
                    )  # fmt: skip
        if enqueue:
            transaction.on_commit(lambda: suite_enqueue(suite))
    return suite


def suite_enqueue(suite: Suite, items: Iterable[int] | None = None) -> int:
    """Queue one task per item (default: every item whose run is not finished)."""
    if items is None:
        items = (
            suite.items.exclude(run__status__in=glue.TERMINAL)
            .exclude(run=None)
            .values_list("pk", flat=True)
        )
    ids = list(items)
    if ids:
        group(execute_item.s(pk) for pk in ids).apply_async()
    return len(ids)


def suite_cancel(*, suite: Suite) -> int:
    """Stop the suite: queued runs are cancelled now, running ones at their next batch."""
    Suite.objects.filter(pk=suite.pk).update(cancel_requested=True)
    suite.cancel_requested = True
    run_ids = list(suite.items.exclude(run=None).values_list("run_id", flat=True))
    count = glue.cancel_queued(run_ids)
    items.sync_statuses(suite)
    items.maybe_finish(suite)
    SuiteProgress.push(suite, force=True)
    return count


def suite_resume(
    *, suite: Suite, only_lost: bool = False, queued_lost: bool = True, running_lost: bool = False
) -> int:
    """Queue again what is not done: runs lost with a worker (stale or reaped), and with
    ``only_lost=False`` also failed and cancelled ones (a new attempt each). Finished runs
    are never redone. ``queued_lost=False``: queued runs still have their task in the
    broker (Redis keeps it), so they are not queued again. ``running_lost``: every running
    run is dead (the embedded worker just restarted), however fresh its heartbeat.
    Returns how many were queued."""
    Suite.objects.filter(pk=suite.pk).update(cancel_requested=False, finished_at=None)
    suite.cancel_requested, suite.finished_at = False, None
    queue: list[int] = []
    for item in suite.items.select_related("run").exclude(run=None):
        run = item.run
        assert run is not None
        status = run.status
        if status == glue.RunStatus.DONE:
            continue
        alive = not (running_lost or glue.heartbeat_stale(run))
        if status == glue.RunStatus.RUNNING and alive:
            continue  # alive on some worker
        if status == glue.RunStatus.QUEUED and not queued_lost:
            continue
        if status != glue.RunStatus.QUEUED:
            lost = status == glue.RunStatus.RUNNING or run.error.startswith(WORKER_LOST)
            if only_lost and not lost:
                continue  # failed or cancelled for its own reasons: the user decides
            if not glue.requeue_run(run):
                continue
        queue.append(item.pk)
    items.sync_statuses(suite)
    suite_enqueue(suite, queue)
    items.maybe_finish(suite)  # nothing left to do: finished again
    SuiteProgress.push(suite, force=True)
    return len(queue)


def suites_resume_after_restart() -> int:
    """At worker start: unfinished suites continue (lost runs only; finished kept)."""
    total = 0
    # Only an in-memory queue dies with its process; Redis still holds queued tasks.
    memory = settings.CELERY_BROKER_URL.startswith("memory://")
    for suite in Suite.objects.filter(finished_at=None, cancel_requested=False):
        total += suite_resume(suite=suite, only_lost=True, queued_lost=memory, running_lost=memory)
    return total


# --- executing one item -------------------------------------------------------------------


def suite_state(suite: Suite) -> SuiteProgressData:
    return suite_progress_data(suite)


@worker_ready.connect
def _resume_on_worker_start(**kwargs: Any) -> None:
    # Connected at this app's ready(), after replay_app's reaper (INSTALLED_APPS order),
    # which has failed the runs a dead worker left: unfinished suites give those a new
    # attempt and carry on.
    try:
        count = suites_resume_after_restart()
        if count:
            log.warning("resumed %d suite item(s) left by a stopped worker", count)
    except Exception:  # never keep a worker from starting
        log.exception("suite resume failed at worker start")
