"""A run's rows written straight from the engine's records.

A 20,000-message replay writes ~10,000 ``RunStep`` rows; building a model instance per
step and letting ``bulk_create`` prepare each of its 11 fields cost more than the rows'
content (about a quarter of the worker's writes). Here each step is one tuple of column
values and a batch is one prepared INSERT run by ``executemany`` (as the import writes
messages). The stored values are what ``RunStep.from_record`` + ``bulk_create`` store:
JSON columns through the field's own adapter, compact JSON text on SQLite, zones as the
list ``ZonesField`` keeps.

The step's events, summaries, findings and the run's offloaded files go the same way
(``Inserts``): their values are the models' (``models.rows.event_values`` ...), held in
light rows while the worker annotates them (``NewEvent``, ``NewSummary``: costs, textstore
pieces), then one prepared INSERT per table and flush, every value prepared by its field
as ``bulk_create`` prepares it (``get_db_prep_save``; on SQLite an int, str or bool that
the field would store as it is skips the call): the same rows, columns, bytes and ids,
without a model instance, a compiled multi-row INSERT or, with ``DEBUG``, the query log's
quoting of every parameter (a summary's inline input is megabytes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper

from ctxlab.engine.core.records import Event, Finding, StepRecord, SummaryRecord, Zones
from replay_app.models import Run, RunEvent, RunFinding, RunOffload, RunStep, RunSummary
from replay_app.models.fields import ZONE_KEYS, PackedJSONField, pack_zones, packed_text
from replay_app.models.rows import event_values, finding_values, summary_values

Row = tuple[Any, ...]

# The columns written, in order (every concrete field but the primary key).
_FIELDS = ("run", "index", "source_index", "tokens_strategy", "tokens_reference",
           "tokens_reported", "zones", "context", "context_len", "summary_seq", "pending")  # fmt: skip

# A zones dataclass's values in ``ZONE_KEYS`` order, read at C speed: the list
# ``pack_zones(zones.as_dict())`` stores, as long as ``Zones`` has exactly those fields
# (``as_dict`` leaves a zero ``not_in_file`` out, which ``pack_zones`` stores as 0).
_ZONES = attrgetter(*ZONE_KEYS) if {f.name for f in fields(Zones)} == set(ZONE_KEYS) else None


def _json_encoder(*, ascii_only: bool = True, compact: bool = True) -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=ascii_only, separators=...)`` (compact: ",", ":";
    else the default ", ", ": ") for the values of these rows (lists, dicts, str, int,
    float, bool, None), its C encoder made once: ``json.dumps`` makes an encoder object
    and a C encoder per call, about half the time of a short list."""
    item, key = (",", ":") if compact else (", ", ": ")
    encoder = json.JSONEncoder(ensure_ascii=ascii_only, separators=(item, key))
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encoder.encode
    as_string = (
        json.encoder.encode_basestring_ascii if ascii_only else json.encoder.encode_basestring
    )
    # (markers, default, encoder, indent, key and item separators, sort_keys, skipkeys,
    # allow_nan): JSONEncoder.iterencode's call, without the circular check (no value of
    # these rows holds itself)
    chunks = make(None, encoder.default, as_string, None, key, item, False, False, True)

    def encode(value: Any) -> str:
        if isinstance(value, str):  # as ``JSONEncoder.encode``: the string alone
            return as_string(value)
        return "".join(chunks(value, 0))

    return encode


def _compact_json() -> Callable[[Any], str]:
    """``json.JSONEncoder(separators=(",", ":")).encode`` for a step row's lists of ints,
    None and strings."""
    return _json_encoder()


def _json_writer(field_name: str) -> Callable[[Any], Any]:
    if connection.vendor == "sqlite":
        return _compact_json()
    field = RunStep._meta.get_field(field_name)
    return lambda value: field.get_db_prep_save(value, connection)  # type: ignore[union-attr]


def _insert_sql(model: type[models.Model], columns: Sequence[models.Field[Any, Any]]) -> str:
    quote = connection.ops.quote_name
    return "INSERT INTO {} ({}) VALUES ({})".format(
        quote(model._meta.db_table),
        ", ".join(quote(str(f.column)) for f in columns),
        ", ".join(["%s"] * len(columns)),
    )


def _columns(model: type[models.Model], names: Sequence[str]) -> list[models.Field[Any, Any]]:
    """``model``'s fields by ``names``: every concrete field but the primary key, or the
    model changed and its rows must be written here too."""
    by_name = {f.name: f for f in model._meta.concrete_fields if not f.primary_key}
    if set(by_name) != set(names):
        changed = sorted(set(by_name) ^ set(names))
        raise RuntimeError(f"{model.__name__} columns changed: {changed}")
    return [by_name[name] for name in names]


