"""AutoGen's ``TokenLimitedChatCompletionContext`` (autogen-core 0.7.5, experimental).

Pinned: microsoft/autogen @ 027ecf0a379bcc1d09956d46d12d44a3ad9cee14,
``python/packages/autogen-core/src/autogen_core/model_context/_token_limited_chat_completion_context.py``;
its estimator is the model client's ``count_tokens`` (``count_tokens_openai`` of
autogen-ext's ``OpenAIChatCompletionClient``: ``_autogen_context``).

``get_messages()``: while the store's messages count more than ``token_limit`` (or, with
``token_limit=None``, the default, while the client's ``remaining_tokens`` is negative:
more than the model's token limit), the message at ``len // 2`` is popped; then a leading
tool-result message is dropped. The gap grows from the middle out: after ``k`` pops of
``n`` messages it is ``[(n - k + 1) // 2, (n - k + 1) // 2 + k)``, so the first ``k`` whose
count fits is found by binary search over running sums (each pop is one message's count
less: the total only falls). The view can give messages back as the middle moves on
(``restore_request``). System messages and tools are outside the count (no ``tool_schema``).

Ported tests (``python/packages/autogen-core/tests/test_model_context.py``):
``test_token_limited_model_context_with_token_limit`` and ``..._openai`` as tables in
``tests/engine/strategies/test_autogen_contexts.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.params import Param
from ._autogen_context import REPLY_PRIMER, AutoGenContextStrategy, Interval, ViewState

if TYPE_CHECKING:
    from ..core.context_view import ContextView


def middle_gap(n: int, k: int) -> Interval:
    """The messages ``k`` pops at ``len(messages) // 2`` take out of ``n``."""
    lo = (n - k + 1) // 2
    return lo, lo + k


def pops(prefix: list[int], limit: int, fixed: int) -> int:
    """The fewest middle pops after which ``fixed + count(messages) <= limit`` (all of
    them, ``n``, when none is enough: the loop stops on an empty list)."""
    n = len(prefix) - 1
    total = prefix[n] + fixed

    def count(k: int) -> int:
        lo, hi = middle_gap(n, k)
        return total - (prefix[hi] - prefix[lo])

    if count(0) <= limit:
        return 0
    lo, hi = 1, n
    while lo < hi:
        mid = (lo + hi) // 2
        if count(mid) <= limit:
            hi = mid
        else:
            lo = mid + 1
    return lo


def token_limited_view(
    prefix: list[int], limit: int, first_is_result: Callable[[], bool]
) -> tuple[list[Interval], int]:
    """The units left out and the number of pops."""
    n = len(prefix) - 1
    k = pops(prefix, limit, REPLY_PRIMER)
    if k == 0:
        gaps: list[Interval] = []
    else:
        gaps = [middle_gap(n, k)]
    if n - k > 0 and first_is_result():
        # messages[0] is the store's first message (the gap never reaches it while one
        # message is left): a leading FunctionExecutionResultMessage is dropped.
        gaps = [(0, 1)] + [(max(lo, 1), hi) for lo, hi in gaps if hi > 1]
    return gaps, k


class AutoGenTokenLimitedStrategy(AutoGenContextStrategy):
    name: ClassVar[str] = "autogen_token_limited"
    label: ClassVar[str] = "AutoGen TokenLimitedChatCompletionContext (autogen-core 0.7.5)"
    description: ClassVar[str] = (
        "AutoGen 0.4+ TokenLimitedChatCompletionContext: before every model call, messages "
        "are popped from the middle of the agent's context until it counts at most "
        "token_limit tokens (default: the model's limit); the store keeps everything, so "
        "messages come back as the middle moves."
    )
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "token_limit",
            0,
            "Tokens the view may count (0 = None, the default: the model's token limit).",
            min=0,
            origin="TokenLimitedChatCompletionContext(token_limit=None)",
        ),
        AutoGenContextStrategy.WINDOW_PARAM,
    )

    def limit(self) -> int:
        return int(self.params["token_limit"]) or int(self.params["model_token_limit"])

    def threshold(self, ctx: ContextView) -> int | None:
        return self.limit()

    def compared_tokens(self, ctx: ContextView) -> int | None:
        # count_tokens(messages): the context's messages and the reply primer, no system.
        return ctx.request_tokens() - ctx.system_tokens - ctx.tools_tokens + REPLY_PRIMER

    def view(self, ctx: ContextView, st: ViewState) -> tuple[list[Interval], dict[str, Any]]:
        limit = self.limit()
        units = st.units
        gaps, k = token_limited_view(
            st.prefix, limit, lambda: bool(units) and self.is_result(units[0])
        )
        detail = {"token_limit": limit, "stored_messages": len(units), "popped": k,
                  "input_tokens": st.prefix[-1] + REPLY_PRIMER}  # fmt: skip
        return gaps, detail


STRATEGY = AutoGenTokenLimitedStrategy
