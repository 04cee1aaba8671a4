"""Scoring probes (``probes``): offline, and the requests and rules for Claude scoring.

Offline (always available, no model): is the answer still *recoverable* from the context
right after the compaction (the messages in context, in the version in force, plus the
summary in force)? Texts are normalised first (Unicode NFKC, lower case, quotes and
backticks dropped, ``cat -n`` line prefixes dropped, whitespace collapsed).

- ``recall`` / ``artifact``: each expected answer must appear verbatim after normalising
  (a path also counts when its last two segments appear: ``src/app.py``); the score is
  the share found. A recall answer is an error line, and the same line is often the
  output of other calls too (a sandbox refusal, "No such file"): where it is
  (*ambiguous*), it counts only in the version of its own message, or in a part (a
  message, a summary) that also names the call it answered (``probe_haystack``).
- ``continuation`` / ``decision``: a summary rewords these, so the score is the share of
  the answer's key terms (words of 3+ letters, stop words left out) found in the context.

Verdicts: ``recoverable`` (score >= 0.8), ``partial`` (> 0, or >= 0.4 for key terms),
``lost``. These say whether the words are still there, not whether a model would use them:
that is what Claude scoring asks.

Claude scoring: ``answer_request`` asks the model the probe's question with only the
compacted context; ``contains_score`` scores recall/artifact answers the offline way
(expected answers found in the model's answer); ``judge_request`` asks a rubric judge for
continuation/decision answers, ``parse_judgement`` reads its ``SCORE: n`` (0-5) line.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...core.model import Message, Role
from ...core.records import Event, Fate, StepRecord
from ...core.summary_request import PromptMessage, SummaryRequest
from ..extract import LINE_NUMBER_RE
from ..lost import message_text
from .questions import PROBE_KINDS, Probe

EXACT_KINDS = frozenset({"recall", "artifact"})
RECOVERABLE = 0.8
PARTIAL_TERMS = 0.4
MAX_CONTEXT_CHARS = 400_000  # ~100K tokens: what one Claude probe call is shown at most

_QUOTES_RE = re.compile(r"[`\"'‘’“”]")
_TERM_RE = re.compile(r"[a-z0-9_]{3,}")
_STOP = (
    "the and for that this with from into then than was were are has have had not but "
    "you your our can could should would will just also its it's let let's lets use using "
    "what which when where why how all any some one two now need needs want please make "
    "sure there here them they their been being about after before over under more most "
    "very only because instead rather does doesn don didn isn won"
)
STOP_WORDS = frozenset(_STOP.split())


def fold(text: str) -> str:
    """Lower case, quotes as spaces, whitespace runs as one space (``normalise``'s end)."""
    return " ".join(_QUOTES_RE.sub(" ", text.lower()).split())


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    if "→" in text or "\t" in text:
        text = LINE_NUMBER_RE.sub("", text)
    return fold(text)


def terms(text: str) -> set[str]:
    return {t for t in _TERM_RE.findall(normalise(text)) if t not in STOP_WORDS}


@dataclass(frozen=True, slots=True)
class Score:
    key: str  # the probe's key
    score: float  # 0..1
    verdict: str  # recoverable | partial | lost
    found: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "score": self.score,
            "verdict": self.verdict,
            "found": list(self.found),
            "missing": list(self.missing),
        }


def verdict(kind: str, score: float) -> str:
    if score >= RECOVERABLE:
        return "recoverable"
    partial = score > 0 if kind in EXACT_KINDS else score >= PARTIAL_TERMS
    return "partial" if partial else "lost"


def _path_tail(answer: str) -> str:
    parts = [p for p in answer.split("/") if p]
    return "/".join(parts[-2:]) if len(parts) >= 3 else ""


def _present(answer: str, haystack: str) -> bool:
    needle = normalise(answer)
    if needle and needle in haystack:
        return True
    tail = _path_tail(needle)
    return bool(tail) and tail in haystack


def score_text(probe: Probe, text: str) -> Score:
    """``probe`` against ``text`` (a compacted context, or a model's answer)."""
    haystack = normalise(text)
    return score_by(
        probe,
        lambda answer: _present(answer, haystack),
        set(_TERM_RE.findall(haystack)).__contains__,
    )


