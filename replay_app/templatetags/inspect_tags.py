"""``{% run_inspect %}``: the run page's inspection sections, computed here so the run view
(another module) needs no change beyond including ``replay_app/run/_inspect.html``."""

from __future__ import annotations

from typing import Any

from django import template
from django.template.loader import render_to_string

register = template.Library()


@register.simple_tag(takes_context=True)
def run_inspect(context: Any, run: Any) -> str:
    from replay_app.steps.views import run_inspect_context

    request = context["request"]
    return render_to_string(
        "replay_app/steps/run_inspect.html", run_inspect_context(request, run), request=request
    )


@register.filter
def fate_class(fate: str) -> str:
    return f"fate-{fate}"