class StepRows:
    """Rows of one run's steps: ``row(record)`` per step, ``write(rows)`` per flush."""

    def __init__(self, run: Run) -> None:
        self.sql = _insert_sql(RunStep, _columns(RunStep, _FIELDS))
        self.run_id = run.pk
        self.zones = _json_writer("zones")
        self.context = _json_writer("context")
        self.pending = _json_writer("pending")
        self.empty_pending = self.pending([])

    def row(self, record: StepRecord) -> Row:
        zones = record.zones
        # The zone values as a tuple (JSON writes it as the list) when Zones is a dataclass
        # of exactly ZONE_KEYS; the context's range tuples and the pending tuple likewise
        # (the JSON of a tuple is the list's, on either backend).
        values = (
            _ZONES(zones)
            if _ZONES is not None and type(zones) is Zones
            else pack_zones(zones.as_dict())
        )
        tokens = record.tokens
        context = record.context  # many ranges: RangeChunks, which JSON does not know
        return (
            self.run_id,
            record.index,
            record.source_index,
            tokens.strategy,
            tokens.reference,
            tokens.reported,
            self.zones(values),
            self.context(context if type(context) is tuple else list(context)),
            record.context_len,
            record.summary_id,
            self.pending(record.pending) if record.pending else self.empty_pending,
        )

    def write(self, rows: Sequence[Row]) -> None:
        if rows:
            with connection.cursor() as cursor:
                cursor.executemany(self.sql, rows)


# --- events, summaries, findings, offloads ---------------------------------------------


@dataclass(slots=True)
class NewEvent:
    """A ``RunEvent`` row not written yet (``RunEvent.from_event``'s values; the costs and
    the textstore annotate its ``detail`` and ``changes`` before it is written)."""

    seq: int
    step: int
    kind: str
    messages: list[int]
    tokens_before: int
    tokens_after: int
    detail: dict[str, Any]
    changes: list[dict[str, Any]]
    summary_seq: int | None

    @classmethod
    def of(cls, event: Event) -> NewEvent:
        return cls(**event_values(event))


@dataclass(slots=True)
class NewSummary:
    """A ``RunSummary`` row not written yet (``RunSummary.from_record``'s values, the
    model's defaults for the rest: the costs set ``usage``, the textstore ``input_parts``)."""

    seq: int
    step: int
    input: str
    output: str
    input_tokens: int
    output_tokens: int
    usage_estimated: bool
    error: str
    summarizer: str
    messages: Any  # a list of indexes, or SourceIndexes (``IndexListField``)
    input_parts: list[Any] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, record: SummaryRecord, *, with_input: bool = True) -> NewSummary:
        """``with_input=False``: ``input`` empty, the record's not read (stored later)."""
        return cls(**summary_values(record, with_input=with_input))


def finding_row(record: Finding) -> Row:
    """A ``RunFinding`` row's values in ``Inserts`` order (``RunFinding.from_record``'s)."""
    values = finding_values(record)
    return values["step"], values["kind"], values["messages"], values["detail"]


_EVENT_NAMES = tuple(f.name for f in fields(NewEvent))
_SUMMARY_NAMES = tuple(f.name for f in fields(NewSummary))
_FINDING_NAMES = ("step", "kind", "messages", "detail")
_OFFLOAD_NAMES = ("path", "text", "text_parts")

# Internal types whose ``get_db_prep_save`` stores these Python types as they are on SQLite.
_AS_IS: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(
        (
            "IntegerField",
            "PositiveIntegerField",
            "BigIntegerField",
            "PositiveBigIntegerField",
            "SmallIntegerField",
            "PositiveSmallIntegerField",
        ),
        (int, type(None)),
    ),  # fmt: skip
    "CharField": (str,),
    "TextField": (str,),
    "BooleanField": (bool,),
}


def _preparer(column: models.Field[Any, Any], db: BaseDatabaseWrapper) -> Callable[[Any], Any]:
    """The value ``bulk_create`` would send for ``column`` (``pre_save`` of these fields
    is the attribute itself): ``get_db_prep_save``, or what it comes to for the values
    met here (a plain ``JSONField``: the backend's JSON adapter, None as NULL; on SQLite
    a ``PackedJSONField``: ``fields.pack`` then that adapter, ``_packed_json``)."""
    prepare = column.get_db_prep_save
    plain_json = db.vendor == "sqlite" and getattr(column, "encoder", None) is None
    if type(column) is models.JSONField:
        if plain_json:  # SQLite's adapter is ``json.dumps(value, cls=None)``: the same text
            dumps = _json_encoder(compact=False)
            return lambda value: None if value is None else dumps(value)
        adapt, encoder = db.ops.adapt_json_value, column.encoder
        return lambda value: None if value is None else adapt(value, encoder)
    if type(column) is PackedJSONField and plain_json:
        return _packed_json()
    plain = _AS_IS.get(column.get_internal_type()) if db.vendor == "sqlite" else None
    if plain is None:
        return lambda value: prepare(value, db)
    return lambda value: value if type(value) in plain else prepare(value, db)


