"""Celery tasks of suites: load an id, call one service, nothing else."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.db import OperationalError

from . import items

log = logging.getLogger(__name__)


@shared_task(
    name="suites_app.execute_item",
    bind=True,
    acks_late=True,  # a SIGKILLed worker's item goes back to the queue (redelivered)
    reject_on_worker_lost=True,
    max_retries=200,  # RetryLater only waits for another live worker: cheap
)
def execute_item(self: Any, item_id: int) -> str:
    """Execute one suite item (transcript × configuration) and record its summary row."""
    try:
        return items.item_execute(item_id)
    except items.RetryLater as wait:
        raise self.retry(countdown=wait.countdown) from None
    except OperationalError as exc:  # the database went away for a moment
        if self.request.retries >= 3:
            raise
        raise self.retry(countdown=2**self.request.retries, exc=exc) from None
