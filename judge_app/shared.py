"""The shared question set of a probe comparison (``ctxlab.engine.evaluate.probes.shared``), from
stored rows.

Each run's own probes are its stored ``Probe`` rows (made by the worker when the run
finished, or by the scoring task for an older run); where each was raised comes from the runs' ``RunStep`` source indexes. A run
is scored against its stored records (steps' context ranges, events with the modified
messages, summaries), never replayed, and its scores are kept in ``ProbeSet.shared``
under ``<key>@<position>``: the same question at the same point costs nothing in a later
comparison, and a page whose runs are all scored already reads no transcript or event.
Scoring what is missing takes seconds on a long transcript, so a web request only reads
(``compute=False``) and a Celery task scores (queued by ``shared_jobs``; its body is
``score`` here).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from django.utils import timezone

from ctxlab.engine.core.model import Message
from ctxlab.engine.evaluate.probes import shared as shared_probes
from ctxlab.engine.evaluate.probes.haystack import ContextScorer
from ctxlab.engine.evaluate.probes.questions import PROBE_KINDS, PROBE_LABELS
from ctxlab.engine.evaluate.probes.scoring import Score
from ctxlab.engine.privacy.secrets import mask
from replay_app.models import Run, RunStatus, RunStep

from . import services
from .models import Probe, ProbeSet, SharedScoring

log = logging.getLogger(__name__)

# Bumped when the shared set's scoring changes: stored shared scores are recomputed.
# 2: recall answers anchored to the call they answered; entries carry ``other_outputs``.
SHARED_VERSION = 2


def _cache_key(probe: shared_probes.SharedProbe) -> str:
    return f"{probe.key}@{probe.position}"


def _stored_scores(row: ProbeSet) -> dict[str, list[Any]]:
    found = row.shared if isinstance(row.shared, dict) else {}
    if found.get("version") != SHARED_VERSION or found.get("generator") != services.GENERATOR:
        return {}
    scores = found.get("scores")
    return dict(scores) if isinstance(scores, dict) else {}


def _unavailable(reason: str) -> dict[str, Any]:
    return {"available": False, "pending": False, "reason": reason, "transcript": None,
            "questions": 0, "by_kind": dict.fromkeys(PROBE_KINDS, 0), "kinds": list(PROBE_KINDS),
            "runs": [], "probes": []}  # fmt: skip


def _pending(runs: Sequence[Run], waiting: Sequence[int]) -> dict[str, Any]:
    """Not scored yet: ``waiting`` are the finished runs whose probes or scores on this set
    are not stored (a task computes them: ``shared_jobs``)."""
    return {**_unavailable("Scoring the shared questions…"), "available": True, "pending": True,
            "waiting": list(waiting), "transcript": runs[0].transcript_id if runs else None}  # fmt: skip


def shared_data(
    runs: Sequence[Run], *, compute: bool = True, progress: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """The shared set of these runs and every finished run's scores on it:
    ``{"available", "pending", "reason", "transcript", "questions", "by_kind", "runs": [...],
    "probes": [...]}`` (the page and its JSON twin read this one dict). ``compute`` False
    (a web request): only what is stored is read, and while a finished run's probe set or
    its scores on this set are missing the answer is ``pending`` (``_pending``); True (the
    task): those are generated, scored and stored, ``progress(n)`` told after each run."""
    if len({r.transcript_id for r in runs}) != 1:
        return _unavailable(
            "The runs replay different transcripts: a shared question set needs one."
        )
    done = [r for r in runs if r.status == RunStatus.DONE]
    sets: dict[int, ProbeSet] = {}
    for run in done:
        row = services.probe_set(run) if compute else services.current_set(run)
        if row is not None:
            sets[run.pk] = row
    if not compute and len(sets) < len(done):
        return _pending(runs, [r.pk for r in done if r.pk not in sets])
    own = _own_probes(sets)
    steps = _step_positions(own)
    shared = shared_probes.union(shared_probes.RunProbes(pk, own[pk], steps[pk]) for pk in sets)
    if not compute:
        keys = [_cache_key(p) for p in shared]
        stored = {pk: _stored_scores(row) for pk, row in sets.items()}
        waiting = [pk for pk in sets if any(k not in stored[pk] for k in keys)]
        if waiting:
            return _pending(runs, waiting)
        return _page_data(runs, shared, stored)
    transcript = _Transcript()
    scores: dict[int, dict[str, list[Any]]] = {}
    for run in done:
        if run.pk in sets:
            scores[run.pk] = _run_scores(run, sets[run.pk], shared, transcript)
            if progress is not None:
                progress(len(scores))
    return _page_data(runs, shared, scores)


class _Transcript:
    """The comparison's transcript, read once when a run needs scoring, and one scorer
    over it (each message normalised once for every run)."""

    def __init__(self) -> None:
        self.messages: Sequence[Message] | None = None
        self.scorer = ContextScorer()

    def load(self, run: Run) -> Sequence[Message]:
        if self.messages is None:
            self.messages = run.transcript.to_conversation().messages
            self.scorer = ContextScorer(self.messages)
        return self.messages


def _own_probes(sets: dict[int, ProbeSet]) -> dict[int, list[Any]]:
    """Each run's stored probes as the engine's, in their stored order."""
    run_of = {row.pk: pk for pk, row in sets.items()}
    out: dict[int, list[Any]] = {pk: [] for pk in sets}
    for row in Probe.objects.filter(probe_set_id__in=list(run_of)).order_by("probe_set", "seq"):
        out[run_of[row.probe_set_id]].append(services.engine_probe(row))
    return out


def _step_positions(own: dict[int, list[Any]]) -> dict[int, dict[int, int]]:
    """step index -> source_index of the steps where each run raised its probes (only
    those: a page whose scores are stored reads no other step)."""
    wanted = {(pk, p.step) for pk, found in own.items() for p in found}
    out: dict[int, dict[int, int]] = {pk: {} for pk in own}
    rows = RunStep.objects.filter(
        run_id__in=list(own), index__in=sorted({step for _, step in wanted})
    ).values_list("run_id", "index", "source_index")
    for run_id, index, source in rows:
        if (run_id, index) in wanted:
            out[run_id][index] = source
    return out


def _run_scores(
    run: Run,
    row: ProbeSet,
    shared: Sequence[shared_probes.SharedProbe],
    transcript: _Transcript,
) -> dict[str, list[Any]]:
    """``<key>@<position>`` -> [step, score, verdict, found, missing, other_outputs] of
    every shared question for this run: stored ones read back, the others scored from the
    run's stored records and stored with them."""
    stored = _stored_scores(row)
    missing = [p for p in shared if _cache_key(p) not in stored]
    if not missing:
        return stored
    replay = services.stored_replay(run, transcript.load(run))
    scorer = transcript.scorer
    asked = shared_probes.score_run(
        missing, replay.steps, replay.events, replay.summaries, replay.messages, scorer
    )
    for p in missing:
        found = asked[p.key]
        score = found.score
        others = scorer.other_outputs(p.as_probe())
        stored[_cache_key(p)] = (
            [found.step, score.score, score.verdict, list(score.found), list(score.missing),
             others]
            if score is not None
            else [None, None, "", [], [], others]
        )  # fmt: skip
    blob = {"version": SHARED_VERSION, "generator": services.GENERATOR, "scores": stored}
    ProbeSet.objects.filter(pk=row.pk).update(shared=blob)  # derived data: last write wins
    return stored


