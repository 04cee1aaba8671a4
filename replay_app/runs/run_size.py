"""What one stored run costs in the database, measured from the rows themselves.

``run_bytes(run)`` sums the stored size of every column of the run's own rows (the run,
its steps, events, summaries, findings, offloads, analysis) and of every shared stored
text the run points at, counted in full as if no other run shared it: the worst case
for one run. Sizes are payload bytes (UTF-8 text, JSON as stored); row and index
overhead are not included.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Func, Sum
from django.db.models.functions import Cast, Coalesce

from replay_app.models import (
    Run,
    RunAnalysis,
    RunEvent,
    RunFinding,
    RunOffload,
    RunStep,
    RunSummary,
    RunText,
    StoredText,
)

RUN_TABLES: tuple[type[models.Model], ...] = (
    RunStep,
    RunEvent,
    RunSummary,
    RunFinding,
    RunOffload,
    RunAnalysis,
    RunText,
)


class _Bytes(Func):
    """Stored bytes of a column as text (PostgreSQL: octet_length; SQLite: blob length)."""

    function = "octet_length"
    output_field = models.BigIntegerField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(
            compiler, connection, template="length(CAST(%(expressions)s AS BLOB))", **extra
        )


def _column_bytes(field: models.Field[Any, Any]) -> Any:
    return Coalesce(_Bytes(Cast(field.attname, models.TextField())), 0)


def _table_bytes(model: type[models.Model], rows: models.QuerySet[Any]) -> int:
    columns = list(model._meta.concrete_fields)
    total = 0
    for field in columns:
        value = rows.aggregate(n=Sum(_column_bytes(field)))["n"]
        total += int(value or 0)
    return total


def run_bytes_by_table(run: Run) -> dict[str, int]:
    """Payload bytes of each table's rows for ``run`` (``storedtext``: the shared texts it
    links, in full)."""
    out = {"run": _table_bytes(Run, Run.objects.filter(pk=run.pk))}
    for model in RUN_TABLES:
        out[model._meta.model_name or model.__name__] = _table_bytes(
            model, model._default_manager.filter(run=run)
        )
    out["storedtext"] = _table_bytes(StoredText, StoredText.objects.filter(links__run=run))
    return out


def run_bytes(run: Run) -> int:
    return sum(run_bytes_by_table(run).values())
