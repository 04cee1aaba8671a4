"""A run's token curve and its event markers, read from the stored steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ctxlab.engine.core.records import event_brief
from replay_app.display.charts import EventPoint, Series
from replay_app.memo import cached
from replay_app.models import Run, RunEvent, RunStep
from replay_app.runs.ordinals import compaction_ordinals

# --- the curve ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Curve:
    series: Series
    events: tuple[EventPoint, ...]
    window: int | None
    threshold: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": list(self.series.steps),
            "source": list(self.series.source),
            "strategy": list(self.series.strategy),
            "reference": list(self.series.reference),
            "reported": list(self.series.reported),
            "window": self.window,
            "threshold": self.threshold,
            "events": [
                event_brief(e.seq, e.step, e.kind, e.tokens_before, e.tokens_after, e.messages)
                for e in self.events
            ],
        }


def curve(run: Run) -> Curve:
    return cached(run, "curve", lambda: _curve(run))


def _curve(run: Run) -> Curve:
    rows = list(
        RunStep.objects.filter(run=run)
        .order_by("index")
        .values_list(
            "index", "source_index", "tokens_strategy", "tokens_reference", "tokens_reported"
        )
    )
    series = Series(
        steps=[r[0] for r in rows],
        source=[r[1] for r in rows],
        strategy=[r[2] for r in rows],
        reference=[r[3] for r in rows],
        reported=[r[4] for r in rows],
    )
    ordinals = compaction_ordinals(run)
    events = tuple(
        EventPoint(step, kind, before, after, len(messages), seq=seq, compaction=ordinals.get(seq))
        for seq, step, kind, before, after, messages in RunEvent.objects.filter(run=run)
        .order_by("seq")
        .values_list("seq", "step", "kind", "tokens_before", "tokens_after", "messages")
    )
    zones: dict[str, Any] = {}
    if rows:
        zones = (
            RunStep.objects.filter(run=run, index=rows[-1][0]).values_list("zones", flat=True)[0]
            or {}
        )
    threshold = run.metrics.get("threshold") if run.metrics else None
    return Curve(
        series=series,
        events=events,
        window=zones.get("window") or None,
        threshold=threshold if threshold is not None else zones.get("threshold"),
    )