def _asked(entry: list[Any] | None, key: str) -> shared_probes.Asked:
    if not entry or entry[1] is None:
        return shared_probes.Asked(key, None, None)
    step, score, verdict, found, missing = entry[:5]
    return shared_probes.Asked(key, step, Score(key, score, verdict, tuple(found), tuple(missing)))


def _others(entry: list[Any] | None) -> int:
    """An entry's ``other_outputs`` (0 when none stored)."""
    return int(entry[5]) if entry and len(entry) > 5 and entry[5] else 0


def _page_data(
    runs: Sequence[Run],
    shared: Sequence[shared_probes.SharedProbe],
    scores: dict[int, dict[str, list[Any]]],
) -> dict[str, Any]:
    labels: dict[int | str, str] = {r.pk: r.label for r in runs}
    others = {
        _cache_key(p): max((_others(e.get(_cache_key(p))) for e in scores.values()), default=0)
        for p in shared
    }
    asked = {
        pk: {p.key: _asked(entries.get(_cache_key(p)), p.key) for p in shared}
        for pk, entries in scores.items()
    }
    run_rows = []
    for run in runs:
        row: dict[str, Any] = {"run": run.pk, "label": run.label, "strategy": run.strategy,
                               "status": run.status}  # fmt: skip
        if run.pk in asked:
            row.update(shared_probes.tally(shared, asked[run.pk]))
        else:
            row.update(questions=len(shared), asked=None, answered=None, score=None,
                       by_kind=None)  # fmt: skip
        run_rows.append(row)
    probes = []
    for p in shared:
        cells = []
        for run in runs:
            found = asked.get(run.pk, {}).get(p.key)
            score = found.score if found is not None else None
            cells.append(
                {
                    "run": run.pk,
                    "label": run.label,
                    "step": found.step if found is not None else None,
                    "score": score.score if score is not None else None,
                    "verdict": score.verdict if score is not None else None,
                    "found": [mask(x) for x in score.found] if score is not None else [],
                    "missing": [mask(x) for x in score.missing] if score is not None else [],
                }
            )
        probes.append(
            {
                "key": p.key,
                "kind": p.kind,
                "label": PROBE_LABELS.get(p.kind, p.kind),
                "question": mask(p.question),
                "answers": [mask(a) for a in p.answers],
                "source": p.source,
                "position": p.position,
                "other_outputs": others[_cache_key(p)],
                "raised_by": [
                    {"run": run, "label": labels.get(run, ""), "compaction": ordinal}
                    for run, ordinal in p.raised_by
                ],
                "runs": cells,
            }
        )
    return {
        "available": True,
        "pending": False,
        "reason": "" if shared else "No run's compactions removed anything probed.",
        "transcript": runs[0].transcript_id if runs else None,
        "questions": len(shared),
        "by_kind": {k: sum(1 for p in shared if p.kind == k) for k in PROBE_KINDS},
        "kinds": list(PROBE_KINDS),
        "runs": run_rows,
        "probes": probes,
    }


