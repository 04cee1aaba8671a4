"""Money and token ground truth for replay runs (Claude summaries and exact counts).

- ``estimate``: before a run with the Claude summariser, a quick offline dry-run of the same
  strategy and params on the transcript counts the summary calls it makes and their input
  tokens (reference count of the exact request body × ``CLAUDE_MARGIN``), priced with
  ``pricing`` as if every call wrote its whole output cap: an upper bound. Memoised.
- ``annotate``: while a run executes, each summary row gets the call's usage/cost, and an
  event that reports a failed summary gets the call's error (visible in the events table).
- ``finish``: at run end (in the task) the LLM totals and the ground truth (per-model
  calibration from the transcript's reported usage with its error band, overflow flags,
  optional exact ``count_tokens`` curve), stored on ``Run`` with its done status;
  ``finish_ledger``: right after, with the run's analysis (``runs.analysis_state``: the
  pages say "analysing…" meanwhile), the prompt-caching ledger (compact JSON: totals,
  per-compaction rows, per-step read/write/cost arrays). Computed once, so pages only
  read JSON. Flat ``metrics`` keys carry the headline numbers to the metrics
  tables (run page, compare page and their JSON twins); their labels live in the engine's
  metric catalogue (``ctxlab.engine.core.catalogue.METRICS``, keys in ``vocabulary.COST_KEYS``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ctxlab.engine.core.catalogue import is_failure
from ctxlab.engine.core.lru import BoundedLRU
from ctxlab.engine.core.model import Conversation, Usage
from ctxlab.engine.core.records import StepRecord
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse
from ctxlab.engine.cost.calibration import (
    calibrate_conversation,
    flag_overflows,
    points_from_conversation,
    request_sizes,
)
from ctxlab.engine.cost.ledger import ledger_from_records
from ctxlab.engine.cost.pricing import DEFAULT_SUMMARY_MODEL, cost, find_model
from ctxlab.engine.replay import Replay
from ctxlab.engine.summarize.adapters.anthropic_summarizer import build_params
from ctxlab.engine.summarize.offline import OfflineSummarizer
from ctxlab.engine.tokens.cl100k import reference_counter
from replay_app.costs import llm
from replay_app.costs.llm import MeteredSummarizer
from replay_app.display import charts

log = logging.getLogger(__name__)

CLAUDE_MARGIN = 1.2  # Claude's tokenizers count ~10-20 % more than cl100k on code and prose
PER_MESSAGE = 8  # role framing per request message
ESTIMATE_MEMO = 64
ERROR_CHARS = 500

# --- estimate before a run ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Estimate:
    strategy: str
    label: str
    calls: int
    input_tokens: int
    output_cap_tokens: int
    cost_usd: Decimal
    error: str = ""
    note: str = ""  # "local endpoint: no cost per token"

    def as_dict(self) -> dict[str, Any]:
        extra = {"note": self.note} if self.note else {}
        return {
            "strategy": self.strategy,
            "label": self.label,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_cap_tokens": self.output_cap_tokens,
            "cost_usd": float(self.cost_usd),
            "error": self.error,
        } | extra


class _Counting:
    """Offline summaries (fast, deterministic) while pricing each request as Claude's."""

    name = "offline"

    def __init__(self, model: str) -> None:
        self.model = model
        self.inner = OfflineSummarizer()
        self.counter = reference_counter()
        self.calls: list[tuple[int, int]] = []

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        params = build_params(request, model=self.model)
        texts = [str(params.get("system", ""))] + [m["content"] for m in params["messages"]]
        ref = sum(self.counter.count(t) for t in texts if t)
        tokens = int(ref * CLAUDE_MARGIN) + PER_MESSAGE * len(params["messages"])
        self.calls.append((tokens, int(params["max_tokens"])))
        return self.inner.summarize(request)


_memo: BoundedLRU[Estimate] = BoundedLRU(ESTIMATE_MEMO)


