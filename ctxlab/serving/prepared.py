"""Queries the pages run on every view, compiled to SQL once per process.

Django builds each query's SQL from its query tree at every execution: ~0.3-0.8 ms of CPU
for the lookups a page view makes (the session row, the user row, the run, a step's row,
a page of messages), more than the database takes to answer them, and 3-6 of them were
a third of a step page's CPU. A ``Prepared`` query is an ordinary ``values_list``
queryset compiled once per database alias; each call puts the new values in place of the
compiled parameters and converts the rows with the compiler's own converters, so the
result is what the queryset would give.

Where each argument lands among the parameters is found by compiling with two sets of
sample values; a value is adapted by its type (the same adapters Django's lookups use).
A queryset this cannot place (an argument that lands nowhere, or twice, or adapted
differently) raises ``ValueError`` when first compiled: a programming error, caught by the
tests of each use.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models import Model, QuerySet

INT64 = (-(2**63), 2**63 - 1)


def _adapt(value: Any, connection: Any) -> Any:
    """A lookup value as the compiler passes it to the database driver."""
    if isinstance(value, dt.datetime):
        return connection.ops.adapt_datetimefield_value(value)
    if isinstance(value, bool | int | str):
        return value
    raise ValueError(f"no adapter for {type(value).__name__} arguments")


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[int, ...]  # params index of each argument, in argument order
    converters: dict[int, tuple[list[Any], Any]]
    columns: int  # the queryset's own columns (ordering may add others after them)


class Prepared:
    """``make(**arguments)`` (a ``values_list`` queryset), compiled once per alias.

    ``samples`` and ``others``: two sets of arguments, every value different between them,
    of the types later calls pass (``int``, ``str``, ``bool``, aware ``datetime``)."""

    def __init__(
        self,
        make: Callable[..., QuerySet[Any, Any]],
        samples: dict[str, Any],
        others: dict[str, Any],
    ) -> None:
        self.make = make
        self.names = tuple(samples)
        self.samples, self.others = samples, others
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def _compile(self, alias: str) -> _Compiled:
        connection = connections[alias]
        compiler = self.make(**self.samples).query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        slots = []
        for name in self.names:
            changed = {**self.samples, name: self.others[name]}
            other_sql, other_params = self.make(**changed).query.get_compiler(alias).as_sql()
            moved = [i for i, (a, b) in enumerate(zip(params, other_params, strict=True)) if a != b]
            if other_sql != sql or len(moved) != 1:
                raise ValueError(f"argument {name!r} is not one parameter of the query")
            for values in (self.samples, changed):
                given = (params if values is self.samples else other_params)[moved[0]]
                if _adapt(values[name], connection) != given:
                    raise ValueError(f"argument {name!r} is adapted otherwise by the query")
            slots.append(moved[0])
        fields = [column[0] for column in compiler.select[: compiler.col_count]]
        converters = compiler.get_converters(fields)
        return _Compiled(sql, tuple(params), tuple(slots), converters, compiler.col_count)

    def compiled(self, using: str = "default") -> _Compiled:
        """The SQL for ``using``, compiled on first use (served processes compile before
        they listen: ~1-2 ms a query, see ``ctxlab.serving.page_pool.warm_up``)."""
        compiled = self._compiled.get(using)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.setdefault(using, self._compile(using))
        return compiled

    def rows(self, using: str = "default", **arguments: Any) -> list[tuple[Any, ...]]:
        """The queryset's rows for ``arguments`` (as ``list(make(**arguments))``)."""
        compiled = self.compiled(using)
        if any(type(v) is int and not INT64[0] <= v <= INT64[1] for v in arguments.values()):
            return []  # no column holds it (a URL's 30-digit id): no row, as Django answers
        connection = connections[using]
        params = list(compiled.params)
        for name, slot in zip(self.names, compiled.slots, strict=True):
            params[slot] = _adapt(arguments[name], connection)
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            found = [row[: compiled.columns] for row in cursor.fetchall()]
        if not compiled.converters:
            return [tuple(row) for row in found]
        converters = list(compiled.converters.items())
        out = []
        for found_row in found:  # as SQLCompiler.apply_converters
            row = list(found_row)
            for position, (functions, expression) in converters:
                value = row[position]
                for function in functions:
                    value = function(value, expression, connection)
                row[position] = value
            out.append(tuple(row))
        return out


def instance(model: type[Model], fields: Sequence[str], row: Sequence[Any], using: str) -> Any:
    """A ``model`` instance from a row of ``fields`` (attribute names in the model's field
    order); the other fields are deferred, loaded on first use as with ``only()``."""
    return model.from_db(using, list(fields), list(row))
