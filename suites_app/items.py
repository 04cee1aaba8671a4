"""Executing one suite item (the task's work): the run's replay, retried up to the suite's
attempts, its summary row recorded, and the suite marked finished when nothing is left
(see ``services`` for why every item is safe to execute twice)."""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db.models import F
from django.utils import timezone

from ctxlab.engine.core.catalogue import METRICS

from . import replay_glue as glue
from .models import Suite, SuiteItem
from .progress import SuiteProgress

log = logging.getLogger(__name__)


class RetryLater(Exception):
    """Another live worker holds the run: look again in ``countdown`` seconds."""

    def __init__(self, countdown: float) -> None:
        super().__init__(f"run busy elsewhere; retry in {countdown:.0f} s")
        self.countdown = countdown


def item_execute(item_id: int) -> str:
    """Run (or re-run, up to the suite's attempts) one item's replay; record its summary.
    RetryLater when another live worker is executing it."""
    item = (
        SuiteItem.objects.select_related("suite", "run", "run__transcript")
        .filter(pk=item_id)
        .first()
    )
    if item is None:  # the suite was deleted while its tasks were queued
        return "missing"
    suite, run = item.suite, item.run
    if run is None:
        return "missing"
    if suite.cancel_requested and run.status == glue.RunStatus.QUEUED:
        glue.cancel_queued([run.pk])
        run.refresh_from_db()
    while True:
        if run.status == glue.RunStatus.RUNNING:
            if not glue.heartbeat_stale(run):
                raise RetryLater(max(2.0, glue.stale_seconds() / 2))
            log.warning("suite %s: run %s lost its worker; new attempt", suite.pk, run.pk)
            glue.requeue_run(run)
        if run.status == glue.RunStatus.QUEUED:
            started = time.monotonic()
            run = glue.execute_run(run)
            if run.status == glue.RunStatus.DONE:
                item.seconds = time.monotonic() - started
        if (
            run.status == glue.RunStatus.FAILED
            and run.attempts < suite.max_attempts
            and not suite.cancel_requested
            and glue.requeue_run(run)
        ):
            continue  # the per-run retry: a new attempt in this task
        break
    _record(item, run)
    # Forced whenever nothing is left to run, whoever marked the suite finished: the item
    # recorded last must be heard even if another finishing item pushed a moment ago (the
    # throttle would drop it, leaving the page's results without this item's numbers).
    SuiteProgress.push(suite, force=maybe_finish(suite))
    return str(run.status)


def summary_row(run: glue.Run) -> dict[str, Any]:
    """The run's catalogued numeric metrics, flat (what the results page aggregates)."""
    metrics = run.metrics or {}
    row: dict[str, Any] = {}
    for key in METRICS:
        value = metrics.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            row[key] = value
    findings = metrics.get("findings")
    if isinstance(findings, dict):
        row["findings_total"] = sum(v for v in findings.values() if isinstance(v, int))
    row.update(glue.retention_of(run))
    return row


def _record(item: SuiteItem, run: glue.Run) -> None:
    item.status = run.status
    item.summary = summary_row(run) if run.status == glue.RunStatus.DONE else {}
    item.finished_at = run.finished_at
    item.save(update_fields=["status", "summary", "seconds", "finished_at"])


def sync_statuses(suite: Suite) -> None:
    """Each item's row to its run's status: an ended run's item recorded in full (its
    summary row, as its task records it), a queued or running one's status alone.

    An ended run whose item says otherwise is a task that has not recorded it: a worker
    killed after its run's last write landed (the database commits a statement whose client
    died) takes the task with it, and the broker redelivers that task only after its
    visibility timeout, so a finished or cancelled suite's item rows would say running, or
    done without its numbers, until then. A task still recording its own item writes the
    same row after this."""
    behind = suite.items.select_related("run").exclude(run=None).exclude(status=F("run__status"))
    for item in behind:
        assert item.run is not None
        if item.run.status in glue.TERMINAL:
            _record(item, item.run)
        else:
            SuiteItem.objects.filter(pk=item.pk).update(status=item.run.status)


def maybe_finish(suite: Suite) -> bool:
    """Mark the suite finished when no run is left to execute, its ended runs' items
    recorded first (``sync_statuses``); whether none is left."""
    active = suite.items.exclude(run__status__in=glue.TERMINAL).exclude(run=None).exists()
    if not active:
        sync_statuses(suite)
        updated = Suite.objects.filter(pk=suite.pk, finished_at=None).update(
            finished_at=timezone.now()
        )
        if updated:
            suite.refresh_from_db()
    return not active
