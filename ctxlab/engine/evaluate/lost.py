"""What a compaction lost: facts of the messages it removed or modified that nothing kept.

For each event that changed a message's fate, the facts at risk are the user instructions,
file paths, commands, error lines, identifiers, numbers with units and URLs
(``extract.message_facts``: from decoded content) of the touched messages as they were just
before the event. A fact is *retained* when it is still present in the
request right after it (the context of the event's step: every message in context, in the
version in force then, plus the summary in force); otherwise it is *lost*. Whether the
summary keeps a fact is one rule, ``kept_by_summary``, which ``survival`` reads too (so
"What was lost" and "Fact survival" never disagree): a regex fact by its exact value; a
sentence fact (an instruction, decision, open task) also when most of its content words
are in the summary (word for word or paraphrased: a summary is plain text, from which no
instruction is ever *extracted*).

The run's retention score is sum(retained) / sum(at risk) over its events (each event
counts its own distinct facts): 1.0 means every fact a compaction touched survived
somewhere in context. ``None`` when no event put anything at risk.

Each lost fact names the message that held it and the event that removed it.

Cost: facts are extracted once per distinct text (``extract`` memoises them by content, so repeated texts and other runs over the same transcript reuse them), and an
inverted index fact -> messages keeps the analysis linear in the transcript plus the facts
at risk, never events x context. ``clear_caches`` forgets the memo (benchmarks start cold).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.model import BlockKind, Message
from ..core.records import Event, Fate, Ranges, ReplayResult, StepRecord
from ..core.textkeys import content_words
from . import extract
from .extract import KINDS
from .instructions import PARAPHRASE_SHARE

Fact = tuple[str, str]  # (kind, value), kind in extract.KINDS

# Bumped whenever the rule deciding that a fact survived changes: stored analyses of an
# older rule are computed again.
RULE_VERSION = 2
SENTENCE_KINDS = frozenset({"instructions", "decisions", "open_tasks"})


def paraphrased(value: str, summary_words: frozenset[str]) -> bool:
    """Most (``instructions.PARAPHRASE_SHARE``) of at least two content words of ``value``
    are in ``summary_words``."""
    words = content_words(value)
    return len(words) >= 2 and len(words & summary_words) >= PARAPHRASE_SHARE * len(words)


def kept_by_summary(
    fact: Fact, summary_facts: frozenset[Fact], summary_words: frozenset[str]
) -> bool:
    """The one rule: does a summary (its facts, its content words) keep ``fact``?"""
    if fact in summary_facts:
        return True
    return fact[0] in SENTENCE_KINDS and paraphrased(fact[1], summary_words)


_MODIFIED = frozenset({Fate.TRUNCATED, Fate.OFFLOADED, Fate.PRUNED})


@dataclass(frozen=True, slots=True)
class LostFact:
    kind: str
    value: str
    message: int  # the first touched message that held it


@dataclass(frozen=True, slots=True)
class CompactionLoss:
    """One event's losses. ``lost`` lists at most ``limit`` facts; ``lost_count`` is exact."""

    event_id: int
    step: int
    kind: str
    messages: int  # messages the event touched
    at_risk: int
    retained: int
    lost: tuple[LostFact, ...]

    @property
    def lost_count(self) -> int:
        return self.at_risk - self.retained

    @property
    def score(self) -> float | None:
        return round(self.retained / self.at_risk, 4) if self.at_risk else None

    def as_dict(self) -> dict[str, Any]:
        by_kind: dict[str, list[str]] = {kind: [] for kind in KINDS}
        for fact in self.lost:
            by_kind[fact.kind].append(fact.value)
        return {
            "event": self.event_id,
            "step": self.step,
            "kind": self.kind,
            "messages": self.messages,
            "at_risk": self.at_risk,
            "retained": self.retained,
            "lost_count": self.lost_count,
            "score": self.score,
            "lost": [{"kind": f.kind, "value": f.value, "message": f.message} for f in self.lost],
            "lost_by_kind": {k: v for k, v in by_kind.items() if v},
        }


@dataclass(frozen=True, slots=True)
class Retention:
    at_risk: int
    retained: int
    events: tuple[CompactionLoss, ...]

    @property
    def score(self) -> float | None:
        return round(self.retained / self.at_risk, 4) if self.at_risk else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "extractor": extract.VERSION,
            "rule": RULE_VERSION,
            "retention": self.score,
            "at_risk": self.at_risk,
            "retained": self.retained,
            "lost": self.at_risk - self.retained,
            "events": [e.as_dict() for e in self.events],
        }


