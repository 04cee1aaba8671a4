"""The compare step view's repeated parts in Python: one ``<tr>`` per message of the page,
one cell per run (its fate badge, the event that set it and why); each run's heading, counts
and zone bar; the fate legend.

The template's loop over them (60 rows x up to six runs, an include per cell) was two
thirds of a step view's CPU (~10 of ~15 ms per view; a page per step a user scrubs to, so
most views are first views). The markup is the loop's; every value from a transcript or a
strategy is escaped as Django's autoescape escapes it (``html.escape``, which Django's
``escape`` calls; without its lazy-string wrapper, a third of the rows' time).
"""

from __future__ import annotations

import functools
import unicodedata
from html import escape

from django.urls import get_script_prefix, reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import add_truncation_text, calculate_truncate_chars_length

from ctxlab.web.display import number
from replay_app.compare.compare_steps import FateCell, RunAtStep, StepAcross
from replay_app.display.vocabulary import event_label, event_meaning
from replay_app.steps.fatelog import FATES
from replay_app.steps.message_rows import zone_bar

PREVIEW_CHARS = 120  # the preview under a message's number (``truncatechars:120``)


_PLAIN: set[str] = set()  # characters seen that are not combining marks
_MARKS: set[str] = set()  # ... and those that are


def _preview(text: str) -> str:
    """``truncatechars:120`` (``Truncator.chars``: NFC, combining marks not counted, cut to
    119 characters and "…") without its lazy wrapper (~80 µs each, a quarter of the rows'
    time): a text without combining marks is cut by slicing, whether each character is one
    is asked once a process. A shorter text is never cut."""
    if len(text) <= PREVIEW_CHARS:
        return text
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
        seen = set(text)
        for char in seen - _PLAIN - _MARKS:
            (_MARKS if unicodedata.combining(char) else _PLAIN).add(char)
        if not seen.isdisjoint(_MARKS):
            return _cut_counting_marks(text)
    if len(text) <= PREVIEW_CHARS:
        return text
    return add_truncation_text(text[: calculate_truncate_chars_length(PREVIEW_CHARS, None)], None)


def _cut_counting_marks(text: str) -> str:
    """``Truncator._text_chars`` of an NFC ``text`` holding combining marks."""
    keep = calculate_truncate_chars_length(PREVIEW_CHARS, None)
    count, end = 0, None
    for i, char in enumerate(text):
        if char in _MARKS:
            continue
        count += 1
        if end is None and count > keep:
            end = i
        if count > PREVIEW_CHARS:
            return add_truncation_text(text[: end or 0], None)
    return text


def _tokens(value: object) -> str:
    """The ``tokens`` filter: an int as the pages' one number format."""
    if isinstance(value, int) and not isinstance(value, bool):
        return number(value)
    return "" if value is None else str(value)


def fate_badge(fate: str, reason: str) -> str:
    """``steps/_fate_badge.html``."""
    title = escape(fate) + (f": {escape(reason)}" if reason else "")
    return f'<span class="fate-badge fate-{escape(fate)}" title="{title}">{escape(fate)}</span>'


_NO_CELL = '<td data-fate=""><span class="muted small">—</span></td>'


def _cell(cell: FateCell | None, made: dict[tuple[str, int | None, str, str], str]) -> str:
    """One run's cell (``made``: the cells already written for this view; an event sets
    one fate for many messages with the same words)."""
    if cell is None:
        return _NO_CELL
    key = (cell.fate, cell.event, cell.kind, cell.reason)
    html = made.get(key)
    if html is None:
        html = made[key] = _cell_html(cell)
    return html


def _cell_html(cell: FateCell) -> str:
    out = [f'<td data-fate="{escape(cell.fate)}">', fate_badge(cell.fate, cell.reason)]
    if cell.event is not None:
        out.append(
            f' <span class="small" title="{escape(event_meaning(cell.kind))}">'
            f"{escape(event_label(cell.kind))} #{cell.event}</span>"
            f'<div class="small reason">{escape(cell.reason)}</div>'
        )
    out.append("</td>")
    return "".join(out)


