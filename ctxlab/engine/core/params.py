"""Strategy parameters: each under the original's own name, with default, range and help.

``validate(specs, given)`` returns the complete, typed parameter dict or raises a
``ValueError`` that names the parameter and its allowed range or choices.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

ParamType = Literal["int", "float", "bool", "str", "list", "json"]
_BARE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


@dataclass(frozen=True, slots=True)
class Param:
    """One tunable value. ``origin`` says where it lives in the original system
    (config key, constant or ctor default) so a setting can be exported back."""

    name: str
    default: Any
    help: str
    type: ParamType = "int"
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] = ()
    origin: str = ""

    def describe_range(self) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.min is not None and self.max is not None:
            return f"{self.min:g}..{self.max:g}"
        if self.min is not None:
            return f">= {self.min:g}"
        if self.max is not None:
            return f"<= {self.max:g}"
        return "any " + self.type

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "default": self.default,
            "help": self.help,
            "type": self.type,
            "min": self.min,
            "max": self.max,
            "choices": list(self.choices),
            "origin": self.origin,
        }


def parse_value(spec: Param, raw: str) -> Any:
    """Convert a CLI/form string (``--set key=value``) to the parameter's type."""
    text = raw.strip()
    try:
        if spec.type == "int":
            return int(text)
        if spec.type == "float":
            return float(text)
        if spec.type == "bool":
            low = text.lower()
            if low in {"1", "true", "yes", "on"}:
                return True
            if low in {"0", "false", "no", "off"}:
                return False
            raise ValueError(text)
        if spec.type == "list":
            if text.startswith("["):
                value = json.loads(text)
                if not isinstance(value, list):
                    raise ValueError(text)
                return value
            return [part.strip() for part in text.split(",") if part.strip()]
        if spec.type == "json":
            if _BARE_WORD.fullmatch(text) and text not in ("true", "false", "null"):
                # A JSON string value given without quotes (langchain_trim's start_on
                # "human", as stored or typed): not JSON text, but unambiguous.
                return text
            return json.loads(text)
    except (ValueError, json.JSONDecodeError):
        raise ValueError(
            f"{spec.name}={raw!r} is not a valid {spec.type} ({spec.describe_range()})"
        ) from None
    return text


def _check(spec: Param, value: Any) -> Any:
    bad = ValueError(f"{spec.name}={value!r} is not a valid {spec.type} ({spec.describe_range()})")
    if spec.type == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise bad
    elif spec.type == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad
        value = float(value)
    elif spec.type == "bool":
        if not isinstance(value, bool):
            raise bad
    elif spec.type == "str":
        if not isinstance(value, str):
            raise bad
    elif spec.type == "list":
        if not isinstance(value, list | tuple):
            raise bad
        value = list(value)
    if spec.choices and value not in spec.choices:
        raise ValueError(f"{spec.name}={value!r} is not allowed ({spec.describe_range()})")
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if numeric and (
        (spec.min is not None and value < spec.min) or (spec.max is not None and value > spec.max)
    ):
        raise ValueError(f"{spec.name}={value!r} is out of range ({spec.describe_range()})")
    return value


def validate(
    specs: Sequence[Param], given: Mapping[str, Any] | None, *, strategy: str = ""
) -> dict[str, Any]:
    """Defaults overlaid with ``given``; strings are parsed. Raises ValueError naming the
    parameter (unknown names list the known ones)."""
    by_name = {p.name: p for p in specs}
    out = {p.name: p.default for p in specs}
    for name, value in (given or {}).items():
        spec = by_name.get(name)
        if spec is None:
            known = ", ".join(sorted(by_name)) or "none"
            owner = f" for strategy {strategy!r}" if strategy else ""
            raise ValueError(f"unknown parameter {name!r}{owner} (known: {known})")
        if isinstance(value, str) and spec.type != "str":
            value = parse_value(spec, value)
        out[name] = _check(spec, value)
    return out


def parse_assignments(items: Sequence[str]) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}`` (values parsed later by ``validate``)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--set expects key=value, got {item!r}")
        out[name.strip()] = value
    return out
