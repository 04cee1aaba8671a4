"""Page data of the probe pages (the HTML pages and their JSON twins read the same dicts)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ctxlab.engine.core.catalogue import metric
from ctxlab.engine.evaluate.probes import haystack as probe_haystack
from ctxlab.engine.evaluate.probes import scoring as probe_scoring
from ctxlab.engine.evaluate.probes.questions import PROBE_KINDS, PROBE_LABELS
from ctxlab.engine.privacy.secrets import mask
from ctxlab.web.display import counted
from ctxlab.web.plots import figure_html
from replay_app.models import Run, RunStatus
from sessions_app.models import Transcript

from . import services
from .models import ProbeScore, ProbeSet


def _score_dict(score: ProbeScore | None) -> dict[str, Any] | None:
    if score is None:
        return None
    out: dict[str, Any] = {"score": score.score, "verdict": score.verdict}
    if score.method == ProbeScore.Method.CLAUDE:
        out.update(
            answer=mask(score.answer),
            error=mask(score.error),
            cost_usd=round(score.cost_usd, 6),
            cached=score.cached,
            reason=mask(str(score.detail.get("judge_reason", ""))),
        )
        if "replicates" in score.detail:  # each replicate's score and their spread
            out.update(replicates=score.detail["replicates"], spread=score.detail.get("spread"))
    else:
        out.update(found=[mask(x) for x in score.detail.get("found", [])],
                   missing=[mask(x) for x in score.detail.get("missing", [])],
                   other_outputs=int(score.detail.get("other_outputs") or 0))  # fmt: skip
    return out


def empty_note(run: Run, tokens: dict[str, Any] | None) -> str | None:
    """Why probes are lost and tokens "saved" where the run sent requests with no
    transcript message (counted when its probe set was made); None when it sent none."""
    tokens = tokens or {}
    if "empty_requests" not in tokens:  # a set made before they were counted: two queries
        tokens = {**tokens, **services.empty_requests(run)}
    empty = int(tokens.get("empty_requests") or 0)
    if not empty:
        return None
    text = (
        f"{empty} of {counted(int(tokens.get('requests') or 0), 'request')} held no transcript message "
        "and no summary (the system prompt at most): the strategy kept nothing there, so "
        "every probe asked "
        "there is lost and almost all its tokens count as saved."
    )
    if run.strategy == "langchain_trim":
        params = run.params or {}
        text += (
            f" trim_messages keeps the last messages within max_tokens "
            f"({params.get('max_tokens', 384)}, whatever the window), then drops everything "
            f"before the first message of type start_on ({params.get('start_on', 'human')!r}) "
            "among them: where those messages are tool calls and results with no human "
            "message, it returns no message at all, as langchain-core's own trim_messages "
            'does. A larger max_tokens or start_on "" keeps them.'
        )
    return text


def run_probes_data(run: Run, row: ProbeSet | None) -> dict[str, Any]:
    """``{"run", "label", "status", "offline", "claude", "probes": [...]}``; ``probes`` is
    null while the run is not finished."""
    out: dict[str, Any] = {
        "run": run.pk,
        "label": run.label,
        "strategy": run.strategy,
        "status": run.status,
        "offline": None,
        "claude": None,
        "probes": None,
    }
    if row is None:
        return out
    rows = list(row.probes.order_by("seq").prefetch_related("scores"))
    out["offline"] = row.offline
    out["empty_note"] = empty_note(run, row.tokens)
    out["claude"] = {
        "status": row.claude_status,
        "message": row.claude_message,
        "model": row.claude_model,
        "budget_usd": float(row.claude_budget_usd) if row.claude_budget_usd is not None else None,
        "summary": row.claude or None,
        "cost_usd": (row.claude or {}).get("calls", {}).get("cost_usd", 0.0),
    }
    probes = []
    for p in rows:
        by_method = {s.method: s for s in p.scores.all()}
        probes.append(
            {
                "seq": p.seq,
                "key": p.key,
                "kind": p.kind,
                "label": PROBE_LABELS.get(p.kind, p.kind),
                "compaction": p.compaction,
                "step": p.step,
                "event": p.event,
                "source": p.source,
                "question": mask(p.question),
                "answers": [mask(a) for a in p.answers],
                "offline": _score_dict(by_method.get(ProbeScore.Method.OFFLINE)),
                "claude": _score_dict(by_method.get(ProbeScore.Method.CLAUDE)),
            }
        )
    out["probes"] = probes
    return out


def compare_data(runs: Sequence[Run]) -> dict[str, Any]:
    """Each run's probe scores by kind and method, tokens saved and cost, side by side.
    Only stored sets are read: a finished run whose set is missing or outdated is
    ``pending`` (a task makes it: ``shared_jobs``), ``own_pending`` counts them."""
    rows = []
    for run in runs:
        row = services.current_set(run) if run.status == RunStatus.DONE else None
        metrics = run.metrics or {}
        claude = (row.claude or {}) if row is not None else {}
        rows.append(
            {
                "run": run.pk,
                "label": run.label,
                "strategy": run.strategy,
                "status": run.status,
                "pending": row is None and run.status == RunStatus.DONE,
                "probes": (row.offline or {}).get("probes") if row is not None else None,
                "offline": row.offline if row is not None else None,
                "claude": claude or None,
                "claude_status": row.claude_status if row is not None else None,
                "tokens": (row.tokens or None) if row is not None else None,
                "empty_note": empty_note(run, row.tokens) if row is not None else None,
                "cost_usd": float(metrics.get("llm_cost_usd") or 0.0),
            }
        )
        rows[-1]["metrics"] = run_metrics(rows[-1])
    # the original agent's row only beside replays of its own transcript
    same = len({r.transcript_id for r in runs}) == 1
    original = original_row(runs[0].transcript) if runs and same else None
    own_pending = sum(1 for r in rows if r["pending"])
    return {"kinds": list(PROBE_KINDS), "original": original, "runs": rows,
            "own_pending": own_pending}  # fmt: skip


def original_row(transcript: Transcript) -> dict[str, Any] | None:
    """The transcript's own compactions probed the same way (offline): the agent the user
    actually ran, beside the replays; None when it recorded none."""
    if not transcript.compactions:
        return None
    offline = _original_offline(transcript.pk, transcript.revision)
    row: dict[str, Any] = {
        "run": "original", "label": "original agent", "strategy": "", "status": "done",
        "probes": offline["probes"], "offline": offline, "claude": None,
        "claude_status": None, "tokens": None, "cost_usd": None,
    }  # fmt: skip
    row["metrics"] = run_metrics(row)
    return row


METRIC_KEYS = (
    "probe_score", *(f"probe_score_{k}" for k in PROBE_KINDS), "probe_score_claude",
    "probe_cost_usd", "tokens_saved", "llm_cost_usd",
)  # fmt: skip


def run_metrics(row: dict[str, Any]) -> dict[str, Any]:
    """A compare row's figures under their catalogue keys (``METRIC_KEYS``)."""
    offline, claude = row.get("offline") or {}, row.get("claude") or {}
    by_kind = offline.get("by_kind") or {}
    return {
        "probe_score": offline.get("score"),
        **{f"probe_score_{k}": (by_kind.get(k) or {}).get("score") for k in PROBE_KINDS},
        "probe_score_claude": claude.get("score"),
        "probe_cost_usd": (claude.get("calls") or {}).get("cost_usd"),
        "tokens_saved": (row.get("tokens") or {}).get("saved"),
        "llm_cost_usd": row.get("cost_usd"),
    }


