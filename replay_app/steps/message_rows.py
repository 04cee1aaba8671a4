"""The step view's message list and zone bar as HTML, written in Python.

The same list as a template loop (50 rows, each with an included fate badge, a dozen
variables and up to three ``{% url %}`` tags) cost ~6 ms of a step page's ~12: a step page
is rendered for every step a user scrubs to, so it is never memoised. Every value from the
transcript or the strategy is escaped here (``escape``); URLs are reversed once per list.
"""

from __future__ import annotations

import functools
import math
from decimal import ROUND_HALF_UP, Decimal
from html import escape  # Django's escape, without its lazy-string wrapper (~2x faster)
from urllib.parse import quote

from django.conf import settings
from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from ctxlab.web.display import number
from replay_app.steps.at_step import MessageRow
from replay_app.steps.zone_bar import OVER_HINT, OVER_KEY, OVER_LABEL, ZoneModel

_TENTH = Decimal("0.1")


def one_decimal(value: float) -> str:
    """``floatformat(value, 1)`` (Django's: half up, no grouping here) without its number
    formatting machinery: ~1 µs instead of ~15, and a zone bar shows a dozen (five bars a
    compare step view). Anything but a plain finite number takes Django's own filter."""
    return _one_decimal(value, _plain_decimals())


def _plain_decimals() -> bool:
    """Whether the settings write numbers plainly (no grouping, a point): read once per
    bar, not per figure (each settings read ~1 µs)."""
    return not settings.USE_THOUSAND_SEPARATOR and settings.DECIMAL_SEPARATOR == "."


def _one_decimal(value: float, plain: bool) -> str:
    if plain and type(value) in (float, int) and math.isfinite(value) and abs(value) < 1e15:
        rounded = Decimal(str(value)).quantize(_TENTH, ROUND_HALF_UP)
        return str(rounded if rounded else rounded.copy_abs())  # no "-0.0"
    return str(floatformat(value, 1))


@functools.lru_cache(maxsize=512)
def _escaped(text: str) -> str:
    """``escape`` of the few fixed words every bar repeats (zone keys, labels, hints,
    notes): ~40 escapes a bar, five bars a compare step view."""
    return escape(text)


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


def _zone_line(model: ZoneModel) -> str:
    """The sentence under the bar: its numbers add up to the bar (request + output reserve +
    free = window, or = window + over the window), all in the strategy's own count."""
    n = number
    reserve = "output reserve"
    if model.origin == "original":  # the original's own word for it (its zone's label)
        named = [z.label for z in model.legend if z.key == "output_reserve"]
        reserve = named[0][:1].lower() + named[0][1:] if named else "auto-compact buffer"
    parts = [
        f'Request <strong class="num" data-line="request">{n(model.request)}</strong>',
        f'{reserve} <strong class="num" data-line="output_reserve">'
        f"{n(model.output_reserve)}</strong>",
    ]
    if model.window and not model.over:
        parts.append(f'free <strong class="num" data-line="free">{n(model.free)}</strong>')
    total = " + ".join(parts)
    if not model.window:
        line = f"{total} (no window known: the bar is the request)"
    elif model.over:
        line = (
            f'{total} = window <strong class="num" data-line="window">{n(model.window)}</strong>'
            f' + <strong class="num zone-over-figure" data-line="over_window">{n(model.over)}'
            f"</strong> over the window ({one_decimal(model.over_percent)}% of it"
        )
        alone = model.request - model.window
        if alone > 0:  # the request itself does not fit, reserve aside
            line += (
                f'; the request alone: <span class="num" data-line="request_over">{n(alone)}'
                "</span> over"
            )
        line += ")"
    else:
        line = f'{total} = window <strong class="num" data-line="window">{n(model.window)}</strong>'
    if model.origin == "original":
        line += ", the agent's own request: its reported usage, the messages what remains of it"
    else:
        line += ", in the strategy's own count"
    if model.reference is not None:
        line += f' (cl100k: <span class="num" data-line="reference">{n(model.reference)}</span>)'
    line += ". Widths and percentages are of the window"
    if model.over:
        line += "; what does not fit is drawn past its edge"
    line += "."
    gap = ""
    if model.counted is not None and model.gap:
        # A strategy may compare a count that leaves part of the request out (Gemini CLI:
        # the messages since the last model call): say so rather than show a bar whose
        # parts silently disagree with the count the strategy compared.
        word = "leaves out" if model.gap > 0 else "adds"
        gap = (
            f' <span class="zone-gap" data-bar-total="{model.request}">(the bar shows the whole '
            f'request: <span class="num">{n(model.request)}</span> by the same estimator; the '
            f'count the strategy compares is <span class="num">{n(model.counted)}</span>: the '
            f'count {word} <span class="num">{n(abs(model.gap))}</span>)</span>'
        )
    return f'<p class="small zone-line" data-scale="window">{line}{gap}</p>'


