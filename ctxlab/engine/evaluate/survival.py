"""Which facts survive each compaction, by category: for replays and for the original agent.

For every compaction, the facts of what it replaced (the messages it summarised, dropped
or cut) are *at risk*; a fact *survives* when it is still available to the model in the
request right after: in the summary, in a message kept in context (the tail), or in a
message the agent re-attached (Claude Code re-reads files and CLAUDE.md after compacting).

Categories (``CATEGORIES``): ``extract.KINDS`` (instructions, paths, commands, errors,
identifiers, numbers, urls) plus

- ``decisions``: sentences of the assistant's text that choose or reject an approach
  ("I'll use X instead of Y", "decided to ...", "rather than ...");
- ``open_tasks``: the items of the latest to-do list (TodoWrite, update_plan) among the
  replaced messages that were not completed.

Whether the summary keeps a fact is ``lost.kept_by_summary``, the rule "What was lost"
reads too: regex facts (paths, commands, ...) by exact value; sentence facts
(instructions, decisions, open tasks) also as a paraphrase, when most of their content
words (``textkeys.content_words``) are in the summary. Both are word-level: a summary that
keeps a path but says the wrong thing about it still "keeps" it.

Two drivers:

- ``analyse_replay``: a replay's fate-changing compaction events, through
  ``lost.analyse_parts`` (one pass gives the retention analysis and survival);
- ``analyse_original``: the transcript's own compactions (``Conversation.compactions``):
  replaced = the messages since the previous boundary; available after = the recorded
  summary and the messages of the first request after the boundary (the summary message,
  re-attached files and reminders, the next prompt).

Drift: each summary's facts are followed to the next compaction; those present in summary
N and gone after compaction N+1 are drift. ``persistence`` is the share of the first
summary's facts still available after the last compaction (None with fewer than two).

Instruction sources (``instructions``) are followed through the same compactions.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from ..core.catalogue import is_compaction
from ..core.lru import BoundedLRU
from ..core.model import BlockKind, Conversation, Message, Role
from ..core.records import Fate, ReplayResult
from ..core.textkeys import content_words, text_key
from . import extract, instructions, lost

# Bumped whenever survival counts differently: stored tables of an older version (or of an
# older extractor) are computed again.
VERSION = 3  # 3: one rule with lost (kept_by_summary)

CATEGORIES = (*extract.KINDS, "decisions", "open_tasks")
SENTENCE_KINDS = lost.SENTENCE_KINDS
LOST_EXAMPLES = 8  # lost facts listed per category per compaction (counts stay exact)
DRIFT_EXAMPLES = 12

Fact = tuple[str, str]

DECISION_RE = re.compile(
    r"\b(?:I'll use|I will use|I'll go with|let's use|let's go with|we'll use|going with"
    r"|decided|decision|chose|choose to|opted|switch(?:ed|ing)? to|instead of|rather than"
    r"|better approach|won't work|doesn't work because|the approach|the fix is|root cause)\b",
    re.IGNORECASE,
)
SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")
TODO_TOOLS = frozenset({"TodoWrite", "todo_write", "update_plan", "todowrite", "TodoList"})
DONE = frozenset({"completed", "done", "cancelled"})

_EXTRA: BoundedLRU[frozenset[Fact]] = BoundedLRU(32_768, 16_000_000)


# Every ``DECISION_RE`` match holds one of these, lower-cased (in ASCII text ``str.lower``
# folds exactly the letters ``re.IGNORECASE`` does): a text with none holds no decision, and
# most assistant texts are skipped without splitting their sentences (or hashing them for
# the memo). Outside ASCII, IGNORECASE folds more (the Kelvin sign to "k", "ſ" to "s").
_DECISION_WORDS = (
    "i'll use", "i will use", "i'll go with", "let's use", "let's go with", "we'll use",
    "going with", "decided", "decision", "chose", "choose to", "opted", "switch", "instead of",
    "rather than", "better approach", "won't work", "doesn't work because", "the approach",
    "the fix is", "root cause",
)  # fmt: skip


def _cannot_decide(text: str) -> bool:
    """True when ``DECISION_RE`` cannot match anywhere in ``text`` (exact; see above). A
    sentence is a substring of its text, so no sentence of it matches either."""
    if not text.isascii():
        return False
    low = text.lower()
    for word in _DECISION_WORDS:  # noqa: SIM110 (a loop: this runs for every assistant text)
        if word in low:
            return False
    return True


def _decisions(text: str) -> Iterable[Fact]:
    if _cannot_decide(text):
        return
    for sentence in SENTENCE_RE.split(text):
        sentence = sentence.strip().lstrip("-*#> ").strip()
        if len(sentence) >= 12 and DECISION_RE.search(sentence):
            yield ("decisions", sentence[:200])


def _open_items(tool_input: Any) -> Iterable[Fact]:
    items = (
        tool_input.get("todos") or tool_input.get("plan") if isinstance(tool_input, dict) else None
    )
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict) or str(item.get("status", "")).lower() in DONE:
            continue
        text = item.get("content") or item.get("step") or item.get("title")
        if isinstance(text, str) and text.strip():
            yield ("open_tasks", text.strip()[:200])


def _decoded(block: Any) -> Any:
    return extract._decoded_input(block)


def extra_facts(message: Message) -> frozenset[Fact]:
    """A message's decisions (assistant text) and open tasks (a to-do tool call's items),
    memoised by the hash of the text they come from."""
    found: set[Fact] = set()
    for block in message.blocks:
        if block.kind is BlockKind.TEXT and message.role is Role.ASSISTANT and block.text:
            text = block.text
            if _cannot_decide(text):  # no decision: no need to hash it for the memo
                continue
            key = "d" + text_key(text)
            got = _EXTRA.get(key)
            if got is None:
                got = frozenset(_decisions(text))
                _EXTRA.set(key, got, weight=len(text))
            found |= got
        elif block.kind is BlockKind.TOOL_USE and block.tool_name in TODO_TOOLS:
            found.update(_open_items(_decoded(block)))
    return frozenset(found)


def has_todo(message: Message) -> bool:
    """Does ``message`` call a to-do tool (``TODO_TOOLS``)?"""
    return any(b.kind is BlockKind.TOOL_USE and b.tool_name in TODO_TOOLS for b in message.blocks)


paraphrased = lost.paraphrased


# --- results ------------------------------------------------------------------------------


@dataclass
class CompactionSurvival:
    """One compaction: counts per category ``[at risk, survived, of which in the summary]``,
    a few lost facts per category, instruction sources' fates and drift."""

    label: str  # event kind, or the original's compaction kind
    step: int | None
    source_index: int | None  # first source message after it (original) / None
    messages: int
    counts: dict[str, list[int]] = field(default_factory=lambda: {c: [0, 0, 0] for c in CATEGORIES})
    lost: dict[str, list[str]] = field(default_factory=dict)
    instructions: list[dict[str, Any]] = field(default_factory=list)
    drift: list[Fact] = field(default_factory=list)
    drift_count: int = 0

    def count(self, fact: Fact, survived: bool, in_summary: bool) -> None:
        row = self.counts[fact[0]]
        row[0] += 1
        row[1] += survived
        row[2] += survived and in_summary
        if not survived:
            examples = self.lost.setdefault(fact[0], [])
            if len(examples) < LOST_EXAMPLES:
                examples.append(fact[1])

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "step": self.step,
            "source_index": self.source_index,
            "messages": self.messages,
            # only the categories this compaction put at risk (stored per run: keep it small)
            "categories": {c: _cell(*self.counts[c]) for c in CATEGORIES if self.counts[c][0]},
            "lost": {c: sorted(v) for c, v in self.lost.items()},
            "instructions": self.instructions,
            "drift": [{"kind": k, "value": v} for k, v in self.drift[:DRIFT_EXAMPLES]],
            "drift_count": self.drift_count,
        }


