"""``num``, ``counted``, ``usd`` and ``when``: the one number and time format of every page (``ctxlab.web.display``).
Registered as template builtins (settings), so no template needs ``{% load %}``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import template
from django.utils.safestring import SafeString

from ctxlab.web import display

register = template.Library()


@register.filter
def num(value: Any) -> str:
    return display.number(value)


@register.filter
def counted(value: Any, word: str) -> str:
    """``{{ parts|counted:"part" }}`` -> ``1 part`` / ``3 parts``; irregular plurals after a
    comma: ``{{ n|counted:"child,children" }}`` (``ctxlab.web.display.counted``)."""
    return display.counted(value, word)


@register.filter
def usd(value: Any, places: int = 4) -> str:
    return display.usd(value, places)


@register.filter
def when(value: datetime | None) -> SafeString | str:
    return display.time_element(value)
