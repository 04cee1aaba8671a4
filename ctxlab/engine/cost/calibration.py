"""An estimator calibrated per model from the transcript's own reported usage.

Between two consecutive calls of the original agent the request grew by the messages in
between, and the provider reported both prompt sizes. Fitting those deltas as

    Δreported ≈ a × Δcl100k + b × Δblocks

(least squares through the origin, pure Python: ``statistics.linear_regression`` fits one
regressor, not two, and numpy, which would, is not an engine dependency for a 2×2 solve)
gives the model's tokens per reference token
(``a``, tokenizer differences) and its per-block framing overhead (``b``); a constant ``c``
(system prompt parts and tool definitions the transcript does not show) is the median of
what remains. Pairs where the request shrank (the original compacted) are skipped, and
one pass drops pairs whose residual is far outside the rest (median absolute deviation).

The error band is the spread of residuals: ``stddev`` and the 5th/50th/95th percentiles,
for the delta fit and for absolute predictions. ``flag_overflows`` uses it to mark the steps
where a strategy's own estimate said "fits" but the real request would not have.
``percentile`` is the linear rule ``statistics.quantiles(method="inclusive")`` uses (checked
equal), kept because that returns all 99 cut points and, on Python 3.11, refuses one value.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..core.model import Conversation, Message, Role
from ..core.records import StepRecord
from ..tokens.cl100k import TokenCounter, message_reference_tokens, reference_counter
from ..tokens.reference import reference_tokens

OUTLIER_MADS = (
    5.0  # pairs further than this many MADs from the median residual are refitted without
)


class CalibrationError(ValueError):
    """Not enough usable data to fit."""


@dataclass(frozen=True, slots=True)
class CalibrationPoint:
    """One original call: the request's reference (cl100k) tokens and content blocks, and the
    provider-reported prompt size (all buckets: ``Usage.prompt_tokens``)."""

    step: int
    reference_tokens: int
    blocks: int
    reported: int
    model: str = ""


@dataclass(frozen=True, slots=True)
class ErrorBand:
    """Residuals (reported − predicted), in tokens."""

    n: int
    stddev: float
    p05: float
    p50: float
    p95: float


@dataclass(frozen=True, slots=True)
class Calibration:
    model: str
    a: float  # reported tokens per cl100k token
    b: float  # tokens per content block
    c: float  # constant per request (unseen system/tool parts)
    pairs_used: int
    pairs_dropped: int
    delta_band: ErrorBand
    band: ErrorBand

    def estimate(self, reference_tokens: int, blocks: int) -> float:
        return self.a * reference_tokens + self.b * blocks + self.c

    def interval(self, reference_tokens: int, blocks: int) -> tuple[float, float]:
        """The 5–95 % band around ``estimate`` from the absolute residuals."""
        est = self.estimate(reference_tokens, blocks)
        return est + self.band.p05, est + self.band.p95

    def as_counter(self) -> CalibratedCounter:
        return CalibratedCounter(self)


class CalibratedCounter:
    """``TokenCounter`` view of a calibration: one text = one block (no constant)."""

    def __init__(self, calibration: Calibration, base: TokenCounter | None = None) -> None:
        self.calibration = calibration
        self.base = base or reference_counter()
        self.name = f"calibrated:{calibration.model or 'model'}"

    def count(self, text: str) -> int:
        if not text:
            return 0
        cal = self.calibration
        return max(0, round(cal.a * self.base.count(text) + cal.b))


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of a non-empty sequence."""
    data = sorted(values)
    if not data:
        raise ValueError("percentile of no values")
    pos = (len(data) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def error_band(residuals: Sequence[float]) -> ErrorBand:
    if not residuals:
        return ErrorBand(0, 0.0, 0.0, 0.0, 0.0)
    sd = statistics.pstdev(residuals) if len(residuals) > 1 else 0.0
    return ErrorBand(
        n=len(residuals),
        stddev=sd,
        p05=percentile(residuals, 5),
        p50=percentile(residuals, 50),
        p95=percentile(residuals, 95),
    )


def _solve(pairs: Sequence[tuple[float, float, float]]) -> tuple[float, float]:
    """Least squares y ≈ a·x + b·n through the origin; b = 0 when x and n are collinear."""
    sxx = sum(x * x for x, _, _ in pairs)
    snn = sum(n * n for _, n, _ in pairs)
    sxn = sum(x * n for x, n, _ in pairs)
    sxy = sum(x * y for x, _, y in pairs)
    sny = sum(n * y for _, n, y in pairs)
    det = sxx * snn - sxn * sxn
    if sxx > 0 and snn > 0 and det > 1e-9 * sxx * snn:
        return (sxy * snn - sny * sxn) / det, (sny * sxx - sxy * sxn) / det
    if sxx > 0:
        return sxy / sxx, 0.0
    raise CalibrationError("reference token deltas are all zero")


def fit_calibration(points: Iterable[CalibrationPoint], *, model: str = "") -> Calibration:
    """Fit ``a``, ``b``, ``c`` and the bands from calls in order (usually of one model)."""
    pts = sorted(points, key=lambda p: p.step)
    pairs: list[tuple[float, float, float]] = []
    for prev, cur in zip(pts, pts[1:], strict=False):
        dx = cur.reference_tokens - prev.reference_tokens
        dn = cur.blocks - prev.blocks
        dy = cur.reported - prev.reported
        if dx > 0 and dy > 0 and dn >= 0:  # shrinking requests: the original compacted
            pairs.append((float(dx), float(dn), float(dy)))
    if len(pairs) < 2:
        raise CalibrationError(
            f"need at least 2 growing pairs of consecutive calls with usage, found {len(pairs)}"
        )
    a, b = _solve(pairs)
    residuals = [y - a * x - b * n for x, n, y in pairs]
    med = statistics.median(residuals)
    mad = statistics.median(abs(r - med) for r in residuals)
    dropped = 0
    if mad > 0:
        kept = [
            p for p, r in zip(pairs, residuals, strict=True) if abs(r - med) <= OUTLIER_MADS * mad
        ]
        if 2 <= len(kept) < len(pairs):
            dropped = len(pairs) - len(kept)
            pairs = kept
            a, b = _solve(pairs)
            residuals = [y - a * x - b * n for x, n, y in pairs]
    if a <= 0:  # blocks soaked up everything (few, noisy pairs): fit tokens alone
        a, b = _solve([(x, 0.0, y) for x, _, y in pairs])
        residuals = [y - a * x for x, _, y in pairs]
        if a <= 0:
            raise CalibrationError("reported sizes do not grow with the reference count")
    c = statistics.median(p.reported - a * p.reference_tokens - b * p.blocks for p in pts)
    absolute = [p.reported - (a * p.reference_tokens + b * p.blocks + c) for p in pts]
    return Calibration(
        model=model or (pts[0].model if pts else ""),
        a=a,
        b=b,
        c=c,
        pairs_used=len(pairs),
        pairs_dropped=dropped,
        delta_band=error_band(residuals),
        band=error_band(absolute),
    )


def _same_call(prev: Message | None, msg: Message) -> bool:
    """Claude Code writes one API response as several assistant records (one per content
    block) sharing the message id and usage: they are one call."""
    return prev is not None and bool(msg.id) and msg.id == prev.id


def points_from_conversation(
    conversation: Conversation, counter: TokenCounter | None = None
) -> list[CalibrationPoint]:
    """One point per original call that reported usage: the request is every message
    before the assistant reply since the last original compaction (sidechain messages are
    other threads and are skipped). Without a ``counter``, the per-message reference counts
    come from ``reference.reference_tokens`` (the replay of this conversation has just
    computed them: same numbers, no second tiktoken pass)."""
    messages = conversation.messages
    if not any(m.usage is not None and m.usage.prompt_tokens > 0 for m in messages):
        return []  # nothing reported: no point to place
    per_message = None if counter else reference_tokens(conversation).per_message
    boundaries = {c.before_index for c in conversation.compactions}
    points: list[CalibrationPoint] = []
    ref = blocks = 0
    last_call: Message | None = None
    for index, msg in enumerate(messages):
        if index in boundaries:
            ref = blocks = 0
        if "sidechain" in msg.flags:
            continue
        if msg.role is Role.ASSISTANT and msg.usage is not None and msg.usage.prompt_tokens > 0:
            if not _same_call(last_call, msg):
                points.append(
                    CalibrationPoint(
                        step=index,
                        reference_tokens=ref,
                        blocks=blocks,
                        reported=msg.usage.prompt_tokens,
                        model=msg.model or conversation.model,
                    )
                )
            last_call = msg
        ref += per_message[index] if per_message else message_reference_tokens(msg, counter)
        blocks += len(msg.blocks)
    return points


def calibrate_conversation(
    conversation: Conversation, counter: TokenCounter | None = None
) -> dict[str, Calibration]:
    """A calibration per model that answered in the conversation (models with too little
    data are left out)."""
    by_model: dict[str, list[CalibrationPoint]] = {}
    for p in points_from_conversation(conversation, counter):
        by_model.setdefault(p.model, []).append(p)
    out: dict[str, Calibration] = {}
    for model, pts in by_model.items():
        try:
            out[model] = fit_calibration(pts, model=model)
        except CalibrationError:
            continue
    return out


@dataclass(frozen=True, slots=True)
class RequestSize:
    """A replayed step's request as the strategy saw it and as the reference counts it.
    ``limit``: what the request must fit in (window − output reserve), when known per step."""

    step: int
    strategy_tokens: int
    reference_tokens: int
    blocks: int
    reported: int | None = None  # only when the replayed request equals the original's
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class OverflowFlag:
    step: int
    strategy_tokens: int
    estimate: float  # calibrated (or reported) real request size
    low: float
    high: float
    limit: int
    certainty: str  # "certain" (reported, or even the low band overflows) / "likely" / "possible"


def flag_overflows(
    steps: Iterable[RequestSize],
    calibration: Calibration,
    *,
    window: int | None = None,
    output_reserve: int = 0,
) -> list[OverflowFlag]:
    """Steps where the strategy believed its request fit (``strategy_tokens ≤ limit``) but the
    real request would not. ``limit`` is the row's own, else ``window − output_reserve``."""
    flags: list[OverflowFlag] = []
    for s in steps:
        if s.limit is not None:
            limit = s.limit
        elif window is not None:
            limit = window - output_reserve
        else:
            raise ValueError(f"step {s.step}: no limit and no window given")
        if s.strategy_tokens > limit:
            continue  # the strategy itself saw the overflow
        if s.reported is not None:
            est = low = high = float(s.reported)
        else:
            est = calibration.estimate(s.reference_tokens, s.blocks)
            low, high = calibration.interval(s.reference_tokens, s.blocks)
        if high <= limit:
            continue
        certainty = "certain" if low > limit else "likely" if est > limit else "possible"
        flags.append(OverflowFlag(s.step, s.strategy_tokens, est, low, high, limit, certainty))
    return flags


def request_sizes(records: Iterable[StepRecord], conversation: Conversation) -> list[RequestSize]:
    """``RequestSize`` rows for a replay, O(ranges) per step: blocks come from prefix sums
    over the source messages (a summary counts as one block; truncation keeps blocks).
    The original's reported size is used only while neither the replay nor the original
    has changed the context, i.e. while the replayed request is the original request."""
    prefix = [0]
    for msg in conversation.messages:
        prefix.append(prefix[-1] + len(msg.blocks))
    first_original = min((c.before_index for c in conversation.compactions), default=None)
    touched = False
    rows: list[RequestSize] = []
    for rec in records:
        touched = touched or rec.summary_id is not None or any(e.changes for e in rec.events)
        if first_original is not None and rec.source_index >= first_original:
            touched = True
        blocks = sum(prefix[end] - prefix[start] for start, end in rec.context)
        blocks += 1 if rec.summary_id is not None else 0
        rows.append(
            RequestSize(
                step=rec.index,
                strategy_tokens=rec.tokens.strategy,
                reference_tokens=rec.tokens.reference,
                blocks=blocks,
                reported=None if touched else rec.tokens.reported,
                limit=rec.zones.window - rec.zones.output_reserve,
            )
        )
    return rows