def _cell(at_risk: int, survived: int, in_summary: int = 0) -> dict[str, Any]:
    return {
        "at_risk": at_risk,
        "survived": survived,
        "in_summary": in_summary,
        "share": round(survived / at_risk, 4) if at_risk else None,
    }


@dataclass
class RunSurvival:
    compactions: list[CompactionSurvival] = field(default_factory=list)
    first_summary: int = 0  # facts of the first summary
    still_present: int | None = None  # of them, available after the last compaction

    @property
    def persistence(self) -> float | None:
        if self.still_present is None or not self.first_summary:
            return None
        return round(self.still_present / self.first_summary, 4)

    def findings(self) -> list[dict[str, Any]]:
        return [
            {
                "kind": f"instruction_{row['status']}",
                "step": c.step,
                "source_index": c.source_index,
                "message": row["message"],
                "source": row["kind"],
                "label": row["label"],
            }
            for c in self.compactions
            for row in c.instructions
            if row["status"] in instructions.LOST_STATUSES
        ]

    def as_dict(self) -> dict[str, Any]:
        totals = {c: [0, 0, 0] for c in CATEGORIES}
        for comp in self.compactions:
            for c in CATEGORIES:
                for k in range(3):
                    totals[c][k] += comp.counts[c][k]
        at_risk = sum(t[0] for t in totals.values())
        survived = sum(t[1] for t in totals.values())
        findings = self.findings()
        return {
            "version": VERSION,
            "extractor": extract.VERSION,
            "compactions_count": len(self.compactions),
            "survival": round(survived / at_risk, 4) if at_risk else None,
            "at_risk": at_risk,
            "survived": survived,
            "categories": {c: _cell(*totals[c]) for c in CATEGORIES},
            "first_summary_facts": self.first_summary,
            "first_summary_still_present": self.still_present,
            "first_summary_persistence": self.persistence,
            "drift_total": sum(c.drift_count for c in self.compactions),
            "instruction_losses": len(findings),
            "findings": findings,
            "compactions": [c.as_dict() for c in self.compactions],
        }