def zone_bar(model: ZoneModel) -> SafeString:
    """``_zone_bar.html``: the request's zones as a stacked bar with its legend and the line
    whose numbers add up to it (the one ``ZoneModel`` of the step)."""
    described = ", ".join(
        f"{s.label} {s.note if s.note else number(s.tokens)}" for s in model.legend
    )
    if model.over:
        described += f", {OVER_LABEL} {number(model.over)}"
    plain = _plain_decimals()
    bar = []
    for d in model.drawn:
        share = _one_decimal(100 * d.tokens / model.window, plain) if model.window else ""
        hint = f": {OVER_HINT}" if d.key == OVER_KEY else ""
        of = f" ({share}% of the window)" if share else ""
        bar.append(
            f'<span class="zone-{_escaped(d.key)}" data-zone="{_escaped(d.key)}" '
            f'data-tokens="{d.tokens}" style="width: {d.width}%" title="'
            f'{escape(f"{d.label}: {number(d.tokens)} tokens{of}{hint}")}"></span>'
        )
    legend = []
    for s in model.legend:
        title = f' title="{_escaped(s.hint)}"' if s.hint else ""
        if s.note:
            shown = f'<span class="muted zone-note" data-note>{_escaped(s.note)}</span>'
        else:
            shown = (
                f'<strong class="num">{number(s.tokens)}</strong> <span class="muted">'
                f"({_one_decimal(s.percent, plain)}%)</span>"
            )
        legend.append(
            f'<li class="legend-{_escaped(s.key)}" data-zone="{_escaped(s.key)}"{title}>'
            f"{_escaped(s.label)} {shown}</li>"
        )
    if model.over:
        legend.append(
            f'<li class="legend-{OVER_KEY}" data-zone="{OVER_KEY}" title="{_escaped(OVER_HINT)}">'
            f'{OVER_LABEL} <strong class="num">{number(model.over)}</strong> <span class="muted">'
            f"({_one_decimal(model.over_percent, plain)}%)</span></li>"
        )
    threshold = model.threshold
    legend.append(
        f'<li class="legend-window">window <strong class="num">{number(model.window)}'
        "</strong>"
        + (f' · threshold <strong class="num">{number(threshold)}</strong>' if threshold else "")
        + " · % of the window</li>"
    )
    keys = {s.key for s in model.legend if s.tokens}
    note = ""
    if "unseen" in keys and model.origin == "original":
        note = (
            '<p class="small muted zone-unseen-note">System prompt + tools: the first reported '
            "usage minus the agent's estimate of the file's messages before it, measured once; "
            "the transcript holds neither, so it is not split further.</p>"
        )
    elif "unseen" in keys:
        note = (
            '<p class="small muted zone-unseen-note">Strategy overhead: what the strategy '
            "counts beyond the transcript's messages (the provider's reported usage includes "
            "the system prompt, tool definitions and attachments the log does not show).</p>"
        )
    if "not_in_file" in keys:
        note += (
            '<p class="small muted zone-unseen-note">Not in this file: context the agent sent '
            "that this file does not hold (it starts after a compaction, or is cut from a "
            "longer session); it leaves at the next compaction.</p>"
        )
    over_class = " zone-bar-over" if model.over else ""
    return mark_safe(  # noqa: S308 (every inserted value escaped above)
        f'<div class="zone-block" data-window="{model.window}" data-over="{model.over}">'
        f'<div class="zone-bar zone-bar-large{over_class}" role="img" aria-label="context '
        f'zones, % of the window: {escape(described)}">{"".join(bar)}</div>'
        f'<ul class="zone-legend">{"".join(legend)}</ul>{_zone_line(model)}{note}</div>'
    )