def columns() -> list[dict[str, str]]:
    """The compare table's columns: label and meaning from the catalogue."""
    return [
        {"key": k, "label": metric(k).label, "meaning": metric(k).meaning, "unit": metric(k).unit}
        for k in METRIC_KEYS
    ]


SHARED_KEYS = ("shared_probe_answered", "shared_probe_asked", "shared_probe_score")


def shared_columns() -> dict[str, dict[str, str]]:
    """The shared table's figures: label and meaning from the catalogue, by key."""
    keys = ("shared_probe_questions", *SHARED_KEYS)
    return {k.removeprefix("shared_probe_"): {"label": metric(k).label,
                                              "meaning": metric(k).meaning} for k in keys}  # fmt: skip


@lru_cache(maxsize=64)
def _original_offline_cached(pk: int, revision: str) -> dict[str, Any]:
    transcript = Transcript.objects.get(pk=pk)
    found, scores = probe_haystack.original_scores(transcript.to_conversation())
    return probe_scoring.summarise(found, {k: s.score for k, s in scores.items()})


def _original_offline(pk: int, revision: str) -> dict[str, Any]:
    """The original's offline probe summary, memoised per transcript revision (a revision
    changes whenever its messages are rewritten); a deep copy, callers may change it."""
    found = _original_offline_cached(pk, revision)
    return {**found, "by_kind": {k: dict(v) for k, v in found["by_kind"].items()}}


def _score(run: dict[str, Any]) -> float | None:
    claude = run.get("claude") or {}
    if claude.get("score") is not None:
        return float(claude["score"])
    offline = run.get("offline") or {}
    return float(offline["score"]) if offline.get("score") is not None else None


# One marker shape per run (with its colour): runs at the same point stay told apart.
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "star", "x", "pentagon")


def tradeoff_spec(data: dict[str, Any]) -> dict[str, Any]:
    """One scatter: tokens saved (x) against probe score (y, Claude's when scored, else
    offline), marker size by the summary calls' cost; one point per run. Runs are named by
    the legend (one entry per run, its own shape) and on hover, not by text beside the
    points: runs with near figures sit on top of one another, and so did their labels."""
    traces = []
    for k, run in enumerate(data["runs"]):
        score, tokens = _score(run), run.get("tokens") or {}
        if score is None or tokens.get("share") is None:
            continue
        method = "Claude" if (run.get("claude") or {}).get("score") is not None else "offline"
        cost = run["cost_usd"]
        label = html.escape(f"{run['label']} (run {run['run']})")
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": label,
                "x": [round(tokens["share"] * 100, 2)],
                "y": [score],
                "marker": {
                    "size": [14 + min(cost, 5.0) * 8],
                    "symbol": SYMBOLS[k % len(SYMBOLS)],
                    "opacity": 0.8,
                    "line": {"width": 1, "color": "#ffffff"},
                },
                "hovertemplate": (
                    f"{label}<br>tokens saved %{{x}}% ({tokens['saved']:,})<br>"
                    f"probe score %{{y}} ({method})<br>summary calls ${cost:.4f}<extra></extra>"
                ),
            }
        )
    layout = {
        "template": {},
        "height": 380,
        "margin": {"l": 60, "r": 16, "t": 20, "b": 50},
        "xaxis": {"title": {"text": "Σ input tokens saved vs no compaction (%)"}},
        "yaxis": {"title": {"text": "probe score (0–1)"}, "range": [-0.05, 1.1]},
        "legend": {"orientation": "h", "y": -0.25},
        "hovermode": "closest",
    }
    return {"data": traces, "layout": layout}


def tradeoff_chart(data: dict[str, Any]) -> str:
    spec = tradeoff_spec(data)
    if not spec["data"]:
        return ""
    config = {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": "ctxlab-probe-tradeoff"},
    }
    return figure_html(spec, div_id="probe-tradeoff", config=config)
