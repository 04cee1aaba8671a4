"""``JSONTextField``: a JSON value kept as its text, so it reads back exactly as written.

Django's ``JSONField`` is ``jsonb`` on PostgreSQL, which stores an object with its keys
sorted (shorter first) and returns them in that order, not the order the agent sent them.
A tool input is serialised by several strategies (CoPaw's formatter, CowAgent's and
PicoClaw's estimates, the reference count of a modified copy), so a reordered input is a
different text: other token counts, another compaction step, and the imported bytes no
longer kept. As text the column reads back the same on SQLite and on PostgreSQL.

The text is compact JSON with ASCII escapes (what the import always wrote on SQLite): a
lone surrogate or a NUL from an untrusted transcript stays storable on PostgreSQL, and a
plain ASCII search (``conversation.db_prefilter_safe``) reads the same inside it.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core import exceptions
from django.db import models
from django.db.models.expressions import Expression

_ENCODER = json.JSONEncoder(separators=(",", ":"))


def dumps(value: Any) -> str:
    """The stored text of a JSON value (keys in the value's own order)."""
    return _ENCODER.encode(value)


class JSONTextField(models.TextField):  # type: ignore[type-arg]  # not generic at run time
    """A JSON value in a text column: Python value in, the same value (key order included)
    out. No JSON lookups (``field__key``): nothing filters on the inside of these columns
    except ``icontains`` over the text (the transcript search's pre-selection)."""

    description = "A JSON value stored as text (key order kept)"
    # For the django-stubs mypy plugin: values in and out are JSON values, not str.
    _pyi_private_set_type: Any
    _pyi_private_get_type: Any

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return None if value is None else json.loads(value)

    def to_python(self, value: Any) -> Any:
        # Forms and deserialisation hand over text; model code hands over values.
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise exceptions.ValidationError(f"not JSON: {exc}", code="invalid") from exc
        return value

    def get_prep_value(self, value: Any) -> Any:
        if value is None or isinstance(value, Expression):
            return value
        return dumps(value)

    def value_to_string(self, obj: models.Model) -> Any:
        # dumpdata: the value itself, as JSONField gives it (loaddata's to_python keeps it).
        return self.value_from_object(obj)

    def formfield(self, **kwargs: Any) -> Any:
        return super().formfield(**{"form_class": forms.JSONField, **kwargs})
