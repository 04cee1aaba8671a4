"""The rows a run's pages read on every view, by prepared queries (``ctxlab.serving.prepared``):
the run itself (owned by the viewer, or a 404), a step's row and a page of messages.
Compiling these lookups cost ~0.5-0.8 ms of CPU each per view, about a third of a step
page."""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import router
from django.http import Http404

from ctxlab.serving.prepared import Prepared, instance
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


_SHAPES: set[tuple[str, ...]] = set()  # every field set a view reads runs with (warm)


def run_fields(*, only: tuple[str, ...] = (), without: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The run columns a view reads: ``only`` these (with ``id`` and ``owner_id``), or every
    one but ``without``; the others load on first use, as with ``only()``/``defer()``.
    Views make theirs at import, so a served process compiles them before it listens."""
    names = {*only, "id", "owner_id"}
    fields = tuple(
        f.attname
        for f in Run._meta.concrete_fields
        if (f.attname in names if only else f.name not in without)
    )
    _SHAPES.add(fields)
    return fields


def owned_run(user: Any, pk: int, fields: tuple[str, ...]) -> Run:
    """Run ``pk`` with its ``fields`` (``run_fields``) if ``user`` owns it, else
    ``Http404`` (as ``get_owned_or_404``: another user's run is not revealed)."""
    if not getattr(user, "is_authenticated", False):
        raise Http404("No such object.")
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


def warm() -> None:
    """Compile every lookup now (a served process's warm-up), not in its first view."""
    for fields in list(_SHAPES):
        _run_query(fields).compiled(router.db_for_read(Run))
    _step_query().compiled(router.db_for_read(RunStep))
    _messages_query().compiled(router.db_for_read(Message))
