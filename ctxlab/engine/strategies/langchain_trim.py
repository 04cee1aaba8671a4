"""LangChain ``trim_messages`` as an agent's pre-model hook (request view, nothing persisted).

Pinned: ``trim_messages`` / ``_first_max_tokens`` / ``_last_max_tokens`` from
langchain-core ``libs/core/langchain_core/messages/utils.py`` @
911f4d4ebd56f591d10de3689fa97f3c57a1eb83, and ``count_tokens_approximately`` as in
``_langchain_tokens`` (shared with ``langchain_summarization``).

Where it runs: LangGraph's ``create_react_agent(pre_model_hook=...)`` returning
``{"llm_input_messages": trim_messages(state["messages"], ...)}``: the state keeps the full
history and only the request is trimmed. So this is a *request view* recomputed from the
whole history before every call: messages outside the trimmed window are DROPPED from the
request, come back (``restore_request`` events, RESTORED) when the window moves over them
again (``end_on`` cutting a trailing message today and not tomorrow), and a message kept
in part (``allow_partial``) is shown PRUNED with the part that fits. For
``strategy="last"`` without ``allow_partial`` / ``end_on`` the window's start only moves
forward (the count is additive and the history only grows), so persisting the removals
would give the same requests; the view is kept general because the other options do not.

Defaults are the documented recipe (``strategy="last"``, ``token_counter=
count_tokens_approximately``, ``start_on="human"``, ``end_on=("human", "tool")``,
``include_system=True``) with ``max_tokens=384`` from LangGraph's "manage conversation
history" pre_model_hook example; the function's own defaults differ (``include_system=
False``, no ``start_on`` / ``end_on``) and are one parameter change away.

The system prompt: agents pass it as ``prompt=`` / ``system_prompt=``, added after the hook,
so it is neither counted nor trimmed (``system_prompt_in_state=false``). With ``true`` it
is the state's first message: counted against ``max_tokens`` and kept by
``include_system=True`` (trimming it away is not modelled, so that combination is refused).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.model import Block, BlockKind, Message, Role, ToolDef
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from . import _langchain_tokens as lc

if TYPE_CHECKING:
    from ..core.context_view import ContextView
    from ..tokens.reference import ReferenceTokens

FUNCTION = "trim_messages"
MESSAGE_TYPES = (lc.HUMAN, lc.AI, lc.TOOL, lc.SYSTEM)


def _types(value: Any, name: str) -> tuple[str, ...]:
    """A message-type filter: "" / [] = none, a type, or a list of types."""
    items = [value] if isinstance(value, str) else list(value or [])
    items = [v for v in items if v]
    bad = [v for v in items if v not in MESSAGE_TYPES]
    if bad:
        raise ValueError(f"{name}={value!r}: unknown message type(s) {bad} ({MESSAGE_TYPES})")
    return tuple(items)


@dataclass(slots=True)
class _State:
    tool_names: dict[str, str] = field(default_factory=dict)  # tool_use id -> name, so far
    system: lc.LcMessage | None = None  # the system message kept in state["messages"]
    history: list[lc.LcMessage] = field(default_factory=list)
    by_source: dict[int, list[lc.LcMessage]] = field(default_factory=dict)
    tokens: dict[int, tuple[lc.LcMessage, int]] = field(default_factory=dict)  # id -> count
    view: dict[int, Message | None] = field(default_factory=dict)  # source -> shown part
    # Linear path (see _window): running token sums of the history, each source's first
    # history position, the window and history length of the previous call.
    prefix: list[int] = field(default_factory=lambda: [0])
    start_of: dict[int, int] = field(default_factory=dict)
    last: tuple[int, int, int] = (0, 0, 0)
    counted: tuple[Message | None, Sequence[int]] = (None, ())  # the counter's last message


class LangChainTrimStrategy(Strategy):
    name: ClassVar[str] = "langchain_trim"
    State = _State
    label: ClassVar[str] = "LangChain trim_messages (pre-model hook)"
    description: ClassVar[str] = (
        "langchain-core trim_messages used as an agent's pre-model hook: before every "
        "model call the last messages that fit max_tokens (count_tokens_approximately), "
        "starting on a human message and ending on a human or tool message, are sent; "
        "the state keeps the full history, so nothing is persisted and trimmed messages "
        "can come back."
    )
    estimator: ClassVar[str] = (
        "count_tokens_approximately: ceil(chars / 4) + 3 per message (role, name, tool "
        "calls, tool_call_id counted); state messages only"
    )
    WINDOW = "context_window"
    _force_general: ClassVar[bool] = False  # tests: the trim_messages port at every call
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "max_tokens",
            384,
            "Token budget of the trimmed messages (LangGraph's pre_model_hook example: 384).",
            min=1,
            origin=f"{FUNCTION}(max_tokens=...)",
        ),
        Param(
            "strategy",
            "last",
            "Keep the last messages (recipe) or the first ones.",
            "str",
            choices=("last", "first"),
            origin=f"{FUNCTION}(strategy=...)",
        ),
        Param(
            "include_system",
            True,
            "Keep a leading SystemMessage of the state (recipe: true; function default "
            "false). Only with strategy last.",
            "bool",
            origin=f"{FUNCTION}(include_system=...)",
        ),
        Param(
            "start_on",
            "human",
            'Message type(s) the kept messages must start on ("" = any). Only with strategy last.',
            "json",
            origin=f"{FUNCTION}(start_on=...)",
        ),
        Param(
            "end_on",
            [lc.HUMAN, lc.TOOL],
            "Message type(s) the kept messages must end on ([] = any; function default None).",
            "json",
            origin=f"{FUNCTION}(end_on=...)",
        ),
        Param(
            "allow_partial",
            False,
            "Keep part of the message that does not fit (content blocks, else lines of "
            "its first text).",
            "bool",
            origin=f"{FUNCTION}(allow_partial=...)",
        ),
        Param(
            "chars_per_token",
            4.0,
            "count_tokens_approximately chars_per_token.",
            "float",
            min=0.5,
            max=20.0,
            origin="count_tokens_approximately(chars_per_token=...)",
        ),
        Param(
            "system_prompt_in_state",
            False,
            "The system prompt is the state's first message (counted, kept by "
            "include_system) rather than the agent's prompt= (neither).",
            "bool",
            origin="create_react_agent(prompt=...) vs a SystemMessage in state",
        ),
        Param(
            "message_format",
            "openai",
            "How AI messages hold tool calls: openai (text + tool_calls) or anthropic "
            "(content list with tool_use blocks).",
            "str",
            choices=("openai", "anthropic"),
            origin="chat model integration (replay mapping)",
        ),
        Param(
            "context_window",
            128_000,
            "Model context window (overflow findings only; the hook does not read it).",
            min=1_000,
            origin="model context window",
        ),
    )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        p = self.params
        self.start_on = _types(p["start_on"], "start_on")
        self.end_on = _types(p["end_on"], "end_on")
        if p["strategy"] == "first" and (self.start_on or p["include_system"]):
            raise ValueError(
                "start_on and include_system are only valid with strategy='last' "
                "(trim_messages raises ValueError)"
            )
        if p["system_prompt_in_state"] and not p["include_system"]:
            raise ValueError("system_prompt_in_state without include_system is not modelled")
        self._cpt = float(p["chars_per_token"])
        self._linear = not p["allow_partial"] and not self._force_general

    # --- estimator ----------------------------------------------------------------------
    def lc_messages(
        self, message: Message, index: int, tool_names: dict[str, str]
    ) -> list[lc.LcMessage]:
        return lc.to_lc_messages(message, index, tool_names=tool_names,
                                 message_format=self.params["message_format"])  # fmt: skip

    def lc_tokens(self, message: lc.LcMessage) -> int:
        return int(lc.message_tokens(message, chars_per_token=self._cpt))

    def count_text(self, text: str) -> int:
        return self.lc_tokens(lc.LcMessage(lc.HUMAN, text))

    def count_message(self, message: Message) -> int:
        return sum(self.lc_tokens(m) for m in self.lc_messages(message, -1, {}))

    def message_counter(self, reference: ReferenceTokens, state: Any) -> Callable[[Message], int]:
        # Tool results are named from the calls this replay has seen so far. The counts of
        # the message just counted are kept: the context counts each message as it is
        # appended, right before ``after_append`` needs the same counts.
        tool_names = state.tool_names
        lc_tokens, lc_messages = self.lc_tokens, self.lc_messages

        def count(message: Message) -> int:
            counts = [lc_tokens(m) for m in lc_messages(message, -1, tool_names)]
            state.counted = (message, counts)
            return sum(counts)

        return count

    def count_system(self, text: str, message: Message | None) -> int:
        return self.lc_tokens(lc.LcMessage(lc.SYSTEM, text)) if message is not None else 0

    def count_tools(self, tools: Sequence[ToolDef]) -> int:
        return lc.tools_tokens(tools, chars_per_token=self._cpt)

    def _count(self, st: _State, messages: Sequence[lc.LcMessage]) -> int:
        """count_tokens_approximately over a list: per-message counts are whole numbers
        (integral extra tokens, no scaling), so the total is their sum (cached)."""
        cache = st.tokens
        total = 0
        for m in messages:
            entry = cache.get(id(m))
            if entry is not None and entry[0] is m:
                total += entry[1]
                continue
            value = self.lc_tokens(m)
            if m.source >= 0:  # history messages live as long as the replay: cache them
                cache[id(m)] = (m, value)
            total += value
        return total

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_window"])

    def threshold(self, ctx: ContextView) -> int | None:
        return int(self.params["max_tokens"])

    # --- state --------------------------------------------------------------------------
    def prepare(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        if self.params["system_prompt_in_state"] and ctx.system_index is not None:
            st.system = lc.LcMessage(lc.SYSTEM, ctx.system_text, source=ctx.system_index)
            st.history.append(st.system)
            st.prefix.append(self.lc_tokens(st.system))

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        msg = ctx.original(index)
        calls = False
        for block in msg.blocks:
            if block.kind is BlockKind.TOOL_USE and block.tool_id:
                st.tool_names[block.tool_id] = block.tool_name
                calls = True
        items = self.lc_messages(msg, index, st.tool_names)
        st.by_source[index] = items
        st.start_of[index] = len(st.history)
        st.history.extend(items)
        # The counter's counts of this message, unless its own calls just named its results.
        counted, counts = st.counted
        if counted is not msg or (calls and msg.role is not Role.ASSISTANT):
            counts = [self.lc_tokens(item) for item in items]
        prefix = st.prefix
        for value in counts:
            prefix.append(prefix[-1] + value)

    def trimmed(self, st: _State) -> list[lc.LcMessage]:
        p = self.params
        return lc.trim_messages(
            st.history, max_tokens=int(p["max_tokens"]), token_counter=partial(self._count, st),
            strategy=p["strategy"], allow_partial=bool(p["allow_partial"]),
            start_on=self.start_on or None, end_on=self.end_on or None,
            include_system=bool(p["include_system"]),
        )  # fmt: skip

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        if self._linear:
            self._before_call_linear(ctx)
            return
        kept = self.trimmed(st)
        desired = self._desired(ctx, kept)
        full = self._count(st, st.history)
        detail = {"input_tokens": full, "max_tokens": int(self.params["max_tokens"]),
                  "kept_messages": len(kept), "state_messages": len(st.history)}  # fmt: skip
        current = st.view
        changed = sorted(
            i for i in set(current) | set(desired) if current.get(i, ...) != desired.get(i, ...)
        )
        self._apply(ctx, changed, desired, detail)

    # --- linear path ----------------------------------------------------------------------
    # Without allow_partial, trim_messages keeps whole messages: a leading system message
    # and one contiguous run [lo, hi) of the history. Per-message counts are whole numbers,
    # so every count it asks for is a difference of running sums, and only the sources
    # whose items entered or left the run (or were appended since) can change their view.
    # Same result as the general path (tests/engine/strategies/test_langchain_trim_linear.py
    # compares both on corpus sessions for every option).

    def _window(self, st: _State) -> tuple[int, int, bool]:
        """(lo, hi, system kept) exactly as ``lc.trim_messages`` would choose them."""
        p = self.params
        h, prefix = st.history, st.prefix
        n = len(h)
        limit = int(p["max_tokens"])
        if p["strategy"] == "first":
            return 0, _first_max(n, limit, lambda k: prefix[k], lambda k: h[k - 1],
                                 self.end_on), False  # fmt: skip
        end = n
        if self.end_on:
            for _ in range(n):
                if lc.is_type(h[end - 1], self.end_on):
                    break
                end -= 1
        start = 0
        if p["include_system"] and end > 0 and h[0].type == lc.SYSTEM:
            start = 1
            limit = max(0, limit - prefix[1])
        # first_max_tokens over h[start:end] reversed: its k first are the k last of ours
        kept = _first_max(end - start, limit, lambda k: prefix[end] - prefix[end - k],
                          lambda k: h[end - k], self.start_on)  # fmt: skip
        return end - kept, end, start == 1

    def _before_call_linear(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        lo, hi, system = self._window(st)
        h = st.history
        n = len(h)
        plo, phi, pn = st.last
        st.last = (lo, hi, n)
        positions = {*range(min(lo, plo), max(lo, plo)), *range(min(hi, phi), max(hi, phi))}
        positions.update(range(pn, n))
        positions.update(i for i in (lo, hi - 1, plo, phi - 1) if 0 <= i < n)
        by_source = st.by_source
        sources = {h[i].source for i in positions} & by_source.keys()
        current = st.view
        desired: dict[int, Message | None] = {}
        changed = []
        for source in sorted(sources):
            first = st.start_of[source]
            items = by_source[source]
            a, b = max(lo, first), min(hi, first + len(items))
            if b - a < len(items):
                desired[source] = _render(ctx.original(source), items[a - first : b - first]) \
                    if b > a else None  # fmt: skip
            if current.get(source, ...) != desired.get(source, ...):
                changed.append(source)
        if not changed:
            return
        detail = {"input_tokens": st.prefix[n], "max_tokens": int(self.params["max_tokens"]),
                  "kept_messages": hi - lo + system, "state_messages": n}  # fmt: skip
        self._apply(ctx, changed, desired, detail)

    def _desired(self, ctx: ContextView, kept: list[lc.LcMessage]) -> dict[int, Message | None]:
        """Source -> what the request shows when not the whole message (None: nothing)."""
        st: _State = ctx.state
        by_source: dict[int, list[lc.LcMessage]] = {}
        for m in kept:
            by_source.setdefault(m.source, []).append(m)
        out: dict[int, Message | None] = {}
        for source, items in st.by_source.items():
            shown = by_source.get(source, [])
            if len(shown) == len(items) and all(a is b for a, b in zip(shown, items, strict=True)):
                continue
            out[source] = _render(ctx.original(source), shown) if shown else None
        return out

    def _apply(
        self,
        ctx: ContextView,
        changed: list[int],
        desired: dict[int, Message | None],
        detail: dict[str, Any],
    ) -> None:
        """Emit the view changes of the ``changed`` sources (sorted); ``desired`` holds the
        new view of every changed source not shown whole."""
        st: _State = ctx.state
        current = st.view
        if not changed:
            return
        back = [i for i in changed if i in current]
        if back:
            with ctx.action("restore_request", reason="request view recomputed from the full "
                            "history", **detail) as act:  # fmt: skip
                for i in back:
                    if current[i] is not None:
                        act.replace(i, ctx.original(i), Fate.RESTORED)
                act.restore([i for i in back if current[i] is None])
        dropped = [i for i in changed if i in desired and desired[i] is None]
        if dropped:
            with ctx.action("trim", reason=f"outside the {FUNCTION} window (request view)",
                            **detail) as act:  # fmt: skip
                act.remove(dropped, Fate.DROPPED)
        partial = [i for i in changed if desired.get(i) is not None]
        if partial:
            with ctx.action("trim_partial", reason="partly inside the window (allow_partial, "
                            "request view)", **detail) as act:  # fmt: skip
                for i in partial:
                    shown = desired[i]
                    assert shown is not None
                    act.replace(i, shown, Fate.PRUNED)
        for i in changed:
            if i in desired:
                current[i] = desired[i]
            else:
                del current[i]


def _first_max(
    n: int,
    limit: int,
    count: Callable[[int], int],
    item: Callable[[int], lc.LcMessage],
    end_on: tuple[str, ...],
) -> int:
    """How many messages ``lc.first_max_tokens`` keeps of ``n`` (no partial), given
    ``count(k)`` = tokens of its first k and ``item(k)`` = its k-th message (1-based):
    the same binary search and end_on cut, step for step."""
    if not n:
        return 0
    if count(n) <= limit:
        idx = n
        if end_on:
            for _ in range(n):
                if lc.is_type(item(idx), end_on):
                    break
                idx -= 1
        return idx
    left, right = 0, n
    for _ in range(n.bit_length()):
        if left >= right:
            break
        mid = (left + right + 1) // 2
        if count(mid) <= limit:
            left = mid
        else:
            right = mid - 1
    idx = left
    if end_on:
        for _ in range(idx):
            if idx > 0 and not lc.is_type(item(idx), end_on):
                idx -= 1
            else:
                break
    return idx


def _render(original: Message, shown: list[lc.LcMessage]) -> Message:
    """The part of ``original`` its kept LangChain messages still hold."""
    blocks: list[Block] = []
    for item in shown:
        blocks.extend(lc.from_lc_partial(original, item).blocks)
    return replace(original, blocks=tuple(blocks))


STRATEGY = LangChainTrimStrategy
