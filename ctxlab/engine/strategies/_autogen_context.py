"""AutoGen 0.4+ model contexts: what ``autogen_buffered``, ``autogen_head_and_tail`` and
``autogen_token_limited`` share.

Pinned: microsoft/autogen @ 027ecf0a379bcc1d09956d46d12d44a3ad9cee14 (``autogen-core`` 0.7.5),
``python/packages/autogen-core/src/autogen_core/model_context/`` (``_chat_completion_context``,
``_buffered_chat_completion_context``, ``_head_and_tail_chat_completion_context``,
``_token_limited_chat_completion_context``) and the estimator the token-limited context asks
its model client for: ``count_tokens_openai`` in
``python/packages/autogen-ext/src/autogen_ext/models/openai/_openai_client.py`` with the
message conversion of ``_message_transform.py`` (``OpenAIChatCompletionClient.count_tokens``).

A model context stores every message the agent adds (``add_message``) and answers
``get_messages()`` with a *view*, computed again from the whole store before every model
call (``AssistantAgent`` sends its system messages followed by that view). Nothing is ever
removed from the store. Here the view is the request: messages outside it are DROPPED from
the request (``trim``) and RESTORED (``restore_request``) if a later view holds them again
(only the token-limited view can: its gap sits in the middle).

AutoGen's messages are units of source messages (``_agent_units``): a ``UserMessage``, an
``AssistantMessage`` (text, or a list of ``FunctionCall`` with the text as ``thought``) or
a ``FunctionExecutionResultMessage`` holding every result of one response.

The estimator, ``count_tokens_openai`` (cl100k_base for the GPT-4 family; the run's cl100k
reference here): 3 per message, plus each value of its OpenAI form: ``role``, ``content``,
``name`` (+1; a user message's ``source``, "user"), an assistant's ``tool_calls`` as
``json.dumps([{"id", "function": {"arguments", "name"}, "type": "function"}])`` and its
``thought`` as content; a result message counts, per result, its content, "tool" and the
call id; and 3 once per request for the reply primer. Only the token-limited context reads
it; for the other two it sizes the request (window findings).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.model import Block, BlockKind, Message, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..tokens.cl100k import PER_MESSAGE_OVERHEAD, reference_counter
from . import _agent_units as au

if TYPE_CHECKING:
    from ..core.context_view import ContextView
    from ..tokens.reference import ReferenceTokens

SOURCE = "microsoft/autogen @ 027ecf0 (autogen-core 0.7.5)"
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMER = 3
USER_SOURCE = "user"  # AssistantAgent's UserMessage(source=...) for the user's input
MODEL_TOKEN_LIMIT = 128_000  # gpt-4-turbo / gpt-4o in autogen-ext's _model_info

Interval = tuple[int, int]  # units [lo, hi)


def arguments(value: Any) -> str:
    """A ``FunctionCall.arguments`` string: the model's JSON (compact), or the raw text."""
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {}, separators=(",", ":"), ensure_ascii=False)


def texts(message: Message) -> str:
    return "\n".join(b.text for b in message.blocks if b.kind is BlockKind.TEXT)


def body_tokens(
    message: Message,
    count: Callable[[str], int],
    block_texts: Callable[[Message], int] | None = None,
) -> int:
    """A source message's share of ``count_tokens_openai`` without the 3 per message.

    ``block_texts(message)``: the cl100k count of the message's block texts summed (the
    run's reference counts, ``reference_block_texts``); given, a message of one text block
    or of tool results only takes its texts' count from it instead of tokenizing them
    again (the same count: one text is the whole content, results count one by one)."""
    blocks = message.blocks
    if message.role is Role.ASSISTANT:
        calls = [b for b in blocks if b.kind is BlockKind.TOOL_USE]
        if not calls and block_texts is not None and _one_text(blocks):
            return count("assistant") + block_texts(message)
        text = texts(message)
        if not calls:
            return count("assistant") + count(text)
        tool_calls = [
            {"id": b.tool_id, "function": {"arguments": arguments(b.tool_input),
                                           "name": b.tool_name}, "type": "function"}
            for b in calls
        ]  # fmt: skip
        return count("assistant") + count(json.dumps(tool_calls)) + (count(text) if text else 0)
    results = [b for b in blocks if b.kind is BlockKind.TOOL_RESULT]
    if results:
        if block_texts is not None and len(results) == len(blocks):
            return block_texts(message) + sum(count("tool") + count(b.tool_id) for b in results)
        return sum(count(b.text) + count("tool") + count(b.tool_id) for b in results)
    name = message.name if message.name == "System" else USER_SOURCE
    if block_texts is not None and _one_text(blocks):
        return count("user") + count(name) + TOKENS_PER_NAME + block_texts(message)
    return count("user") + count(name) + TOKENS_PER_NAME + count(texts(message))


def _one_text(blocks: tuple[Block, ...]) -> bool:
    return len(blocks) == 1 and blocks[0].kind is BlockKind.TEXT


def reference_block_texts(reference: ReferenceTokens) -> Callable[[Message], int]:
    """A message's block texts counted by the run's reference (``message_of`` less the
    per-message overhead): an original's count is the one stored at import, a modified
    one's is memoised there. Only for messages of text and tool result blocks, whose
    reference text is the block's text."""
    message_of = reference.message_of

    def block_texts(message: Message) -> int:
        return message_of(message) - PER_MESSAGE_OVERHEAD

    return block_texts