def estimate(
    conversation: Conversation,
    *,
    strategy: str,
    params: Mapping[str, Any],
    model: str,
    label: str = "",
    memo_key: str = "",
    provider: str = "anthropic",
) -> Estimate:
    """Summary calls and their upper-bound cost for one planned run (see module doc). With
    ``provider="openai"`` the price is the adapter's own (genai-prices; 0 at a local
    endpoint, said in ``error``'s place as a note)."""
    key = ""
    if memo_key:
        parts = [memo_key, strategy, dict(params), model]
        if provider != "anthropic":  # the anthropic keys stay as they were
            parts.append([provider, str(llm.make_llm(provider, model, cached=False).base_url)])
        blob = json.dumps(parts, sort_keys=True, default=str)
        key = hashlib.sha256(blob.encode()).hexdigest()
        hit = _memo.get(key)
        if hit is not None:
            return Estimate(**{**_fields(hit), "label": label or hit.label})
    counting = _Counting(model)
    try:
        Replay(conversation, strategy, params=params, summarizer=counting).exhaust()
    except Exception as exc:  # a bad transcript/params: say so beside the estimate
        return Estimate(strategy, label or strategy, 0, 0, 0, Decimal(0), error=str(exc)[:300])
    info, note = find_model(model), ""
    if provider != "anthropic":
        summarizer = llm.make_llm(provider, model, cached=False)
        info = summarizer.info
        if getattr(summarizer, "local", False):
            info, note = None, "local endpoint: no cost per token"
    total = Decimal(0)
    for tokens, cap in counting.calls:
        if info is not None:
            total += cost(Usage(input_uncached=tokens, output=cap), info)
    result = Estimate(
        strategy=strategy,
        label=label or strategy,
        calls=len(counting.calls),
        input_tokens=sum(t for t, _ in counting.calls),
        output_cap_tokens=sum(c for _, c in counting.calls),
        cost_usd=total,
        error="" if info is not None or note else f"no price known for {model!r}",
        note=note,
    )
    if key:
        _memo.set(key, result)
    return result


def _fields(e: Estimate) -> dict[str, Any]:
    return {name: getattr(e, name) for name in e.__slots__}


# --- during a run ------------------------------------------------------------------------------


def annotate(record: StepRecord, summary_rows: Sequence[Any], event_rows: Sequence[Any],
             metered: MeteredSummarizer | None) -> None:  # fmt: skip
    """Usage/cost on this step's summary rows; the call's error and cost on its events."""
    infos = metered.infos if metered is not None else []
    errors: list[str] = []
    cost_here = 0.0
    for row in summary_rows:
        info = infos[row.seq] if row.seq < len(infos) else None
        if info is not None:
            row.usage = info.as_dict()
            cost_here += info.cost_usd
        if row.error:
            errors.append(row.error)
    if not errors and not cost_here:
        return
    seqs = {row.seq for row in summary_rows}
    for ev in event_rows:
        failed = is_failure(ev.kind) or ev.detail.get("failed_calls")
        if errors and failed and "error" not in ev.detail:
            ev.detail["error"] = "; ".join(dict.fromkeys(errors))[:ERROR_CHARS]
        if cost_here and (ev.summary_seq in seqs or failed):
            ev.detail["summary_cost_usd"] = round(cost_here, 6)


# --- at run end --------------------------------------------------------------------------------


def ledger_model(conversation: Conversation, fallback: str) -> str:
    """Price the agent's own requests at the transcript's model when it is known."""
    for name in (conversation.model, *(m.model for m in conversation.messages[-50:])):
        if name and find_model(name) is not None:
            return find_model(name).id  # type: ignore[union-attr]
    return fallback if find_model(fallback) else DEFAULT_SUMMARY_MODEL


def ledger_json(
    records: Sequence[StepRecord],
    conversation: Conversation,
    reference: Any,
    *,
    model: str,
    summary_model: str | None,
) -> dict[str, Any]:
    led = ledger_from_records(
        records,
        conversation=conversation,
        reference=reference,
        model=model,
        summary_model=summary_model,
    )
    full = led.as_dict(steps=False)  # the steps are stored as parallel arrays, below
    compactions = full["compactions"]
    totals = full["totals"]
    totals["invalidated_tokens"] = sum(c["invalidated_tokens"] for c in compactions)
    totals["extra_cost"] = sum(c["extra_cost"] for c in compactions)
    totals["tokens_saved_after"] = sum(c["tokens_saved_after"] for c in compactions)
    return {
        "model": full["model"],
        "ttl": full["ttl"],
        "summary_model": summary_model or "",
        "totals": totals,
        "compactions": compactions,
        # per step, parallel arrays (compact: no per-step dicts)
        "steps": {
            "read": [s.read_tokens for s in led.steps],
            "write": [s.write_tokens for s in led.steps],
            "cost": [round(float(s.cost), 6) for s in led.steps],
            "break_at": [s.break_at for s in led.steps],
        },
    }


