"""The compare step view's message rows in Python: one ``<tr>`` per message of the page,
one cell per run (its fate badge, the event that set it and why).

The template's loop over them (60 rows x up to six runs, an include per cell) was two
thirds of a step view's CPU (~10 of ~15 ms per view; a page per step a user scrubs to, so
most views are first views). The markup is the loop's; every value from a transcript or a
strategy is escaped as Django's autoescape escapes it (``html.escape``, which Django's
``escape`` calls; without its lazy-string wrapper, a third of the rows' time).
"""

from __future__ import annotations

from html import escape

from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from ctxlab.web.display import number
from replay_app.compare.compare_steps import FateCell, StepAcross
from replay_app.display.vocabulary import event_label, event_meaning

PREVIEW_CHARS = 120  # the preview under a message's number (``truncatechars:120``)


def _tokens(value: object) -> str:
    """The ``tokens`` filter: an int as the pages' one number format."""
    if isinstance(value, int) and not isinstance(value, bool):
        return number(value)
    return "" if value is None else str(value)


def fate_badge(fate: str, reason: str) -> str:
    """``steps/_fate_badge.html``."""
    title = escape(fate) + (f": {escape(reason)}" if reason else "")
    return f'<span class="fate-badge fate-{escape(fate)}" title="{title}">{escape(fate)}</span>'


def _cell(cell: FateCell | None) -> str:
    if cell is None:
        return '<td data-fate=""><span class="muted small">—</span></td>'
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
    for line in view.messages:
        focus = message == line.index
        classes = ("differs" if line.differs else "") + (" focus-message" if focus else "")
        current = ' aria-current="true"' if focus else ""
        preview = line.preview
        if len(preview) > PREVIEW_CHARS:  # (a shorter one is never cut)
            preview = Truncator(preview).chars(PREVIEW_CHARS)
        out.append(
            f'<tr data-index="{line.index}" id="message-{line.index}" class="{classes}"'
            f'{current}><th class="sticky-col"><span class="mono">#{line.index}</span> '
            f'<span class="small muted">{escape(line.role)} · {escape(_tokens(line.tokens))} '
            f'tok</span><div class="small preview">{escape(preview)}</div></th>'
            + "".join(_cell(cell) for cell in line.cells)
            + "</tr>"
        )
    return mark_safe("\n".join(out))  # noqa: S308 - every value escaped above
