"""AutoGen's ``HeadAndTailChatCompletionContext`` (autogen-core 0.7.5).

Pinned: microsoft/autogen @ 027ecf0a379bcc1d09956d46d12d44a3ad9cee14,
``python/packages/autogen-core/src/autogen_core/model_context/_head_and_tail_chat_completion_context.py``
(shared behaviour and the estimator: ``_autogen_context``).

``get_messages()``: when the store holds more than ``head_size + tail_size`` messages, the
first ``head_size`` (less the last when it is an assistant message of function calls only),
a ``UserMessage("Skipped {n} messages.", source="System")`` with ``n = len - head_size -
tail_size``, and the last ``tail_size`` (less the first when it is a tool-result message);
otherwise every message. The placeholder is shown in the place of the first message it
stands for (PRUNED, its text updated as ``n`` grows). Both sizes are required in AutoGen
(> 0) and its documentation gives no example; the defaults here, 3 and 2, are the ones
autogen-agentchat's own tests use (``tests/test_agent.py``).

Ported tests (``python/packages/autogen-core/tests/test_model_context.py``):
``test_head_and_tail_model_context`` as a table in
``tests/engine/strategies/test_autogen_contexts.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ..core.model import Block, BlockKind, Message, Role
from ..core.params import Param
from ._autogen_context import AutoGenContextStrategy, Interval, ViewState

if TYPE_CHECKING:
    from ..core.context_view import ContextView

PLACEHOLDER_SOURCE = "System"


def placeholder_text(skipped: int) -> str:
    return f"Skipped {skipped} messages."


def head_tail_view(
    units: list[Any], head_size: int, tail_size: int, is_calls: Any, is_result: Any
) -> tuple[int, int, int] | None:
    """(head end, tail start, skipped) of ``get_messages``, None when it returns all."""
    n = len(units)
    skipped = n - head_size - tail_size
    if skipped <= 0:
        return None
    head_end = head_size
    if is_calls(units[head_end - 1]):
        head_end -= 1
    tail_start = n - tail_size
    if is_result(units[tail_start]):
        tail_start += 1
    return head_end, tail_start, skipped


class AutoGenHeadAndTailStrategy(AutoGenContextStrategy):
    name: ClassVar[str] = "autogen_head_and_tail"
    label: ClassVar[str] = "AutoGen HeadAndTailChatCompletionContext (autogen-core 0.7.5)"
    description: ClassVar[str] = (
        "AutoGen 0.4+ HeadAndTailChatCompletionContext: every model call sees the first "
        "head_size and the last tail_size messages of the agent's context with a "
        "'Skipped n messages.' note between them; the store keeps everything."
    )
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "head_size",
            3,
            "Oldest messages kept (required in AutoGen, > 0; 3 as in its agent tests).",
            min=1,
            origin="HeadAndTailChatCompletionContext(head_size=...)",
        ),
        Param(
            "tail_size",
            2,
            "Newest messages kept (required in AutoGen, > 0; 2 as in its agent tests).",
            min=1,
            origin="HeadAndTailChatCompletionContext(tail_size=...)",
        ),
        AutoGenContextStrategy.WINDOW_PARAM,
    )

    def view(self, ctx: ContextView, st: ViewState) -> tuple[list[Interval], dict[str, Any]]:
        head, tail = int(self.params["head_size"]), int(self.params["tail_size"])
        cut = head_tail_view(st.units, head, tail, self.is_calls, self.is_result)
        detail: dict[str, Any] = {"head_size": head, "tail_size": tail,
                                  "stored_messages": len(st.units)}  # fmt: skip
        if cut is None:
            return [], detail
        head_end, tail_start, skipped = cut
        if st.carrier < 0:
            st.carrier = st.units[head_end].sources[0]
        detail["skipped"] = skipped
        return [(head_end, tail_start)], detail

    def placeholder(self, ctx: ContextView, st: ViewState) -> Message | None:
        if st.carrier < 0:
            return None
        skipped = len(st.units) - int(self.params["head_size"]) - int(self.params["tail_size"])
        if skipped == st.skipped:
            return None
        st.skipped = skipped
        return Message(
            role=Role.USER,
            blocks=(Block(BlockKind.TEXT, placeholder_text(skipped)),),
            name=PLACEHOLDER_SOURCE,
            flags=frozenset({"meta"}),
        )


STRATEGY = AutoGenHeadAndTailStrategy
