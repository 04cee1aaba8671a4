"""A run's step rows written straight from the engine's StepRecords.

A 20,000-message replay writes ~10,000 ``RunStep`` rows; building a model instance per
step and letting ``bulk_create`` prepare each of its 11 fields cost more than the rows'
content (about a quarter of the worker's writes). Here each step is one tuple of column
values and a batch is one prepared INSERT run by ``executemany`` (as the import writes
messages). The stored values are what ``RunStep.from_record`` + ``bulk_create`` store:
JSON columns through the field's own adapter, compact JSON text on SQLite, zones as the
list ``ZonesField`` keeps.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection

from ctxlab.engine.core.records import StepRecord
from replay_app.models import Run, RunStep
from replay_app.models.fields import pack_zones

Row = tuple[Any, ...]

# The columns written, in order (every concrete field but the primary key).
_FIELDS = ("run", "index", "source_index", "tokens_strategy", "tokens_reference",
           "tokens_reported", "zones", "context", "context_len", "summary_seq", "pending")  # fmt: skip


def _json_writer(field_name: str) -> Callable[[Any], Any]:
    if connection.vendor == "sqlite":
        return json.JSONEncoder(separators=(",", ":")).encode
    field = RunStep._meta.get_field(field_name)
    return lambda value: field.get_db_prep_save(value, connection)  # type: ignore[union-attr]


class StepRows:
    """Rows of one run's steps: ``row(record)`` per step, ``write(rows)`` per flush."""

    def __init__(self, run: Run) -> None:
        by_name = {f.name: f for f in RunStep._meta.concrete_fields if not f.primary_key}
        if set(by_name) != set(_FIELDS):  # a new column must be written here too
            raise RuntimeError(f"RunStep columns changed: {sorted(set(by_name) ^ set(_FIELDS))}")
        fields = [by_name[name] for name in _FIELDS]
        quote = connection.ops.quote_name
        self.sql = "INSERT INTO {} ({}) VALUES ({})".format(
            quote(RunStep._meta.db_table),
            ", ".join(quote(str(f.column)) for f in fields),
            ", ".join(["%s"] * len(fields)),
        )
        self.run_id = run.pk
        self.zones = _json_writer("zones")
        self.context = _json_writer("context")
        self.pending = _json_writer("pending")
        self.empty_pending = self.pending([])

    def row(self, record: StepRecord) -> Row:
        values = pack_zones(record.zones.as_dict())
        tokens = record.tokens
        return (
            self.run_id,
            record.index,
            record.source_index,
            tokens.strategy,
            tokens.reference,
            tokens.reported,
            self.zones(values),
            self.context([list(r) for r in record.context]),
            record.context_len,
            record.summary_id,
            self.pending(list(record.pending)) if record.pending else self.empty_pending,
        )

    def write(self, rows: Sequence[Row]) -> None:
        if rows:
            with connection.cursor() as cursor:
                cursor.executemany(self.sql, rows)