@dataclass(frozen=True, slots=True)
class Settled:
    """One fate-changing event as ``analyse_parts`` settles it, for an observer
    (``survival`` counts by category from it without a second pass): the facts at risk
    (fact -> first touched message), whether a fact stayed in the request right after,
    and whether a source message is in that request in its original version."""

    event: Event
    risk: Mapping[Fact, int]
    stayed: Callable[[Fact], bool]  # ``kept_by_summary`` or still in a message in context
    in_context: Callable[[int], bool]
    summary_id: int | None
    # every fact of ``risk`` -> ``KEPT_BY_SUMMARY``, ``IN_CONTEXT`` or ``LOST`` (``stayed``'s
    # verdict, and whether the summary is what kept it), settled once for every reader
    verdicts: Mapping[Fact, int]
    # the facts of ``risk`` whose verdict is ``LOST`` (with their message) and those
    # ``KEPT_BY_SUMMARY``, in ``risk``'s order: gathered while settling, so that a reader
    # counts by category without another pass over every fact at risk
    lost: Sequence[tuple[Fact, int]]
    kept_by_summary: Sequence[Fact]
    # the facts and content words of the summary in force (``summary_id``'s; empty without
    # one), as settling read them: a reader need not hash the summary's text again
    summary_facts: frozenset[Fact]
    summary_words: frozenset[str]


LOST, IN_CONTEXT, KEPT_BY_SUMMARY = 0, 1, 2  # ``Settled.verdicts``


def message_text(message: Message) -> str:
    """Everything the model sees of a message as text, tool call inputs as JSON (for
    display; facts come from ``message_facts``, which decodes the inputs)."""
    parts: list[str] = []
    for block in message.blocks:
        if block.kind is BlockKind.TOOL_USE:
            parts.append(block.tool_name)
            parts.append(block.input_json)
        elif block.text:
            parts.append(block.text)
    return "\n".join(parts)


def fact_set(text: str) -> frozenset[Fact]:
    """The distinct facts of plain ``text`` (memoised by content in ``extract``; bounded)."""
    return extract.fact_set(text)


def message_facts(message: Message) -> frozenset[Fact]:
    """The distinct facts of a message (decoded tool inputs, user instructions; memoised)."""
    return extract.message_facts(message)


def clear_caches() -> None:
    """Forget memoised facts (all of ``extract``'s caches): benchmarks start cold."""
    extract.clear_caches()


class FactIndex:
    """Facts per message version, and messages per fact, built lazily. One index can serve
    every run over the same transcript.

    ``known``: the originals' facts when they were extracted before (stored at import,
    ``extract.pack_facts``); ``shared``: another index over the same originals whose
    original facts and fact -> messages index this one reuses (each run keeps its own
    modified versions)."""

    def __init__(
        self,
        originals: Sequence[Message],
        *,
        known: Sequence[frozenset[Fact]] | None = None,
        shared: FactIndex | None = None,
    ) -> None:
        self.originals = originals
        self._original: list[frozenset[Fact] | None]
        if shared is not None:
            if shared.originals is not originals and len(shared.originals) != len(originals):
                raise ValueError("a shared fact index must be over the same messages")
            self._original = shared._original  # filled in place: shared both ways
            self._holders_of = shared
        else:
            if known is not None and len(known) != len(originals):
                raise ValueError(f"{len(known)} stored fact sets for {len(originals)} messages")
            self._original = list(known) if known is not None else [None] * len(originals)
            self._holders_of = self
        self._by_fact: dict[Fact, list[int]] | None = None
        # other analyses' values derived from the originals alone, shared like their facts
        self.per_transcript: dict[str, Any] = shared.per_transcript if shared is not None else {}
        # id(Message) -> (the message, its facts): holding the message keeps its id from
        # being reused by another object while the entry exists.
        self._versions: dict[int, tuple[Message, frozenset[Fact]]] = {}

    def original(self, index: int) -> frozenset[Fact]:
        found = self._original[index]
        if found is None:
            found = self._original[index] = message_facts(self.originals[index])
        return found

    def version(self, message: Message) -> frozenset[Fact]:
        entry = self._versions.get(id(message))
        if entry is None or entry[0] is not message:
            entry = self._versions[id(message)] = (message, message_facts(message))
        return entry[1]

    def version_of(self, index: int, message: Message) -> frozenset[Fact]:
        """``version(message)`` for a modified version of original ``index``: a cut of a
        tool output from the facts its original is known to have (``extract``'s
        ``cut_version_facts``: the same facts, most lines scanned for fewer kinds)."""
        entry = self._versions.get(id(message))
        if entry is None or entry[0] is not message:
            found = None
            if 0 <= index < len(self.originals):
                found = extract.cut_version_facts(
                    self.originals[index], message, self.original(index)
                )
            if found is None:
                found = message_facts(message)
            entry = self._versions[id(message)] = (message, found)
        return entry[1]

    def holders(self, fact: Fact) -> list[int]:
        """Source indexes whose original holds ``fact`` (built on first use)."""
        by_fact = self._by_fact
        if by_fact is None:
            by_fact = self._by_fact = self._holders_of._built()
        return by_fact.get(fact, _NONE)

    def holders_map(self) -> Mapping[Fact, list[int]]:
        """fact -> ``holders(fact)`` for every fact of the originals (read only)."""
        if self._by_fact is None:
            self._by_fact = self._holders_of._built()
        return self._by_fact

    def _built(self) -> dict[Fact, list[int]]:
        if self._by_fact is None:
            by_fact: defaultdict[Fact, list[int]] = defaultdict(list)  # read with .get only
            for i in range(len(self.originals)):
                for f in self.original(i):
                    by_fact[f].append(i)
            self._by_fact = by_fact
        return self._by_fact