def rows_html(view: StepAcross, message: int | None) -> SafeString:
    """The ``<tr>`` of every message line of ``view`` (``message``: the one to focus)."""
    out = []
    made: dict[tuple[str, int | None, str, str], str] = {}
    for line in view.messages:
        focus = message == line.index
        classes = ("differs" if line.differs else "") + (" focus-message" if focus else "")
        current = ' aria-current="true"' if focus else ""
        preview = _preview(line.preview)
        out.append(
            f'<tr data-index="{line.index}" id="message-{line.index}" class="{classes}"'
            f'{current}><th class="sticky-col"><span class="mono">#{line.index}</span> '
            f'<span class="small muted">{escape(line.role)} · {escape(_tokens(line.tokens))} '
            f'tok</span><div class="small preview">{escape(preview)}</div></th>'
            + "".join([_cell(cell, made) for cell in line.cells])
            + "</tr>"
        )
    return mark_safe("\n".join(out))  # noqa: S308 - every value escaped above


@functools.cache
def fate_legend() -> SafeString:
    """The fate legend (a badge per fate, ``steps/_fate_badge.html`` without a reason)."""
    items = "".join(f"<li>{fate_badge(fate, '')}</li>" for fate in FATES)
    return mark_safe(f'<ul class="fate-legend plain">{items}</ul>')  # noqa: S308 - escaped


@functools.lru_cache(maxsize=4096)
def _run_url(prefix: str, pk: int) -> str:
    """The run page's URL under the request's script ``prefix`` (reversed once a run)."""
    return reverse("run-detail", args=[pk])


def _run_zones(view: StepAcross, col: int, at: RunAtStep) -> str:
    run = at.run
    url = _run_url(get_script_prefix(), run.pk)
    head = (
        f'<div class="step-run run-colour-{col}" data-run="{run.pk}"><h3><a href="{escape(url)}">'
        f"run {run.pk} · {escape(run.label)}</a> "
        f'<span class="mono small muted">{escape(run.strategy)}</span></h3>'
    )
    if at.step is None or at.zone is None:
        return f'{head}<p class="muted small">No {moment(view)} in this run.</p></div>'
    tokens = at.tokens
    line = (
        f'<p class="small step-tokens">step {at.step} · request <strong class="num">'
        f"{escape(_tokens(tokens.get('strategy')))}</strong> as the strategy counts it · "
        f'<strong class="num">{escape(_tokens(tokens.get("reference")))}</strong> (cl100k)'
    )
    if tokens.get("reported") is not None:
        line += f' · <strong class="num">{escape(_tokens(tokens["reported"]))}</strong> reported'
    if at.compaction:
        labels = ", ".join(event_label(kind) for kind in at.compaction.kinds)
        line += f" · <strong>{escape(labels)}</strong>: {escape(at.compaction.trigger)}"
    return f"{head}{line}</p>{zone_bar(at.zone)}</div>"


def zones_html(view: StepAcross) -> SafeString:
    """Each run's block of the zones section: its heading, the request's counts at its
    step (and the compaction there) and its zone bar (``message_rows.zone_bar``, the run
    page's), or why it has none."""
    blocks = (_run_zones(view, col, at) for col, at in enumerate(view.runs))
    return mark_safe("\n".join(blocks))  # noqa: S308 - every value escaped above


def moment(view: StepAcross) -> str:
    """The view's moment in words, as its title says it: ``compaction K`` or ``step N``."""
    return f"compaction {view.compaction}" if view.compaction else f"step {view.step}"


def _at(view: StepAcross) -> str:
    """The query part naming the view's moment (``&amp;compaction=K`` or ``&amp;step=N``)."""
    return f"&amp;compaction={view.compaction}" if view.compaction else f"&amp;step={view.step}"


