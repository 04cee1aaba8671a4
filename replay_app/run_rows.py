"""The rows a run's pages read on every view, by prepared queries (``ctxlab.prepared``):
the run itself (owned by the viewer, or a 404), a step's row and a page of messages.
Compiling these lookups cost ~0.5-0.8 ms of CPU each per view, about a third of a step
page."""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import router
from django.http import Http404

from ctxlab.prepared import Prepared, instance
from replay_app.models import Run, RunStep
from sessions_app.models import Message

STEP_COLUMNS = (
    "index",
    "source_index",
    "tokens_strategy",
    "tokens_reference",
    "tokens_reported",
    "zones",
    "context",
    "context_len",
    "summary_seq",
    "pending",
)
MESSAGE_COLUMNS = ("index", "role", "preview", "reference_tokens", "name")


@cache
def _run_query(fields: tuple[str, ...]) -> Prepared:
    def make(pk: int, owner: int) -> Any:
        return Run.objects.filter(pk=pk, owner_id=owner).values_list(*fields)

    return Prepared(make, {"pk": 1, "owner": 1}, {"pk": 2, "owner": 2})


def owned_run(
    user: Any, pk: int, *, without: tuple[str, ...] = (), only: tuple[str, ...] = ()
) -> Run:
    """Run ``pk`` if ``user`` owns it (else ``Http404``, as ``get_owned_or_404``), with
    ``only`` its fields (``id`` and ``owner_id`` are added) or every field but ``without``;
    the others load on first use."""
    if not getattr(user, "is_authenticated", False):
        raise Http404("No such object.")
    names = set(only) | {"id", "owner_id"} if only else None
    fields = tuple(
        f.attname
        for f in Run._meta.concrete_fields
        if (f.attname in names if names else f.name not in without)
    )
    using = router.db_for_read(Run)
    rows = _run_query(fields).rows(using, pk=int(pk), owner=int(user.pk))
    if not rows:
        raise Http404("No such object.")
    run: Run = instance(Run, fields, rows[0], using)
    return run


@cache
def _step_query() -> Prepared:
    def make(run: int, index: int) -> Any:
        return RunStep.objects.filter(run_id=run, index=index).values_list(*STEP_COLUMNS)

    return Prepared(make, {"run": 1, "index": 1}, {"run": 2, "index": 2})


def step_row(run: Run, index: int) -> tuple[Any, ...] | None:
    """``STEP_COLUMNS`` of the run's step ``index``, or None."""
    rows = _step_query().rows(router.db_for_read(RunStep), run=run.pk, index=index)
    return rows[0] if rows else None


@cache
def _messages_query() -> Prepared:
    def make(transcript: int, start: int, end: int) -> Any:
        rows = Message.objects.filter(transcript_id=transcript, index__gte=start, index__lt=end)
        return rows.order_by("index").values_list(*MESSAGE_COLUMNS)

    return Prepared(
        make, {"transcript": 1, "start": 1, "end": 2}, {"transcript": 2, "start": 3, "end": 4}
    )


def message_rows(transcript_id: int, start: int, end: int) -> list[tuple[Any, ...]]:
    """``MESSAGE_COLUMNS`` of messages ``start``..``end - 1`` of a transcript, in order."""
    using = router.db_for_read(Message)
    return _messages_query().rows(using, transcript=transcript_id, start=start, end=end)
