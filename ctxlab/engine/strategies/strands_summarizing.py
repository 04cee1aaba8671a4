"""Strands Agents' ``SummarizingConversationManager``.

Pinned: strands-agents/sdk-python @ 1232230daa4385fd6470be29013eb2375d7a307c (``v1.40.0`` + 2
commits; ``strands-agents==1.40.0``), file
``src/strands/agent/conversation_manager/summarizing_conversation_manager.py`` (the prompt
``DEFAULT_SUMMARIZATION_PROMPT`` byte for byte, ``summary_ratio`` 0.3 clamped to 0.1..0.8,
``preserve_recent_messages`` 10, ``_summarize_oldest``, ``_adjust_split_point_for_tool_pairs``,
``_generate_summary_with_model``), with ``conversation_manager.py`` (proactive compression:
``DEFAULT_COMPRESSION_THRESHOLD = 0.7``, off unless configured) and the estimator and agent
loop as in ``strands_sliding_window``.

What it does, mapped onto replay steps: ``apply_management`` does nothing; only when a
request overflows (by Strands' own estimate, over ``context_window_limit``; the provider's
``ContextWindowOverflowException`` in Strands) or, when configured, reaches the proactive
share, ``reduce_context`` summarises the oldest ``max(1, int(len * summary_ratio))``
messages (never the last ``preserve_recent_messages``; the split moved forward past tool
results and unanswered tool uses). The model is called with ``DEFAULT_SUMMARIZATION_PROMPT``
(or ``summarization_system_prompt``) as system prompt, the messages to summarise, and a user
message "Please summarize this conversation."; its reply, as a user message, replaces them
and is itself summarised with the oldest next time. A failure on overflow re-raises (the
agent's call fails: ``compact_failed``); a proactive one is swallowed. The call is retried
after each reduction until the request fits.

Ported tests (``tests/strands/agent/test_summarizing_conversation_manager.py``): the ratio
clamp, the insufficient-messages and tool-pair split cases, the summary replacing the oldest
and the previous summary being summarised again, as tables in
``tests/engine/strategies/test_strands_summarizing.py``.

Differences (docs/strategies/strands_summarizing.md): the messages go to the summariser as
text (``PromptMessage``); a ``summarization_agent`` (an agent with tools) is not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import BlockKind, Message
from ..core.params import Param
from ..core.records import Fate
from ..core.summary_request import MaterialItem, PromptMessage, SummaryRequest
from . import _agent_units as au
from . import _strands_rules as sr

if TYPE_CHECKING:
    from ..core.context_view import ContextView

# Strands retries the call after every reduction, without a bound: a reduction that only
# re-summarises the summary (the rest preserved) can repeat for ever. The replay stops a
# call's retries when a reduction left the request no smaller, or after this many.
MAX_RETRIES = 100

DEFAULT_SUMMARIZATION_PROMPT = """You are a conversation summarizer. Provide a concise summary of the conversation \
history.

Format Requirements:
- You MUST create a structured and concise summary in bullet-point format.
- You MUST NOT respond conversationally.
- You MUST NOT address the user directly.
- You MUST NOT comment on tool availability.

Assumptions:
- You MUST NOT assume tool executions failed unless otherwise stated.

Task:
Your task is to create a structured summary document:
- It MUST contain bullet points with key topics and questions covered
- It MUST contain bullet points for all significant tools executed and their results
- It MUST contain bullet points for any code or technical information shared
- It MUST contain a section of key insights gained
- It MUST format the summary in the third person

Example format:

## Conversation Summary
* Topic 1: Key information
* Topic 2: Key information
*
## Tools Executed
* Tool X: Result Y"""  # noqa: E501
SUMMARIZE_REQUEST = "Please summarize this conversation."


def prompt_text(message: Message) -> str:
    """One message's content as the summariser reads it (text, toolUse, toolResult)."""
    parts: list[str] = []
    for b in message.blocks:
        if b.kind is BlockKind.TOOL_USE:
            parts.append(f"[toolUse {b.tool_name}] {b.input_json}")
        elif b.kind is BlockKind.TOOL_RESULT:
            parts.append(f"[toolResult {b.tool_id}] {b.text}")
        elif b.kind in (BlockKind.TEXT, BlockKind.THINKING) and b.text:
            parts.append(b.text)
    return "\n".join(parts)


@dataclass(slots=True)
class _State:
    units: list[au.Unit] = field(default_factory=list)  # agent.messages from ``head`` on
    head: int = 0
    summary: au.Unit | None = None  # the summary message (first of agent.messages)
    summary_text: str = ""


