"""Semantic Kernel ``ChatHistorySummarizationReducer``: summarise what falls before the
last ``target_count`` messages.

Sources, microsoft/semantic-kernel @ b39d95a34435f4c1d55dd00c86120ce118d847e1 (2026-08-20),
``python/semantic_kernel/contents/history_reducer/chat_history_summarization_reducer.py``:

- ``reduce``: nothing while the history holds at most ``target_count + threshold_count``
  messages; the first system/developer message that is not a summary is preserved;
  ``locate_summarization_boundary`` (existing summaries lead the history) is the offset of
  ``locate_safe_reduction_index`` (the truncation reducer's cut, ``_semantic_kernel``);
  ``extract_range(history, 0 if use_single_summary else boundary, cut)`` picks what is
  summarised: system/developer messages skipped, and function calls/results skipped unless
  ``include_function_content_in_summary`` (then kept in pairs); nothing to summarise: no
  change. The summary (``__summary__`` metadata) replaces everything before the cut
  (earlier summaries kept only without ``use_single_summary``), the system message first.
- ``_summarize``: the messages to summarise, then one message of the instruction role
  (``AuthorRole.SYSTEM`` unless the settings name another) holding
  ``DEFAULT_SUMMARIZATION_PROMPT`` (byte-exact in
  ``ctxlab/engine/data/prompts/semantic-kernel-b39d95a3-summarization.txt``, MIT,
  ``LICENSE-semantic-kernel``) or ``summarization_instructions``.
- ``fail_on_error`` (default true): a failed summary raises ``ChatHistoryReducerException``
  out of ``reduce()``; the replay records ``summary_failed`` and goes on with the history
  unchanged (what ``fail_on_error=False`` does), as the lab cannot stop the agent.
- Defaults: ``simple_chatbot_with_summary_history_reducer.py`` (``target_count=3,
  threshold_count=2``, ``reduce()`` before every user turn).
- Tests ported: ``python/tests/unit/contents/test_chat_history_summarization_reducer.py``
  (``tests/engine/strategies/test_semantic_kernel.py``).

Readings as for the truncation reducer (``semantic_kernel_truncation``): one SK message per
OpenAI message, ``reduce_at``, reference cl100k counts for the curves.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..core.findings import check_summary_size
from ..core.params import Param
from ..core.records import Fate
from ..core.summary_request import MaterialItem, PromptMessage, SummaryRequest
from . import _chat_history as ch
from . import _semantic_kernel as sk
from .semantic_kernel_truncation import SemanticKernelReducer, _State, apply_partly, base_params

if TYPE_CHECKING:
    from ..core.context_view import ContextView

DATA = Path(__file__).resolve().parents[1] / "data" / "prompts"
DEFAULT_SUMMARIZATION_PROMPT = (DATA / "semantic-kernel-b39d95a3-summarization.txt").read_text(
    encoding="utf-8"
)


class SemanticKernelSummarizationStrategy(SemanticKernelReducer):
    name: ClassVar[str] = "semantic_kernel_summarization"
    label: ClassVar[str] = "Semantic Kernel ChatHistorySummarizationReducer"
    description: ClassVar[str] = (
        "Semantic Kernel's ChatHistorySummarizationReducer: when the chat history holds "
        "more than target_count + threshold_count messages, everything before the last "
        "target_count (cut as the truncation reducer cuts) is replaced by one summary "
        "message (function calls and results left out of the summary by default); the "
        "system message is preserved."
    )
    estimator: ClassVar[str] = "reference cl100k counts (the reducer counts messages, not tokens)"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        *base_params(3, 2),
        Param("summarization_instructions", "", "The instruction message appended after "
              "the messages to summarise (empty: DEFAULT_SUMMARIZATION_PROMPT, the field's "
              "default).", "str",
              origin="ChatHistorySummarizationReducer.summarization_instructions"),
        Param("use_single_summary", True, "Summarise from the start, earlier summaries "
              "included, into one summary (false: keep earlier summaries, add another).",
              "bool", origin="ChatHistorySummarizationReducer.use_single_summary"),
        Param("include_function_content_in_summary", False, "Give function calls and "
              "results to the summariser (in pairs) instead of leaving them out.", "bool",
              origin="ChatHistorySummarizationReducer.include_function_content_in_summary"),
        Param("instruction_role", "system", "Role of the instruction message "
              "(execution_settings.instruction_role).", "str",
              choices=("system", "developer", "user"),
              origin="PromptExecutionSettings.instruction_role"),
    )  # fmt: skip

    def threshold(self, ctx: ContextView) -> int | None:
        return None

    def reduce(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        single = bool(self.params["use_single_summary"])
        plan = sk.plan_summary(
            st.history, self.target, self.threshold_n, use_single_summary=single,
            include_function_content_in_summary=bool(
                self.params["include_function_content_in_summary"]),
        )  # fmt: skip
        if plan is None:
            return
        before = len(st.history)
        detail = {"target_count": self.target, "threshold_count": self.threshold_n,
                  "messages_before": before}  # fmt: skip
        prompt: list[PromptMessage] = []
        material: list[MaterialItem] = []
        for e in plan.to_summarize:
            text = self._text(ctx, e)
            role = "assistant" if e.role == "assistant" else "user"
            prompt.append(PromptMessage(role, text))
            material.append(MaterialItem(role, text, e.source))
        instructions = str(self.params["summarization_instructions"]) or (
            DEFAULT_SUMMARIZATION_PROMPT
        )
        role = "user" if self.params["instruction_role"] == "user" else "system"
        prompt.append(PromptMessage(role, instructions))
        request = SummaryRequest(
            strategy=self.name, system="", messages=tuple(prompt), style="plain",
            material=tuple(material), previous_summary=ctx.summary,
        )  # fmt: skip
        summarised = sorted({e.source for e in plan.to_summarize if e.source >= 0})
        record = ctx.summarize(request, messages=summarised)
        if record.error:
            ctx.emit("summary_failed", summary_id=record.id, error=record.error,
                     outcome="ChatHistoryReducerException (fail_on_error): history unchanged",
                     **detail)  # fmt: skip
            return
        text = record.output
        if not text:
            ctx.emit("summary_empty", summary_id=record.id, outcome="no change", **detail)
            return
        summary = ch.Chat("assistant", -1, summary=True, text=text)
        new = sk.summarized_history(st.history, plan, summary, use_single_summary=single)
        previous_ref = ctx.summary_ref
        gone, partly = self.install(ctx, new)
        in_summary = set(summarised)
        with ctx.action(
            "summarise",
            reason=f"chat history over target_count + threshold_count ({self.target} + "
            f"{self.threshold_n}): the messages before the last ones summarised",
            messages_after=len(new), **detail,
        ) as act:  # fmt: skip
            act.remove([s for s in gone if s in in_summary], Fate.SUMMARISED)
            act.remove([s for s in gone if s not in in_summary], Fate.DROPPED,
                       reason="function call/result left out of the summary")  # fmt: skip
            apply_partly(ctx, act, st.history, partly)
            rendered = self._summaries(st.history)
            ctx.set_summary(text, tokens=self.count_text(rendered), rendered=rendered,
                            summary_id=record.id)  # fmt: skip
            act.summary_id = record.id
            act.always = True
        check_summary_size(ctx, summary_rendered=text, replaced=gone, summary_id=record.id,
                           previous_ref=previous_ref)  # fmt: skip

    @staticmethod
    def _summaries(history: list[ch.Chat]) -> str:
        return "\n\n".join(e.text for e in history if e.summary)

    @staticmethod
    def _text(ctx: ContextView, e: ch.Chat) -> str:
        if e.source < 0:
            return e.text
        message = ctx.original(e.source)
        return "\n".join(message.blocks[p].text for p in e.parts if message.blocks[p].text)


STRATEGY = SemanticKernelSummarizationStrategy
