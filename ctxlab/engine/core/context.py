"""The mutable working state of one replay: what a strategy reads and changes.

A ``ReplayContext`` holds the live history (source indexes in request order), the current
version of every modified message, the summary, and running token totals under the
strategy's estimator and the reference tokenizer. Totals are maintained incrementally
(append/replace/remove adjust them), so a step costs O(changes), never O(context).

Strategies see it through a read-only ``ContextView`` (``ctx.view``) and change it only
inside ``with ctx.action(kind) as act:`` blocks (the action becomes one ``Event`` carrying
the fate changes, tokens before/after and detail) or through the view's other recording
methods. The strategy's own per-replay state is ``ctx.state``.
"""

from __future__ import annotations

import bisect
import heapq
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ..tokens.reference import ReferenceTokens
from .catalogue import NOTE_KEY, offline_outcome_note
from .context_view import ContextView
from .model import Conversation, Message, Role
from .packed import PackedTexts
from .records import (
    Change,
    Event,
    Fate,
    Finding,
    RangeChunks,
    ReplayResult,
    SourceIndexes,
    StepRanges,
    StepRecord,
    SummaryRecord,
    new_change,
    new_step_record,
    new_step_tokens,
)
from .strategy import Strategy
from .summary_input import PackedInput
from .summary_request import Summarizer, SummarizerError, SummaryRequest
from .tool_pairs import OriginalIds, SeenTools, ToolLedger, tool_ids

# Removals of at most this many messages outside the oldest cut ``live`` and the context
# ranges in place; more are rebuilt once when the step is recorded.
_FEW_REMOVED = 64
_AFTER_ANY = 1 << 62  # sorts after any end in a (start, end) range
_CHUNK = RangeChunks.CHUNK
_NONE_CHANGED = 1 << 62  # no range changed since the last step's chunks were made


@dataclass(slots=True)
class Pending:
    """Asynchronous work (a background summary, an injection) that lands at ``due`` step."""

    id: int
    kind: str
    description: str
    created_step: int
    due: int
    apply: Callable[[ContextView], None]


def _holds(message: Message, text: str) -> bool:
    """True when ``text`` is the very text of one of ``message``'s blocks or parts (an
    original's tool output offloaded whole: its conversation keeps it alive)."""
    for block in message.blocks:
        if block.text is text:
            return True
        for part in block.parts:
            if part.text is text:
                return True
    return False


@dataclass(slots=True)
class Action:
    """Collects one event's changes; see ``ReplayContext.action``."""

    ctx: ReplayContext
    kind: str
    detail: dict[str, Any]
    reason: str = ""
    always: bool = False  # emit the event even with no message changes
    changes: list[Change] = field(default_factory=list)
    touched: list[int] = field(default_factory=list)
    summary_id: int | None = None

    def replace(
        self,
        index: int,
        message: Message,
        fate: Fate,
        *,
        reason: str = "",
        offload_path: str = "",
        offload_text: str | None = None,
    ) -> None:
        """Swap in a modified version of ``index`` (in place, persists)."""
        self.ctx._replace(index, message)
        if offload_path and offload_text is not None:
            offloads = self.ctx.result.offloads
            if isinstance(offloads, PackedTexts) and _holds(
                self.ctx.originals[index], offload_text
            ):
                offloads.keep(offload_path, offload_text)
            else:
                offloads[offload_path] = offload_text
        self.changes.append(new_change(index, fate, reason or self.reason, message, offload_path))
        self.touched.append(index)

    def offload(self, path: str, text: str) -> None:
        """Save another file the change wrote (shown with the run's offloads)."""
        self.ctx.result.offloads[path] = text

    def remove(self, indexes: Iterable[int], fate: Fate, *, reason: str = "") -> list[int]:
        """Take messages out of the live history (``summarised`` or ``dropped``)."""
        gone = self.ctx._remove(indexes)
        why = reason or self.reason
        self.changes.extend(new_change(i, fate, why, None, "") for i in gone)
        self.touched.extend(gone)
        return gone

    def restore(self, indexes: Iterable[int], *, reason: str = "") -> list[int]:
        """Put removed messages back into the live history (``restored``): a request-local
        removal has ended and the next request is built from the session again."""
        back = self.ctx._restore(indexes)
        why = reason or self.reason
        self.changes.extend(new_change(i, Fate.RESTORED, why, None, "") for i in back)
        self.touched.extend(back)
        return back

    def mark(
        self, index: int, fate: Fate, *, reason: str = "", message: Message | None = None
    ) -> None:
        """Record a fate without changing the working history (request-view prunes,
        ``restored``)."""
        self.changes.append(new_change(index, fate, reason or self.reason, message, ""))
        self.touched.append(index)


