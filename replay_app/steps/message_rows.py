"""The step view's message list and zone bar as HTML, written in Python.

The same list as a template loop (50 rows, each with an included fate badge, a dozen
variables and up to three ``{% url %}`` tags) cost ~6 ms of a step page's ~12: a step page
is rendered for every step a user scrubs to, so it is never memoised. Every value from the
transcript or the strategy is escaped here (``escape``); URLs are reversed once per list.
"""

from __future__ import annotations

from html import escape  # Django's escape, without its lazy-string wrapper (~2x faster)
from typing import Any
from urllib.parse import quote

from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from ctxlab.web.display import number
from replay_app.steps.at_step import MessageRow
from replay_app.steps.zone_bar import ZoneSegment


def fate_badge(fate: str, reason: str = "") -> str:
    """``_fate_badge.html`` for one message."""
    title = escape(fate) + (f": {escape(reason)}" if reason else "")
    return f'<span class="fate-badge fate-{escape(fate)}" title="{title}">{escape(fate)}</span>'


def message_list(run_pk: int, messages: list[MessageRow]) -> SafeString:
    """``<ol class="ctx-messages">`` with one ``<li>`` per message (or the empty note)."""
    diff_base = reverse("run-message-diff", args=[run_pk, 0])[: -len("0/diff/")]
    offload = reverse("run-offload", args=[run_pk])
    start = messages[0].index if messages else 0
    out = [f'<ol class="ctx-messages" start="{start}">']
    for m in messages:
        classes = f"ctx-message fate-row-{escape(m.fate)}"
        if not m.in_context:
            classes += " out-of-context"
        head = [
            f'<span class="mono muted">#{m.index}</span>',
            f'<span class="badge badge-{escape(m.role)}">{escape(m.role)}</span>',
            fate_badge(m.fate, m.reason),
        ]
        if m.event is not None:
            head.append(f'<span class="small muted">by event #{m.event}</span>')
        if m.name:
            head.append(f'<span class="mono small">{escape(m.name)}</span>')
        head.append(f'<span class="small muted">{number(m.tokens)} tokens</span>')
        if not m.in_context:
            head.append('<span class="small muted">(not in this request)</span>')
        row = [
            f'<li class="{classes}" id="ctx-m{m.index}" data-index="{m.index}" '
            f'data-fate="{escape(m.fate)}">',
            f'<div class="ctx-head">{" ".join(head)}</div>',
            f'<div class="ctx-preview">{escape(m.preview)}</div>',
        ]
        if m.modified_preview:
            row.append(
                '<div class="ctx-modified"><span class="small muted">as sent:</span> '
                f"{escape(m.modified_preview)}</div>"
            )
        if m.diffable:
            diff = f"{diff_base}{m.index}/diff/?event={'' if m.event is None else m.event}"
            row.append(
                '<details class="diff-details">'
                f'<summary hx-get="{escape(diff)}" hx-target="next .diff-body" '
                'hx-trigger="click once">diff against the original</summary>'
                f'<div class="diff-body"><a href="{escape(diff)}">open the diff</a></div>'
                "</details>"
            )
        if m.offload_path:
            link = f"{offload}?path={quote(m.offload_path, safe='')}"
            row.append(
                f'<p class="small">Offloaded to <span class="mono">{escape(m.offload_path)}'
                f'</span>: <a class="offload-link" href="{escape(link)}" target="_blank" '
                'rel="noopener">full text</a></p>'
            )
        row.append("</li>")
        out.append("".join(row))
    if not messages:
        out.append('<li class="muted">No messages before this step.</li>')
    out.append("</ol>")
    return mark_safe("\n".join(out))  # noqa: S308 (every inserted value escaped above)


def zone_bar(segments: list[ZoneSegment], zones: dict[str, Any]) -> SafeString:
    """``_zone_bar.html``: the request's zones as a stacked bar with its legend."""
    described = ", ".join(f"{s.label} {s.note if s.note else number(s.tokens)}" for s in segments)
    bar = []
    legend = []
    for s in segments:
        share = floatformat(s.percent, 1)
        if s.tokens:
            hint = f": {s.hint}" if s.hint else ""
            bar.append(
                f'<span class="zone-{escape(s.key)}" data-zone="{escape(s.key)}" '
                f'data-tokens="{s.tokens}" style="width: {s.percent}%" title="'
                f'{escape(f"{s.label}: {number(s.tokens)} tokens ({share}%){hint}")}"></span>'
            )
        title = f' title="{escape(s.hint)}"' if s.hint else ""
        if s.note:
            shown = f'<span class="muted zone-note" data-note>{escape(s.note)}</span>'
        else:
            shown = f'<strong class="num">{number(s.tokens)}</strong> <span class="muted">({share}%)</span>'
        legend.append(
            f'<li class="legend-{escape(s.key)}" data-zone="{escape(s.key)}"{title}>'
            f"{escape(s.label)} {shown}</li>"
        )
    threshold = zones.get("threshold")
    legend.append(
        f'<li class="legend-window">window <strong class="num">{number(zones.get("window"))}'
        "</strong>"
        + (f' · threshold <strong class="num">{number(threshold)}</strong>' if threshold else "")
        + "</li>"
    )
    note = ""
    if zones.get("unseen"):
        note = (
            '<p class="small muted zone-unseen-note">Strategy overhead: what the strategy '
            "counts beyond the transcript's messages (the provider's reported usage includes "
            "the system prompt, tool definitions and attachments the log does not show).</p>"
        )
    if zones.get("not_in_file"):
        note += (
            '<p class="small muted zone-unseen-note">Not in this file: context the agent sent '
            "that this file does not hold (it starts after a compaction, or is cut from a "
            "longer session); it leaves at the next compaction.</p>"
        )
    return mark_safe(  # noqa: S308 (every inserted value escaped above)
        '<div class="zone-block">'
        f'<div class="zone-bar zone-bar-large" role="img" aria-label="context zones: '
        f'{escape(described)}">{"".join(bar)}</div>'
        f'<ul class="zone-legend">{"".join(legend)}</ul>{note}</div>'
    )
