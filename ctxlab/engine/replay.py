"""Replay a conversation through a strategy, one inference call at a time.

``replay(...)`` streams ``StepRecord``s (the caller saves, broadcasts or prints them);
``run(...)`` collects a whole ``ReplayResult`` with metrics.

A step is one inference call of the original agent: it happens before each assistant
message, except an assistant message that continues the same call (same non-empty ``id``
as the assistant message right before it, as Claude Code splits one response into
several records).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping
from typing import Any

from .core.context import ReplayContext
from .core.heap import existing_heap_frozen
from .core.model import Conversation, Message, Role
from .core.records import ReplayResult, StepRecord
from .core.summary_request import Summarizer
from .evaluate.metrics import compute_metrics
from .strategies import Strategy, make_strategy
from .summarize.offline import OfflineSummarizer
from .summarize.recorded import agreement_rows
from .tokens.reference import ReferenceTokens, reference_tokens


def call_starts(messages: tuple[Message, ...]) -> list[int]:
    """Source indexes of the assistant messages that start an inference call."""
    out: list[int] = []
    assistant = Role.ASSISTANT
    prev_role: Role | None = None
    prev_id = ""  # (the previous message's id when it is an assistant's)
    for i, msg in enumerate(messages):
        role = msg.role
        if role is assistant:
            mid = msg.id
            if not (prev_role is assistant and mid and prev_id == mid):
                out.append(i)
            prev_id = mid
        prev_role = role
    return out


class Replay:
    """One replay in progress: iterate it for StepRecords; ``ctx.result`` accumulates."""

    def __init__(
        self,
        conversation: Conversation,
        strategy: str | Mapping[str, Any] | Strategy,
        *,
        params: Mapping[str, Any] | None = None,
        summarizer: Summarizer | None = None,
        reference: ReferenceTokens | None = None,
    ) -> None:
        self.strategy = make_strategy(strategy, params)
        self.conversation = conversation
        self.ctx = ReplayContext(
            conversation,
            self.strategy,
            reference=reference or reference_tokens(conversation),
            summarizer=summarizer or OfflineSummarizer(),
        )
        weakref.finalize(self, self.ctx.close)  # dropped: its context's cycle is broken

    def __iter__(self) -> Iterator[StepRecord]:
        context, strategy = self.ctx, self.strategy
        ctx = context.view  # what the strategy sees: read-only, changed through actions
        messages = self.conversation.messages
        starts = call_starts(messages)
        if not starts:
            return
        last = starts[-1]
        is_start = bytearray(len(messages))
        for i in starts:
            is_start[i] = 1
        strategy.prepare(ctx)
        first = 1 if ctx.system_index is not None else 0
        append, record, before_call = context.append, context.record, strategy.before_call
        # (the base class's hook does nothing: not called for every message)
        after_append = (
            None
            if type(strategy).after_append is Strategy.after_append
            and "after_append" not in getattr(strategy, "__dict__", ())
            else strategy.after_append
        )
        for i in range(first, last + 1):
            if is_start[i]:
                context.source_index = i
                if context.pending:
                    context.run_pending()
                before_call(ctx)
                yield record(i)
                if i == last:
                    break
            append(i)
            if after_append is not None:
                after_append(ctx, i)

    @property
    def result(self) -> ReplayResult:
        return self.ctx.result

    def exhaust(self) -> ReplayResult:
        """Run every remaining step (the heap that existed before is frozen meanwhile, see
        ``heap``) and return the result, without metrics."""
        with existing_heap_frozen():
            for _ in self:
                pass
        return self.ctx.result

    def finish(self) -> ReplayResult:
        """Run every remaining step and return the result with its metrics."""
        result = self.exhaust()
        threshold = self.strategy.threshold(self.ctx.view)
        result.metrics = compute_metrics(result, threshold=threshold, reference=self.ctx.reference)
        conversation = self.conversation
        if conversation.compactions:  # the original's own compactions next to the replay's
            result.metrics["original_compactions"] = agreement_rows(conversation, result)
        return result


def replay(
    conversation: Conversation,
    strategy: str | Mapping[str, Any] | Strategy,
    *,
    params: Mapping[str, Any] | None = None,
    summarizer: Summarizer | None = None,
    reference: ReferenceTokens | None = None,
) -> Iterator[StepRecord]:
    """Stream the StepRecords of ``conversation`` under ``strategy`` (name, spec dict
    or instance). Params are validated up front (ValueError names the bad one)."""
    return iter(
        Replay(conversation, strategy, params=params, summarizer=summarizer, reference=reference)
    )


def run(
    conversation: Conversation,
    strategy: str | Mapping[str, Any] | Strategy,
    *,
    params: Mapping[str, Any] | None = None,
    summarizer: Summarizer | None = None,
    reference: ReferenceTokens | None = None,
) -> ReplayResult:
    """The whole replay: steps, events, summaries, findings, offloads and metrics."""
    job = Replay(conversation, strategy, params=params, summarizer=summarizer, reference=reference)
    return job.finish()