_NONE: list[int] = []  # never mutated
_FEW = 8  # holders looked up one by one (more: a bisect per context range)
_KIND_ORDER = {kind: i for i, kind in enumerate(KINDS)}


def _lost_order(item: tuple[Fact, int]) -> tuple[int, int, str]:
    """A lost fact's listing order: kind (``KINDS``), message, value."""
    (kind, value), message = item
    return _KIND_ORDER[kind], message, value


def analyse(
    result: ReplayResult,
    originals: Sequence[Message],
    *,
    limit: int = 60,
) -> Retention:
    """Facts lost by each fate-changing event of ``result`` (see module docstring).

    ``originals`` are the conversation's messages (source order). ``limit`` caps the lost
    facts listed per event (counts stay exact).
    """
    return analyse_parts(
        result.steps,
        result.events,
        {s.id: s.output for s in result.summaries},
        originals,
        limit=limit,
    )


def analyse_parts(
    steps: Sequence[StepRecord],
    events: Sequence[Event],
    summaries: Mapping[int, str],
    originals: Sequence[Message],
    *,
    limit: int = 60,
    fact_index: FactIndex | None = None,
    observe: Callable[[Settled], None] | None = None,
) -> Retention:
    """``analyse`` over the parts (steps need only ``index``, ``context``, ``summary_id``).
    ``observe`` is called with each settled event (see ``Settled``), in event order."""
    index = fact_index if fact_index is not None else FactIndex(originals)
    current: dict[int, Message] = {}  # modified versions in force
    # fact -> indexes whose current version holds it, kept sorted so that a context range
    # is one bisect (a scan per fact cost seconds when many truncated versions share facts)
    mod_holders: dict[Fact, list[int]] = {}
    summary_facts: dict[int, frozenset[Fact]] = {}
    summary_words: dict[int, frozenset[str]] = {}
    step_at = {s.index: s for s in steps}
    last_step = steps[-1] if steps else None
    losses: list[CompactionLoss] = []

    def set_version(i: int, message: Message | None) -> None:
        old = current.pop(i, None)
        if old is not None:
            for f in index.version(old):
                holders = mod_holders.get(f)
                if holders is not None:
                    pos = bisect_left(holders, i)
                    if pos < len(holders) and holders[pos] == i:
                        del holders[pos]
        if message is not None:
            current[i] = message
            for f in index.version_of(i, message):
                insort(mod_holders.setdefault(f, []), i)

    def facts_now(i: int) -> frozenset[Fact]:
        version = current.get(i)
        return index.version(version) if version is not None else index.original(i)

    pending: list[tuple[Event, dict[Fact, int]]] = []
    size = len(originals)

    def settle(step: int) -> None:
        record = step_at.get(step, last_step if last_step and step > last_step.index else None)
        # sorted: the request order may differ from source order; membership is all we need
        ranges: Ranges = tuple(sorted(record.context)) if record else ()
        sfacts: frozenset[Fact] = frozenset()
        swords: frozenset[str] = frozenset()
        if record is not None and record.summary_id is not None:
            sid = record.summary_id
            if sid not in summary_facts:
                summary_facts[sid] = fact_set(summaries.get(sid, ""))
                summary_words[sid] = content_words(summaries.get(sid, ""))
            sfacts, swords = summary_facts[sid], summary_words[sid]

        # fact -> LOST / IN_CONTEXT / KEPT_BY_SUMMARY: each fact settled once per step,
        # for every event of the step and every reader (lost's listing, the observer)
        answers: dict[Fact, int] = {}
        by_fact = index.holders_map()
        # 1 for each source index in the request (a C-level fill per range): most facts
        # have a few holders, looked up one by one instead of bisected range by range
        live = bytearray(max([size, *(end for _, end in ranges)]))
        for start, end in ranges:
            start = max(start, 0)  # (a slice from a negative start would count from the end)
            if end > start:
                live[start:end] = b"\x01" * (end - start)

        def stayed(fact: Fact) -> bool:
            found = answers.get(fact)
            if found is None:
                answers[fact] = found = _verdict(fact)
            return found != LOST

        def _verdict(fact: Fact) -> int:
            if fact in sfacts or (
                swords and fact[0] in SENTENCE_KINDS and paraphrased(fact[1], swords)
            ):  # ``kept_by_summary`` (no word of an empty summary paraphrases anything)
                return KEPT_BY_SUMMARY
            modified = mod_holders.get(fact)
            if modified:
                if len(modified) <= _FEW:
                    for i in modified:
                        if live[i]:
                            return IN_CONTEXT
                else:
                    for start, end in ranges:
                        pos = bisect_left(modified, start)
                        if pos < len(modified) and modified[pos] < end:
                            return IN_CONTEXT
            holders = by_fact.get(fact)
            if holders:
                if len(holders) <= _FEW:
                    for i in holders:
                        if live[i] and i not in current:
                            return IN_CONTEXT
                    return LOST
                # holders are sorted: bisect each (few) context range instead of scanning them
                count = len(holders)
                for start, end in ranges:
                    pos = bisect_left(holders, start)
                    while pos < count and holders[pos] < end:
                        if holders[pos] not in current:
                            return IN_CONTEXT
                        pos += 1
            return LOST

        def in_context(i: int) -> bool:
            if i in current:
                return False
            pos = bisect_left(ranges, (i + 1,)) - 1
            return pos >= 0 and ranges[pos][0] <= i < ranges[pos][1]

        for event, risk in pending:
            gone: list[tuple[Fact, int]] = []
            kept: list[Fact] = []
            for f, src in risk.items():
                verdict = answers.get(f)
                if verdict is None:
                    answers[f] = verdict = _verdict(f)
                if verdict == LOST:
                    gone.append((f, src))
                elif verdict == KEPT_BY_SUMMARY:
                    kept.append(f)
            if observe is not None:
                in_force = record.summary_id if record is not None else None
                observe(
                    Settled(
                        event, risk, stayed, in_context, in_force, answers, gone, kept,
                        sfacts, swords,
                    )
                )  # fmt: skip
            # the first ``limit`` in (kind, message, value) order: only they are listed
            head = (
                heapq.nsmallest(limit, gone, key=_lost_order)
                if len(gone) > limit
                else sorted(gone, key=_lost_order)
            )
            losses.append(
                CompactionLoss(
                    event_id=event.id,
                    step=event.step,
                    kind=event.kind,
                    messages=len({c.index for c in event.changes}),
                    at_risk=len(risk),
                    retained=len(risk) - len(gone),
                    lost=tuple(LostFact(f[0], f[1], src) for f, src in head),
                )
            )
        pending.clear()

    group_step: int | None = None
    for event in events:
        if group_step is not None and event.step != group_step:
            settle(group_step)
        group_step = event.step
        risk: dict[Fact, int] = {}
        touched = False
        for change in event.changes:
            if change.fate is Fate.RESTORED or change.fate is Fate.KEPT:
                continue
            touched = True
            # each fact at risk with the first touched message holding it (order of facts
            # within a message: none needed, every reader sorts or counts)
            # sorted: no reader needs the order, but the lost facts' listing (``heapq``,
            # ``sorted``) runs much faster over nearly sorted facts (0.3 s of qwenpaw's 2 s)
            # (the facts not at risk yet, sorted: the same dict as a ``setdefault`` each;
            # ``difference`` with the dict looks each fact up, ``- risk.keys()`` would
            # walk every key at risk)
            facts = facts_now(change.index)
            if risk:
                facts = facts.difference(risk)
            if facts:
                risk.update(dict.fromkeys(sorted(facts), change.index))
        for change in event.changes:
            if change.fate in _MODIFIED:
                set_version(change.index, change.message)
            elif change.fate is Fate.RESTORED:
                set_version(change.index, None)
        if touched:
            pending.append((event, risk))
    if group_step is not None:
        settle(group_step)
    at_risk = sum(e.at_risk for e in losses)
    retained = sum(e.retained for e in losses)
    return Retention(at_risk=at_risk, retained=retained, events=tuple(losses))
