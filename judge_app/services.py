"""Probe sets of finished runs: generated and scored offline on first use, and Claude scoring.

``probe_set(run)`` returns the run's probes for its current attempt, generating them (and
their offline scores) from the stored replay the first time a page asks: derived data,
never a reason to fail or slow the run itself. ``score_with_claude`` is the body of the
Celery task: every probe answered by Claude from the compacted context, recall/artifact
scored by containment, continuation/decision by a rubric judge call; all scores are written
in one transaction at the end, so a refusal by the budget leaves nothing half-written and a
failed call is one failed score. The run's own rows are never touched.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import accumulate
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from ctxlab.engine.core.model import Message, Usage
from ctxlab.engine.core.records import Event, StepRecord, StepTokens, Zones
from ctxlab.engine.core.spread import spread
from ctxlab.engine.core.summary_request import SummarizerError
from ctxlab.engine.cost.pricing import cost, find_model
from ctxlab.engine.evaluate.probes import questions as probes
from ctxlab.engine.evaluate.probes import scoring as probe_scoring
from ctxlab.engine.evaluate.probes.haystack import ContextScorer, score_replay
from replay_app.costs import llm
from replay_app.models import Run, RunStatus, RunStep
from replay_app.runs import analysis_state, textstore
from sessions_app.models import Message as MessageRow

from .models import ClaudeStatus, Probe, ProbeScore, ProbeSet

log = logging.getLogger(__name__)

# Bumped when generation or offline scoring changes: stored sets are regenerated.
# 3: recall answers anchored to the call they answered (``probe_haystack``).
GENERATOR = 3
_NO_ZONES = Zones(0, 0, 0, 0, 0, 0, 0, 0, None)
ANSWER_TOKENS = 300  # answer_request's cap, for the estimate
JUDGE_TOKENS = 200


@dataclass(frozen=True, slots=True)
class StoredReplay:
    """What probes need of a stored run."""

    messages: Sequence[Message]
    steps: list[StepRecord]
    events: list[Event]
    summaries: dict[int, str]


def stored_replay(run: Run, messages: Sequence[Message] | None = None) -> StoredReplay:
    """The run's stored rows (``messages``: its transcript's, when the caller has them)."""
    steps = [
        StepRecord(index, source, StepTokens(0, 0), _NO_ZONES,
                   tuple((int(a), int(b)) for a, b in ctx), summary)
        for index, source, ctx, summary in RunStep.objects.filter(run=run)
        .order_by("index")
        .values_list("index", "source_index", "context", "summary_seq")
    ]  # fmt: skip
    events = textstore.run_events(run)  # modified messages read back in one go
    summaries = dict(run.summaries.values_list("seq", "output"))
    if messages is None:
        messages = run.transcript.to_conversation().messages
    return StoredReplay(messages, steps, events, summaries)


def contexts(replay: StoredReplay, wanted: Iterable[int]) -> dict[int, str]:
    return probe_scoring.replay_contexts(
        replay.steps, replay.events, replay.summaries, replay.messages, wanted
    )


def tokens_saved(run: Run) -> dict[str, Any]:
    """Σ input tokens of the run against the same requests with nothing compacted (every
    message before each step's call, cl100k): saved and its share."""
    sizes = list(
        MessageRow.objects.filter(transcript_id=run.transcript_id)
        .order_by("index")
        .values_list("reference_tokens", flat=True)
    )
    prefix = [0, *accumulate(sizes)]
    sources = RunStep.objects.filter(run=run).values_list("source_index", flat=True)
    baseline = sum(prefix[min(s, len(sizes))] for s in sources)
    replayed = int((run.metrics or {}).get("input_tokens_total") or 0)
    saved = baseline - replayed
    return {
        "baseline": baseline,
        "replayed": replayed,
        "saved": saved,
        "share": round(saved / baseline, 4) if baseline else None,
        **empty_requests(run),
    }


def empty_requests(run: Run) -> dict[str, int]:
    """``{"requests", "empty_requests"}``: the run's requests, and those holding no
    transcript message but the system prompt, and no summary (the strategy kept nothing:
    every probe there is lost and almost every token "saved", by construction, not by
    compaction)."""
    systems = set(
        MessageRow.objects.filter(transcript_id=run.transcript_id, role="system").values_list(
            "index", flat=True
        )
    )
    steps = RunStep.objects.filter(run=run)
    empty = 0
    bare = steps.filter(context_len__lte=len(systems), summary_seq__isnull=True)
    for ranges in bare.values_list("context", flat=True):
        if all(i in systems for a, b in ranges for i in range(int(a), int(b))):
            empty += 1
    return {"requests": steps.count(), "empty_requests": empty}


def current_set(run: Run) -> ProbeSet | None:
    """The stored set of the run's current attempt, if there is one and it is current."""
    return ProbeSet.objects.filter(run=run, attempts=run.attempts, generator=GENERATOR).first()


def stale_runs(run_ids: Iterable[int]) -> list[int]:
    """Those of these runs that are finished yet have no current probe set (none yet, an
    earlier attempt's, or an older ``GENERATOR``'s): a task makes them (``shared_jobs``)."""
    done = list(
        Run.objects.filter(pk__in=list(run_ids), status=RunStatus.DONE)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    current = set(
        ProbeSet.objects.filter(
            run_id__in=done, generator=GENERATOR, attempts=F("run__attempts")
        ).values_list("run_id", flat=True)
    )
    return [pk for pk in done if pk not in current]


def analysing_runs(run_ids: Iterable[int]) -> set[int]:
    """Those of these runs whose worker is still analysing them: their probe set comes with
    the analysis (``replay_app.runs.analysis_state``), so no task makes one meanwhile."""
    waiting = Run.objects.filter(pk__in=list(run_ids), status=RunStatus.DONE, finished_at=None)
    return {run.pk for run in waiting if analysis_state.pending(run)}


def probe_set(run: Run) -> ProbeSet | None:
    """The run's probe set with offline scores, generated on first use (None while the
    run is not finished)."""
    if run.status != RunStatus.DONE:
        return None
    found = current_set(run)
    if found is not None:
        return found
    return generate(run)


def generate(run: Run, replay: StoredReplay | None = None) -> ProbeSet:
    """(Re)generate the run's probes and offline scores (replaces an outdated set).
    ``replay``: the run's replay when the caller has it in memory (the worker at run end),
    else read back from its stored rows."""
    replay = replay if replay is not None else stored_replay(run)
    found = probes.replay_probes(replay.events, replay.messages, replay.steps)
    scorer = ContextScorer(replay.messages)
    scores = score_replay(
        found, replay.steps, replay.events, replay.summaries, replay.messages, scorer
    )
    others = {p.key: scorer.other_outputs(p) for p in found}
    summary = probe_scoring.summarise(found, {k: s.score for k, s in scores.items()})
    tokens = tokens_saved(run)
    try:
        with transaction.atomic():
            ProbeSet.objects.filter(run=run).delete()
            row = ProbeSet.objects.create(
                run=run, attempts=run.attempts, generator=GENERATOR, offline=summary,
                tokens=tokens,
            )  # fmt: skip
            stored = Probe.objects.bulk_create(
                Probe(
                    probe_set=row, seq=i, key=p.key, kind=p.kind, compaction=p.compaction,
                    step=p.step, event=p.event, question=p.question,
                    answers=list(p.answers), source=p.source,
                )
                for i, p in enumerate(found)
            )  # fmt: skip
            ProbeScore.objects.bulk_create(
                ProbeScore(
                    probe=s, method=ProbeScore.Method.OFFLINE, score=scores[p.key].score,
                    verdict=scores[p.key].verdict,
                    detail={"found": list(scores[p.key].found),
                            "missing": list(scores[p.key].missing),
                            "other_outputs": others[p.key]},
                )
                for s, p in zip(stored, found, strict=True)
            )  # fmt: skip
    except IntegrityError:  # another request generated them first
        existing = current_set(run)
        if existing is None:
            raise
        return existing
    return row


def engine_probe(row: Probe) -> probes.Probe:
    return probes.Probe(
        key=row.key, kind=row.kind, compaction=row.compaction, step=row.step,
        event=row.event, question=row.question, answers=tuple(row.answers), source=row.source,
    )  # fmt: skip


# --- model scoring (Claude, or an OpenAI-compatible judge) ------------------------------------


def estimate_usd(row: ProbeSet, model: str, replicates: int = 1) -> Decimal:
    """An upper estimate of a model scoring: every probe's capped context (4 characters a
    token) plus its output cap, and a judge call for continuation/decision probes, for each
    replicate. ``model``: a Claude model or ``openai:NAME`` (``llm.split_model``); 0 at a
    local endpoint."""
    provider, name = llm.split_model(model)
    info = llm.make_llm(provider, name, cached=False).info if provider == "openai" else None
    if provider != "openai":
        info = find_model(name)
    if info is None:
        return Decimal(0)
    replay = stored_replay(row.run)
    rows = list(row.probes.all())
    texts = contexts(replay, {p.step for p in rows})
    total = Decimal(0)
    for p in rows:
        prompt = len(probe_scoring.capped(texts.get(p.step, ""))) // 4 + 200
        total += cost(Usage(input_uncached=prompt, output=ANSWER_TOKENS), info)
        if p.kind not in probe_scoring.EXACT_KINDS:
            total += cost(Usage(input_uncached=600, output=JUDGE_TOKENS), info)
    return total * max(1, replicates)


def score_with_claude(
    set_id: int, model: str, budget_usd: Decimal, replicates: int = 1
) -> ProbeSet:
    """Answer and score every probe with the model, ``replicates`` times (see the module
    docstring); a probe's stored score is the mean of its replicates, its detail keeps each
    replicate's score and their spread; the set's summary keeps the spread of the overall
    score across replicates."""
    row = ProbeSet.objects.select_related("run").get(pk=set_id)
    ProbeSet.objects.filter(pk=set_id).update(claude_status=ClaudeStatus.RUNNING)
    provider, name = llm.split_model(model)
    metered = llm.MeteredSummarizer(llm.make_llm(provider, name), budget_usd=budget_usd)
    rows = list(row.probes.order_by("seq"))
    texts = contexts(stored_replay(row.run), {p.step for p in rows})
    count = max(1, replicates)
    found_by: dict[str, list[dict[str, Any]]] = {p.key: [] for p in rows}
    for replicate in range(count):
        metered.inner.replicate = replicate  # type: ignore[attr-defined]
        for p in rows:
            probe = engine_probe(p)
            spent_before = len(metered.infos)
            try:
                found = _score_one(metered, probe, texts.get(p.step, ""))
            except SummarizerError as exc:
                if metered.refused:
                    return _refused(set_id, metered, str(exc))
                found = {"score": None, "error": str(exc)[:500]}
            infos = metered.infos[spent_before:]
            found["cost_usd"] = sum(i.cost_usd for i in infos if not i.cached)
            found["cached"] = bool(infos) and all(i.cached for i in infos)
            found_by[p.key].append(found)
    scores = [ProbeScore(probe=p, method=ProbeScore.Method.CLAUDE,
                         **_replicates_of(p.kind, found_by[p.key])) for p in rows]  # fmt: skip
    engine = [engine_probe(p) for p in rows]
    values = {s.probe.key: s.score for s in scores if s.score is not None}
    per_replicate = [
        probe_scoring.summarise(
            engine, {k: f[r]["score"] for k, f in found_by.items() if f[r]["score"] is not None}
        )["score"]
        for r in range(count)
    ]
    failed = sum(1 for s in scores if s.score is None)
    summary = {**probe_scoring.summarise(engine, values), "failed": failed,
               "calls": metered.totals(), "replicates": count,
               "judge": llm.summarizer_label(provider, name)}  # fmt: skip
    found_spread = spread(per_replicate)
    if count > 1 and found_spread is not None:
        summary["spread"] = found_spread.as_dict()
        summary["spread_text"] = found_spread.text()
    status = ClaudeStatus.FAILED if rows and failed == len(rows) else ClaudeStatus.DONE
    message = f"{failed} of {len(rows)} probes failed (see each)." if failed else ""
    with transaction.atomic():
        ProbeScore.objects.filter(probe__probe_set_id=set_id, method="claude").delete()
        ProbeScore.objects.bulk_create(scores)
        ProbeSet.objects.filter(pk=set_id).update(
            claude_status=status, claude=summary, claude_message=message,
            claude_finished_at=timezone.now(),
        )  # fmt: skip
    return ProbeSet.objects.get(pk=set_id)


def _replicates_of(kind: str, found: list[dict[str, Any]]) -> dict[str, Any]:
    """One probe's stored score from its replicates: the first replicate's answer and
    detail, the mean score (None when every replicate failed), the summed cost."""
    if len(found) == 1:
        return found[0]
    first = dict(found[0])
    numbers = [f["score"] for f in found if f.get("score") is not None]
    found_spread = spread(numbers)
    first["cost_usd"] = sum(f.get("cost_usd", 0) for f in found)
    first["cached"] = all(f.get("cached") for f in found)
    detail = dict(first.get("detail") or {})
    detail["replicates"] = [f.get("score") for f in found]
    if found_spread is None:
        first["detail"] = detail
        return first
    detail["spread"] = found_spread.as_dict()
    first.update(score=round(found_spread.mean, 4),
                 verdict=probe_scoring.verdict(kind, found_spread.mean), detail=detail)  # fmt: skip
    first.pop("error", None)
    return first


def _score_one(metered: Any, probe: probes.Probe, context: str) -> dict[str, Any]:
    reply = metered.summarize(probe_scoring.answer_request(probe, context))
    if reply.error:
        return {"score": None, "error": reply.error, "answer": ""}
    answer = reply.text.strip()
    if probe.kind in probe_scoring.EXACT_KINDS:
        found = probe_scoring.contains_score(probe, answer)
        detail = {"found": list(found.found), "missing": list(found.missing)}
        return {"score": found.score, "verdict": found.verdict, "answer": answer,
                "detail": detail}  # fmt: skip
    judged = metered.summarize(probe_scoring.judge_request(probe, answer))
    if judged.error:
        return {"score": None, "error": f"judge: {judged.error}", "answer": answer}
    try:
        score, reason = probe_scoring.parse_judgement(judged.text)
    except ValueError as exc:
        return {"score": None, "error": f"judge: {exc}", "answer": answer}
    return {
        "score": score, "verdict": probe_scoring.verdict(probe.kind, score), "answer": answer,
        "detail": {"judge_reason": reason, "judge_reply": judged.text[:1000]},
    }  # fmt: skip


def _refused(set_id: int, metered: Any, reason: str) -> ProbeSet:
    spent = metered.totals()["cost_usd"]
    ProbeSet.objects.filter(pk=set_id).update(
        claude_status=ClaudeStatus.REFUSED,
        claude_message=(
            f"Stopped by the budget: {reason}. ${spent:.4f} was spent on calls now cached; "
            "no Claude score was stored. Raise the budget and score again (cached calls "
            "are free)."
        ),
        claude_finished_at=timezone.now(),
    )
    return ProbeSet.objects.get(pk=set_id)


def mark_failed(set_id: int, message: str) -> None:
    """The task itself failed (not one call): said on the page, the run unaffected."""
    ProbeSet.objects.filter(pk=set_id).update(
        claude_status=ClaudeStatus.FAILED, claude_message=message[:2000],
        claude_finished_at=timezone.now(),
    )  # fmt: skip
