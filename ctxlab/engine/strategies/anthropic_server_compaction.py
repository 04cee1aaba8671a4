"""Anthropic server-side compaction: ``compact_20260112`` in the Messages API
``context_management``.

Sources (the API is closed; what is read is its published SDK and a recorded exchange):

- ``anthropic`` 2.12.0 (the version pinned in pyproject.toml), ``anthropic/types/beta/``:
  ``beta_compact_20260112_edit_param.py`` (``type``, ``trigger`` "Defaults to 150000 input
  tokens", ``instructions`` "Additional instructions for summarization",
  ``pause_after_compaction`` "pause after compaction and return the compaction block",
  the edit "compact[s] older context when *reaching* the configured trigger threshold"),
  ``beta_input_tokens_trigger_param.py`` (``{"type": "input_tokens", "value"}``),
  ``beta_compaction_block.py`` (``content`` the summary, null when compaction failed: a
  no-op), ``beta_compaction_iteration_usage.py`` (the compaction pass billed in
  ``usage.iterations``), ``resources/beta/messages/messages.py`` (a compaction block is
  sent back "first in ``messages``, in place of the messages it summarizes").
- Anthropic's compaction docs (platform.claude.com build-with-claude/compaction): minimum
  trigger 50,000 tokens; ``instructions`` replace the default summarization prompt; with
  ``pause_after_compaction`` the response stops with ``stop_reason: "compaction"``; on later
  requests the API drops every block before the compaction block.
- The recorded exchange tests/data/corpus/api-cassettes/
  pydanticai-test_anthropic_compaction_end_to_end.yaml (pydantic/pydantic-ai): trigger
  50,000; a 55,196-token request answered by a compaction pass (55,196 in, 125 out) and a
  message pass that read 220 tokens: system prompt + summary, the last user turn included
  in what was summarised.

Readings (the server's internals are not published; see
docs/strategies/anthropic_server_compaction.md): the whole request is summarised (every
message, the previous compaction block included) and the request becomes system + tools +
the compaction block; "reaching" is ``>=``; the server's own summarization prompt is not
published, so without ``instructions`` the summariser gets a stand-in; the input tokens
are the lab's cl100k reference counts of the whole request (the server counts with Claude's
tokenizer, which the transcript does not carry).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace as with_fields
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import BlockKind, Message
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import ReferenceEstimator, Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest

if TYPE_CHECKING:
    from ..core.context_view import ContextView

_EDIT = "context_management.edits[type=compact_20260112]"
# A stand-in for the server's unpublished default prompt (used only without instructions).
STAND_IN_PROMPT = (
    "Summarize the conversation so far so that it can be continued from the summary alone: "
    "the task, what was done, the current state and the next step."
)
SECTIONS = (
    Section("Task", "goal"),
    Section("Done", "done"),
    Section("Current state", "in_progress"),
    Section("Next step", "next"),
)


def compaction_text(message: Message) -> str | None:
    """The summary in ``message``'s compaction block (None: it has none, or a null one)."""
    for block in message.blocks:
        if block.kind is BlockKind.OPAQUE and block.raw_type == "compaction":
            return block.text or None
    return None


def without_compaction(message: Message) -> Message:
    blocks = tuple(
        b for b in message.blocks if not (b.kind is BlockKind.OPAQUE and b.raw_type == "compaction")
    )
    return with_fields(message, blocks=blocks)


@dataclass(slots=True)
class _State:
    compactions: int = 0


