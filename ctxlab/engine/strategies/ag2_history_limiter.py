"""AG2 ``MessageHistoryLimiter``: only the last ``max_messages`` messages reach the model.

Sources in ``_ag2`` (ag2ai/ag2 @ 70badeefcefcefca9a52b5f43636a616a7952fee,
``autogen/agentchat/contrib/capabilities/transforms.py``). ``apply_transform``: with more
than ``max_messages`` messages, keep the first one if ``keep_first_message``, then walk back
from the newest, one slot per message; the last slot is not given to a ``tool`` message
(the slot is used all the same, so the request then holds ``max_messages - 1``), so a tool
response never leads the request without its call. ``exclude_names`` filters messages by
their ``name`` field, which transcripts do not carry: not modelled.

Defaults: ``max_messages=10`` as in AG2's "Handling Long Contexts" guide
(``MessageHistoryLimiter(max_messages=10)``); ``keep_first_message`` false (the
constructor's default). Tests ported: ``test/agentchat/contrib/capabilities/test_transforms.py``
``test_message_history_limiter_apply_transform`` / ``..._keep_first_message`` cases as a
table (``tests/engine/strategies/test_ag2.py``).

A request view (``_ag2``): the agent's history keeps every message. The limiter counts
messages; the curves use the lab's reference counts (cl100k), the tokenizer AG2's own
``count_token`` uses for its default model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.params import Param
from ..core.strategy import ReferenceEstimator, Strategy
from . import _ag2
from . import _chat_history as ch

if TYPE_CHECKING:
    from ..core.context_view import ContextView

_ORIGIN = "transforms.MessageHistoryLimiter"


@dataclass(slots=True)
class _State:
    sources: list[int] = field(default_factory=list)  # AG2 message k = source sources[k]
    roles: list[str] = field(default_factory=list)
    lo: int = 0  # positions below lo (but the kept first) are left out already
    view: dict[int, Any] = field(default_factory=dict)


class AG2HistoryLimiterStrategy(ReferenceEstimator, Strategy):
    name: ClassVar[str] = "ag2_history_limiter"
    label: ClassVar[str] = "AG2 TransformMessages: MessageHistoryLimiter"
    description: ClassVar[str] = (
        "AG2's MessageHistoryLimiter transform (TransformMessages capability): before every "
        "reply only the last max_messages of the agent's messages are sent (optionally the "
        "first one too; a tool response never takes the last slot); the stored history "
        "keeps everything and nothing is summarised."
    )
    estimator: ClassVar[str] = "reference cl100k counts (the limiter counts messages)"
    WINDOW = "context_window"
    State: ClassVar[type[Any]] = _State
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("max_messages", 10, "Messages kept (the guide's example: 10).", min=1,
              origin=f"{_ORIGIN}(max_messages=...)"),
        Param("keep_first_message", False, "Keep the first message (it takes a slot).",
              "bool", origin=f"{_ORIGIN}(keep_first_message=...)"),
        Param("context_window", 128_000, "Model context window (overflow findings only).",
              min=1_000, origin="model context window"),
    )  # fmt: skip

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        self.max_messages = int(self.params["max_messages"])
        self.keep_first = bool(self.params["keep_first_message"])

    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_window"])

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        st.sources.append(index)
        st.roles.append(ch.whole(ctx.original(index), index).role)

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        n = len(st.roles)
        if n <= self.max_messages:
            return
        slots = self.max_messages - (1 if self.keep_first else 0)
        first = 1 if self.keep_first else 0
        if slots <= 0:  # only the first message
            start, boundary = n, -1
        else:
            boundary = n - slots  # the last slot's position (>= 1)
            start = boundary
            if st.roles[boundary] == "tool":
                start = boundary + 1
        lo = max(st.lo, first)
        out = list(range(lo, start))
        if not out:
            return
        st.lo = start
        changed = [st.sources[p] for p in out]
        desired: dict[int, Any] = dict.fromkeys(changed)
        _ag2.apply_view(
            ctx, st.view, desired, changed, "trim",
            f"older than the last {self.max_messages} messages (MessageHistoryLimiter, "
            "request view)",
            {"max_messages": self.max_messages, "messages": n,
             "tool_skipped_at_last_slot": boundary >= 0 and start > boundary},
        )  # fmt: skip


STRATEGY = AG2HistoryLimiterStrategy
