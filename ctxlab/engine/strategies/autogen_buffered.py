"""AutoGen's ``BufferedChatCompletionContext`` (autogen-core 0.7.5).

Pinned: microsoft/autogen @ 027ecf0a379bcc1d09956d46d12d44a3ad9cee14,
``python/packages/autogen-core/src/autogen_core/model_context/_buffered_chat_completion_context.py``
(shared behaviour and the estimator: ``_autogen_context``).

``get_messages()`` returns the last ``buffer_size`` messages of the store, less the first one
when it is a ``FunctionExecutionResultMessage`` (its call fell outside). ``buffer_size`` has no
default in AutoGen (it must be > 0); 5 is the value of its documentation's example.

Ported tests (``python/packages/autogen-core/tests/test_model_context.py``):
``test_buffered_model_context`` as a table in ``tests/engine/strategies/test_autogen_contexts.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ..core.params import Param
from ._autogen_context import AutoGenContextStrategy, Interval, ViewState

if TYPE_CHECKING:
    from ..core.context_view import ContextView


def buffered_start(units: list[Any], buffer_size: int, is_result: Any) -> int:
    """Index of the first unit ``get_messages`` keeps (``len`` when none)."""
    start = max(0, len(units) - buffer_size)
    if start < len(units) and is_result(units[start]):
        start += 1
    return start


class AutoGenBufferedStrategy(AutoGenContextStrategy):
    name: ClassVar[str] = "autogen_buffered"
    label: ClassVar[str] = "AutoGen BufferedChatCompletionContext (autogen-core 0.7.5)"
    description: ClassVar[str] = (
        "AutoGen 0.4+ BufferedChatCompletionContext: every model call sees the last "
        "buffer_size messages of the agent's context (less a leading tool-result message "
        "whose call fell outside); the store keeps everything."
    )
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "buffer_size",
            5,
            "Messages in the view (required in AutoGen; 5 as in its documentation).",
            min=1,
            origin="BufferedChatCompletionContext(buffer_size=...)",
        ),
        AutoGenContextStrategy.WINDOW_PARAM,
    )

    def view(self, ctx: ContextView, st: ViewState) -> tuple[list[Interval], dict[str, Any]]:
        size = int(self.params["buffer_size"])
        start = buffered_start(st.units, size, self.is_result)
        detail = {"buffer_size": size, "stored_messages": len(st.units),
                  "kept_messages": len(st.units) - start}  # fmt: skip
        return ([(0, start)] if start else []), detail


STRATEGY = AutoGenBufferedStrategy