def score_by(
    probe: Probe, present: Callable[[str], bool], has_term: Callable[[str], bool]
) -> Score:
    """``probe`` scored by ``present(answer)`` (exact kinds: the share of answers present)
    or ``has_term(term)`` (the share of the answers' key terms found)."""
    if probe.kind in EXACT_KINDS:
        found = tuple(a for a in probe.answers if present(a))
        missing = tuple(a for a in probe.answers if a not in found)
        score = len(found) / len(probe.answers) if probe.answers else 0.0
    else:
        wanted = sorted(set().union(*(terms(a) for a in probe.answers)))
        have = {t for t in wanted if has_term(t)}
        found = tuple(t for t in wanted if t in have)
        missing = tuple(t for t in wanted if t not in have)
        score = len(found) / len(wanted) if wanted else 0.0
    score = round(score, 4)
    return Score(probe.key, score, verdict(probe.kind, score), found, missing)


def summarise(probes: Sequence[Probe], scores: Mapping[str, float]) -> dict[str, Any]:
    """A run's probe score: the mean over its scored probes, and per kind (None when a
    kind has no scored probe)."""
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in PROBE_KINDS:
        values = [scores[p.key] for p in probes if p.kind == kind and p.key in scores]
        by_kind[kind] = {
            "probes": len(values),
            "score": round(sum(values) / len(values), 4) if values else None,
        }
    every = [scores[p.key] for p in probes if p.key in scores]
    return {
        "probes": len(every),
        "score": round(sum(every) / len(every), 4) if every else None,
        "by_kind": by_kind,
    }


# --- the compacted context ------------------------------------------------------------------


def replay_contexts(
    steps: Sequence[StepRecord],
    events: Sequence[Event],
    summaries: Mapping[int, str],
    originals: Sequence[Message],
    wanted: Iterable[int],
) -> dict[int, str]:
    """The request right after each ``wanted`` step's compaction, as text: the summary in
    force, then every message in context in the version in force (modified versions
    replayed from the events up to that step)."""
    return dict(iter_contexts(steps, events, summaries, originals, wanted))


def iter_contexts(
    steps: Sequence[StepRecord],
    events: Sequence[Event],
    summaries: Mapping[int, str],
    originals: Sequence[Message],
    wanted: Iterable[int],
) -> Iterator[tuple[int, str]]:
    """``replay_contexts`` one step at a time, in step order: a caller that scores each
    context and lets it go holds one context text at a time, not all of them."""
    for step, parts in iter_context_parts(steps, events, summaries, originals, wanted):
        yield step, "\n".join(p if isinstance(p, str) else message_text(p) for p in parts)


def iter_context_parts(
    steps: Sequence[StepRecord],
    events: Sequence[Event],
    summaries: Mapping[int, str],
    originals: Sequence[Message],
    wanted: Iterable[int],
) -> Iterator[tuple[int, list[Message | str]]]:
    """What ``iter_contexts`` joins, unjoined: the summary text in force, then each message
    in context in the version in force (the same objects from one step to the next, so a
    caller can work on each distinct message once)."""
    for step, context in iter_indexed_parts(steps, events, summaries, originals, wanted):
        yield step, context.parts


@dataclass(frozen=True, slots=True)
class ContextParts:
    """A context as parts, each with the source message it is a version of (None for a
    summary text): what a recall probe needs to find its answer *in its own message*."""

    parts: list[Message | str]
    indexes: list[int | None]


def iter_indexed_parts(
    steps: Sequence[StepRecord],
    events: Sequence[Event],
    summaries: Mapping[int, str],
    originals: Sequence[Message],
    wanted: Iterable[int],
) -> Iterator[tuple[int, ContextParts]]:
    """``iter_context_parts`` with each part's source message index."""
    want = sorted(set(wanted))
    if not want:
        return
    step_at = {s.index: s for s in steps}
    current: dict[int, Message] = {}
    pending = iter(want)
    target = next(pending, None)
    for event in sorted(events, key=lambda e: (e.step, e.id)):
        while target is not None and event.step > target:
            yield target, _context_parts(step_at.get(target), current, summaries, originals)
            target = next(pending, None)
        if target is None:
            return
        for change in event.changes:
            if change.fate in (Fate.TRUNCATED, Fate.OFFLOADED, Fate.PRUNED) and change.message:
                current[change.index] = change.message
            elif change.fate is Fate.RESTORED:
                current.pop(change.index, None)
    while target is not None:
        yield target, _context_parts(step_at.get(target), current, summaries, originals)
        target = next(pending, None)


