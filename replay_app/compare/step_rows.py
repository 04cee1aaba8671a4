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
from html import escape

from django.urls import get_script_prefix, reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from ctxlab.web.display import number
from replay_app.compare.compare_steps import FateCell, RunAtStep, StepAcross
from replay_app.display.vocabulary import event_label, event_meaning
from replay_app.steps.fatelog import FATES
from replay_app.steps.message_rows import zone_bar

PREVIEW_CHARS = 120  # the preview under a message's number (``truncatechars:120``)


def _preview(text: str) -> str:
    """``truncatechars:120``: a shorter text is never cut; an ASCII one (no combining
    characters, already NFC) is its first 119 characters and "…", as ``Truncator`` cuts it
    (~80 µs each, a quarter of the rows' time); any other through ``Truncator``."""
    if len(text) <= PREVIEW_CHARS:
        return text
    if text.isascii():
        return text[: PREVIEW_CHARS - 1] + "…"
    return Truncator(text).chars(PREVIEW_CHARS)


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
        what = f"compaction {view.compaction}" if view.compaction else f"step {view.step}"
        return f'{head}<p class="muted small">No {what} in this run.</p></div>'
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
