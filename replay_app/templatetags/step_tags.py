"""Filters of the step views (the zone bar and message fates)."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def fate_class(fate: str) -> str:
    return f"fate-{fate}"