def ground_truth_json(
    records: Sequence[StepRecord], conversation: Conversation, *, exact_counter: Any = None
) -> dict[str, Any]:
    """Calibration (the model with most reported calls), band per step, overflow flags and
    the optional exact ``count_tokens`` curve."""
    out: dict[str, Any] = {"calibration": None, "flags": [], "exact": None}
    try:
        cals = calibrate_conversation(conversation)
    except Exception as exc:  # noqa: BLE001 — ground truth is optional extra information
        cals, out["calibration_error"] = {}, str(exc)[:300]
    if cals:
        counts: dict[str, int] = {}
        for p in points_from_conversation(conversation):
            counts[p.model] = counts.get(p.model, 0) + 1
        model = max(cals, key=lambda m: counts.get(m, 0))
        cal = cals[model]
        sizes = request_sizes(records, conversation)
        est = [round(cal.estimate(s.reference_tokens, s.blocks)) for s in sizes]
        out["calibration"] = {
            "model": model,
            "a": cal.a,
            "b": cal.b,
            "c": cal.c,
            "pairs_used": cal.pairs_used,
            "pairs_dropped": cal.pairs_dropped,
            "band": {k: getattr(cal.band, k) for k in ("n", "stddev", "p05", "p50", "p95")},
            "models": sorted(cals),
        }
        out["estimate"] = est
        out["low"] = [round(e + cal.band.p05) for e in est]
        out["high"] = [round(e + cal.band.p95) for e in est]
        out["flags"] = [
            {
                "step": f.step,
                "strategy_tokens": f.strategy_tokens,
                "estimate": round(f.estimate),
                "low": round(f.low),
                "high": round(f.high),
                "limit": f.limit,
                "certainty": f.certainty,
            }
            for f in flag_overflows(sizes, cal)
        ]
    elif "calibration_error" not in out:
        out["calibration_error"] = (
            "not enough reported usage in the transcript to calibrate (need 2+ growing pairs)"
        )
    if exact_counter is not None:
        try:
            out["exact"] = exact_curve(records, conversation, exact_counter)
            out["exact_model"] = exact_counter.model
            out["exact_requests"] = exact_counter.requests
        except Exception as exc:  # noqa: BLE001 — a failed optional estimator is reported
            out["exact_error"] = str(exc)[:ERROR_CHARS]
    return out


def exact_curve(
    records: Sequence[StepRecord], conversation: Conversation, counter: Any
) -> list[int]:
    """Per step: Σ exact tokens of the context's messages (prefix sums, O(ranges) per step)
    + the summary in force. Each distinct message is counted once (cached by content)."""
    needed = max((end for r in records for _, end in r.context), default=0)
    prefix = [0]
    for msg in conversation.messages[:needed]:
        prefix.append(prefix[-1] + counter.count_message(msg))
    summaries: dict[int, int] = {}
    outputs: dict[int, str] = {}
    for r in records:
        for s in r.summaries:
            outputs[s.id] = s.output
    curve = []
    for r in records:
        total = sum(prefix[end] - prefix[start] for start, end in r.context)
        if r.summary_id is not None:
            if r.summary_id not in summaries:
                summaries[r.summary_id] = counter.count(outputs.get(r.summary_id, ""))
            total += summaries[r.summary_id]
        curve.append(total)
    return curve


def finish(
    run: Any,
    job: Replay,
    *,
    metered: MeteredSummarizer | None,
    exact_counter: Any = None,
) -> dict[str, Any]:
    """Fields to store on the run when it is done: ``llm``, ``ground_truth`` and their flat
    ``metrics`` keys (the ledger follows with the analysis: ``finish_ledger``). Never
    raises: a failure is recorded in the JSON."""
    conversation = job.conversation
    records = job.result.steps
    llm = dict(run.llm or {})
    if metered is not None:
        llm.update(metered.totals())
        llm["model"] = metered.model
    truth = ground_truth_json(records, conversation, exact_counter=exact_counter)
    metrics: dict[str, Any] = {"overflow_flags": len(truth.get("flags") or [])}
    if metered is not None:
        metrics.update(
            llm_cost_usd=round(llm.get("cost_usd", 0.0), 6),
            llm_calls=llm.get("calls", 0),
            llm_cache_hits=llm.get("cache_hits", 0),
        )
    return {"llm": llm, "ground_truth": truth, "metrics": metrics}


def finish_ledger(run: Any, job: Replay) -> dict[str, Any]:
    """The run's prompt-caching ``ledger`` and its flat ``metrics`` keys, computed after the
    run is done (``executor._analyse``). Never raises: a failure is recorded in the JSON."""
    conversation = job.conversation
    # The ledger prices summary calls at a Claude model's rates; an OpenAI-compatible run's
    # spend is the adapter's own (``llm``), so its summaries are not priced there.
    summary_model = run.summarizer_model if run.summarizer == "anthropic" else None
    try:
        ledger = ledger_json(
            job.result.steps, conversation, job.ctx.reference,
            model=ledger_model(conversation, run.summarizer_model or DEFAULT_SUMMARY_MODEL),
            summary_model=summary_model,
        )  # fmt: skip
    except Exception as exc:  # noqa: BLE001
        log.exception("run %s: ledger failed", run.pk)
        ledger = {"error": str(exc)[:ERROR_CHARS]}
    metrics: dict[str, Any] = {}
    t = ledger.get("totals")
    if t:
        metrics.update(
            ledger_request_cost=round(t["request_cost"], 6),
            ledger_uncached_cost=round(t["uncached_cost"], 6),
            ledger_write_tokens=t["write_tokens"],
            ledger_read_tokens=t["read_tokens"],
            ledger_invalidated_tokens=t["invalidated_tokens"],
            ledger_extra_cost=round(t["extra_cost"], 6),
            ledger_total_cost=round(t["total_cost"], 6),
        )
    return {"ledger": ledger, "metrics": metrics}


