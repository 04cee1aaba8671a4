"""LangChain v1 ``SummarizationMiddleware`` (langchain.agents.middleware.summarization).

Pinned: ``libs/langchain_v1/langchain/agents/middleware/summarization.py`` as stored at
november-pain/langchain @ 3b531178d23a4fe2605971b08f9d8e51ba5b33b3, a fork carrying the
upstream file of early-to-mid 2026 (after langchain-ai/langchain#34609, which fixed
#34282, and after langchain 1.2.3's reported-usage trigger; before any fix of #38352, still
open). The upstream release number of that snapshot is not pinned. ``DEFAULT_SUMMARY_PROMPT``
is byte-exact from it (``summary_prompt="structured"``); the earlier text
(``"original"``) is byte-exact from langchain-ai/langchain @ d13823043d84.

What it does, as the middleware does:

- Where: ``before_model``, before every model call, over ``state["messages"]`` only. The
  system prompt (``create_agent(system_prompt=...)``) and the tool schemas are not in the
  state and are not counted (#34664): the trigger compares the history alone.
- Trigger (``trigger``: one ContextSize or a list; any fires; ``None``, the constructor
  default, never summarises): ``["messages", N]`` len(messages) >= N; ``["tokens", N]``
  count >= N, or the last AI message's reported ``usage_metadata.total_tokens`` >= N
  (same provider assumed, ``reported_usage_trigger``); ``["fraction", f]`` the same against
  ``int(max_input_tokens * f)`` (at least 1). The count is ``count_tokens_approximately``
  with ``use_usage_metadata_scaling=True`` (chars_per_token 3.3 for ChatAnthropic: set
  ``chars_per_token``). The reported total is the last response's usage as it was; after a
  summarisation it is stale and may fire again at once, as upstream.
- Cutoff (``keep``, default ``["messages", 20]``): messages -> ``len - N``; tokens /
  fraction -> if everything fits 0, else a binary search for the earliest suffix within
  the target (unscaled count), clamped to ``len - 1``. Then ``_find_safe_cutoff_point``:
  a cutoff on a ToolMessage collects the consecutive ToolMessages' ids and walks back to
  the first AIMessage sharing *any* id (``cutoff_rule="backward_any"``, the pinned code; a
  run mixing an orphan result with a paired one keeps the orphan: #38352); if none, it
  advances past the run. ``"backward_all"`` walks back until every id is covered (the fix
  proposed in #38382 / #38449, unmerged); ``"forward"`` always advances past the run
  (langchain-ai/langchain#34195, the 1.1 code before #34609). Cutoff <= 0: nothing happens.
- Summary call: ``messages[:cutoff]`` trimmed with ``trim_messages(max_tokens=
  trim_tokens_to_summarize, strategy="last", start_on="human", allow_partial=True,
  include_system=True)`` (scaled counter), rendered with ``get_buffer_string`` into the
  prompt's ``{messages}``, ``.rstrip()``, sent as one human message; the reply is
  ``.strip()``-ed. No messages: "No previous conversation history."; nothing left after
  trimming: "Previous conversation was too long to summarize." (no call). A failing call
  is caught: the summary is ``"Error generating summary: <error>"`` and the history is
  replaced all the same.
- New state: ``RemoveMessage(REMOVE_ALL_MESSAGES)``, one ``HumanMessage("Here is a summary
  of the conversation to date:\\n\\n" + summary)``, the preserved messages. The summary
  message is the first state message from then on, so the next summarisation summarises
  it again. Messages whose content reached the summariser are SUMMARISED; older ones that
  ``trim_tokens_to_summarize`` cut from the call are DROPPED.

Replay mapping (``_langchain_tokens``): one ctxlab message may be several LangChain
messages (each tool result is a ToolMessage, user text after it a HumanMessage); counts and
cutoffs are per LangChain message, and a cutoff inside one ctxlab message keeps its later
blocks (the message is shown TRUNCATED). Not modelled: the pre-1.0 ``max_tokens_before_summary``
/ ``messages_to_keep`` / ``summary_prefix`` API (its cutoff searched only 5 messages around
the target), the trim exception fallback (last 15 messages; the port never raises).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import BlockKind, Message, Role, ToolDef
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest
from . import _langchain_tokens as lc

if TYPE_CHECKING:
    from ..core.context_view import ContextView
    from ..tokens.reference import ReferenceTokens

MIDDLEWARE = "SummarizationMiddleware"
SUMMARY_TEMPLATE = "Here is a summary of the conversation to date:\n\n{summary}"
NO_HISTORY = "No previous conversation history."
TOO_LONG = "Previous conversation was too long to summarize."
ERROR_TEMPLATE = "Error generating summary: {error}"
DEFAULT_MESSAGES_TO_KEEP = 20
DEFAULT_TRIM_TOKEN_LIMIT = 4000

DEFAULT_SUMMARY_PROMPT = """<role>
Context Extraction Assistant
</role>