class _Drift:
    """Follows each summary's facts to the next compaction (exact regex facts only)."""

    def __init__(self, run: RunSurvival) -> None:
        self.run = run
        self.previous: frozenset[Fact] | None = None
        self.first: frozenset[Fact] | None = None
        self.summaries = 0

    def step(
        self,
        comp: CompactionSurvival,
        summary: str | None,
        available: Callable[[Fact], bool],
        facts: frozenset[Fact] | None = None,
    ) -> None:
        """``facts``: ``extract.fact_set(summary)`` when the caller has it already."""
        if self.previous is not None:
            gone = sorted(f for f in self.previous if not available(f))
            comp.drift, comp.drift_count = gone[:DRIFT_EXAMPLES], len(gone)
        if self.first is not None and self.summaries >= 1:
            self.run.still_present = sum(1 for f in self.first if available(f))
        if summary:
            if facts is None:
                facts = extract.fact_set(summary)
            if self.first is None:
                self.first = facts
                self.run.first_summary = len(facts)
            self.previous = facts
            self.summaries += 1


# --- replays ------------------------------------------------------------------------------


class _ReplayObserver:
    def __init__(
        self,
        originals: Sequence[Message],
        summaries: Mapping[int, str],
        fact_index: lost.FactIndex,
    ) -> None:
        self.originals = originals
        self.summaries = summaries
        self.run = RunSurvival()
        self.drift = _Drift(self.run)
        # derived from the originals alone: shared by the runs over the same transcript
        self.shared = fact_index.per_transcript
        found = self.shared.get("instruction_sources")
        if found is None:
            found = self.shared["instruction_sources"] = instructions.sources(
                originals, fact_index.original
            )
        self.sources = found
        self.source_holders = instructions.by_key(self.sources)
        self.sources_at: dict[int, list[instructions.Source]] = {}
        for s in self.sources:
            self.sources_at.setdefault(s.message, []).append(s)
        self._extra_holders: dict[Fact, list[int]] | None = self.shared.get("extra_holders")
        # each original's decisions and open tasks, once per transcript: every compaction
        # reads those of the messages it touched, and ``extra_holders`` all of them (each
        # ``extra_facts`` call hashed its texts again: 31,000 calls on qwenpaw at 20,000)
        self._extra_of: list[frozenset[Fact] | None] = self.shared.setdefault(
            "extra_of", [None] * len(originals)
        )
        if len(self._extra_of) != len(originals):
            self._extra_of = [None] * len(originals)
        self._summary_in_force: int | None = None

    def extra_holders(self, fact: Fact) -> list[int]:
        if self._extra_holders is None:
            holders: dict[Fact, list[int]] = {}
            for i, m in enumerate(self.originals):
                if m.role is Role.ASSISTANT:
                    for f in self._extra(i):
                        holders.setdefault(f, []).append(i)
            self._extra_holders = self.shared["extra_holders"] = holders
        return self._extra_holders.get(fact, [])

    def _extra(self, i: int) -> frozenset[Fact]:
        found = self._extra_of[i]
        if found is None:
            found = self._extra_of[i] = extra_facts(self.originals[i])
        return found

    def observe(self, settled: lost.Settled) -> None:
        event = settled.event
        if not is_compaction(event.kind):
            return
        touched = sorted(
            {c.index for c in event.changes if c.fate not in (Fate.KEPT, Fate.RESTORED)}
        )
        if not touched:
            return
        summary = (
            self.summaries.get(settled.summary_id, "") if settled.summary_id is not None else ""
        )
        # (the summary's facts and words as lost settled them: the same ``fact_set`` and
        # ``content_words`` of the same text, without hashing it again per compaction)
        sfacts, swords = settled.summary_facts, settled.summary_words
        comp = CompactionSurvival(event.kind, event.step, None, len(touched))
        _count_risk(comp, settled.risk, settled.lost, settled.kept_by_summary)
        for fact in sorted(self._extras(touched)):
            in_context = any(settled.in_context(j) for j in self.extra_holders(fact))
            by_summary = lost.kept_by_summary(fact, sfacts, swords)
            comp.count(fact, in_context or by_summary, by_summary)
        at_risk = [s for i in touched for s in self.sources_at.get(i, ())]
        comp.instructions = _instruction_rows(
            instructions.fates(at_risk, self.source_holders, settled.in_context, swords)
        )
        new_summary = (
            settled.summary_id is not None and settled.summary_id != self._summary_in_force
        )
        self._summary_in_force = settled.summary_id
        self.drift.step(comp, summary if new_summary else None, settled.stayed, sfacts)
        self.run.compactions.append(comp)

    def _extras(self, touched: Sequence[int]) -> set[Fact]:
        found: set[Fact] = set()
        last_todo = next((i for i in reversed(touched) if has_todo(self.originals[i])), None)
        for i in touched:
            for f in self._extra(i):
                if f[0] != "open_tasks" or i == last_todo:
                    found.add(f)
        return found


