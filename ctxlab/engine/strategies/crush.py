"""Crush (charmbracelet/crush) auto-summarise: the whole session summarised when the last
step left less than a buffer of the window.

Sources, charmbracelet/crush @ 37f36e93824e5c4f892e4a817f7f628e2682fe14 (2026-08-21):

- ``internal/agent/agent.go``: ``largeContextWindowThreshold = 200_000``,
  ``largeContextWindowBuffer = 20_000``, ``smallContextWindowRatio = 0.2``; the ``StopWhen``
  condition checked after every step of a run: ``remaining = contextWindow -
  (CompletionTokens + PromptTokens)`` of the session (the last step's usage: output, and
  input + cache reads); the threshold is the flat 20,000 buffer when the window is **over**
  200,000 (a 200,000 window itself gets 20 %, 40,000), else 20 % of the window; at or below
  it (and ``disable_auto_summarize`` off, and a known window) the run stops after that step
  and ``Summarize`` runs. A window of 0 (unknown) never summarises.
- ``Summarize``: the session's messages since the last summary (``getSessionMessages``: the
  summary message, re-labelled user, then what followed), the model's system prompt
  replaced by ``templates/summary.md`` (byte-exact in
  ``ctxlab/engine/data/prompts/crush-37f36e93-summary.md``, FSL-1.1-MIT, ``LICENSE-crush``),
  the prompt ``buildSummaryPrompt``: "Provide a detailed summary of our conversation
  above." (the session's todo list appended when it has one: not in transcripts). The
  summary message becomes the session's ``SummaryMessageID``: later requests start at it.
  An error leaves the session as it was (the run returns the error).
- After the summary, when the stopped step had tool calls (the agent was not done), the run's
  prompt is queued again as "The previous session was interrupted because it got too long,
  the initial user request was: `<prompt>`" (shown after the summary here).
- ``internal/config/config.go`` ``Options.DisableAutoSummarize``
  (``disable_auto_summarize``); ``docs/config/README.md``: ``crushrc``'s ``option
  auto-summarize`` (the current Bash config; ``crush.json`` is the deprecated format).
- Tests ported: ``agent_test.go`` has none for the threshold; the rule is a table in
  ``tests/engine/strategies/test_crush.py`` (the constants, both sides of 200,000).

Readings:

- The usage of a step: the request's tokens as the lab counts them (cl100k reference;
  Crush reads the provider's usage, ``approxTokenCount`` = (chars + 3) / 4 only when a
  provider reports none) plus the tokens of the assistant messages the step produced. The
  check runs before the next call, after the step's tool results are in (Crush executes
  them inside the step, before ``StopWhen``): they are summarised with the rest.
- The queued prompt and the summary are one block of the request (rendered), so the
  original's message order is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..core.findings import check_summary_size
from ..core.model import BlockKind, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import ReferenceEstimator, Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest

if TYPE_CHECKING:
    from ..core.context_view import ContextView

DATA = Path(__file__).resolve().parents[1] / "data" / "prompts"
SUMMARY_PROMPT = (DATA / "crush-37f36e93-summary.md").read_text(encoding="utf-8")
SUMMARY_USER_PROMPT = "Provide a detailed summary of our conversation above."
INTERRUPTED = (
    "The previous session was interrupted because it got too long, the initial user "
    "request was: `{prompt}`"
)
LARGE_CONTEXT_WINDOW_THRESHOLD = 200_000
LARGE_CONTEXT_WINDOW_BUFFER = 20_000
SMALL_CONTEXT_WINDOW_RATIO = 0.2
SECTIONS = (
    Section("## Current State", "in_progress"),
    Section("## Files & Changes", "done"),
    Section("## Technical Context", "critical"),
    Section("## Strategy & Approach", "decisions"),
    Section("## Exact Next Steps", "next"),
)


def summarize_threshold(context_window: int) -> int:
    """Tokens of room left at which Crush summarises (``StopWhen``)."""
    if context_window > LARGE_CONTEXT_WINDOW_THRESHOLD:
        return LARGE_CONTEXT_WINDOW_BUFFER
    return int(float(context_window) * SMALL_CONTEXT_WINDOW_RATIO)


def should_summarize(context_window: int, tokens: int, disabled: bool = False) -> bool:
    if context_window == 0:
        return False
    return context_window - tokens <= summarize_threshold(context_window) and not disabled


@dataclass(slots=True)
class _State:
    calls: int = 0
    prompt_tokens: int = 0  # the last step's request
    completion_tokens: int = 0  # what the last step produced
    tool_calls: bool = False  # the last step's assistant message called tools
    prompt: str = ""  # the run's prompt: the user's last words
    turn_from: int | None = None  # a user's words since the last step: a new run


class CrushStrategy(ReferenceEstimator, Strategy):
    name: ClassVar[str] = "crush"
    State = _State
    label: ClassVar[str] = "Crush auto-summarize (charmbracelet/crush 37f36e9)"
    description: ClassVar[str] = (
        "Crush's auto-summarise: after a step, when the window minus the step's prompt and "
        "completion tokens is at most 20,000 (windows over 200,000) or 20 % of the window, "
        "the whole session since the last summary is summarised with its summary prompt "
        "and later requests start at the summary; an interrupted run's request is queued "
        "again after it."
    )
    estimator: ClassVar[str] = (
        "the provider's usage (prompt + completion of the last step): the cl100k reference "
        "stands in"
    )
    WINDOW = "context_window"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("context_window", 200_000, "The model's context window (catwalk "
              "ContextWindow; 0 = unknown: never summarise).", min=0,
              origin="catwalk Model.ContextWindow / model add --context-window"),
        Param("disable_auto_summarize", False, "Turn automatic summarisation off.", "bool",
              origin="options.disable_auto_summarize / option auto-summarize"),
    )  # fmt: skip

    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_window"])

    def threshold(self, ctx: ContextView) -> int | None:
        cw = int(self.params["context_window"])
        if cw == 0 or self.params["disable_auto_summarize"]:
            return None
        return cw - summarize_threshold(cw)

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        message = ctx.original(index)
        if message.role is Role.ASSISTANT:
            st.completion_tokens += ctx.tokens(index)
            if any(b.kind is BlockKind.TOOL_USE for b in message.blocks):
                st.tool_calls = True
        elif message.role is Role.USER and any(
            b.kind is BlockKind.TEXT and b.text for b in message.blocks
        ):
            if st.calls and st.turn_from is None:
                st.turn_from = index  # arrived after the step: not in its summary
            st.prompt = "".join(b.text for b in message.blocks if b.kind is BlockKind.TEXT)

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        if st.calls:
            tokens = st.prompt_tokens + st.completion_tokens
            cw = int(self.params["context_window"])
            if should_summarize(cw, tokens, bool(self.params["disable_auto_summarize"])):
                self._summarize(ctx, tokens)
        st.calls += 1
        st.turn_from = None
        st.prompt_tokens = ctx.request_tokens()
        st.completion_tokens = 0
        st.tool_calls = False

    def _summarize(self, ctx: ContextView, tokens: int) -> None:
        st: _State = ctx.state
        after = st.turn_from
        live = [i for i in ctx.live if after is None or i < after]
        if not live and not ctx.summary:
            return
        cw = int(self.params["context_window"])
        buffer = summarize_threshold(cw)
        detail = {"estimate": tokens, "threshold": cw - buffer, "context_window": cw,
                  "remaining": cw - tokens, "buffer": buffer}  # fmt: skip
        messages: list[PromptMessage] = []
        material: list[MaterialItem] = []
        if ctx.summary:
            messages.append(PromptMessage("user", ctx.summary))
            material.append(MaterialItem("user", ctx.summary))
        for i in live:
            message = ctx.message(i)
            role = "assistant" if message.role is Role.ASSISTANT else "user"
            text = message.text
            messages.append(PromptMessage(role, text))
            material.append(MaterialItem(role, text, i))
        messages.append(PromptMessage("user", SUMMARY_USER_PROMPT))
        request = SummaryRequest(
            strategy=self.name, system=SUMMARY_PROMPT, messages=tuple(messages),
            style="sections", sections=SECTIONS, material=tuple(material),
            previous_summary=ctx.summary,
        )  # fmt: skip
        record = ctx.summarize(request, messages=live)
        if record.error:
            ctx.emit("summary_failed", summary_id=record.id, error=record.error,
                     outcome="Summarize returned the error: the run fails, the session is "
                     "unchanged", **detail)  # fmt: skip
            return
        summary = record.output
        rendered = summary
        interrupted = st.tool_calls and after is None and bool(st.prompt)
        if interrupted:
            rendered = summary + "\n\n" + INTERRUPTED.format(prompt=st.prompt)
        previous_ref = ctx.summary_ref
        with ctx.action(
            "compact",
            reason="the last step left at most the buffer of the window: the session "
            "summarised, later requests start at the summary",
            queued_prompt=interrupted,
            **detail,
        ) as act:
            act.remove(live, Fate.SUMMARISED)
            ctx.set_summary(summary, tokens=self.count_text(rendered), rendered=rendered,
                            summary_id=record.id)  # fmt: skip
            act.summary_id = record.id
            act.always = True
        check_summary_size(ctx, summary_rendered=rendered, replaced=live, summary_id=record.id,
                           previous_ref=previous_ref)  # fmt: skip


STRATEGY = CrushStrategy