class AnthropicServerCompactionStrategy(ReferenceEstimator, Strategy):
    name: ClassVar[str] = "anthropic_server_compaction"
    label: ClassVar[str] = "Anthropic server-side compaction (compact_20260112)"
    description: ClassVar[str] = (
        "The Messages API's compact_20260112 context-management edit: when a request's input "
        "reaches the trigger (150,000 tokens by default, at least 50,000), the server "
        "summarises the whole conversation into a compaction block, and from then on every "
        "request is the system prompt, the tools, that block and what followed it. The "
        "summary is the transcript's own compaction block when the response to that request "
        "carries one, else the chosen summariser's."
    )
    estimator: ClassVar[str] = (
        "reference cl100k counts of the whole request (system + tools + messages + block)"
    )
    WINDOW = "context_window"
    WINDOW_FOLLOWS = {"trigger": 0.75}  # 150,000 of Claude's 200,000
    State: ClassVar[type[Any]] = _State
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "trigger",
            150_000,
            "Input tokens of a request at which the server compacts it (the API's minimum "
            "is 50,000).",
            min=50_000,
            origin=f"{_EDIT}.trigger.value (type input_tokens)",
        ),
        Param(
            "instructions",
            "",
            "Summarization prompt replacing the server's default (empty: the default, "
            "which is not published; the replay's summariser gets a stand-in).",
            "str",
            origin=f"{_EDIT}.instructions",
        ),
        Param(
            "pause_after_compaction",
            False,
            "Stop the response after the compaction block (stop_reason compaction); the "
            "client sends the next request itself. The replay's requests are the "
            "transcript's: the flag is recorded on each compaction.",
            "bool",
            origin=f"{_EDIT}.pause_after_compaction",
        ),
        Param(
            "summary_source",
            "recorded",
            "recorded: when the response to the compacted request carries a compaction block "
            "(the original compacted there), its summary; otherwise, and with summariser, "
            "the run's summariser.",
            "str",
            choices=("recorded", "summariser"),
            origin="replay choice (the block's content is the server's summary)",
        ),
        Param(
            "context_window",
            200_000,
            "Model context window (Claude Opus/Sonnet 4.6: 200,000; overflow is judged "
            "against it). Under about 67,000 the trigger stays at the API's 50,000 minimum.",
            min=1_000,
            origin="model context window",
        ),
    )

    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_window"])

    def threshold(self, ctx: ContextView) -> int | None:
        return int(self.params["trigger"])

    def reserved_recent(self, ctx: ContextView) -> int:
        return 0  # the server summarises the whole request, the last user turn included

    # --- hooks ----------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        msg = ctx.original(index)
        if not any(b.kind is BlockKind.OPAQUE and b.raw_type == "compaction" for b in msg.blocks):
            return
        st: _State = ctx.state
        # The original's compaction block: this replay's summary when it compacted at this
        # request, else a compaction this replay did not make. Either way not a second copy.
        with ctx.action(
            "sanitize",
            reason="the original's compaction block leaves the message: the replay's own "
            "compaction state stands for it",
            replay_compactions=st.compactions,
        ) as act:
            act.replace(index, without_compaction(msg), Fate.TRUNCATED)

    def before_call(self, ctx: ContextView) -> None:
        tokens = ctx.request_tokens()
        trigger = int(self.params["trigger"])
        if tokens < trigger or not ctx.live:
            return
        st: _State = ctx.state
        gone = list(ctx.live)
        recorded = None
        if self.params["summary_source"] == "recorded" and ctx.source_index < len(ctx.originals):
            recorded = compaction_text(ctx.original(ctx.source_index))
        summary_id: int | None = None
        if recorded is not None:
            summary = recorded
        else:
            record = ctx.summarize(self.summary_request(ctx, gone), messages=gone)
            if record.error or not record.output.strip():
                # A null compaction block: the server treats it as a no-op.
                ctx.emit(
                    "summary_failed",
                    summary_id=record.id,
                    error=record.error or "empty summary",
                    outcome="the compaction block's content is null: a no-op, the request "
                    "goes on uncompacted",
                )
                return
            summary, summary_id = record.output, record.id
        previous_ref = ctx.summary_ref
        st.compactions += 1
        with ctx.action(
            "compact",
            reason=f"request of {tokens:,} input tokens reached the trigger {trigger:,}: "
            "the whole conversation summarised into a compaction block",
            trigger=trigger,
            estimate=tokens,
            summary_source="recorded compaction block" if recorded is not None else "summariser",
            pause_after_compaction=bool(self.params["pause_after_compaction"]),
        ) as act:
            act.remove(gone, Fate.SUMMARISED)
            ctx.set_summary(
                summary, tokens=self.count_text(summary), rendered=summary, summary_id=summary_id
            )
            act.summary_id = summary_id
        check_summary_size(
            ctx,
            summary_rendered=summary,
            replaced=gone,
            summary_id=summary_id,
            previous_ref=previous_ref,
        )

    def summary_request(self, ctx: ContextView, messages: list[int]) -> SummaryRequest:
        """The compaction pass: the request's conversation (the previous block first) and
        the instructions, or the stand-in for the server's prompt."""
        prompt = str(self.params["instructions"]).strip() or STAND_IN_PROMPT
        turns: list[PromptMessage] = []
        if ctx.summary:
            turns.append(PromptMessage("assistant", ctx.summary))
        material = []
        for i in messages:
            msg = ctx.message(i)
            role = "assistant" if msg.role.value == "assistant" else "user"
            turns.append(PromptMessage(role, msg.text))
            material.append(MaterialItem(msg.role.value, msg.text, i))
        return SummaryRequest(
            strategy=self.name,
            system=ctx.system_text,
            messages=(*turns, PromptMessage("user", prompt)),
            style="sections",
            sections=SECTIONS,
            material=tuple(material),
            previous_summary=ctx.summary,
        )


STRATEGY = AnthropicServerCompactionStrategy