def _count_risk(
    comp: CompactionSurvival,
    risk: Iterable[Fact],
    lost_facts: Iterable[tuple[Fact, int]],
    kept: Iterable[Fact],
) -> None:
    """``comp.count(fact, stayed, kept by the summary)`` for every fact of ``risk`` in
    sorted order, from lost's verdicts (``lost.Settled``: its facts ``LOST`` and
    ``KEPT_BY_SUMMARY``, in ``risk``'s order; one rule for both), without sorting them all
    or visiting each fact in Python: counts do not depend on the order, and the lost
    examples kept per category are the first ``LOST_EXAMPLES`` values in sorted order,
    categories in sorted order."""
    counts = comp.counts
    for kind, n in Counter(map(itemgetter(0), risk)).items():
        counts[kind][0] += n
        counts[kind][1] += n  # less the lost ones, below
    for kind, n in Counter(map(itemgetter(0), kept)).items():
        counts[kind][2] += n
    lost_values: dict[str, list[str]] = {}
    for (kind, value), _ in lost_facts:
        lost_values.setdefault(kind, []).append(value)
    for kind in sorted(lost_values):
        values = lost_values[kind]
        counts[kind][1] -= len(values)
        examples = comp.lost.setdefault(kind, [])
        room = LOST_EXAMPLES - len(examples)
        examples.extend(heapq.nsmallest(room, values) if len(values) > room else sorted(values))


