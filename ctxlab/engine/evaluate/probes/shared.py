"""Shared probes: one question set for every run of a comparison (same transcript).

A run's own probes (``probes``) ask about what *its* compactions removed, so two runs are
asked different questions, and a run that removes little gets few, easy ones. For a
comparison the questions of all runs are pooled:

- **The set.** The union of the runs' probes, one per (kind, question, expected answers):
  the same question with the same answer from several runs is asked once (``shared_key``).
- **Where it is asked.** A probe's *position* is the transcript position of the request
  right after the compaction that raised it (that request's ``source_index``: the source
  messages before it). When several runs raised it, the latest such position: by then
  every one of them has removed the answer. Each run is asked at its first request at or
  after the position (``request_at``); a run that made no request there (its replay ended
  earlier) is *not asked* that question, and it counts in no score.
- **Scored** offline with the same rule as a run's own probes (``probe_haystack``: the
  recoverability rule of ``probe_scoring``, recall answers anchored to the call they
  answered) against the run's context in force at that request: the summary in force and
  every message in context, in the version in force. *Answered*: verdict ``recoverable``
  (score >= ``probe_scoring.RECOVERABLE``).

Everything is read from a run's records (steps with their context ranges, fate-changing
events, summaries): nothing is replayed.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...core.model import Message
from ...core.records import Event, StepRecord
from .haystack import ContextScorer
from .questions import PROBE_KINDS, Probe
from .scoring import RECOVERABLE, Score, iter_indexed_parts


def shared_key(kind: str, question: str, answers: Sequence[str]) -> str:
    """The key of a question in a shared set: kind, question and answers (not the run or
    the compaction that raised it)."""
    blob = json.dumps([kind, question, list(answers)], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class SharedProbe:
    """One question of a shared set. ``position``: the source messages before the request
    it is asked at; ``raised_by``: (run, compaction ordinal) of every run that raised it."""

    key: str
    kind: str
    question: str
    answers: tuple[str, ...]
    source: int
    position: int
    raised_by: tuple[tuple[int | str, int], ...]

    def as_probe(self) -> Probe:
        """As a run's probe (for ``score_text``): step = its position."""
        return Probe(self.key, self.kind, 0, self.position, None, self.question,
                     self.answers, self.source)  # fmt: skip


@dataclass(frozen=True, slots=True)
class RunProbes:
    """What one run contributes to the set: its own probes and where its steps were
    (``positions``: step index -> source_index)."""

    run: int | str  # a run id, or a name
    probes: Sequence[Probe]
    positions: Mapping[int, int]


def union(runs: Iterable[RunProbes]) -> list[SharedProbe]:
    """The shared set of these runs' probes (see the module docstring), ordered by
    position, then kind, then question: the same runs always give the same list."""
    pooled: dict[str, dict[str, Any]] = {}
    for run in runs:
        for probe in run.probes:
            key = shared_key(probe.kind, probe.question, probe.answers)
            position = run.positions.get(probe.step, probe.source + 1)
            found = pooled.setdefault(key, {"probe": probe, "position": position, "raised_by": []})
            found["position"] = max(found["position"], position)
            found["raised_by"].append((run.run, probe.compaction))
    kind_order = {k: i for i, k in enumerate(PROBE_KINDS)}
    out = [
        SharedProbe(
            key, p.kind, p.question, p.answers, p.source, row["position"], tuple(row["raised_by"])
        )  # fmt: skip
        for key, row in pooled.items()
        for p in (row["probe"],)
    ]
    out.sort(key=lambda s: (s.position, kind_order.get(s.kind, 99), s.question, s.key))
    return out


def request_at(positions: Sequence[tuple[int, int]], position: int) -> int | None:
    """The run's first request at or after ``position``: its step index, None when it made
    none there. ``positions``: (source_index, step index) of every step, in step order
    (source indexes never go down)."""
    at = bisect_left(positions, (position, -1))
    return positions[at][1] if at < len(positions) else None


@dataclass(frozen=True, slots=True)
class Asked:
    """One shared question asked of one run: at which of its steps, and the score (None
    when the run made no request at or after the question's position)."""

    key: str
    step: int | None
    score: Score | None


def score_run(
    shared: Sequence[SharedProbe],
    steps: Sequence[StepRecord],
    events: Sequence[Event],
    summaries: Mapping[int, str],
    originals: Sequence[Message],
    scorer: ContextScorer | None = None,
) -> dict[str, Asked]:
    """Every shared question asked of one run (its stored records), scored offline as
    a run's own probes are scored (``probe_haystack``: recall answers anchored to their
    call). ``scorer``: one shared by the runs of a comparison (made with ``originals``)
    normalises each message of their transcript once for all of them."""
    positions = [(s.source_index, s.index) for s in sorted(steps, key=lambda s: s.index)]
    at = {p.key: request_at(positions, p.position) for p in shared}
    by_step: dict[int, list[SharedProbe]] = {}
    for p in shared:
        step = at[p.key]
        if step is not None:
            by_step.setdefault(step, []).append(p)
    out = {p.key: Asked(p.key, None, None) for p in shared if at[p.key] is None}
    scorer = scorer if scorer is not None else ContextScorer(originals)
    for step, context in iter_indexed_parts(steps, events, summaries, originals, by_step):
        asked = by_step[step]
        scores = scorer.score_parts([p.as_probe() for p in asked], context)
        for p, score in zip(asked, scores, strict=True):
            out[p.key] = Asked(p.key, step, score)
    return out


def tally(shared: Sequence[SharedProbe], asked: Mapping[str, Asked]) -> dict[str, Any]:
    """One run's figures on a shared set, overall and per kind: ``questions`` in the set,
    ``asked`` of this run, ``answered`` (recoverable), ``score`` (mean, None if none asked)."""

    def figures(rows: Sequence[SharedProbe]) -> dict[str, Any]:
        scores = [s for p in rows if (s := _score_of(asked.get(p.key))) is not None]
        return {
            "questions": len(rows),
            "asked": len(scores),
            "answered": sum(1 for s in scores if s.score >= RECOVERABLE),
            "score": round(sum(s.score for s in scores) / len(scores), 4) if scores else None,
        }

    out = figures(shared)
    out["by_kind"] = {k: figures([p for p in shared if p.kind == k]) for k in PROBE_KINDS}
    return out


def _score_of(asked: Asked | None) -> Score | None:
    return asked.score if asked is not None else None