<primary_objective>
Your sole objective in this task is to extract the highest quality/most relevant context from the conversation history below.
</primary_objective>

<objective_information>
You're nearing the total number of input tokens you can accept, so you must extract the highest quality/most relevant pieces of information from your conversation history.
This context will then overwrite the conversation history presented below. Because of this, ensure the context you extract is only the most important information to continue working toward your overall goal.
</objective_information>

<instructions>
The conversation history below will be replaced with the context you extract in this step.
You want to ensure that you don't repeat any actions you've already completed, so the context you extract from the conversation history should be focused on the most important information to your overall goal.

You should structure your summary using the following sections. Each section acts as a checklist - you must populate it with relevant information or explicitly state "None" if there is nothing to report for that section:

## SESSION INTENT
What is the user's primary goal or request? What overall task are you trying to accomplish? This should be concise but complete enough to understand the purpose of the entire session.

## SUMMARY
Extract and record all of the most important context from the conversation history. Include important choices, conclusions, or strategies determined during this conversation. Include the reasoning behind key decisions. Document any rejected options and why they were not pursued.

## ARTIFACTS
What artifacts, files, or resources were created, modified, or accessed during this conversation? For file modifications, list specific file paths and briefly describe the changes made to each. This section prevents silent loss of artifact information.

## NEXT STEPS
What specific tasks remain to be completed to achieve the session intent? What should you do next?

</instructions>

The user will message you with the full message history from which you'll extract context to create a replacement. Carefully read through it all and think deeply about what information is most important to your overall goal and should be saved:

With all of this in mind, please carefully read over the entire conversation history, and extract the most important and relevant context to replace it so that you can free up space in the conversation history.
Respond ONLY with the extracted context. Do not include any additional information, or text before or after the extracted context.

<messages>
Messages to summarize:
{messages}
</messages>"""  # noqa: E501

ORIGINAL_SUMMARY_PROMPT = """<role>
Context Extraction Assistant
</role>

<primary_objective>
Your sole objective in this task is to extract the highest quality/most relevant context from the conversation history below.
</primary_objective>

<objective_information>
You're nearing the total number of input tokens you can accept, so you must extract the highest quality/most relevant pieces of information from your conversation history.
This context will then overwrite the conversation history presented below. Because of this, ensure the context you extract is only the most important information to your overall goal.
</objective_information>

<instructions>
The conversation history below will be replaced with the context you extract in this step. Because of this, you must do your very best to extract and record all of the most important context from the conversation history.
You want to ensure that you don't repeat any actions you've already completed, so the context you extract from the conversation history should be focused on the most important information to your overall goal.
</instructions>

The user will message you with the full message history you'll be extracting context from, to then replace. Carefully read over it all, and think deeply about what information is most important to your overall goal that should be saved:

With all of this in mind, please carefully read over the entire conversation history, and extract the most important and relevant context to replace it so that you can free up space in the conversation history.
Respond ONLY with the extracted context. Do not include any additional information, or text before or after the extracted context.

<messages>
Messages to summarize:
{messages}
</messages>"""  # noqa: E501

PROMPTS = {"structured": DEFAULT_SUMMARY_PROMPT, "original": ORIGINAL_SUMMARY_PROMPT}
STRUCTURED_SECTIONS = (
    Section("## SESSION INTENT", "goal"),
    Section("## SUMMARY", "decisions"),
    Section("## ARTIFACTS", "critical"),
    Section("## NEXT STEPS", "next"),
)

ContextSize = tuple[str, float]


def parse_context_size(value: Any, name: str) -> ContextSize:
    """``_validate_context_size``: ``[kind, value]`` with the upstream range checks."""
    if not isinstance(value, list | tuple) or len(value) != 2 or not isinstance(value[0], str):
        raise ValueError(f"{name}={value!r} is not a ContextSize ([kind, value])")
    kind, size = value
    if isinstance(size, bool) or not isinstance(size, int | float):
        raise ValueError(f"{name}={value!r}: the value must be a number")
    if kind == "fraction":
        if not 0 < size <= 1:
            raise ValueError(f"Fractional {name} values must be between 0 and 1, got {size}.")
    elif kind in ("tokens", "messages"):
        if size <= 0:
            raise ValueError(f"{name} thresholds must be greater than 0, got {size}.")
    else:
        raise ValueError(f"Unsupported context size type {kind} for {name}.")
    return kind, size


def parse_trigger(value: Any) -> list[ContextSize]:
    """None -> no condition; one ContextSize; or a list of them (any fires)."""
    if value is None:
        return []
    if isinstance(value, list | tuple) and value and isinstance(value[0], list | tuple):
        return [parse_context_size(item, "trigger") for item in value]
    return [parse_context_size(value, "trigger")]


@dataclass(slots=True)
class _State:
    tool_names: dict[str, str] = field(default_factory=dict)  # tool_use id -> name, so far
    messages: list[lc.LcMessage] = field(default_factory=list)  # state["messages"]
    sum: float = 0.0  # Σ per-message tokens of messages (unscaled)
    last_ai: lc.LcMessage | None = None
    scale_at: tuple[int, float] | None = None  # (last reported total, approx there)
    skipped: bool = False
    # The counter's last message, as (message, source, its LangChain messages, their
    # tokens): ``after_append`` takes them instead of converting and counting again.
    counted: tuple[Message, int, list[lc.LcMessage], list[float]] | None = None
    next_source: int = 0  # the index the next appended message will have


class LangChainSummarizationStrategy(Strategy):
    name: ClassVar[str] = "langchain_summarization"
    State = _State
    label: ClassVar[str] = "LangChain SummarizationMiddleware (langchain v1)"
    description: ClassVar[str] = (
        "LangChain v1 agents' SummarizationMiddleware: before every model call, once a "
        "trigger fires (messages, approximate tokens or reported usage, fraction of the "
        "model's max input), the messages before a cutoff that keeps the last `keep` "
        "(never starting on a tool result) are trimmed to 4000 tokens and summarised with "
        "the Context Extraction prompt; the state becomes one human message 'Here is a "
        "summary of the conversation to date:' plus the kept messages."
    )
    estimator: ClassVar[str] = (
        "count_tokens_approximately: ceil(chars / 4) + 3 per message (role, name, tool "
        "calls, tool_call_id counted), scaled by the last reported usage (x1.0-1.25); "
        "state messages only"
    )
    WINDOW = "max_input_tokens"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "trigger",
            None,
            'When to summarise: ["tokens", N], ["messages", N], ["fraction", f] or a list '
            "of them (any fires). null (the constructor default) never summarises.",
            "json",
            origin=f"{MIDDLEWARE}(trigger=...)",
        ),
        Param(
            "keep",
            ["messages", DEFAULT_MESSAGES_TO_KEEP],
            'What stays after summarising: ["messages", N], ["tokens", N] or ["fraction", f].',
            "json",
            origin=f"{MIDDLEWARE}(keep=...)",
        ),
        Param(
            "trim_tokens_to_summarize",
            DEFAULT_TRIM_TOKEN_LIMIT,
            "Tokens of the newest messages-to-summarise sent to the summary call "
            "(trim_messages, partial allowed); 0 = None, no trimming.",
            min=0,
            origin=f"{MIDDLEWARE}(trim_tokens_to_summarize=...)",
        ),
        Param(
            "summary_prompt",
            "structured",
            "DEFAULT_SUMMARY_PROMPT: the pinned text with SESSION INTENT / SUMMARY / "
            "ARTIFACTS / NEXT STEPS, or the original Context Extraction text.",
            "str",
            choices=tuple(PROMPTS),
            origin=f"{MIDDLEWARE}(summary_prompt=...)",
        ),
        Param(
            "max_input_tokens",
            0,
            "The chat model's profile max_input_tokens (fraction trigger/keep; 0 = no "
            "profile, fractions are refused as upstream does).",
            min=0,
            origin='ChatModel(profile={"max_input_tokens": ...})',
        ),
        Param(
            "chars_per_token",
            4.0,
            "count_tokens_approximately chars_per_token (the middleware uses 3.3 when the "
            "summary model is ChatAnthropic).",
            "float",
            min=0.5,
            max=20.0,
            origin="_get_approximate_token_counter (model._llm_type)",
        ),
        Param(
            "usage_metadata_scaling",
            True,
            "Scale the approximate count by the last AI message's reported total tokens "
            "(clamped to 1.0-1.25), as the default counter does.",
            "bool",
            origin="count_tokens_approximately(use_usage_metadata_scaling=True)",
        ),
        Param(
            "reported_usage_trigger",
            True,
            "A tokens/fraction trigger also fires on the last AI message's reported "
            "total_tokens (summary model from the agent's provider; langchain >= 1.2.3).",
            "bool",
            origin="_should_summarize_based_on_reported_tokens",
        ),
        Param(
            "cutoff_rule",
            "backward_any",
            "Cutoff on a tool message: back to the AI message sharing any id (pinned; "
            "#38352 orphans), back until every id is covered (proposed fix), or forward "
            "past the tool messages (langchain 1.1, #34195).",
            "str",
            choices=("backward_any", "backward_all", "forward"),
            origin="_find_safe_cutoff_point (langchain version)",
        ),
        Param(
            "message_format",
            "openai",
            "How AI messages hold tool calls: openai (text content + tool_calls, counted "
            "as repr) or anthropic (a content list with tool_use blocks).",
            "str",
            choices=("openai", "anthropic"),
            origin="chat model integration (replay mapping)",
        ),
    )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        self.triggers = parse_trigger(self.params["trigger"])
        self.keep = parse_context_size(self.params["keep"], "keep")
        needs_profile = any(kind == "fraction" for kind, _ in self.triggers)
        if (needs_profile or self.keep[0] == "fraction") and not self.params["max_input_tokens"]:
            raise ValueError(
                "Model profile information is required to use fractional token limits: "
                "set max_input_tokens"
            )
        self._cpt = float(self.params["chars_per_token"])

    # --- estimator ----------------------------------------------------------------------
    def lc_messages(
        self, message: Message, index: int, tool_names: dict[str, str]
    ) -> list[lc.LcMessage]:
        return lc.to_lc_messages(message, index, tool_names=tool_names,
                                 message_format=self.params["message_format"])  # fmt: skip

    def lc_tokens(self, message: lc.LcMessage) -> float:
        return lc.message_tokens(message, chars_per_token=self._cpt)

    def count_text(self, text: str) -> int:
        return int(self.lc_tokens(lc.LcMessage(lc.HUMAN, text)))

    def count_message(self, message: Message) -> int:
        return int(sum(self.lc_tokens(m) for m in self.lc_messages(message, -1, {})))

    def message_counter(self, reference: ReferenceTokens, state: Any) -> Callable[[Message], int]:
        # Tool results are named from the calls this replay has seen so far. The context
        # counts each message as it is appended, right before ``after_append`` needs the
        # same LangChain messages and counts: they are kept, made with the index the next
        # appended message will have (the counts never depend on it).
        tool_names = state.tool_names
        lc_tokens, lc_messages = self.lc_tokens, self.lc_messages

        def count(message: Message) -> int:
            source = state.next_source
            items = lc_messages(message, source, tool_names)
            counts = [lc_tokens(m) for m in items]
            state.counted = (message, source, items, counts)
            return int(sum(counts))

        return count

    def count_tools(self, tools: Sequence[ToolDef]) -> int:
        return lc.tools_tokens(tools, chars_per_token=self._cpt)  # sent, never counted

    def counter(self, scaled: bool) -> lc.TokenCounter:
        scaling = scaled and bool(self.params["usage_metadata_scaling"])

        def count(messages: Sequence[lc.LcMessage]) -> int:
            return lc.count_tokens_approximately(
                messages, chars_per_token=self._cpt, use_usage_metadata_scaling=scaling
            )

        return count

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        return int(self.params["max_input_tokens"])

    def threshold(self, ctx: ContextView) -> int | None:
        limits = [self._limit(kind, value) for kind, value in self.triggers if kind != "messages"]
        return min(limits) if limits else None

    def _limit(self, kind: str, value: float) -> int:
        if kind == "fraction":
            return max(1, int(int(self.params["max_input_tokens"]) * value))
        return int(value)

    # --- state --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        msg = ctx.message(index)
        calls = False
        for block in msg.blocks:
            if block.kind is BlockKind.TOOL_USE and block.tool_id:
                st.tool_names[block.tool_id] = block.tool_name
                calls = True
        # The counter's conversion of this message, made since the last append (so with
        # these tool names), unless it guessed another index or the message's own calls
        # just named its results.
        counted, st.counted, st.next_source = st.counted, None, index + 1
        if (
            counted is not None
            and counted[0] is msg
            and counted[1] == index
            and not (calls and msg.role is not Role.ASSISTANT)
        ):
            for item, tokens in zip(counted[2], counted[3], strict=True):
                self._push(st, item, tokens)
            return
        for item in self.lc_messages(msg, index, st.tool_names):
            self._push(st, item)

    def _push(self, st: _State, item: lc.LcMessage, tokens: float | None = None) -> None:
        st.messages.append(item)
        st.sum += self.lc_tokens(item) if tokens is None else tokens
        if item.type == lc.AI:
            st.last_ai = item
            if item.total_tokens is not None:
                st.scale_at = (item.total_tokens, st.sum)

    def _reset(self, st: _State, items: list[lc.LcMessage]) -> None:
        st.messages, st.sum, st.last_ai, st.scale_at = [], 0.0, None, None
        for item in items:
            self._push(st, item)

    def total_tokens(self, st: _State) -> int:
        """``self.token_counter(messages)``: the scaled count, kept incrementally (every
        replayed AI message has one provider, so only the last reported total matters)."""
        total = st.sum
        if (
            self.params["usage_metadata_scaling"]
            and len(st.messages) > 1
            and st.scale_at is not None
            and st.scale_at[1] > 0
        ):
            total *= lc.usage_scale(*st.scale_at)
        return math.ceil(total)

    # --- hooks --------------------------------------------------------------------------
    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        total = self.total_tokens(st)
        fired = self._fired(st, total)
        if fired is None:
            st.skipped = False
            return
        cutoff = self.determine_cutoff(st.messages)
        if cutoff <= 0:
            if not st.skipped:
                ctx.emit("compact_skipped", reason="no cutoff above 0: nothing to summarise",
                         trigger=fired, total_tokens=total, messages_count=len(st.messages))  # fmt: skip
            st.skipped = True
            return
        st.skipped = False
        self._summarize(ctx, cutoff, total=total, fired=fired)

    def _fired(self, st: _State, total: int) -> str | None:
        """``_should_summarize``: the first condition that holds, described (None: none)."""
        for kind, value in self.triggers:
            if kind == "messages" and len(st.messages) >= value:
                return f"messages {len(st.messages)} >= {value:g}"
            if kind == "messages":
                continue
            limit = self._limit(kind, value)
            if total >= limit:
                return f"{kind} {total} >= {limit}"
            reported = self._reported_total(st)
            if reported is not None and reported >= limit:
                return f"{kind} reported {reported} >= {limit}"
        return None

    def _reported_total(self, st: _State) -> int | None:
        last = st.last_ai
        if not self.params["reported_usage_trigger"] or last is None:
            return None
        return last.total_tokens or None  # 0 / missing never fires

    # --- cutoff -------------------------------------------------------------------------
    def determine_cutoff(self, messages: Sequence[lc.LcMessage]) -> int:
        kind, value = self.keep
        if kind == "messages":
            return self.safe_cutoff(messages, int(value))
        target = self._limit(kind, value) if kind == "fraction" else int(value)
        return self.token_cutoff(messages, max(1, target))

    def safe_cutoff(self, messages: Sequence[lc.LcMessage], messages_to_keep: int) -> int:
        if len(messages) <= messages_to_keep:
            return 0
        return self.safe_cutoff_point(messages, len(messages) - messages_to_keep)

    def token_cutoff(self, messages: Sequence[lc.LcMessage], target: int) -> int:
        """``_find_token_based_cutoff``: earliest suffix within ``target`` (unscaled)."""
        if not messages:
            return 0
        if self.counter(scaled=True)(messages) <= target:
            return 0
        unscaled = self.counter(scaled=False)
        left, right = 0, len(messages)
        candidate = len(messages)
        for _ in range(len(messages).bit_length() + 1):
            if left >= right:
                break
            mid = (left + right) // 2
            if unscaled(messages[mid:]) <= target:
                candidate = mid
                right = mid
            else:
                left = mid + 1
        if candidate == len(messages):
            candidate = left
        if candidate >= len(messages):
            if len(messages) == 1:
                return 0
            candidate = len(messages) - 1
        return self.safe_cutoff_point(messages, candidate)

    def safe_cutoff_point(self, messages: Sequence[lc.LcMessage], cutoff: int) -> int:
        """``_find_safe_cutoff_point`` under ``cutoff_rule``."""
        if cutoff >= len(messages) or messages[cutoff].type != lc.TOOL:
            return cutoff
        ids: set[str] = set()
        end = cutoff
        while end < len(messages) and messages[end].type == lc.TOOL:
            if messages[end].tool_call_id:
                ids.add(messages[end].tool_call_id)
            end += 1
        rule = self.params["cutoff_rule"]
        if rule == "forward":
            return end
        pending = set(ids)
        for i in range(cutoff - 1, -1, -1):
            msg = messages[i]
            if msg.type != lc.AI or not msg.tool_calls:
                continue
            call_ids = {str(c["id"]) for c in msg.tool_calls if c.get("id")}
            if rule == "backward_any" and ids & call_ids:
                return i
            pending -= call_ids
            if rule == "backward_all" and not pending:
                return i
        return end  # no AI message found: advance past the tool messages

    # --- summarising --------------------------------------------------------------------
    def _summarize(self, ctx: ContextView, cutoff: int, *, total: int, fired: str) -> None:
        st: _State = ctx.state
        old, kept = st.messages[:cutoff], st.messages[cutoff:]
        summary, record_id, shown = self._create_summary(ctx, old)
        no_call = summary if record_id is None else ""
        message = lc.LcMessage(lc.HUMAN, SUMMARY_TEMPLATE.format(summary=summary))
        shown_sources = {m.source for m in shown}
        kept_parts: dict[int, set[int]] = {}
        for m in kept:
            kept_parts.setdefault(m.source, set()).update(m.parts)
        gone = sorted({m.source for m in old if m.source >= 0 and m.source not in kept_parts})
        split = sorted({m.source for m in old if m.source >= 0 and m.source in kept_parts})
        previous_ref = ctx.summary_ref
        with ctx.action(
            "summarise", reason=f"{MIDDLEWARE}: state replaced by a summary message + kept messages",
            trigger=fired, total_tokens=total, cutoff=cutoff, messages_count=len(st.messages),
            kept_messages=len(kept), summarized_messages=len(old),
            summary_error=record_id is not None and bool(ctx.result.summaries[record_id].error),
            no_call=no_call,
        ) as act:  # fmt: skip
            for i in split:
                original = ctx.message(i)
                blocks = tuple(b for p, b in enumerate(original.blocks) if p in kept_parts[i])
                act.replace(i, _with_blocks(original, blocks), Fate.TRUNCATED,
                            reason="blocks before the cutoff summarised")  # fmt: skip
            act.remove([i for i in gone if i in shown_sources], Fate.SUMMARISED)
            act.remove([i for i in gone if i not in shown_sources], Fate.DROPPED,
                       reason="cut from the summary call by trim_tokens_to_summarize")  # fmt: skip
            ctx.set_summary(summary, tokens=int(self.lc_tokens(message)), rendered=message.text,
                            summary_id=record_id)  # fmt: skip
            act.summary_id = record_id
            act.always = True
        self._reset(st, [message, *kept])
        check_summary_size(ctx, summary_rendered=message.text, replaced=gone,
                           summary_id=record_id, previous_ref=previous_ref)  # fmt: skip

    def _create_summary(
        self, ctx: ContextView, old: list[lc.LcMessage]
    ) -> tuple[str, int | None, list[lc.LcMessage]]:
        """(summary text, summary record id, the messages the call showed)."""
        if not old:
            return NO_HISTORY, None, []
        trimmed = self.trim_for_summary(old)
        if not trimmed:
            return TOO_LONG, None, []
        prompt = PROMPTS[self.params["summary_prompt"]]
        text = prompt.format(messages=lc.get_buffer_string(trimmed)).rstrip()
        structured = self.params["summary_prompt"] == "structured"
        request = SummaryRequest(
            strategy=self.name,
            system="",
            messages=(PromptMessage("user", text),),
            style="sections" if structured else "plain",
            sections=STRUCTURED_SECTIONS if structured else (),
            material=tuple(MaterialItem(lc.role_of(m), m.text, m.source) for m in trimmed),
            previous_summary=ctx.summary,
        )
        sources = [m.source for m in trimmed if m.source >= 0]
        record = ctx.summarize(request, messages=list(dict.fromkeys(sources)))
        if record.error:
            return ERROR_TEMPLATE.format(error=record.error), record.id, trimmed
        return record.output.strip(), record.id, trimmed

    def trim_for_summary(self, messages: list[lc.LcMessage]) -> list[lc.LcMessage]:
        limit = int(self.params["trim_tokens_to_summarize"])
        if not limit:
            return messages
        return lc.trim_messages(
            messages, max_tokens=limit, token_counter=self.counter(scaled=True),
            start_on=lc.HUMAN, strategy="last", allow_partial=True, include_system=True,
        )  # fmt: skip


def _with_blocks(message: Message, blocks: tuple[Any, ...]) -> Message:
    return replace(message, blocks=blocks)


STRATEGY = LangChainSummarizationStrategy
