"""The summary quality gate: ask a summary for the facts of the span it replaces.

After a summariser call and before the summary replaces anything, the gate

1. **asks questions** of the span being compacted: its facts, as the survival analysis
   extracts them (``evaluate.extract.message_facts``: instructions the user typed, file
   paths, commands, error lines, identifiers, numbers with units, URLs; plus
   ``evaluate.survival.extra_facts``: the assistant's decisions, and the open items of the
   span's latest to-do list). A fact that a kept message (the tail after the span) still
   holds is not asked: it stays in the request whatever the summary says. Tool outputs are
   read up to their first ``TOOL_BODY_CHARS`` characters only (zeph's probe does the same,
   so raw output does not crowd out the decisions). At most ``max_questions`` are asked,
   spread over the kinds in ``ORDER`` in turn; within a kind the facts that recur in
   more messages first, then the newest;
2. **answers them from the summary's text** with the rule "What was lost" and "Fact
   survival" use (``evaluate.lost.kept_by_summary``): a fact by its exact value, a
   sentence (instruction, decision, open task) also as a paraphrase. The rule reads text,
   so it answers for any summariser (offline, recorded or a model) the same way, calls no
   model and is deterministic;
3. **scores** kept / asked; fewer than ``MIN_QUESTIONS`` questions is no opinion (the summary
   passes unchecked), a score below ``min_score`` rejects the summary.

What follows a rejection is the caller's (``strategies.custom``: ``on_reject``).

The published example is zeph's compaction probe (``bug-ops/zeph``
``crates/zeph-memory/src/compaction_probe.rs`` at 4c0e24f0e1daa5b03c1571b3b59152e8f60685b1):
a model writes ``max_questions`` (default 3) factual questions with expected answers from
the messages being compacted (tool bodies cut to 500 characters; file paths, function
names, decisions, config values, error messages, action items), answers them from the
summary alone ("UNKNOWN" when absent), scores each answer by token overlap with the
expected one, and returns no opinion below 2 questions; ``threshold`` 0.6 passes,
``hard_fail_threshold`` 0.35 blocks the compaction, scores between proceed with a warning.
Here the questions are the extracted facts and the answer is whether the summary carries
the fact: no model call, the same verdict on every replay.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core.model import BlockKind, Message, Role
from ..core.records import SummaryRecord
from ..core.textkeys import content_words
from ..evaluate import extract

# Kinds asked in turn, most telling first (zeph's probe asks for paths and names, decisions,
# values and errors, action items; not for raw tool output).
ORDER = (
    "instructions",
    "paths",
    "identifiers",
    "decisions",
    "errors",
    "open_tasks",
    "urls",
    "numbers",
    "commands",
)
QUESTIONS = {
    "instructions": "What did the user ask for or rule out?",
    "paths": "Which file or directory was involved?",
    "identifiers": "Which name in the code was involved?",
    "decisions": "What was decided?",
    "errors": "Which error came up?",
    "open_tasks": "Which task was still open?",
    "urls": "Which URL came up?",
    "numbers": "Which figure (number with its unit, or version) came up?",
    "commands": "Which command was run?",
}
ON_REJECT = ("accept_with_appendix", "retry", "keep_original")
MIN_SCORE = 0.6  # zeph's CompactionProbeConfig.threshold
MAX_QUESTIONS = 10
MIN_QUESTIONS = 2  # zeph: fewer than 2 questions is no opinion
TOOL_BODY_CHARS = 500  # zeph's truncate_tool_bodies
MISSED_SHOWN = 10  # missed facts listed in an event's detail (the counts stay exact)
VALUE_SHOWN = 160
APPENDIX_HEADING = "Facts the summary missed (appended verbatim by the summary quality gate):"
MUST_KEEP_HEADING = (
    "Must keep: the previous summary of these messages left out the facts below. "
    "Keep every one of them, verbatim, in the summary."
)

Fact = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Question:
    """One question: a fact of the span (its kind and value, the expected answer)."""

    kind: str
    value: str
    message: int  # the newest span message that holds it

    @property
    def question(self) -> str:
        return QUESTIONS[self.kind]


@dataclass(frozen=True, slots=True)
class Verdict:
    asked: tuple[Question, ...]
    missed: tuple[Question, ...]
    min_score: float

    @property
    def kept(self) -> int:
        return len(self.asked) - len(self.missed)

    @property
    def score(self) -> float | None:
        """kept / asked; None (no opinion) below ``MIN_QUESTIONS`` questions."""
        if len(self.asked) < MIN_QUESTIONS:
            return None
        return round(self.kept / len(self.asked), 4)

    @property
    def passed(self) -> bool:
        score = self.score
        return score is None or score >= self.min_score

    def words(self) -> str:
        """'summary rejected: 4 of 10 facts missing' (or checked)."""
        verb = "checked" if self.passed else "rejected"
        return f"summary {verb}: {len(self.missed)} of {len(self.asked)} facts missing"

    def detail(self) -> dict[str, Any]:
        """What an event says: counts, score, and the first missed facts (masked)."""
        # Imported here: the secret rules compile ~60 ms of patterns at import, which every
        # engine start (the CLI, a worker) would pay for a gate that may never reject.
        from ..privacy.secrets import mask

        return {
            "asked": len(self.asked),
            "missing": len(self.missed),
            "score": self.score,
            "min_score": self.min_score,
            "missed": [
                {"kind": q.kind, "value": mask(q.value[:VALUE_SHOWN]), "message": q.message}
                for q in self.missed[:MISSED_SHOWN]
            ],
        }


def _probe_view(message: Message) -> Message:
    """``message`` with each tool output cut to ``TOOL_BODY_CHARS`` characters."""
    if not any(
        b.kind is BlockKind.TOOL_RESULT and len(b.text) > TOOL_BODY_CHARS for b in message.blocks
    ):
        return message
    blocks = tuple(
        replace(b, text=b.text[:TOOL_BODY_CHARS], parts=())
        if b.kind is BlockKind.TOOL_RESULT and len(b.text) > TOOL_BODY_CHARS
        else b
        for b in message.blocks
    )
    return replace(message, blocks=blocks)


def span_facts(span: Sequence[tuple[int, Message]]) -> dict[Fact, tuple[int, int]]:
    """Every fact of the span -> (messages holding it, the newest of them)."""
    found: dict[Fact, tuple[int, int]] = {}
    # Imported here, as ``lost`` in ``judge``: with what they import they cost ~10 ms at
    # every engine start (the CLI's --help included) for a gate the custom strategy may not use.
    from ..evaluate import survival

    last_todo = next((i for i, m in reversed(span) if survival.has_todo(m)), None)
    for index, message in span:
        facts = set(extract.message_facts(_probe_view(message)))
        # decisions of the assistant's text; open items of the span's latest to-do only
        facts.update(
            fact
            for fact in survival.extra_facts(message)
            if (fact[0] == "decisions" and message.role is Role.ASSISTANT)
            or (fact[0] == "open_tasks" and index == last_todo)
        )
        for fact in facts:
            count, _ = found.get(fact, (0, index))
            found[fact] = (count + 1, index)
    return found


def ask(
    span: Sequence[tuple[int, Message]], kept: Iterable[Message], max_questions: int
) -> tuple[Question, ...]:
    """At most ``max_questions`` questions about the span's facts that no kept message holds,
    the kinds of ``ORDER`` in turn."""
    found = span_facts(span)
    if not found:
        return ()
    held: set[Fact] = set()
    for message in kept:
        held.update(extract.message_facts(message))
    by_kind: dict[str, list[tuple[Fact, tuple[int, int]]]] = {kind: [] for kind in ORDER}
    for fact, seen in found.items():
        if fact not in held and fact[0] in by_kind:
            by_kind[fact[0]].append((fact, seen))
    queues = [
        sorted(items, key=lambda item: (-item[1][0], -item[1][1], item[0][1]))
        for items in by_kind.values()
    ]
    out: list[Question] = []
    depth = 0
    while len(out) < max_questions and any(depth < len(q) for q in queues):
        for queue in queues:
            if depth < len(queue) and len(out) < max_questions:
                (kind, value), (_, newest) = queue[depth]
                out.append(Question(kind, value, newest))
        depth += 1
    return tuple(out)


def judge(questions: Sequence[Question], summary: str, min_score: float) -> Verdict:
    """The summary's answers: a question is answered when ``lost.kept_by_summary`` keeps
    its fact."""
    from ..evaluate import lost

    facts = extract.fact_set(summary) if summary else frozenset()
    words = content_words(summary) if summary else frozenset()
    missed = tuple(
        q for q in questions if not lost.kept_by_summary((q.kind, q.value), facts, words)
    )
    return Verdict(tuple(questions), missed, min_score)


def _line(question: Question) -> str:
    value = " ".join(question.value.split())
    return f"$ {value}" if question.kind == "commands" else value


def appendix(missed: Sequence[Question]) -> str:
    """The missed facts, one per line as the extractor reads them back (a command as a
    ``$ `` prompt line), under a heading that says who added them."""
    return "\n".join([APPENDIX_HEADING, *(_line(q) for q in missed)])


def must_keep(missed: Sequence[Question]) -> str:
    """The text appended to the summary request when the gate asks again."""
    return "\n".join([MUST_KEEP_HEADING, *(f"- {q.kind}: {_line(q)}" for q in missed)])


def append_to(record: SummaryRecord, text: str) -> None:
    """Append ``text`` to the recorded summary's output, in place.

    The record is the one the replay keeps (its summaries and the step's), so every reader
    (the run's summaries, "What was lost", "Fact survival", the probes) reads the summary
    the request carried, appendix included; its usage stays the summariser's. A frozen
    record is amended only here, before the summary is applied and the step is yielded."""
    object.__setattr__(record, "output", f"{record.output}\n\n{text}")