def _instruction_rows(fates: Sequence[tuple[instructions.Source, str]]) -> list[dict[str, Any]]:
    return [
        {"kind": s.kind, "label": s.label, "message": s.message, "status": status}
        for s, status in fates
    ]


def analyse_replay(
    result: ReplayResult,
    originals: Sequence[Message],
    *,
    limit: int = 60,
    fact_index: lost.FactIndex | None = None,
) -> tuple[lost.Retention, RunSurvival]:
    """``lost.analyse`` and survival of a finished replay in one pass (``fact_index``:
    the originals' facts when they are known already)."""
    return analyse_replay_parts(
        result.steps,
        result.events,
        {s.id: s.output for s in result.summaries},
        originals,
        limit=limit,
        fact_index=fact_index,
    )


def analyse_replay_parts(
    steps: Sequence[Any],
    events: Sequence[Any],
    summaries: Mapping[int, str],
    originals: Sequence[Message],
    *,
    limit: int = 60,
    fact_index: lost.FactIndex | None = None,
) -> tuple[lost.Retention, RunSurvival]:
    """``analyse_replay`` over stored parts (as ``lost.analyse_parts``)."""
    index = fact_index if fact_index is not None else lost.FactIndex(originals)
    observer = _ReplayObserver(originals, summaries, index)
    retention = lost.analyse_parts(
        steps,
        events,
        summaries,
        originals,
        limit=limit,
        fact_index=index,
        observe=observer.observe,
    )
    return retention, observer.run


# --- the original agent's own compactions ---------------------------------------------------


def facts_at_risk(messages: Sequence[Message], replaced: Sequence[int]) -> set[Fact]:
    """The facts a compaction replacing the messages ``replaced`` (source indexes, in
    order) puts at risk: each one's facts and decisions, and the open items of the latest
    to-do list among them. The agent's own compactions (``analyse_original``) and the
    forecast of its next one (``session_now.forecast``) read this one rule."""
    risk: set[Fact] = set()
    last_todo = next((i for i in reversed(replaced) if has_todo(messages[i])), None)
    for i in replaced:
        risk |= extract.message_facts(messages[i])
        risk |= {f for f in extra_facts(messages[i]) if f[0] != "open_tasks" or i == last_todo}
    return risk


def analyse_original(conversation: Conversation) -> RunSurvival:
    """Survival through the compactions the transcript's agent really made (see module)."""
    from ..summarize.recorded import (
        summary_text,  # recorded imports the offline summariser: keep this module light
    )

    messages = conversation.messages
    run = RunSurvival()
    if not conversation.compactions:  # nothing replaced: no fact to extract
        return run
    drift = _Drift(run)
    found_sources = instructions.sources(messages)
    holders = instructions.by_key(found_sources)
    start = 0
    for compaction in sorted(conversation.compactions, key=lambda c: c.before_index):
        boundary = min(max(compaction.before_index, start), len(messages))
        end = boundary
        while end < len(messages) and messages[end].role is not Role.ASSISTANT:
            end += 1
        replaced = range(start, boundary)
        after = range(boundary, end)
        summary = summary_text(conversation, compaction)
        swords = content_words(summary) if summary else frozenset()
        sfacts = extract.fact_set(summary) if summary else frozenset()
        available: set[Fact] = set(sfacts)
        for i in after:
            available |= extract.message_facts(messages[i]) | extra_facts(messages[i])
        comp = CompactionSurvival(compaction.kind, None, compaction.before_index, len(replaced))
        risk = facts_at_risk(messages, replaced)
        for fact in sorted(risk):
            by_summary = lost.kept_by_summary(fact, sfacts, swords)
            comp.count(fact, by_summary or fact in available, by_summary)
        at_risk = [s for s in found_sources if start <= s.message < boundary]
        comp.instructions = _instruction_rows(
            instructions.fates(at_risk, holders, range(boundary, end).__contains__, swords)
        )
        drift.step(comp, summary or None, available.__contains__)
        run.compactions.append(comp)
        start = boundary
    return run


def clear_caches() -> None:
    """Forget every memoised fact and word set (benchmarks start cold)."""
    _EXTRA.clear()
    lost.clear_caches()