def main_html(view: StepAcross, ids: str, message: int | None) -> SafeString:
    """The page's main block around its parts (``zones_html``, ``fate_legend``,
    ``rows_html``): links, step navigation, the sections and the pagination."""
    runs = escape(ids)
    at = _at(view)
    diff = "&amp;only=diff" if view.only_differences else ""
    out = [
        f'<p class="small"><a href="{escape(_compare_url(get_script_prefix()))}?runs={runs}">'
        f'&larr; Compare runs {runs}</a> · <a href="?runs={runs}{at}&amp;format=json">JSON</a>'
        '</p>\n<h1 id="step-title">'
    ]
    if view.compaction:
        out.append(f"Compaction {view.compaction} of each run")
    else:
        out.append(f'Step {view.step} <span class="muted small">of 0–{view.steps - 1}</span>')
    out.append('</h1>\n<nav class="step-nav" id="step-nav" aria-label="Steps">')
    if view.prev_step is not None:
        out.append(
            f'<a rel="prev" id="step-prev" href="?runs={runs}&amp;step={view.prev_step}{diff}">'
            f"&larr; step {view.prev_step}</a>"
        )
    if view.next_step is not None:
        out.append(
            f'<a rel="next" id="step-next" href="?runs={runs}&amp;step={view.next_step}{diff}">'
            f"step {view.next_step} &rarr;</a>"
        )
    if view.compaction:
        k = view.compaction
        if k > 1:
            out.append(
                f'<a rel="prev" id="step-prev" href="?runs={runs}&amp;compaction={k - 1}">'
                f"&larr; compaction {k - 1}</a>"
            )
        out.append(
            f'<a rel="next" id="step-next" href="?runs={runs}&amp;compaction={k + 1}">'
            f"compaction {k + 1} &rarr;</a>"
        )
    step = "" if view.step is None else str(view.step)
    out.append(
        f'<form method="get" class="inline-form"><input type="hidden" name="runs" '
        f'value="{runs}"><label>step <input type="number" name="step" min="0" '
        f'max="{view.steps - 1}" value="{step}" class="step-input"></label>'
        + ('<input type="hidden" name="only" value="diff">' if view.only_differences else "")
        + '<button type="submit">Go</button></form>\n'
        '<span class="small muted">← → keys step through</span>\n</nav>\n'
        '<section class="panel" id="step-zones">\n<h2>Context zones</h2>\n'
        f'<div class="step-runs">\n{zones_html(view)}\n</div>\n</section>\n'
        '<section class="panel" id="step-messages">\n<h2>Source messages and their fate</h2>\n'
    )
    if message is not None and message >= view.count:
        sent = f"#0–#{view.count - 1}" if view.count else "no message"
        out.append(
            '<p class="message message-info" id="message-after" role="status">Message '
            f"#{message} comes after the request of this step (which sends {sent}): no run "
            "has it in context yet, so it is not listed here.</p>\n"
        )
    toggle = "" if view.only_differences else "&amp;only=diff"
    words = (
        "Show every message" if view.only_differences
        else "Show only messages whose fate differs"
    )  # fmt: skip
    out.append(
        '<p class="small muted">One row per message of the transcript before the request; '
        "one column per run: the fate at that run's step, the event that set it and why. "
        f'<a href="?runs={runs}{at}{toggle}" id="toggle-differences">{words}</a></p>\n'
        f"{fate_legend()}\n"
    )
    if view.messages:
        heads = "".join(
            f'<th class="run-colour-{col}">run {a.run.pk} · {escape(a.run.label)}</th>'
            for col, a in enumerate(view.runs)
        )
        out.append(
            '<div class="table-wrap step-table-wrap"><table class="step-table">\n'
            f'<thead><tr><th class="sticky-col">message</th>{heads}</tr></thead>\n'
            f"<tbody>\n{rows_html(view, message)}\n</tbody>\n</table></div>\n"
        )
        if view.pages > 1:
            pages = ['<nav class="pagination">']
            if view.page > 1:
                pages.append(
                    f'<a href="?runs={runs}{at}{diff}&amp;page={view.page - 1}#step-messages">'
                    "&larr; earlier messages</a>"
                )
            pages.append(f"<span>Page {view.page} of {view.pages}</span>")
            if view.page < view.pages:
                pages.append(
                    f'<a href="?runs={runs}{at}{diff}&amp;page={view.page + 1}#step-messages">'
                    "later messages &rarr;</a>"
                )
            out.append("".join(pages) + "</nav>")
    else:
        empty = (
            "Every run gives every message the same fate here." if view.only_differences
            else "No message before this request."
        )  # fmt: skip
        out.append(f'<p class="muted small">{empty}</p>')
    out.append("\n</section>")
    return mark_safe("".join(out))  # noqa: S308 - every value escaped above


@functools.lru_cache(maxsize=16)
def _compare_url(prefix: str) -> str:
    """The compare page's URL under the request's script ``prefix``."""
    return reverse("run-compare")