class ReplayContext:
    """Working state of one replay. Strategies get ``view`` (read-only) and act through it."""

    def __init__(
        self,
        conversation: Conversation,
        strategy: Strategy,
        *,
        reference: ReferenceTokens,
        summarizer: Summarizer,
    ) -> None:
        self.conversation = conversation
        self.originals = conversation.messages
        self.strategy = strategy
        self.summarizer = summarizer
        self.reference = reference
        self.state: Any = strategy.State()  # the strategy's per-replay state
        # This replay's estimator (a strategy counting with the reference table reads it
        # from here, not from its own instance, which other replays share).
        self._count_message = strategy.message_counter(reference, self.state)
        n = len(self.originals)
        self.result = ReplayResult(
            strategy=strategy.name,
            params=dict(strategy.params),
            estimator=strategy.estimator,
            summarizer=getattr(summarizer, "name", type(summarizer).__name__),
            message_count=n,
        )
        # Per source index, read at C level (the view hands strategies these lists'
        # ``__getitem__``): the current version of each message (``_current`` holds the
        # modified ones), its reference count, its tool ids; ``_query``: the original is a
        # user query (not only tool results).
        self._current: dict[int, Message] = {}
        self._versions: list[Message] = list(self.originals)
        self.message: Callable[[int], Message] = self._versions.__getitem__
        self.original: Callable[[int], Message] = self.originals.__getitem__
        self._est: list[int] = [-1] * n
        self._ref: list[int] = list(reference.per_message)
        self.ref_tokens: Callable[[int], int] = self._ref.__getitem__
        # (the system prompt is never appended: its ids are not the original's so far)
        first = self.originals[0] if n else None
        known = OriginalIds(
            self.originals, 1 if first is not None and first.role is Role.SYSTEM else 0
        )
        self._ids, self._query = known.ids, known.query
        self._known_ids = known
        self.ids: Callable[[int], tuple[tuple[str, ...], tuple[str, ...]]] = self._ids.__getitem__
        self.alive = bytearray(n)
        self.live: list[int] = []
        self._ranges: list[tuple[int, int]] = []
        self._ranges_dirty = False  # _ranges must be rebuilt from live before it is read
        # Many ranges: the steps share immutable chunks of them (``context_ranges``); the
        # chunks of _ranges[:len(_chunks) * _CHUNK] hold unless a range below _changed_from
        # changed since they were made.
        self._chunks: list[tuple[tuple[int, int], ...]] = []
        self._changed_from = _NONE_CHANGED
        self.history_tokens = 0
        self.history_ref = 0
        # The system prompt: the first message when its role is system.
        self.system_index: int | None = (
            0 if first is not None and first.role is Role.SYSTEM else None
        )
        self.system_text = first.text if self.system_index is not None and first else ""
        self.system_tokens = strategy.count_system(
            self.system_text, first if self.system_index is not None else None
        )
        self.system_ref = reference.message(0) if self.system_index is not None else 0
        self.tools_tokens = strategy.count_tools(conversation.tools)
        self.tools_ref = reference.tools
        if self.system_index is not None:
            self.alive[0] = 1
            self._ranges.append((0, 1))
        self._summary: str | Callable[[], str] = ""
        self.summary_tokens = 0
        self.summary_ref = 0
        self.summary_id: int | None = None
        self.step = 0  # index of the next StepRecord
        self.source_index = -1  # message being appended, or the assistant about to be generated
        self.last_user_query: int | None = None
        self.turn_start: int | None = None  # source index of the current turn's user query
        self.turn_tokens = 0  # strategy tokens appended since the current turn started
        self.live_tools = ToolLedger()
        # The original's ids so far are those first seen below ``_appended`` (the replay
        # appends in source order): ``_known_ids``, ``orig_tools``.
        self._appended = 0  # the last appended source index + 1
        self._orig_tools: tuple[int, SeenTools] | None = None
        self.broken_tools: set[str] = set()  # live unmatched, matched in the original
        self.pending: list[Pending] = []
        self._next_pending = 0
        self._new_events: list[Event] = []
        self._new_summaries: list[SummaryRecord] = []
        self._new_findings: list[Finding] = []
        # The request as the strategy counts it for its trigger (``compared_tokens``, else
        # the estimate): the run's curve, event before/after figures and zones use it.
        self.counted_tokens: Callable[[], int] = (
            self.request_tokens  # the default ``compared_tokens`` is always None
            if type(strategy).compared_tokens is Strategy.compared_tokens
            else self._compared_or_estimate
        )
        self.view = ContextView(self)

    def close(self) -> None:
        """Drop what refers back to this context (``view`` and ``counted_tokens`` are bound
        to it), so it and its result are freed by reference counting when their holders
        let go. Left in that cycle, a 20,000-message replay's records (60,000-160,000
        objects) waited for the next full collection, which traverses the whole heap.
        ``Replay`` closes its context when it is dropped."""
        self.__dict__.pop("view", None)
        self.__dict__.pop("counted_tokens", None)

    # --- reading ------------------------------------------------------------------------
    # ``message(index)``: the current version of source message ``index`` (modified or
    # original); ``original(index)``; ``ref_tokens(index)``: its reference count;
    # ``ids(index)``: its (tool_use ids, tool_result ids): set in ``__init__``.
    @property
    def orig_tools(self) -> SeenTools:
        """The tool ids of the original messages appended so far (they only ever join):
        made when read (the findings read ``_known_ids`` instead), the same object until
        the next append."""
        upto = self._appended
        made = self._orig_tools
        if made is None or made[0] != upto:
            made = self._orig_tools = (upto, self._known_ids.seen(upto))
        return made[1]

    def is_modified(self, index: int) -> bool:
        return index in self._current

    def tokens(self, index: int) -> int:
        """Strategy-estimator tokens of the current version (cached)."""
        value = self._est[index]
        if value < 0:
            value = self._count_message(self.message(index))
            self._est[index] = value
        return value

    def request_tokens(self) -> int:
        """The whole request under the strategy estimator (system + tools + summary +
        history)."""
        return self.system_tokens + self.tools_tokens + self.summary_tokens + self.history_tokens

    def _compared_or_estimate(self) -> int:
        """``counted_tokens`` of a strategy with its own ``compared_tokens``."""
        compared = self.strategy.compared_tokens(self.view)
        return self.request_tokens() if compared is None else compared

    def request_ref(self) -> int:
        return self.system_ref + self.tools_ref + self.summary_ref + self.history_ref

    # --- summary ------------------------------------------------------------------------
    @property
    def summary(self) -> str:
        """The summary's text; made when first read if the strategy gave a function."""
        if not isinstance(self._summary, str):
            self._summary = self._summary()
        return self._summary

    def set_summary(
        self,
        text: str | Callable[[], str],
        *,
        tokens: int,
        rendered: str | Callable[[], str],
        summary_id: int | None,
        rendered_ref: int | None = None,
    ) -> None:
        """Replace the summary. ``tokens`` is what the strategy counts for it; ``rendered``
        is the text it adds to the request, counted with the reference tokenizer unless the
        strategy gives that count (``rendered_ref``, e.g. summed from parts it knows).
        ``text`` and ``rendered`` may be functions making a non-empty text, called only if
        it is read: a summary of many parts re-made at every render (every checkpoint so
        far) made long replays quadratic, and its text is seldom read."""
        self._summary = text
        self.summary_tokens = tokens
        if not rendered:
            self.summary_ref = 0
        else:
            if rendered_ref is None:  # by lines: a summary repeats most of the previous one's
                rendered_ref = self.reference.text_by_lines(
                    rendered if isinstance(rendered, str) else rendered()
                )
            self.summary_ref = rendered_ref + 4
        self.summary_id = summary_id if text else None

    def set_system_tokens(self, tokens: int) -> None:
        """The system prompt's tokens as the strategy counts them, when that needs more
        than ``count_system`` sees (e.g. a runtime block the original appends)."""
        self.system_tokens = tokens

    def summarize(
        self,
        request: SummaryRequest,
        *,
        messages: Iterable[int] = (),
        input_text: Callable[[], str] | None = None,
    ) -> SummaryRecord:
        """Call the summariser and record the call. ``record.error`` is set on failure
        (exception or error response); the strategy then takes its own failure path.
        ``input_text``: a function making ``request.input_text()`` again from what the
        replay keeps anyway (``stages.remade_input``), kept instead of the request's parts."""
        error = ""
        text = ""
        usage = None
        # Where the request is made (a summariser answering from the transcript needs it).
        request = replace(request, source_index=self.source_index, conversation=self.conversation)
        try:
            response = self.summarizer.summarize(request)
            text, usage, error = response.text, response.usage, response.error
        except SummarizerError as exc:
            error = str(exc) or type(exc).__name__
        # (chained runs stay runs: ``SourceIndexes``)
        messages = messages if isinstance(messages, SourceIndexes) else tuple(messages)
        record = SummaryRecord(
            id=len(self.result.summaries),
            step=self.step,
            # Rendered when read, from the parts only (not the material nor the
            # conversation), the long ones compressed unless the replay keeps them anyway
            # (``summary_input``).
            input=PackedInput(request, self._held_texts(request))
            if input_text is None
            else input_text,
            output=text,
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            usage_estimated=usage.estimated if usage else True,
            error=error,
            summarizer=self.result.summarizer,
            messages=messages,
        )
        self.result.summaries.append(record)
        self._new_summaries.append(record)
        return record

    def _held_texts(self, request: SummaryRequest) -> set[int]:
        """The ``id`` of every block text, current and original, of the messages the request
        reads (its material: not the summarised ``messages``, which for a summary of
        summaries lists every source behind them again, millions for Aider's): texts the
        replay keeps anyway."""
        current, originals = self.message, self.originals
        indexes = {m.index for m in request.material if m.index >= 0}
        held = {id(b.text) for i in indexes for b in current(i).blocks}
        held.update(id(b.text) for i in indexes for b in originals[i].blocks)
        return held

    # --- changing -----------------------------------------------------------------------
    def action(
        self, kind: str, *, reason: str = "", always: bool = False, **detail: Any
    ) -> _ActionScope:
        """``with ctx.action("truncate", threshold=t) as act: act.replace(...)`` -> one Event."""
        return _ActionScope(Action(self, kind, dict(detail), reason, always))

    def emit(
        self,
        kind: str,
        *,
        messages: Iterable[int] = (),
        summary_id: int | None = None,
        **detail: Any,
    ) -> Event:
        """An event with no message changes (``summary_failed``, ``skip``, ``overflow`` ...)."""
        total = self.counted_tokens()
        return self._event(kind, tuple(messages), total, total, detail, (), summary_id)

    def _event(
        self,
        kind: str,
        messages: tuple[int, ...],
        before: int,
        after: int,
        detail: dict[str, Any],
        changes: tuple[Change, ...],
        summary_id: int | None,
    ) -> Event:
        event = Event(
            id=len(self.result.events),
            step=self.step,
            kind=kind,
            messages=messages,
            tokens_before=before,
            tokens_after=after,
            detail=self._with_summary_note(kind, detail, summary_id),
            changes=changes,
            summary_id=summary_id,
        )
        self.result.events.append(event)
        self._new_events.append(event)
        return event

    def _with_summary_note(
        self, kind: str, detail: dict[str, Any], summary_id: Any, *, finding: bool = False
    ) -> dict[str, Any]:
        """``detail`` with the catalogue's note when the outcome follows from an offline
        summary's text (``catalogue.offline_outcome_note``): every page, JSON twin and
        report that shows the event or finding shows it beside it."""
        if not isinstance(summary_id, int) or not 0 <= summary_id < len(self.result.summaries):
            return detail
        record = self.result.summaries[summary_id]
        note = offline_outcome_note(kind, record.summarizer, finding=finding)
        return {**detail, NOTE_KEY: note} if note and not record.error else detail

    def finding(self, kind: str, *, messages: Iterable[int] = (), **detail: Any) -> None:
        detail = self._with_summary_note(kind, detail, detail.get("summary_id"), finding=True)
        finding = Finding(self.step, kind, tuple(messages), detail)
        self.result.findings.append(finding)
        self._new_findings.append(finding)

    def defer(
        self,
        kind: str,
        description: str,
        apply: Callable[[ContextView], None],
        *,
        skip_next: bool = False,
    ) -> Pending:
        """Asynchronous work: applied before the next request is built, or, with
        ``skip_next`` (work started while preparing a request that will not wait for it),
        before the one after. Shown in ``StepRecord.pending`` until then."""
        item = Pending(
            self._next_pending,
            kind,
            description,
            self.step,
            self.step + (1 if skip_next else 0),
            apply,
        )
        self._next_pending += 1
        self.pending.append(item)
        return item

    def _replace(self, index: int, message: Message) -> None:
        was_alive = self.alive[index]
        old_tokens = self.tokens(index)
        ref = self._ref
        old_ref = ref[index]
        old_ids = self._ids[index]
        self._current[index] = message
        self._versions[index] = message
        self._est[index] = -1
        new_ids = self._ids[index] = tool_ids(message)
        ref[index] = self.reference.message_of(message)
        if was_alive and index != self.system_index:
            self.history_tokens += self.tokens(index) - old_tokens
            self.history_ref += ref[index] - old_ref
            if old_ids[0] or old_ids[1]:
                self.live_tools.add(old_ids, -1)
            if new_ids[0] or new_ids[1]:
                self.live_tools.add(new_ids)

    def _remove(self, indexes: Iterable[int]) -> list[int]:
        gone: list[int] = []
        alive, est, ref, ids_of = self.alive, self._est, self._ref, self._ids
        system = self.system_index
        tokens = ref_total = 0
        leaving: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        for i in indexes:
            if not alive[i] or i == system:
                continue
            alive[i] = 0
            value = est[i]
            tokens += value if value >= 0 else self.tokens(i)
            ref_total += ref[i]
            ids = ids_of[i]
            if ids[0] or ids[1]:  # (most messages carry no tool id)
                leaving.append(ids)
            gone.append(i)
        if leaving:
            self.live_tools.remove_all(leaving)
        if gone:
            self.history_tokens -= tokens
            self.history_ref -= ref_total
            live = self.live
            k = len(gone)
            # A new list when a strategy may still iterate the old one (it holds a
            # reference: more than this attribute, ``live`` and getrefcount's argument),
            # else cut in place (a copy increments every item's count: O(live) per
            # removal, quadratic for a strategy dropping a few messages per turn);
            # dropping the oldest messages is the common case and needs no per-item test.
            shared = sys.getrefcount(live) > 3
            if not any(alive[i] for i in live[:k]):  # the k oldest are exactly the gone ones
                if shared:
                    self.live = live[k:]
                else:
                    del live[:k]
            elif k <= _FEW_REMOVED:  # a few from the middle: cut them out (C-level moves)
                cut = live[:] if shared else live
                for i in sorted(gone, reverse=True):
                    del cut[bisect.bisect_left(cut, i)]
                self.live = cut
            else:
                self.live = [i for i in live if self.alive[i]]
            if self._ranges_dirty or k > _FEW_REMOVED or not self._cut_ranges(gone):
                self._ranges_dirty = True  # rebuilt once, when the step is recorded
            self._recount_turn()
        return gone

    def _cut_ranges(self, gone: list[int]) -> bool:
        """Take the ``gone`` indexes out of the context ranges in place (a strategy that
        drops a few messages per request from a long history would otherwise rebuild every
        range, O(history), at each step). False when one is not found: rebuild instead."""
        ranges = self._ranges
        for i in gone:
            k = bisect.bisect_right(ranges, (i, _AFTER_ANY)) - 1
            if k < 0:
                return False
            start, end = ranges[k]
            if not start <= i < end:
                return False
            pieces = [(start, i)] if start < i else []
            if i + 1 < end:
                pieces.append((i + 1, end))
            ranges[k : k + 1] = pieces
            if k < self._changed_from:
                self._changed_from = k
        return True

    def _restore(self, indexes: Iterable[int]) -> list[int]:
        back = sorted({i for i in indexes if not self.alive[i] and i != self.system_index})
        if not back:
            return back
        for i in back:
            self.alive[i] = 1
            self.history_tokens += self.tokens(i)
            self.history_ref += self._ref[i]
            self.live_tools.add(self._ids[i])
        live = self.live  # both in source order; a new list (strategies may hold the old)
        if not live or back[0] > live[-1]:
            self.live = live + back
        elif back[-1] < live[0]:  # (a request-local removal of the oldest ended)
            self.live = back + live
        else:
            self.live = list(heapq.merge(live, back))
        self._ranges_dirty = True
        self._recount_turn()
        return back

    def _recount_turn(self) -> None:
        if self.turn_start is not None:
            # live is in source order: the current turn is a suffix of it
            start = bisect.bisect_left(self.live, self.turn_start)
            # every live message is counted (``append``, ``_replace`` and ``_restore`` count it)
            self.turn_tokens = sum(map(self._est.__getitem__, self.live[start:]))

    def _context_ranges(self) -> list[tuple[int, int]]:
        if self._ranges_dirty:
            self._rebuild_ranges()
            self._ranges_dirty = False
            self._changed_from = 0
        return self._ranges

    def context_ranges(self) -> StepRanges:
        """The context's ranges as a step records them: a tuple, or, past ``_CHUNK`` of
        them, ``RangeChunks`` sharing with the previous step every chunk below the first
        range changed since (appends only touch the last range, never chunked), so a step
        costs O(ranges / _CHUNK + _CHUNK), not O(ranges)."""
        ranges = self._context_ranges()
        n = len(ranges)
        chunks = self._chunks
        if n <= _CHUNK:
            if chunks:
                chunks.clear()
            self._changed_from = _NONE_CHANGED
            return tuple(ranges)
        full = (n - 1) // _CHUNK  # whole chunks before the one holding the last range
        keep = min(len(chunks), self._changed_from // _CHUNK, full)
        if keep < len(chunks):
            old = chunks[keep:]
            del chunks[keep:]
            for c in range(keep, full):
                made = tuple(ranges[c * _CHUNK : (c + 1) * _CHUNK])
                # a rebuild most often leaves the older chunks as they were: share them
                if c - keep < len(old) and old[c - keep] == made:
                    made = old[c - keep]
                chunks.append(made)
        else:
            for c in range(len(chunks), full):
                chunks.append(tuple(ranges[c * _CHUNK : (c + 1) * _CHUNK]))
        self._changed_from = _NONE_CHANGED
        return RangeChunks((*chunks, tuple(ranges[full * _CHUNK :])))

    def _rebuild_ranges(self) -> None:
        """The runs of ``alive`` (the system prompt, index 0, then ``live`` in source
        order), found by C-level searches: O(ranges) steps of Python, not O(live)."""
        ranges: list[tuple[int, int]] = []
        alive = self.alive
        find, n = alive.find, len(alive)
        start = find(1)
        while start >= 0:
            end = find(0, start)
            if end < 0:
                end = n
            ranges.append((start, end))
            start = find(1, end)
        self._ranges = ranges

    # --- driven by the replay loop ------------------------------------------------------
    def append(self, index: int) -> None:
        """Source message ``index`` joins the history (as the original agent appends it)."""
        self.source_index = index
        self.alive[index] = 1
        self.live.append(index)
        if not self._ranges_dirty:
            ranges = self._ranges
            if ranges and ranges[-1][1] == index:
                ranges[-1] = (ranges[-1][0], index + 1)
            else:
                ranges.append((index, index + 1))
        # A newly appended message is the original unless a strategy already replaced it.
        tokens = self._est[index]
        if tokens < 0:
            tokens = self._est[index] = self._count_message(self._versions[index])
        self.history_tokens += tokens
        self.history_ref += self._ref[index]
        self._appended = index + 1
        ids = self._ids[index]
        if ids[0] or ids[1]:
            # ``live_tools.add(ids)`` inlined (most appended messages carry one id)
            ledger = self.live_tools
            uses, results = ids
            use_counts, result_counts, unmatched = ledger.uses, ledger.results, ledger.unmatched
            ledger.changed.update(uses, results)
            for tid in uses:
                k = use_counts[tid] = use_counts.get(tid, 0) + 1
                if (k > 0) == (result_counts.get(tid, 0) > 0):
                    unmatched.discard(tid)
                else:
                    unmatched.add(tid)
            for tid in results:
                k = result_counts[tid] = result_counts.get(tid, 0) + 1
                if (use_counts.get(tid, 0) > 0) == (k > 0):
                    unmatched.discard(tid)
                else:
                    unmatched.add(tid)
        if self._query[index]:  # the turn is the original's: its own test
            self.last_user_query = index
            self.turn_start = index
            self.turn_tokens = tokens
        else:
            self.turn_tokens += tokens

    def run_pending(self) -> None:
        if not self.pending:
            return
        due = [p for p in self.pending if p.due <= self.step]
        if not due:
            return
        self.pending = [p for p in self.pending if p.due > self.step]
        for item in due:
            item.apply(self.view)

    def record(self, source_index: int) -> StepRecord:
        """Build the StepRecord of the request prepared for ``source_index``."""
        self.source_index = source_index
        self.check_findings()
        usage = self.originals[source_index].usage
        events, summaries, findings = self._new_events, self._new_summaries, self._new_findings
        # Positional, every field in order (see records.new_step_record).
        record = new_step_record(
            self.step,
            source_index,
            new_step_tokens(
                self.counted_tokens(),
                self.system_ref + self.tools_ref + self.summary_ref + self.history_ref,
                usage.prompt_tokens if usage else None,
            ),
            self.strategy.zones(self.view),
            self.context_ranges(),
            self.summary_id,
            tuple(events) if events else (),
            tuple(summaries) if summaries else (),
            tuple(findings) if findings else (),
            tuple(p.description for p in self.pending) if self.pending else (),
        )
        if events:
            events.clear()
        if summaries:
            summaries.clear()
        if findings:
            findings.clear()
        self.result.steps.append(record)
        self.step += 1
        return record

    def check_findings(self) -> None:
        """Record the findings of the request about to be sent at ``self.step``."""
        broken = self.broken_tools
        changed = self.live_tools.changed
        if changed:
            # Only the ids touched since the last step: sources may leave many calls unanswered,
            # and a set difference of every one at every step grew with the transcript.
            live_bad, known, upto = self.live_tools.unmatched, self._known_ids, self._appended
            first_use, first_result = known.first_use.get, known.first_result.get
            for tid in changed:
                # unmatched live, matched (or not yet seen) in the original so far
                if tid in live_bad and (first_use(tid, upto) < upto) == (
                    first_result(tid, upto) < upto
                ):
                    broken.add(tid)
                else:
                    broken.discard(tid)
            changed.clear()
        if broken:
            self.finding("tool_pair_broken", tool_ids=sorted(broken)[:20], count=len(broken))
        latest = self.last_user_query
        if latest is not None and not self.alive[latest]:
            self.finding("latest_user_dropped", messages=(latest,))
        sysi = self.system_index
        if sysi is not None and (not self.alive[sysi] or self.is_modified(sysi)):
            self.finding("system_modified", messages=(sysi,))
        window = self.strategy.window(self.view)
        ref = self.system_ref + self.tools_ref + self.summary_ref + self.history_ref
        if window and ref > window:
            self.finding("overflow", reference=ref, window=window)


class _ActionScope:
    __slots__ = ("_action", "_before")

    def __init__(self, action: Action) -> None:
        self._action = action
        self._before = 0

    def __enter__(self) -> Action:
        self._before = self._action.ctx.counted_tokens()
        return self._action

    def __exit__(self, *exc: object) -> None:
        act = self._action
        if exc[0] is not None:
            return
        if act.changes or act.always:
            act.ctx._event(
                act.kind,
                tuple(dict.fromkeys(act.touched)),
                self._before,
                act.ctx.counted_tokens(),
                act.detail,
                tuple(act.changes),
                act.summary_id,
            )
