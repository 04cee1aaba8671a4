"""Small display helpers for run pages."""

from __future__ import annotations

import json
from typing import Any

from django import template

from ctxlab.web import display
from replay_app.display import quiet

register = template.Library()


@register.filter
def get_metric(metrics: Any, key: str) -> str:
    """A metric for a table cell: numbers with thousands separators, dicts as k=v, — if absent."""
    if not isinstance(metrics, dict) or metrics.get(key) is None:
        return "—"
    return metric_text(metrics[key])


@register.filter
def metric_text(value: Any) -> str:
    """Numbers as every page writes them (``ctxlab.web.display.number``), dicts as ``k v, …``."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {metric_text(v)}" for k, v in value.items()) or "none"
    if isinstance(value, str):
        return value
    return display.number(value)


@register.filter
def quiet_reason(run: Any) -> str:
    """Why a finished run never compacted ('' when it did): ``replay_app.quiet``."""
    if getattr(run, "status", None) != "done":
        return ""
    return quiet.quiet_reason(run.metrics, run.strategy)


@register.filter
def index(sequence: Any, position: int) -> Any:
    try:
        return sequence[position]
    except (IndexError, KeyError, TypeError):
        return None


@register.filter
def param_value(value: Any) -> str:
    """A parameter for a summary cell: a custom strategy's stage list as ``a → b``, other
    lists and dicts as JSON (never Python's repr)."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, dict) and isinstance(v.get("stage"), str) for v in value)
    ):
        return " → ".join(v["stage"] for v in value)
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
