"""Template helpers of the probe pages and the after-effects panel."""

from __future__ import annotations

from typing import Any

from django import template

from ctxlab.engine.evaluate import aftereffects

register = template.Library()


@register.filter
def get_item(mapping: Any, key: str) -> Any:
    """``mapping[key]``, or None (templates cannot index a dict by a variable)."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def score(value: Any) -> str:
    """A 0..1 score as ``0.75``; an em dash when there is none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—"  # None, or a missing value ("" in a template)
    return f"{float(value):.2f}"


@register.inclusion_tag("judge_app/_compare_probes.html")
def probe_compare(runs: Any) -> dict[str, Any]:
    """The runs' probe scores side by side with the one trade-off chart (compare page)."""
    from judge_app import pages, shared_jobs  # they read the database: loaded on use

    # missing or outdated probe sets are made by a task, never in this request
    job = shared_jobs.own_sets_job([r.pk for r in runs], retry_failed=True)
    data = pages.compare_data(list(runs))
    data["job"] = job
    return {
        "data": data,
        "columns": pages.columns(),
        "chart": pages.tradeoff_chart(data),
        "json_url": "/compare/probes/?runs=" + ",".join(str(r.pk) for r in runs),
    }


@register.inclusion_tag("judge_app/_aftereffects.html")
def aftereffects_panel(transcript: Any) -> dict[str, Any]:
    """What the agent did after each of its real compactions (the transcript page)."""
    if not transcript.compactions:
        return {"report": None, "transcript": transcript}
    return {"report": aftereffects.report(transcript.to_conversation()), "transcript": transcript}


@register.filter
def join_ids(runs: Any) -> str:
    """Run ids as ``1,2,3`` (the compare pages' query)."""
    return ",".join(str(r.pk) for r in runs)


@register.filter
def as_list(value: Any) -> list[Any]:
    """``[value]``, or ``[]`` for None/missing."""
    return [value] if value else []


@register.filter
def add_rows(first: list[Any], rest: Any) -> list[Any]:
    return [*first, *(rest or ())]
