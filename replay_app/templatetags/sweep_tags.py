"""``{% group_sweep group runs %}``: the sweep table and chart on a group page, when the
group's runs form a sweep (``replay_app.sweep.detect``); nothing otherwise. A tag, so the
group view itself needs no change."""

from __future__ import annotations

from typing import Any

from django import template
from django.template.loader import render_to_string

register = template.Library()


@register.simple_tag(takes_context=True)
def group_sweep(context: Any, group: Any, runs: Any) -> str:
    from replay_app.sweeps import sweep
    from replay_app.sweeps.views import section_context

    found = sweep.detect(list(runs))
    if found is None:
        return ""
    return render_to_string(
        "replay_app/sweeps/_group_sweep.html",
        section_context(group, list(runs), found),
        request=context.get("request"),
    )
