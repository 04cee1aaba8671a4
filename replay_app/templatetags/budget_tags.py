"""Filters of the comparison-at-one-budget pages (run form window, step view)."""

from __future__ import annotations

from typing import Any

from django import template

from ctxlab.web import display

register = template.Library()


@register.filter
def tokens(value: Any) -> str:
    """12,345 (thousands separated); other values unchanged."""
    if isinstance(value, int) and not isinstance(value, bool):
        return display.number(value)  # the one number format of every page
    return "" if value is None else str(value)