def _context_parts(
    step: StepRecord | None,
    current: Mapping[int, Message],
    summaries: Mapping[int, str],
    originals: Sequence[Message],
) -> ContextParts:
    out = ContextParts([], [])
    if step is None:
        return out
    if step.summary_id is not None:
        out.parts.append(summaries.get(step.summary_id, ""))
        out.indexes.append(None)
    for start, end in step.context:
        for i in range(start, min(end, len(originals))):
            out.parts.append(current.get(i, originals[i]))
            out.indexes.append(i)
    return out


def original_context(messages: Sequence[Message], before: int, summary: int | None) -> str:
    """What the original agent saw right after its own compaction: the recorded summary and
    every message up to its first reply (re-attached files, the next request)."""
    parts = original_parts(messages, before, summary).parts
    return "\n".join(p if isinstance(p, str) else message_text(p) for p in parts)


def original_parts(messages: Sequence[Message], before: int, summary: int | None) -> ContextParts:
    """``original_context`` as parts, each with its message index."""
    out = ContextParts([], [])
    if summary is not None and 0 <= summary < before:
        out.parts.append(messages[summary])
        out.indexes.append(summary)
    for i in range(before, len(messages)):
        if messages[i].role is Role.ASSISTANT:
            break
        out.parts.append(messages[i])
        out.indexes.append(i)
    return out


def capped(context: str, limit: int = MAX_CONTEXT_CHARS) -> str:
    """At most ``limit`` characters for a model: the head (where the summary sits) and
    the newest part, with a marker where the middle was left out."""
    if len(context) <= limit:
        return context
    head = limit // 4
    return context[:head] + "\n[… middle of the context left out …]\n" + context[-(limit - head) :]


# --- Claude scoring ------------------------------------------------------------------------

ANSWER_SYSTEM = (
    "You are checking what an AI agent still knows after its conversation history was "
    "compacted. Answer the question using ONLY the context given (a summary and the "
    "messages the agent still has). Answer in one or two short lines, quoting exact "
    "file paths, commands and error messages. If the context does not contain the answer, "
    "reply exactly: not in context"
)
JUDGE_SYSTEM = (
    "You grade an answer against a reference answer taken from the original conversation. "
    "Rubric (0-5): 5 = same task/decision and reason; 4 = same, a detail missing; 3 = "
    "mostly the same, vague; 2 = related but a different or incomplete task/decision; 1 = "
    "barely related; 0 = wrong, or 'not in context'. Reply with two lines: "
    "'SCORE: <0-5>' then 'REASON: <one sentence>'."
)
JUDGE_RE = re.compile(r"SCORE:\s*\**\s*([0-5])(?:\s*/\s*5)?\b", re.IGNORECASE)
REASON_RE = re.compile(r"REASON:\s*(.+)", re.IGNORECASE)


def answer_request(probe: Probe, context: str) -> SummaryRequest:
    body = f"<context>\n{capped(context)}\n</context>\n\nQuestion: {probe.question}"
    return SummaryRequest(
        strategy="probe",
        system=ANSWER_SYSTEM,
        messages=(PromptMessage("user", body),),
        max_output_tokens=300,
        temperature=0.0,
        purpose="probe",
    )


def judge_request(probe: Probe, answer: str) -> SummaryRequest:
    reference = "\n".join(probe.answers)
    body = (
        f"Question: {probe.question}\n\nReference answer:\n{reference}\n\n"
        f"Answer to grade:\n{answer}"
    )
    return SummaryRequest(
        strategy="probe-judge",
        system=JUDGE_SYSTEM,
        messages=(PromptMessage("user", body),),
        max_output_tokens=200,
        temperature=0.0,
        purpose="probe-judge",
    )


def parse_judgement(text: str) -> tuple[float, str]:
    """(score 0..1, reason) of a judge reply; ValueError when it holds no ``SCORE:``."""
    hit = JUDGE_RE.search(text)
    if hit is None:
        raise ValueError(f"the judge's reply has no 'SCORE: 0-5' line: {text[:120]!r}")
    reason = REASON_RE.search(text)
    return int(hit.group(1)) / 5, (reason.group(1).strip()[:300] if reason else "")


def contains_score(probe: Probe, answer: str) -> Score:
    """A recall/artifact answer: the expected answers it contains (normalised)."""
    return score_text(probe, answer)