def _packed_json() -> Callable[[Any], Any]:
    """``PackedJSONField.get_db_prep_save`` on SQLite (no encoder, no key order kept):
    ``fields.pack``'s compact text, packed as it packs (``packed_text``), then
    ``json.dumps`` of what is stored, with the C encoders made once. A packed string is
    ``PREFIX`` and base64, which JSON writes as it is between quotes (no escapes)."""
    text_of = _json_encoder(ascii_only=False)
    dumps = _json_encoder(compact=False)

    def prepare(value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, str):  # stored as it is (a packed or ordered value already)
            return dumps(value)
        packed = packed_text(text_of(value))
        return dumps(value) if packed is None else f'"{packed}"'

    return prepare


class _Table:
    """One model's prepared INSERT: ``run`` first, then ``names``."""

    def __init__(self, model: type[models.Model], names: Sequence[str]) -> None:
        self.columns = _columns(model, ("run", *names))
        self.sql = _insert_sql(model, self.columns)

    def write(self, run_id: int, rows: Sequence[Row]) -> None:
        if not rows:
            return
        db = connections[DEFAULT_DB_ALIAS]  # the thread's own (``connection`` is a proxy)
        prepare = [_preparer(c, db) for c in self.columns[1:]]
        params = [(run_id, *[p(v) for p, v in zip(prepare, row, strict=True)]) for row in rows]
        with db.cursor() as cursor:
            cursor.executemany(self.sql, params)


def store_summary_inputs(
    run_id: int, inputs: Sequence[tuple[int, Any]], *, inline: bool = False
) -> None:
    """Each summary's input as its pieces, its inline text emptied: one prepared UPDATE
    run by ``executemany``, as ``_Table`` inserts (an ``update()`` per row built a query
    per summary: 1,676 of them took 0.6 s after a 20,000-message picoclaw run).
    ``inline``: ``inputs`` are (seq, text), stored inline with no pieces (as a summary row
    is inserted with its input)."""
    if not inputs:
        return
    db = connections[DEFAULT_DB_ALIAS]  # the thread's own (``connection`` is a proxy)
    by_name = {f.name: f for f in RunSummary._meta.concrete_fields}
    text, parts, run, seq = (
        db.ops.quote_name(str(by_name[n].column)) for n in ("input", "input_parts", "run", "seq")
    )
    sql = (
        f"UPDATE {db.ops.quote_name(RunSummary._meta.db_table)} SET {text} = %s, {parts} = %s "
        f"WHERE {run} = %s AND {seq} = %s"
    )
    prepare = _preparer(by_name["input_parts"], db)
    if inline:
        rows = [(text, prepare([]), run_id, s) for s, text in inputs]
    else:
        rows = [("", prepare(p), run_id, s) for s, p in inputs]
    with db.cursor() as cursor:
        cursor.executemany(sql, rows)


class Inserts:
    """One run's event, summary, finding and offload rows: ``write`` per flush (inside the
    flush's transaction), in the order ``bulk_create`` wrote them (same ids)."""

    def __init__(self, run: Run) -> None:
        self.run_id = run.pk
        self.events = _Table(RunEvent, _EVENT_NAMES)
        self.summaries = _Table(RunSummary, _SUMMARY_NAMES)
        self.findings = _Table(RunFinding, _FINDING_NAMES)
        self.offloads = _Table(RunOffload, _OFFLOAD_NAMES)
        self._event_values = attrgetter(*_EVENT_NAMES)
        self._summary_values = attrgetter(*_SUMMARY_NAMES)

    def write(
        self,
        events: Sequence[NewEvent],
        summaries: Sequence[NewSummary],
        findings: Sequence[Row],
        offloads: Sequence[Row],
    ) -> None:
        """``findings``: ``finding_row``s; ``offloads``: (path, text, text_parts)."""
        self.events.write(self.run_id, [self._event_values(e) for e in events])
        self.summaries.write(self.run_id, [self._summary_values(s) for s in summaries])
        self.findings.write(self.run_id, findings)
        self.offloads.write(self.run_id, offloads)
