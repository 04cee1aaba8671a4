"""Read model of the run page's long lists: events, summaries and findings, one page each.

A run over a 20,000-message transcript has thousands of events, hundreds of summaries (each
output kilobytes long) and hundreds of findings; the page renders only what is visible and
pages the rest (links that work without JS, swapped in place by htmx):

- events: ``EVENTS_PER_PAGE`` rows, optionally of one kind; fate counts per row come from the
  run's cached fate log (no ``changes`` JSON is read for a finished run's table);
- summaries: ``SUMMARIES_PER_PAGE`` calls, each output cut to a preview in SQL (the full output
  loads on demand, the input already did);
- findings: grouped by kind with their counts, the first ``FINDINGS_PER_PAGE`` rows of each
  kind, the group named by ``fkind`` paged by ``fpage``.

The JSON twin uses the same pages for events (explicit ``page``/``kind`` params, documented
in the JSON) and lists summaries (without inputs) and findings completely.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, QuerySet
from django.db.models.functions import Length, Substr
from django.urls import reverse

from ctxlab.engine.core import catalogue, records
from ctxlab.engine.core.fatelog import FATES_BY_CODE
from ctxlab.engine.core.records import Event
from replay_app.models import Run, RunEvent, RunStatus
from replay_app.runs import textstore
from replay_app.runs.ordinals import compaction_ordinals as ordinals_of
from replay_app.steps import fatelog

EVENTS_PER_PAGE = 50
SUMMARIES_PER_PAGE = 10
SUMMARY_PREVIEW_CHARS = 800
FINDINGS_PER_PAGE = 10
KIND_MAX = 40  # kinds are identifiers; longer query values are not kinds


def page_number(value: str | None) -> int:
    """A 1-based page number from a query value (anything else is page 1)."""
    try:
        return max(int(value or 1), 1)
    except (TypeError, ValueError):
        return 1


def _kind(value: str | None) -> str:
    value = (value or "").strip()
    return value if len(value) <= KIND_MAX else ""


def index_ranges(indexes: list[int], *, limit: int = 12) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0–2, 5, 7–8"``: message indexes at a glance, the first
    ``limit`` runs only (an event can touch thousands of messages)."""
    runs: list[str] = []
    ordered = sorted(set(indexes))
    k = 0
    while k < len(ordered) and len(runs) < limit:
        start = end = ordered[k]
        while k + 1 < len(ordered) and ordered[k + 1] == end + 1:
            k += 1
            end = ordered[k]
        runs.append(str(start) if start == end else f"{start}–{end}")
        k += 1
    return ", ".join(runs) + (", …" if k < len(ordered) else "")


def detail_text(detail: dict[str, Any], *, limit: int = 60) -> str:
    """``k=v; …`` with each value cut to ``limit`` characters (escaped by the template);
    the catalogue's note (an outcome that follows from an offline summary) is never cut."""
    parts = []
    for key, value in detail.items():
        text = value if isinstance(value, str) else str(value)
        if key == catalogue.NOTE_KEY:
            parts.append(f"{key}={text}")
            continue
        parts.append(f"{key}={text if len(text) <= limit else text[: limit - 1] + '…'}")
    return "; ".join(parts)


def _kind_counts(rows: Any) -> list[tuple[str, int]]:
    return [(k, n) for k, n in rows.values("kind").annotate(n=Count("id")).values_list("kind", "n")]