def minus(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """The units of intervals ``a`` not in ``b`` (both sorted, disjoint), as intervals."""
    out: list[Interval] = []
    for lo, hi in a:
        cur = lo
        for blo, bhi in b:
            if bhi <= cur or blo >= hi:
                continue
            if blo > cur:
                out.append((cur, blo))
            cur = max(cur, bhi)
        if cur < hi:
            out.append((cur, hi))
    return out


@dataclass(slots=True)
class ViewState:
    units: list[au.Unit] = field(default_factory=list)  # the store: every message added
    prefix: list[int] = field(default_factory=lambda: [0])  # running unit token counts
    dropped: list[Interval] = field(default_factory=list)  # units out of the last view
    continuing: set[int] = field(default_factory=set)  # ids of sources inside a unit
    carrier: int = -1  # head_and_tail: the source showing the "Skipped N" placeholder
    skipped: int = 0


class AutoGenContextStrategy(Strategy):
    """Base of the three model contexts (``view`` is each one's ``get_messages``)."""

    State = ViewState
    estimator: ClassVar[str] = (
        "count_tokens_openai (OpenAIChatCompletionClient.count_tokens): 3 per message + "
        "role, content, name (+1), tool calls as JSON, each result's content, 'tool' and "
        "call id; + 3 reply primer; cl100k (the run's reference)"
    )
    WINDOW = "model_token_limit"
    WINDOW_PARAM: ClassVar[Param] = Param(
        "model_token_limit",
        MODEL_TOKEN_LIMIT,
        "The model's token limit (autogen-ext _model_info: 128000 for gpt-4o / gpt-4-turbo); "
        "a request over it overflows.",
        min=1_000,
        origin="model_info token limit (_model_info.get_token_limit)",
    )

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return reference_counter().count(text)

    def count_message(self, message: Message) -> int:
        return TOKENS_PER_MESSAGE + body_tokens(message, self.count_text)

    def message_counter(self, reference: ReferenceTokens, state: Any) -> Callable[[Message], int]:
        count = reference_counter().count
        continuing: set[int] = state.continuing
        stored = reference_block_texts(reference)

        def counter(message: Message) -> int:
            extra = 0 if id(message) in continuing else TOKENS_PER_MESSAGE
            return extra + body_tokens(message, count, stored)

        return counter

    def count_system(self, text: str, message: Message | None) -> int:
        # AssistantAgent's SystemMessage (3 + "system" + content) and the reply primer:
        # part of the request, never of the context the views count.
        own = TOKENS_PER_MESSAGE + self.count_text("system") + self.count_text(text) if text else 0
        return own + REPLY_PRIMER

    def count_tools(self, tools: Any) -> int:
        return 0  # the contexts' tool_schema defaults to none

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        return int(self.params["model_token_limit"])

    # --- hooks --------------------------------------------------------------------------
    def prepare(self, ctx: ContextView) -> None:
        st: ViewState = ctx.state
        units: list[au.Unit] = []
        for i, m in enumerate(ctx.originals):
            if i == ctx.system_index:
                continue
            before = len(units)
            au.add(units, m, i)
            if len(units) == before:
                st.continuing.add(id(m))

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: ViewState = ctx.state
        units = st.units
        before = len(units)
        au.add(units, ctx.original(index), index)
        if len(units) > before:
            st.prefix.append(st.prefix[-1] + ctx.tokens(index))
        else:
            st.prefix[-1] += ctx.tokens(index)

    def before_call(self, ctx: ContextView) -> None:
        st: ViewState = ctx.state
        desired, detail = self.view(ctx, st)
        self.apply(ctx, st, desired, detail)

    def view(self, ctx: ContextView, st: ViewState) -> tuple[list[Interval], dict[str, Any]]:
        """The units ``get_messages`` leaves out (sorted intervals) and the event detail."""
        raise NotImplementedError

    # --- the request view -----------------------------------------------------------------
    def placeholder(self, ctx: ContextView, st: ViewState) -> Message | None:
        """The message the carrier shows (head_and_tail), None when unchanged."""
        return None

    def apply(
        self, ctx: ContextView, st: ViewState, desired: list[Interval], detail: dict[str, Any]
    ) -> None:
        previous = st.dropped
        gone = minus(desired, previous)
        back = minus(previous, desired)
        st.dropped = desired
        carrier = st.carrier
        shown = self.placeholder(ctx, st)
        if back:
            with ctx.action(
                "restore_request", reason="the view recomputed from the whole store holds "
                "them again", **detail,
            ) as act:  # fmt: skip
                act.restore(self.sources(st, back))
        if gone or shown is not None:
            with ctx.action("trim", reason=f"outside {self.label}'s view", **detail) as act:
                act.remove([i for i in self.sources(st, gone) if i != carrier], Fate.DROPPED)
                if shown is not None:
                    act.replace(carrier, shown, Fate.PRUNED)

    @staticmethod
    def sources(st: ViewState, intervals: Iterable[Interval]) -> list[int]:
        units = st.units
        return [i for lo, hi in intervals for u in units[lo:hi] for i in u.sources]

    @staticmethod
    def is_result(unit: au.Unit) -> bool:
        """``isinstance(message, FunctionExecutionResultMessage)``."""
        return unit.tool_result

    @staticmethod
    def is_calls(unit: au.Unit) -> bool:
        """An AssistantMessage whose content is a list of FunctionCall."""
        return unit.role == "assistant" and unit.tool_use
