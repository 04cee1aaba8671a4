"""One click from a winner: "save as configuration" and "export to my agent's config"
beside a run (compare page, comparison group) or a suite leaderboard row.

Both are POST forms with the CSRF token: saving lands on the new configuration, exporting
downloads the agent's own config file (``replay_app.configs.views``). A memoised section
(the compare page's metrics table) shares its HTML between users, so it carries no token:
``forms=False`` renders buttons that submit the run's forms rendered outside it (the run
header), through the ``form`` attribute.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from ctxlab.engine.native_config import native_config
from replay_app.configs.services import has_native

register = template.Library()


def _native_name(strategy: str, params: dict[str, Any]) -> str:
    if not has_native(strategy):
        return ""
    try:
        return native_config(strategy, params).filename
    except ValueError:  # parameters this build no longer accepts
        return ""


@register.inclusion_tag("replay_app/configs/_adopt.html", takes_context=True)
def adopt_run(context: dict[str, Any], run: Any, *, forms: bool = True) -> dict[str, Any]:
    return {
        "csrf_token": context.get("csrf_token"),
        "key": f"run-{run.pk}",
        "label": f"run {run.pk} · {run.label}",
        "save_url": reverse("run-save-config", args=[run.pk]),
        "native_url": reverse("run-native", args=[run.pk]),
        "native_name": _native_name(run.strategy, dict(run.params)),
        "forms": forms,
    }


@register.inclusion_tag("replay_app/configs/_adopt.html", takes_context=True)
def adopt_suite_config(
    context: dict[str, Any], suite: Any, index: int, label: str, strategy: str
) -> dict[str, Any]:
    # The file's name depends on the strategy only (every shape names its own file).
    return {
        "csrf_token": context.get("csrf_token"),
        "key": f"suite-{suite.pk}-{index}",
        "label": label,
        "save_url": reverse("suite-config-save", args=[suite.pk, index]),
        "native_url": reverse("suite-config-native", args=[suite.pk, index]),
        "native_name": _native_name(strategy, {}),
        "forms": True,
    }
