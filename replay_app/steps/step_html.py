"""``_step_context.html`` in Python: the context at one step (navigation, token counts,
zone bar, events, fate counts, message list, message pages).

Rendered for every step a user scrubs to (never memoised) and on the run page; the
template's ~70 variables, a dozen ``{% url %}`` tags and its includes cost most of a
step page's CPU. The markup is the template's; every value from a transcript or a
strategy is escaped (``html.escape``, as Django's autoescape does).
"""

from __future__ import annotations

from html import escape

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from ctxlab.web.display import counted, number
from replay_app.display.vocabulary import event_label, event_meaning
from replay_app.models import Run
from replay_app.steps.at_step import StepView
from replay_app.steps.message_rows import fate_badge, message_list, zone_bar

SWAP = 'hx-target="#step-context" hx-swap="outerHTML"'


def _nav(run_url: str, step_url: str, view: StepView) -> str:
    if view.prev_step is not None:
        prev = (
            f'<a rel="prev" class="step-prev" href="{run_url}?step={view.prev_step}#scrubber" '
            f'hx-get="{step_url}{view.prev_step}/" {SWAP}>&larr; step {view.prev_step}</a>'
        )
    else:
        prev = '<span class="muted">&larr; first step</span>'
    if view.next_step is not None:
        after = (
            f'<a rel="next" class="step-next" href="{run_url}?step={view.next_step}#scrubber" '
            f'hx-get="{step_url}{view.next_step}/" {SWAP}>step {view.next_step} &rarr;</a>'
        )
    else:
        after = '<span class="muted">last step &rarr;</span>'
    page = f"&amp;mpage={view.page}" if view.page else ""
    return (
        f'<nav class="step-nav" aria-label="Steps">{prev} <strong class="step-title">Step '
        f'{view.step}</strong> <span class="muted">of {number(view.steps)} · the call before '
        f"message #{view.source_index}</span> {after} "
        f'<a class="small" href="{step_url}{view.step}/?format=json{page}">JSON</a></nav>'
    )


def _tokens(run: Run, view: StepView) -> str:
    parts = [
        f'Request: <strong class="num">{number(view.tokens["strategy"])}</strong> tokens as '
        "the strategy counts them"
    ]
    aside = [
        f'<span class="num">{number(view.zones[key])}</span> {words}'
        for key, words in (("unseen", "strategy overhead"), ("not_in_file", "not in this file"))
        if view.zones.get(key)
    ]
    if aside:
        parts.append(f" (of which {' and '.join(aside)})")
    parts.append(f' · <strong class="num">{number(view.tokens["reference"])}</strong> (cl100k)')
    if view.tokens.get("reported") is not None:
        parts.append(f' · <strong class="num">{number(view.tokens["reported"])}</strong> reported')
    parts.append(f" · {counted(view.context_len, 'message')} in context")
    if view.summary_seq is not None:
        summary = reverse("run-summary", args=[run.pk, view.summary_seq])
        parts.append(f' · <a href="{summary}">summary {view.summary_seq}</a> in force')
    if view.pending:
        parts.append(f" · pending: {escape(', '.join(str(p) for p in view.pending))}")
    return f'<p class="small step-tokens">{"".join(parts)}</p>'


def _events_here(view: StepView) -> str:
    if not view.events_here:
        return ""
    chips = "".join(
        f'<span class="event-chip" title="{escape(event_meaning(str(e["kind"])))}">#{e["seq"]} '
        f"{escape(event_label(str(e['kind'])))} ({number(e['tokens_before'])} → "
        f"{number(e['tokens_after'])}, {e['messages']} msg)</span>"
        for e in view.events_here
    )
    return f'<p class="small">Events that first apply here: {chips}</p>'


def _fate_counts(view: StepView) -> str:
    counts = " · ".join(
        f'{fate_badge(fate)} <span class="num" data-fate-count="{escape(fate)}">{n}</span>'
        for fate, n in view.fate_counts.items()
    )
    return f'<p class="small fate-counts">Messages so far: {number(view.count)} · {counts}</p>'


def _pages(run_url: str, step_url: str, view: StepView) -> str:
    if view.pages <= 1:
        return ""
    here = f"{step_url}{view.step}/"
    links = []
    if view.has_previous:
        page = view.page - 1
        links.append(
            f'<a rel="prev" href="{run_url}?step={view.step}&amp;mpage={page}#scrubber" '
            f'hx-get="{here}?mpage={page}" {SWAP}>&larr; earlier messages</a>'
        )
    links.append(f"<span>Messages page {view.page} of {view.pages}</span>")
    if view.has_next:
        page = view.page + 1
        links.append(
            f'<a rel="next" href="{run_url}?step={view.step}&amp;mpage={page}#scrubber" '
            f'hx-get="{here}?mpage={page}" {SWAP}>later messages &rarr;</a>'
        )
    return f'<nav class="pagination" aria-label="Message pages">{" ".join(links)}</nav>'


def step_context(run: Run, view: StepView) -> SafeString:
    """``<div id="step-context">`` of ``view`` (the htmx target the scrubber swaps)."""
    run_url = reverse("run-detail", args=[run.pk])
    step_url = reverse("run-step", args=[run.pk, 0])[: -len("0/")]
    return mark_safe(  # noqa: S308 (every inserted value escaped where it is made)
        f'<div id="step-context" class="step-context" data-step="{view.step}" '
        f'data-steps="{view.steps}" data-page="{view.page}">\n'
        + "\n".join(
            [
                _nav(run_url, step_url, view),
                _tokens(run, view),
                zone_bar(view.zone),
                _events_here(view),
                _fate_counts(view),
                message_list(run.pk, view.messages),
                _pages(run_url, step_url, view),
            ]
        )
        + "\n</div>"
    )