class StrandsSummarizingStrategy(sr.StrandsStrategy):
    name: ClassVar[str] = "strands_summarizing"
    State = _State
    label: ClassVar[str] = "Strands Agents summarizing (sdk-python 1.40.0)"
    description: ClassVar[str] = (
        "Strands Agents' SummarizingConversationManager: when a request overflows the "
        "context window, the oldest 30 % of the messages (summary_ratio, never the last 10, "
        "tool pairs kept together) are replaced by a model-written summary, which is "
        "summarised again with the oldest next time; the call is then retried."
    )
    estimator: ClassVar[str] = (
        "Model.count_tokens heuristic: ceil(chars / 4) per text, tool name, tool-result text "
        "and reasoning text; ceil(len(json.dumps) / 2) per tool input and tool spec"
    )
    WINDOW = "context_window_limit"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "summary_ratio",
            0.3,
            "Share of the messages summarised per reduction (clamped to 0.1..0.8 as the "
            "original does).",
            "float",
            min=0.0,
            max=1.0,
            origin="SummarizingConversationManager(summary_ratio=0.3)",
        ),
        Param(
            "preserve_recent_messages",
            10,
            "Messages at the end never summarised.",
            min=0,
            origin="SummarizingConversationManager(preserve_recent_messages=10)",
        ),
        Param(
            "summarization_system_prompt",
            "",
            "System prompt of the summary call (empty = DEFAULT_SUMMARIZATION_PROMPT).",
            "str",
            origin="SummarizingConversationManager(summarization_system_prompt=None)",
        ),
        Param(
            "proactive_compression",
            0.0,
            "Summarise before a model call when the projected input reaches this share of "
            "context_window_limit (0 = off, the default; True in Strands = 0.7).",
            "float",
            min=0.0,
            max=1.0,
            origin="proactive_compression={'compression_threshold': ...} "
            "(DEFAULT_COMPRESSION_THRESHOLD = 0.7)",
        ),
        sr.CONTEXT_WINDOW_LIMIT,
    )

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self.summary_ratio = max(0.1, min(0.8, float(self.params["summary_ratio"])))

    def system_prompt(self) -> str:
        return str(self.params["summarization_system_prompt"]) or DEFAULT_SUMMARIZATION_PROMPT

    # --- hooks --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        au.add(st.units, ctx.original(index), index, start=st.head)

    def before_call(self, ctx: ContextView) -> None:
        limit = self.window(ctx)
        share = float(self.params["proactive_compression"])
        for _ in range(MAX_RETRIES):
            tokens = ctx.request_tokens()
            if share > 0 and tokens / limit >= share:
                self._reduce(ctx, tokens, error=False)
                tokens = ctx.request_tokens()
            if tokens <= limit:
                return
            if not self._reduce(ctx, tokens, error=True):
                return
            if ctx.request_tokens() >= tokens:
                ctx.emit(
                    "compact_failed", tokens=ctx.request_tokens(), limit=limit,
                    outcome="the summary left the request no smaller: Strands would retry "
                    "the call and summarise again without end; the replay goes on unchanged",
                )  # fmt: skip
                return

    # --- the manager ----------------------------------------------------------------------
    def _messages(self, st: _State) -> list[au.Unit]:
        live = st.units[st.head :]
        return [st.summary, *live] if st.summary is not None else live

    def _reduce(self, ctx: ContextView, tokens: int, *, error: bool) -> bool:
        """``reduce_context``: summarise the oldest; True when the history changed."""
        st: _State = ctx.state
        messages = self._messages(st)
        limit = self.window(ctx)
        detail: dict[str, Any] = {
            "context_window_limit": limit, "threshold": self.threshold(ctx),
            "agent_messages": len(messages), "trigger": "overflow" if error else "proactive",
        }  # fmt: skip
        try:
            count = sr.summarize_count(
                messages, self.summary_ratio, int(self.params["preserve_recent_messages"])
            )
        except sr.NoSplit as exc:
            self._failed(ctx, str(exc), error, tokens, detail)
            return False
        chosen = messages[:count]
        had_summary = st.summary is not None
        sources = [i for u in chosen for i in u.sources]
        prompt: list[PromptMessage] = []
        material: list[MaterialItem] = []
        for u in chosen:
            if u is st.summary:
                prompt.append(PromptMessage("user", st.summary_text))
                material.append(MaterialItem("user", st.summary_text))
                continue
            text = "\n".join(prompt_text(ctx.message(i)) for i in u.sources)
            prompt.append(PromptMessage(u.role, text))
            material.append(MaterialItem(u.role, text, u.sources[0]))
        prompt.append(PromptMessage("user", SUMMARIZE_REQUEST))
        request = SummaryRequest(
            strategy=self.name,
            system=self.system_prompt(),
            messages=tuple(prompt),
            style="bullets",
            material=tuple(material),
            previous_summary=ctx.summary,
        )
        record = ctx.summarize(request, messages=sources)
        if record.error:
            ctx.emit("summary_failed", summary_id=record.id, error=record.error,
                     estimate=tokens, outcome=self._outcome(error), **detail)  # fmt: skip
            if error:
                self._failed(ctx, f"summarization failed: {record.error}", error, tokens,
                             detail, emit_skip=False)  # fmt: skip
            return False
        summary = record.output
        previous_ref = ctx.summary_ref
        removed_units = count - 1 if had_summary else count
        with ctx.action(
            "summarise", reason="context window overflow" if error else
            "proactive compression: projected input over the threshold",
            summarised_messages=count, estimate=tokens, **detail,
        ) as act:  # fmt: skip
            act.remove(sources, Fate.SUMMARISED)
            ctx.set_summary(summary, tokens=sr.text_tokens(summary), rendered=summary,
                            summary_id=record.id)  # fmt: skip
            act.summary_id = record.id
        st.head += removed_units
        st.summary = au.Unit(role="user", text=True)
        st.summary_text = summary
        check_summary_size(ctx, summary_rendered=summary, replaced=sources,
                           summary_id=record.id, previous_ref=previous_ref)  # fmt: skip
        return True

    @staticmethod
    def _outcome(error: bool) -> str:
        if error:
            return "re-raised: the agent's call fails (the replay goes on unchanged)"
        return "proactive: swallowed, the model call proceeds"

    def _failed(
        self, ctx: ContextView, why: str, error: bool, tokens: int, detail: dict[str, Any],
        *, emit_skip: bool = True,
    ) -> None:  # fmt: skip
        if error:
            ctx.emit("compact_failed", outcome=f"ContextWindowOverflowException: {why}; "
                     + self._outcome(True), tokens=tokens,
                     limit=detail["context_window_limit"], **detail)  # fmt: skip
        elif emit_skip:
            ctx.emit("compact_skipped", reason=why, total_tokens=tokens, **detail)


STRATEGY = StrandsSummarizingStrategy
