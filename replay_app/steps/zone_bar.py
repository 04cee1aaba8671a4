"""The zone bar: a request's parts as proportional segments of the window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay_app.memo import cached
from replay_app.models import Run
from sessions_app.models import Message

ZONE_ORDER = (
    ("system", "System prompt"),
    ("tools", "Tool definitions"),
    ("unseen", "Strategy overhead"),
    ("instruction_files", "Instruction files"),
    ("not_in_file", "Not in this file"),
    ("summary", "Summary"),
    ("compactable", "Compactable history"),
    ("reserved_recent", "Reserved recent"),
    ("output_reserve", "Output reserve"),
    ("free", "Free"),
)

# The zones that make up the request itself (the rest of the window is reserve and free).
REQUEST_ZONES = (
    "system",
    "tools",
    "unseen",
    "instruction_files",
    "not_in_file",
    "summary",
    "compactable",
    "reserved_recent",
)


def request_total(zones: dict[str, Any]) -> int:
    """What the bar's request zones add up to (the strategy's estimator, per message)."""
    return sum(max(int(zones.get(key) or 0), 0) for key in REQUEST_ZONES)


# --- the context at a step --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ZoneSegment:
    key: str
    label: str
    tokens: int
    percent: float
    note: str = ""  # shown instead of the number: why a part has no tokens
    about: str = ""  # what the part is, where the page names it its own way

    @property
    def hint(self) -> str:
        return self.about or ZONE_HINTS.get(self.key, "")


ZONE_HINTS = {
    "unseen": (
        "what the strategy counts beyond the transcript's messages: the provider's reported "
        "usage includes the system prompt, tool definitions and attachments the log omits"
    ),
    "not_in_file": (
        "context the agent sent that this file does not hold: the file starts after a "
        "compaction (its summary and what came before) or is cut from a longer session"
    ),
}
NOT_IN_TRANSCRIPT = "not in transcript"
NOT_COUNTED = "not counted by this strategy"


@dataclass(frozen=True, slots=True)
class TranscriptParts:
    """Which fixed parts of a request the transcript itself carries (Claude Code and Codex
    logs usually have neither a system prompt nor tool definitions)."""

    system: bool
    tools: bool


def transcript_parts(run: Run) -> TranscriptParts:
    def build() -> TranscriptParts:
        system = Message.objects.filter(
            transcript_id=run.transcript_id, index=0, role="system"
        ).exists()
        tools = bool(run.transcript.tools)
        return TranscriptParts(system, tools)

    return cached(run, "parts", build)


# Zones listed only where a step has some (a replay's steps never hold instruction files:
# only the original's view, ctxlab.engine.evaluate.session_now, carves them out).
OPTIONAL_ZONES = ("unseen", "not_in_file", "instruction_files")


def zone_segments(
    zones: dict[str, Any],
    parts: TranscriptParts | None = None,
    labels: dict[str, str] | None = None,
    hints: dict[str, str] | None = None,
    omit: frozenset[str] = frozenset(),
) -> list[ZoneSegment]:
    """Every zone with its share of the window (``percent``: % of the window, over 100 when a
    request overflows it; see ``zone_model`` for what the bar draws). A system prompt or tool
    zone of 0 says why instead of showing 0 (``parts``: what the transcript carries; None:
    unknown, the number shows); the strategy overhead is listed only when there is one.
    ``labels``: other names for some zones (the original session's view names them in the
    agent's terms); the keys and the rule stay the same."""
    window = max(int(zones.get("window") or 0), 0)
    names = {**dict(ZONE_ORDER), **(labels or {})}
    values = [(key, names[key], max(int(zones.get(key) or 0), 0)) for key, _ in ZONE_ORDER]
    scale = window or max(sum(v for _, _, v in values), 1)
    out = []
    for key, label, tokens in values:
        note = ""
        if (key in OPTIONAL_ZONES or key in omit) and not tokens:
            continue
        if key in ("system", "tools") and not tokens and parts is not None:
            note = NOT_COUNTED if getattr(parts, key) else NOT_IN_TRANSCRIPT
        about = (hints or {}).get(key, "")
        out.append(ZoneSegment(key, label, tokens, round(100 * tokens / scale, 3), note, about))
    return out


# --- the one zone model of a step (run page, compare step view, their JSON twins) ----------

OVER_KEY = "over_window"
OVER_LABEL = "Over the window"
OVER_HINT = (
    "the request (and the output reserve) beyond the window: a provider would refuse it; "
    "drawn past the window's edge"
)
SCALE = "percent of the window"


@dataclass(frozen=True, slots=True)
class DrawnSegment:
    """One piece of the bar: a zone's tokens inside the window (``tokens``), or what lies
    past the window's edge (``key == OVER_KEY``). ``width``: % of the bar's length (the
    window plus what is over it)."""

    key: str
    label: str
    tokens: int
    width: float


@dataclass(frozen=True, slots=True)
class ZoneModel:
    """How one step's request fills its window, read by every page that draws it (the run
    page's step context, the compare step view, their JSON twins) and built only by
    ``zone_model`` from the stored engine ``Zones``. Every figure is in the strategy's own
    count (its estimator); percentages are of the window, always; what does not fit is an
    explicit over-the-window part, so ``request + output_reserve + free == window + over``.
    A pure value: a function of the zones, the step's counts and what the transcript holds."""

    window: int
    threshold: int | None
    legend: tuple[ZoneSegment, ...]  # every zone, full tokens, % of the window
    drawn: tuple[DrawnSegment, ...]  # the bar: zones clipped at the window's edge, then over
    request: int  # the request's zones added up (the bar's request)
    output_reserve: int
    free: int
    over: int
    counted: int | None  # the count the strategy compares (tokens_strategy)
    reference: int | None  # cl100k
    reported: int | None
    # "replay": a strategy's own count of a replayed request; "original": the agent's own
    # request as its reported usage shows it (ctxlab.engine.evaluate.session_now)
    origin: str = "replay"

    @property
    def scale(self) -> str:
        return SCALE

    @property
    def gap(self) -> int:
        """How far the strategy's compared count is from the bar's request (0: they agree)."""
        return 0 if self.counted is None else self.request - self.counted

    @property
    def over_percent(self) -> float:
        return round(100 * self.over / self.window, 3) if self.window else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "scale": SCALE,
            "window": self.window,
            "threshold": self.threshold,
            "request": self.request,
            "output_reserve": self.output_reserve,
            "free": self.free,
            "over_window": self.over,
            "counted": self.counted,
            "reference": self.reference,
            "reported": self.reported,
            **({"origin": self.origin} if self.origin != "replay" else {}),
            "zones": [
                {"key": s.key, "label": s.label, "tokens": s.tokens,
                 "percent_of_window": s.percent, "note": s.note}
                for s in self.legend
            ],
            "bar": [
                {"key": d.key, "label": d.label, "tokens": d.tokens, "width": d.width}
                for d in self.drawn
            ],
        }  # fmt: skip


