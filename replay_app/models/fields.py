"""JSON columns stored smaller, read back unchanged (migrations see plain JSONFields).

``PackedJSONField``: a JSONField whose long values are stored zlib-compressed.
``IndexListField``: a list of source indexes, stored as its runs when that is shorter.

A run's event changes, its analyses, its cost ledger and its summary-input pieces are
repetitive JSON (the same keys and reasons thousands of times): compressed they take a
fifth to a tenth of the room. A value whose JSON is longer than ``PACK_OVER`` characters
is stored as the JSON *string* ``"packed:" + base64(zlib(json))``; shorter values (and
every value written before this field existed) stay plain JSON. Reading gives back the
value either way, so queries that read the column (``values_list`` included) see what was
written; no code filters on the inside of these columns (a packed value cannot be).

On PostgreSQL a short value holding an object of several keys is stored as the JSON
string ``"json:" + json``: jsonb gives an object's keys back sorted (shorter first), and
these columns carry transcript content (a modified message's tool input) whose key order
is the agent's. SQLite keeps the JSON text as written, so its values stay plain.
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

from django.db import models
from django.db.models.expressions import Expression

from ctxlab.engine.core.records import SourceIndexes

PACK_OVER = 400  # characters of JSON; below this the base64 framing costs more than it saves
PREFIX = "packed:"
ORDERED = "json:"  # PostgreSQL: a short value whose object keys jsonb would reorder


def _has_keys_to_order(value: Any) -> bool:
    """True when ``value`` holds an object of two keys or more (at any depth)."""
    if isinstance(value, dict):
        return len(value) > 1 or any(_has_keys_to_order(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_keys_to_order(v) for v in value)
    return False


def pack(
    value: Any, encoder: type[json.JSONEncoder] | None = None, keep_order: bool = False
) -> Any:
    """The value to store: ``value`` itself, or its packed string when that is shorter
    (``keep_order``: a short value with keys to order as its ``ORDERED`` JSON text)."""
    if value is None or isinstance(value, str | Expression):
        return value
    text = json.dumps(value, cls=encoder, ensure_ascii=False, separators=(",", ":"))
    if len(text) <= PACK_OVER:
        return ORDERED + text if keep_order and _has_keys_to_order(value) else value
    return packed_text(text) or value


def packed_text(text: str) -> str | None:
    """The packed string of a value's compact JSON ``text`` (``PREFIX``, base64 of its
    zlib), when it is longer than ``PACK_OVER`` and the packed string is shorter; else None."""
    if len(text) <= PACK_OVER:
        return None
    packed = PREFIX + base64.b64encode(zlib.compress(text.encode("utf-8"), 6)).decode("ascii")
    return packed if len(packed) < len(text) else None


def unpack(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(PREFIX):
        return json.loads(zlib.decompress(base64.b64decode(value[len(PREFIX) :])))
    if isinstance(value, str) and value.startswith(ORDERED):
        return json.loads(value[len(ORDERED) :])
    return value


class PackedJSONField(models.JSONField):
    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if not prepared:
            value = self.get_prep_value(value)
        keep_order = connection.vendor == "postgresql"  # jsonb sorts keys; SQLite keeps text
        value = pack(value, self.encoder, keep_order)
        return super().get_db_prep_value(value, connection, prepared=True)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return unpack(super().from_db_value(value, expression, connection))

    def deconstruct(self) -> Any:
        # The column is a JSON column like any other: migrations see a JSONField, so
        # switching a field to packing needs no table rewrite.
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs


RUNS = "runs:"  # an index list stored as its runs: "runs:" + JSON [start, end, start, ...]


def index_runs(value: Any) -> SourceIndexes | None:
    """``value`` (a list of ints, or ``SourceIndexes``) as runs when they store shorter
    than the list (half as many bounds as indexes or fewer); None otherwise."""
    if isinstance(value, SourceIndexes):
        return value
    if not isinstance(value, list | tuple) or len(value) < 4:
        return None
    if not all(type(i) is int for i in value):
        return None
    runs = SourceIndexes.join(value)
    return runs if len(runs.runs) * 4 <= len(value) else None


class IndexListField(PackedJSONField):
    """A list of source indexes (a summary's messages): stored as its runs of consecutive
    indexes when that is shorter (a summary of summaries lists every message behind them:
    7.6 million indexes for Aider's 640 summaries of a 20,000-message replay, a few runs
    each), else as a ``PackedJSONField``; read back as the list either way. The row may be
    given ``SourceIndexes`` (the engine's runs), stored without listing them."""

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if not prepared:
            value = self.get_prep_value(value)
        runs = index_runs(value)
        if runs is not None:
            value = RUNS + json.dumps([i for run in runs.runs for i in run], separators=(",", ":"))
        elif isinstance(value, tuple):
            value = list(value)
        return super().get_db_prep_value(value, connection, prepared=True)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        value = super().from_db_value(value, expression, connection)
        if isinstance(value, str) and value.startswith(RUNS):
            bounds = json.loads(value[len(RUNS) :])
            return list(SourceIndexes(bounds))
        return value


# The stored order of ZonesField lists: never reorder; a new key goes at the end.
ZONE_KEYS = (
    "system",
    "tools",
    "unseen",
    "summary",
    "compactable",
    "reserved_recent",
    "output_reserve",
    "free",
    "window",
    "threshold",
    "not_in_file",
)
_ZONE_SET = frozenset(ZONE_KEYS)
# Keys ``Zones.as_dict`` writes only when non-zero.
OPTIONAL_ZONE_KEYS = frozenset({"not_in_file"})


def pack_zones(zones: Any) -> Any:
    """A step's zones as stored: the list of values in ``ZONE_KEYS`` order when the dict
    is a whole ``Zones.as_dict()`` (a zero optional zone it left out is stored as 0), else
    the value as it is."""
    if (
        isinstance(zones, dict)
        and zones.keys() <= _ZONE_SET
        and _ZONE_SET - zones.keys() <= OPTIONAL_ZONE_KEYS
    ):
        return [zones.get(k, 0) for k in ZONE_KEYS]
    return zones


class ZonesField(models.JSONField):
    """A step's zones (``Zones.as_dict()``), one row per step: stored as the list of values
    in ``ZONE_KEYS`` order (about a quarter of the dict's JSON), read back as the dict.
    A dict with other keys, and every row written before, stays a dict."""

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if not prepared:
            value = self.get_prep_value(value)
        return super().get_db_prep_value(pack_zones(value), connection, prepared=True)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        value = super().from_db_value(value, expression, connection)
        if isinstance(value, list):
            # Read back as ``Zones.as_dict()`` writes it: a zero optional zone left out.
            zones = dict(zip(ZONE_KEYS, value, strict=False))
            return {k: v for k, v in zones.items() if v or k not in OPTIONAL_ZONE_KEYS}
        return value

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()  # a JSON column, as for PackedJSONField
        return name, "django.db.models.JSONField", args, kwargs