# --- events ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EventRow:
    seq: int
    step: int
    kind: str
    messages: list[int]
    tokens_before: int
    tokens_after: int
    detail: dict[str, Any]
    summary_seq: int | None
    fate_counts: dict[str, int]
    compaction: int | None = None  # K (``ordinals.compaction_ordinals``); None: not one

    @property
    def messages_text(self) -> str:
        return index_ranges(self.messages)

    @property
    def detail_text(self) -> str:
        return detail_text(self.detail)

    def as_event(self) -> Event:
        """The engine's event (without its changes), for the one event serialiser."""
        return Event(
            id=self.seq, step=self.step, kind=self.kind, messages=tuple(self.messages),
            tokens_before=self.tokens_before, tokens_after=self.tokens_after,
            detail=self.detail, summary_id=self.summary_seq,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class EventsPage:
    page: Page[Any]
    rows: list[EventRow]
    kind: str
    kinds: list[tuple[str, int]]  # every kind of the run with its count
    total: int  # events of every kind


def events_page(run: Run, *, page: int, kind: str = "") -> EventsPage:
    kind = _kind(kind)
    kinds = sorted(_kind_counts(run.events.all()))
    total = sum(n for _, n in kinds)
    rows = run.events.order_by("seq")
    count = total
    if kind:
        rows = rows.filter(kind=kind)
        count = dict(kinds).get(kind, 0)
    paginator = Paginator(rows, EVENTS_PER_PAGE)
    paginator.count = count  # known from the kind counts: no COUNT query
    current = paginator.get_page(page)
    finished = run.status == RunStatus.DONE and run.finished_at is not None
    fields = [
        "seq",
        "step",
        "kind",
        "messages",
        "tokens_before",
        "tokens_after",
        "detail",
        "summary_seq",
    ]
    if not finished:
        fields.append("changes")  # a live run has no cached fate log yet
    events: QuerySet[RunEvent] = current.object_list  # type: ignore[assignment]  # a page of a queryset
    values = list(events.values_list(*fields))
    log = fatelog.fate_log(run) if finished and values else None
    ordinals = ordinals_of(run) if values else {}
    out = []
    for value in values:
        seq, step, name, messages, before, after, detail, summary_seq = value[:8]
        if log is None:
            counts = Counter(c["fate"] for c in value[8])
        else:
            lo, hi = bisect_left(log.seqs, seq), bisect_right(log.seqs, seq)
            counts = Counter(FATES_BY_CODE[code].value for code in log.fates[lo:hi])
        out.append(
            EventRow(seq, step, name, messages, before, after, detail, summary_seq, dict(counts),
                     ordinals.get(seq))
        )  # fmt: skip
    return EventsPage(page=current, rows=out, kind=kind, kinds=kinds, total=total)


def event_json(run: Run, events: EventsPage, *, url: str) -> dict[str, Any]:
    """The JSON twin's events: one page with every field (changes included)."""
    seqs = [row.seq for row in events.rows]
    stored = list(run.events.filter(seq__in=seqs).values_list("seq", "changes")) if seqs else []
    resolved = textstore.resolve_changes(run.transcript_id, [c for _, c in stored])
    changes = {seq: c for (seq, _), c in zip(stored, resolved, strict=True)}
    current = events.page

    def link(number: int) -> str:
        kind = f"&kind={events.kind}" if events.kind else ""
        return f"{url}?format=json&page={number}{kind}"

    return {
        "paging": (
            f"{EVENTS_PER_PAGE} events per page in seq order; query params page (1-based) and "
            "kind (one event kind); next/previous are the neighbouring pages' URLs"
        ),
        "count": current.paginator.count,
        "total": events.total,
        "page": current.number,
        "pages": current.paginator.num_pages,
        "per_page": EVENTS_PER_PAGE,
        "kind": events.kind or None,
        "kinds": dict(events.kinds),
        "next": link(current.next_page_number()) if current.has_next() else None,
        "previous": link(current.previous_page_number()) if current.has_previous() else None,
        "items": [
            {
                **records.event_json(row.as_event(), id_key="seq"),
                "compaction": row.compaction,
                "changes": changes.get(row.seq, []),
            }
            for row in events.rows
        ],
    }


# --- summaries ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SummaryEvent:
    """The event a summary call belongs to, with the figures the events table shows."""

    seq: int
    kind: str
    tokens_before: int
    tokens_after: int
    compaction: int | None = None  # its K (``ordinals.compaction_ordinals``)

    @property
    def page(self) -> int:
        """The events page listing it (seqs number a run's events from 0, in order)."""
        return self.seq // EVENTS_PER_PAGE + 1


def summary_events(run: Run, seqs: list[int]) -> dict[int, SummaryEvent]:
    """Summary seq -> the event that produced it (the first one, by seq)."""
    out: dict[int, SummaryEvent] = {}
    ordinals = ordinals_of(run) if seqs else {}
    rows = (
        run.events.filter(summary_seq__in=seqs)
        .order_by("seq")
        .values_list("summary_seq", "seq", "kind", "tokens_before", "tokens_after")
    )
    for summary_seq, seq, kind, before, after in rows:
        if summary_seq is not None:  # filtered on it: never None here
            out.setdefault(summary_seq, SummaryEvent(seq, kind, before, after, ordinals.get(seq)))
    return out


def summaries_page(run: Run, *, page: int) -> Page[Any]:
    """One page of summary calls: ``output_preview`` (the first ``SUMMARY_PREVIEW_CHARS``
    characters) and ``output_chars`` instead of the output, no input; ``event`` is the
    event the call belongs to (its context before -> after are the events table's)."""
    rows = (
        run.summaries.order_by("seq")
        .defer("input", "output")
        .annotate(
            output_preview=Substr("output", 1, SUMMARY_PREVIEW_CHARS),
            output_chars=Length("output"),
        )
    )
    current = Paginator(rows, SUMMARIES_PER_PAGE).get_page(page)
    items = list(current.object_list)
    events = summary_events(run, [s.seq for s in items])
    for item in items:
        item.event = events.get(item.seq)  # type: ignore[attr-defined]  # read by the template
    current.object_list = items
    return current


def summary_page_of(run: Run, seq: int) -> int:
    """The summaries page that lists summary ``seq`` (link ``?summary=N#summary-N``)."""
    return run.summaries.filter(seq__lt=seq).count() // SUMMARIES_PER_PAGE + 1


def summary_output(run: Run, seq: int) -> str | None:
    return run.summaries.filter(seq=seq).values_list("output", flat=True).first()


def summaries_json(run: Run) -> list[dict[str, Any]]:
    """Every summary call with its output; inputs (which can be megabytes) at ``input_url``.
    ``input_tokens``/``output_tokens`` are the summariser's usage; ``event`` is the event
    the call belongs to with the context ``tokens_before``/``tokens_after`` (as in events)."""
    rows = list(run.summaries.order_by("seq").defer("input"))
    events = summary_events(run, [s.seq for s in rows])
    return [
        {
            "seq": s.seq,
            "step": s.step,
            "event": dataclasses.asdict(events[s.seq]) if s.seq in events else None,
            "compaction": events[s.seq].compaction if s.seq in events else None,
            "input_tokens": s.input_tokens,
            "output_tokens": s.output_tokens,
            "usage_estimated": s.usage_estimated,
            "error": s.error,
            "summarizer": s.summarizer,
            "messages": s.messages,
            "output": s.output,
            "usage": s.usage,
            "input_url": reverse("run-summary", args=[run.pk, s.seq]),
        }
        for s in rows
    ]


# --- findings ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FindingGroup:
    kind: str
    count: int
    page: Page[Any]


@dataclass(frozen=True, slots=True)
class Findings:
    count: int
    groups: list[FindingGroup]


def findings_groups(run: Run, *, kind: str = "", page: int = 1) -> Findings:
    """Each finding kind with its count and first page of rows (page ``page`` for ``kind``)."""
    kind = _kind(kind)
    counts = sorted(_kind_counts(run.findings.all()), key=lambda kn: (-kn[1], kn[0]))
    groups = []
    for name, count in counts:
        rows = run.findings.filter(kind=name).order_by("step", "id")
        paginator = Paginator(rows, FINDINGS_PER_PAGE)
        paginator.count = count
        current: Page[Any] = paginator.get_page(page if name == kind else 1)
        current.object_list = [
            {
                "step": f.step,
                "messages": index_ranges(f.messages),
                "detail": detail_text(f.detail, limit=120),
            }
            for f in current.object_list
        ]
        groups.append(FindingGroup(name, count, current))
    return Findings(count=sum(n for _, n in counts), groups=groups)