def zone_model(
    zones: dict[str, Any],
    tokens: dict[str, int | None] | None = None,
    parts: TranscriptParts | None = None,
    labels: dict[str, str] | None = None,
    hints: dict[str, str] | None = None,
    origin: str = "replay",
    omit: frozenset[str] = frozenset(),
) -> ZoneModel:
    """The one zone model of a step: ``zones`` as stored (``Zones.as_dict``), ``tokens`` the
    step's counts (``strategy``, ``reference``, ``reported``), ``parts`` what the transcript
    carries (for "not in transcript" / "not counted by this strategy"), ``labels`` other
    names for some zones and ``hints`` what they are (``zone_segments``); ``origin`` whose
    count it is (``ZoneModel.origin``); ``omit`` zones not listed when they hold nothing
    (the original has no "reserved recent")."""
    tokens = tokens or {}
    legend = tuple(zone_segments(zones, parts, labels, hints, omit))
    window = max(int(zones.get("window") or 0), 0)
    request = request_total(zones)
    reserve = max(int(zones.get("output_reserve") or 0), 0)
    used = request + reserve
    if window:
        over = max(used - window, 0)
        free = window - used + over  # what is left of the window (0 when over)
    else:  # no window known: the request is the whole bar, nothing is over
        over, free = 0, 0
    length = max(window, used, 1)
    # The free zone is what the window has left after this request and its reserve.
    legend = tuple(
        ZoneSegment(
            s.key, s.label, free, round(100 * free / window, 3) if window else 0.0, "", s.about
        )
        if s.key == "free"
        else s
        for s in legend
    )
    drawn: list[DrawnSegment] = []
    edge = window if window else length
    position = 0
    for s in legend:
        if s.key == "free" or not s.tokens:
            continue
        inside = max(min(s.tokens, edge - position), 0)
        position += s.tokens
        if inside:
            drawn.append(DrawnSegment(s.key, s.label, inside, round(100 * inside / length, 3)))
    if free:
        drawn.append(DrawnSegment("free", "Free", free, round(100 * free / length, 3)))
    if over:
        drawn.append(DrawnSegment(OVER_KEY, OVER_LABEL, over, round(100 * over / length, 3)))
    threshold = zones.get("threshold")
    return ZoneModel(
        window=window,
        threshold=int(threshold) if threshold else None,
        legend=legend,
        drawn=tuple(drawn),
        request=request,
        output_reserve=reserve,
        free=free,
        over=over,
        counted=tokens.get("strategy"),
        reference=tokens.get("reference"),
        reported=tokens.get("reported"),
        origin=origin,
    )