# --- page helpers ------------------------------------------------------------------------------


def truth_chart(run: Any) -> str:
    """Estimated vs reported with the calibration band, exact counts and flagged steps."""
    truth = run.ground_truth or {}
    if not truth.get("estimate") and not truth.get("exact"):
        return ""
    rows = list(run.steps.order_by("index").values_list("index", "tokens_strategy",
                                                        "tokens_reported"))  # fmt: skip
    x = [r[0] for r in rows]
    data: list[dict[str, Any]] = []
    if truth.get("estimate"):
        cal = truth["calibration"]
        n = min(len(x), len(truth["estimate"]))
        data.append(charts._line("band low (p05)", x[:n], truth["low"][:n], "#c7d2fe",
                                 line={"width": 0}, showlegend=False))  # fmt: skip
        data.append(charts._line("calibrated band (p05–p95)", x[:n], truth["high"][:n], "#c7d2fe",
                                 line={"width": 0}, fill="tonexty",
                                 fillcolor="rgba(99,102,241,0.18)"))  # fmt: skip
        data.append(charts._line(f"calibrated ({cal['model']})", x[:n], truth["estimate"][:n],
                                 "#4f46e5"))  # fmt: skip
    data.append(charts._line("strategy estimate", x, [r[1] for r in rows], charts.STRATEGY_COLOUR,
                             line={"dash": "dot"}))  # fmt: skip
    data.append(charts._line("reported", x, [r[2] for r in rows], charts.REPORTED_COLOUR))
    if truth.get("exact"):
        data.append(charts._line(f"exact count_tokens ({truth.get('exact_model', '')})", x,
                                 truth["exact"][: len(x)], "#059669"))  # fmt: skip
    flags = truth.get("flags") or []
    if flags:
        data.append({
            "type": "scatter", "mode": "markers", "name": "hidden overflow",
            "x": [f["step"] for f in flags], "y": [f["estimate"] for f in flags],
            "marker": {"symbol": "x", "size": 9, "color": "#dc2626"},
            "text": [f"{f['certainty']}: limit {f['limit']:,}, strategy saw "
                     f"{f['strategy_tokens']:,}" for f in flags],
            "hovertemplate": "step %{x}<br>%{text}<extra></extra>",
        })  # fmt: skip
    spec = {"data": data, "layout": charts._layout(yaxis_title="request tokens")}
    return charts.chart_html(spec, div_id="truth-plot", filename=f"run-{run.pk}-ground-truth")


def summarizer_label(run: Any) -> str:
    """The run's summariser as its page and JSON twin name it (``llm.summarizer_label``)."""
    return _label(run)


def run_costs_json(run: Any) -> dict[str, Any]:
    """The JSON twin's ``cost`` and ``ledger`` blocks."""
    return {
        "summarizer_label": summarizer_label(run),
        "llm": run.llm or {},
        "ledger": run.ledger or {},
        "ground_truth": run.ground_truth or {},
    }


def _label(run: Any) -> str:
    from replay_app.costs.llm import summarizer_label

    return summarizer_label(run.summarizer, run.summarizer_model)


LEDGER_ROWS = 200  # compactions listed on the page (all of them in the JSON)


def page_context(run: Any) -> dict[str, Any]:
    """What ``_cost.html`` / ``_ledger.html`` show (JSON reads only, plus one chart query)."""
    from replay_app import memo

    ledger = run.ledger or {}
    truth = run.ground_truth or {}
    chart = ""
    if run.status == "done" and (truth.get("estimate") or truth.get("exact")):
        chart = memo.cached(run, "truth-html", lambda: truth_chart(run))
    return {
        "label": _label(run),
        "llm": run.llm or {},
        "ledger": ledger,
        "ledger_rows": (ledger.get("compactions") or [])[:LEDGER_ROWS],
        "truth": truth,
        "truth_chart": chart,
        "flags": (truth.get("flags") or [])[:LEDGER_ROWS],
    }
