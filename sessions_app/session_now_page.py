"""The original session, now: one page-data object for the page, its JSON twin
and the live consumer's fragment.

Everything is computed by the engine (``ctxlab.engine.evaluate.session_now``: the steps,
their zones, the forecast) and drawn by the replay pages' one zone model
(``replay_app.steps.zone_bar.zone_model``, with the original's labels). Message text shown
here comes from the stored rows (masked on import) and is masked again before it is shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse

from ctxlab.engine.core.model import BlockKind, Message, Role
from ctxlab.engine.evaluate import session_now as engine
from ctxlab.engine.privacy.secrets import mask
from replay_app.steps.zone_bar import TranscriptParts, ZoneModel, zone_model
from sessions_app.models import Transcript

RECENT_MESSAGES = 12  # the newest messages listed under the bar (the turns that came last)
EXCERPT = 160  # characters of a message shown in that list
STEP_LIST = 40  # steps listed in the step table, newest first


@dataclass(frozen=True, slots=True)
class RecentMessage:
    index: int
    role: str
    text: str
    tool: str

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "role": self.role, "text": self.text, "tool": self.tool}


@dataclass(frozen=True, slots=True)
class StepRow:
    step: int
    message: int
    reported: int | None
    compaction: str  # the agent's compaction right before this call ("" = none)
    url: str
    turns: int | None  # turns to auto-compact as forecast at this call

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "message": self.message,
            "reported": self.reported,
            "compaction_before": self.compaction or None,
            "turns_to_auto_compact": self.turns,
        }


@dataclass(slots=True)
class SessionNowPage:
    transcript: Transcript
    rules: engine.AgentRules
    steps_total: int
    step: engine.OriginalStep | None
    latest: bool  # the page follows the newest step (live)
    zone: ZoneModel | None
    forecast: engine.Forecast | None
    overhead_note: str
    compactions: list[dict[str, Any]] = field(default_factory=list)
    recent: list[RecentMessage] = field(default_factory=list)
    rows: list[StepRow] = field(default_factory=list)
    messages: int = 0

    @property
    def fact_rows(self) -> list[tuple[str, int, list[str]]]:
        """(category, facts at risk, a few of them, masked) for the table."""
        if self.forecast is None:
            return []
        examples = self.forecast.examples
        return [
            (k, n, [mask(e) for e in examples.get(k, [])]) for k, n in self.forecast.facts.items()
        ]

    @property
    def ws_path(self) -> str:
        return f"/ws/transcripts/{self.transcript.pk}/now/"

    def step_url(self, step: int) -> str:
        return reverse("transcript-now", args=[self.transcript.pk]) + f"?step={step}"

    @property
    def previous_url(self) -> str | None:
        return self.step_url(self.step.step - 1) if self.step and self.step.step > 0 else None

    @property
    def next_url(self) -> str | None:
        if self.step is None or self.step.step + 1 >= self.steps_total:
            return None
        return self.step_url(self.step.step + 1)

    def as_json(self) -> dict[str, Any]:
        t = self.transcript
        return {
            "transcript": {"id": t.pk, "title": mask(t.display_title), "format": t.format},
            "messages": self.messages,
            "agent": self.rules.as_dict(),
            "steps": self.steps_total,
            "step": None if self.step is None else self.step.step,
            "following_latest": self.latest,
            "step_message": None if self.step is None else self.step.message,
            "estimated": None if self.step is None else self.step.estimated,
            "fixed_part_note": self.overhead_note,
            "zones": None if self.zone is None else self.zone.as_dict(),
            "forecast": None if self.forecast is None else _masked(self.forecast.as_dict()),
            "agent_compactions": self.compactions,
            "recent_messages": [m.as_dict() for m in self.recent],
            "step_rows": [r.as_dict() for r in self.rows],
        }

    def context(self) -> dict[str, Any]:
        return {"now": self, "transcript": self.transcript}


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, list):
        return [_masked(v) for v in value]
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    return value


def _excerpt(message: Message) -> tuple[str, str]:
    text = " ".join(b.text for b in message.blocks if b.kind is BlockKind.TEXT and b.text)
    tools = [b.tool_name for b in message.blocks if b.kind is BlockKind.TOOL_USE]
    if not text:
        results = [b.text for b in message.blocks if b.kind is BlockKind.TOOL_RESULT]
        text = " ".join(results)
    flat = " ".join(text.split())
    short = flat if len(flat) <= EXCERPT else flat[: EXCERPT - 1] + "…"
    return mask(short), ", ".join(tools)


def session_now_page(transcript: Transcript, step: int | None) -> SessionNowPage:
    """The page for ``step`` (None: the newest, followed live)."""
    conversation = transcript.to_conversation()
    now = engine.session_now(conversation, transcript.format)
    steps = now.steps
    chosen = None
    if steps:
        index = len(steps) - 1 if step is None else min(max(step, 0), len(steps) - 1)
        chosen = steps[index]
    parts = TranscriptParts(system=bool(conversation.messages) and (
        conversation.messages[0].role is Role.SYSTEM), tools=bool(conversation.tools))  # fmt: skip
    page = SessionNowPage(
        transcript=transcript,
        rules=now.rules,
        steps_total=len(steps),
        step=chosen,
        latest=step is None,
        zone=None,
        forecast=None,
        overhead_note=now.overhead_note,
        messages=len(conversation.messages),
    )
    if chosen is not None:
        page.zone = zone_model(
            chosen.zones,
            chosen.tokens(),
            parts,
            *engine.labels_for(now.rules.agent),
            "original",
            frozenset({"reserved_recent"}),
        )
        page.forecast = engine.forecast(now, chosen)
        end = page.forecast.span[1]
        first = max(end - RECENT_MESSAGES, page.forecast.span[0])  # the newest of the span
        for i in range(first, end):
            text, tool = _excerpt(conversation.messages[i])
            page.recent.append(RecentMessage(i, conversation.messages[i].role.value, text, tool))
    after = {b.before_index: b for b in now.boundaries}
    for b in now.boundaries:
        first_step = next((s.step for s in steps if s.message >= b.before_index), None)
        page.compactions.append(
            {
                "before_message": b.before_index,
                "kind": b.kind,
                "trigger": b.trigger or None,
                "pre_tokens": b.pre_tokens,
                "version": b.version or None,
                "first_step_after": first_step,
                "inferred": b.inferred,
            }
        )
    for s in reversed(steps[-STEP_LIST:]):
        mark = s.compacted_before
        kind = "" if mark is None or mark.before_index not in after else mark.kind
        turns = engine.forecast_turns(now, s)
        page.rows.append(StepRow(s.step, s.message, s.reported, kind, page.step_url(s.step), turns))
    return page