# --- the background tasks' bodies (queued by ``shared_jobs``) --------------------------


def runs_key(ids: Sequence[int]) -> str:
    return ",".join(str(pk) for pk in sorted(set(ids)))


def score(run_ids: Sequence[int]) -> str:
    """The task's body: score and store every missing piece of the set, telling the row
    how many runs are done; a failure is stored on the row (the page says it), not raised.
    The runs' own sets are made first where they are outdated (also when the runs replay
    different transcripts and have no shared set)."""

    def work(runs: list[Run], progress: Callable[[int], None]) -> None:
        for run in runs:
            services.probe_set(run)
        shared_data(runs, compute=True, progress=progress)

    return _run_job(run_ids, runs_key(run_ids), work, "Scoring the shared questions failed")


def generate_sets(run_ids: Sequence[int], key: str) -> str:
    """The ``generate_probe_sets`` task's body: each run's current probe set made where it
    is missing or outdated, the row told after each run."""

    def work(runs: list[Run], progress: Callable[[int], None]) -> None:
        for done, run in enumerate(runs, 1):
            services.probe_set(run)
            progress(done)

    return _run_job(run_ids, key, work, "Making the probes failed")


def _run_job(
    run_ids: Sequence[int], key: str, work: Callable[[list[Run], Callable[[int], None]], None],
    failed: str,
) -> str:  # fmt: skip
    rows = SharedScoring.objects.filter(runs=key)
    rows.update(status=SharedScoring.Status.RUNNING)

    def progress(done: int) -> None:
        rows.update(done_runs=done)

    try:
        found = {r.pk: r for r in Run.objects.select_related("transcript").filter(pk__in=run_ids)}
        work([found[pk] for pk in run_ids if pk in found], progress)
    except Exception as exc:  # derived data: the runs themselves are never touched
        log.exception("probes of runs %s (%s): failed", list(run_ids), key)
        rows.update(
            status=SharedScoring.Status.FAILED,
            message=f"{failed}: {type(exc).__name__}: {exc}"[:2000],
            finished_at=timezone.now(),
        )
        return "failed"
    rows.update(status=SharedScoring.Status.DONE, finished_at=timezone.now())
    return "done"
