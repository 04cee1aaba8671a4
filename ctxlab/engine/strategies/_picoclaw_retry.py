"""PicoClaw's reactive overflow path (``pkg/agent/pipeline_llm.go`` and ``turn_state.go``
@ cf67dd3) as pure functions.

When the provider answers a context-length error, ``CallLLM`` compacts the session
(``forceCompression``, reason ``llm_retry``), re-assembles the request from it, splits off
the current turn's already-persisted messages (protected: ``splitHistoryForActiveTurn``)
and trims only the older part to fit. Spec: docs/strategies/picoclaw.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._picoclaw_budget import PicoMsg

# config.go MaxLLMRetries: 0 (the default, unset) falls back to 2 in CallLLM.
MAX_LLM_RETRIES = 2
# Sent to the user on the first context-length retry (not on the internal channels cli,
# system, subagent; the replay has no channel and always records it).
RETRY_NOTICE = "Context window exceeded. Compressing history and retrying..."
NOT_FIT_ERROR = (
    "context window still exceeded after retry compaction; refusing to drop active turn messages"
)
RETRIES_EXHAUSTED_ERROR = "LLM call failed after retries: context_length_exceeded"


def effective_max_retries(configured: int) -> int:
    """``maxRetries <= 0`` means the code's fallback, 2."""
    return configured if configured > 0 else MAX_LLM_RETRIES


def matching_turn_tail(history: Sequence[PicoMsg], persisted: Sequence[PicoMsg]) -> int:
    """``matchingTurnMessageTail``: the longest suffix of ``history`` equal to a suffix of
    the turn's persisted messages (compared by content: ``PicoMsg.src`` takes no part)."""
    for size in range(min(len(history), len(persisted)), 0, -1):
        if list(history[len(history) - size :]) == list(persisted[len(persisted) - size :]):
            return size
    return 0


def split_history_for_active_turn(
    history: Sequence[PicoMsg], persisted: Sequence[PicoMsg]
) -> tuple[list[PicoMsg], list[PicoMsg]]:
    """``splitHistoryForActiveTurn``: (stable older part, protected current-turn tail).
    After a single-turn ``forceCompression`` only the user message is left, which matches
    no tail of the persisted turn: nothing is protected then."""
    matched = matching_turn_tail(history, persisted)
    if matched <= 0:
        return list(history), []
    cut = len(history) - matched
    return list(history[:cut]), list(history[cut:])
