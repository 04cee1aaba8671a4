"""Semantic Kernel's history reducer rules (``chat_history_reducer_utils.py``), ported.

microsoft/semantic-kernel @ b39d95a34435f4c1d55dd00c86120ce118d847e1 (2026-08-20),
``python/semantic_kernel/contents/history_reducer/``: ``chat_history_reducer_utils.py``
(``get_call_result_pairs``, ``locate_summarization_boundary``,
``locate_safe_reduction_index``, ``extract_range``, ``contains_function_call_or_result``),
``chat_history_truncation_reducer.py`` and ``chat_history_summarization_reducer.py``
(``reduce`` up to the summariser call). The functions work on ``_chat_history.Chat``
entries as the originals do on ``ChatMessageContent`` (role, function call / result items,
the ``__summary__`` metadata key); identity, not equality, as the originals compare.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ._chat_history import Chat

SYSTEM_ROLES = ("system", "developer")


def contains_function_call_or_result(msg: Chat) -> bool:
    """True for TOOL messages and messages holding a function call or result."""
    return msg.role == "tool" or bool(msg.calls) or bool(msg.results)


def get_call_result_pairs(history: list[Chat]) -> list[tuple[int, int]]:
    """(call index, result index) pairs; a call id maps to its last call message, and a
    message's first matching result ends the search in it (the original's ``break``)."""
    pairs: list[tuple[int, int]] = []
    call_ids_seen: dict[str, int] = {}
    for i, msg in enumerate(history):
        for call_id in msg.calls:
            if call_id:
                call_ids_seen[call_id] = i
    for j, msg in enumerate(history):
        for result_id in msg.results:
            if result_id and result_id in call_ids_seen:
                pairs.append((call_ids_seen.pop(result_id), j))
                break
    return pairs


def locate_summarization_boundary(history: list[Chat]) -> int:
    """Index of the first message that is not a summary."""
    for idx, msg in enumerate(history):
        if not msg.summary:
            return idx
    return len(history)


def locate_safe_reduction_index(
    history: list[Chat],
    target_count: int,
    threshold_count: int = 0,
    offset_count: int = 0,
    has_system_message: bool = False,
) -> int | None:
    """Where the kept tail starts, never between a function call and its result, at a user
    message inside the threshold window when there is one; None: no reduction."""
    if has_system_message:
        target_count -= 1
        if target_count <= 0:
            return len(history)
    total_count = len(history)
    threshold_index = total_count - (threshold_count or 0) - target_count
    if threshold_index <= offset_count:
        return None
    message_index = total_count - target_count
    while message_index >= offset_count:
        msg = history[message_index]
        if msg.role in SYSTEM_ROLES:
            break
        if not contains_function_call_or_result(msg):
            break
        prev_idx = message_index - 1
        if prev_idx < offset_count or not contains_function_call_or_result(history[prev_idx]):
            break
        message_index -= 1
    target_index = message_index
    while message_index >= threshold_index:
        if history[message_index].role == "user":
            return message_index
        message_index -= 1
    return target_index


def extract_range(
    history: list[Chat],
    start: int,
    end: int | None = None,
    filter_func: Callable[[Chat], bool] | None = None,
    preserve_pairs: bool = False,
) -> list[Chat]:
    """The messages of ``history[start:end]`` to summarise: system / developer skipped,
    ``filter_func`` ones skipped, call/result pairs inside the range kept or skipped
    together (a later pair member is moved right after the earlier one)."""
    if end is None:
        end = len(history)
    sliced = list(range(start, end))
    pair_map: dict[int, int] = {}
    if preserve_pairs:
        for cidx, ridx in get_call_result_pairs(history):
            pair_map[cidx] = ridx
            pair_map[ridx] = cidx
    extracted: list[Chat] = []
    i = 0
    while i < len(sliced):
        idx = sliced[i]
        msg = history[idx]
        if filter_func and filter_func(msg):
            i += 1
            continue
        if msg.role in SYSTEM_ROLES:
            i += 1
            continue
        if preserve_pairs and idx in pair_map:
            paired_idx = pair_map[idx]
            if start <= paired_idx < end:
                if filter_func and (filter_func(history[paired_idx]) or filter_func(msg)):
                    i += 1
                    if paired_idx in sliced:
                        sliced.remove(paired_idx)
                    continue
                extracted.append(msg)
                if paired_idx > idx:
                    extracted.append(history[paired_idx])
                    if paired_idx in sliced:
                        sliced.remove(paired_idx)
                i += 1
                continue
            extracted.append(msg)
            i += 1
        else:
            extracted.append(msg)
            i += 1
    return extracted


def truncate(history: list[Chat], target_count: int, threshold_count: int) -> list[Chat] | None:
    """``ChatHistoryTruncationReducer.reduce``: the new history, or None (no change)."""
    if len(history) <= target_count + (threshold_count or 0):
        return None
    system_index = next((i for i, m in enumerate(history) if m.role in SYSTEM_ROLES), -1)
    system = history[system_index] if system_index >= 0 else None
    would_go = system is not None and system_index < len(history) - target_count
    index = locate_safe_reduction_index(
        history, target_count, threshold_count, has_system_message=would_go
    )
    if index is None:
        return None
    kept = history[index:]
    if system is not None and all(m is not system for m in kept):
        kept = [system, *kept]
    return kept


@dataclass(frozen=True, slots=True)
class SummaryPlan:
    """``ChatHistorySummarizationReducer.reduce`` up to the summariser call."""

    to_summarize: list[Chat]
    truncation_index: int
    insertion_point: int
    system: Chat | None


def plan_summary(
    history: list[Chat],
    target_count: int,
    threshold_count: int,
    *,
    use_single_summary: bool = True,
    include_function_content_in_summary: bool = False,
) -> SummaryPlan | None:
    if len(history) <= target_count + (threshold_count or 0):
        return None
    system_index = next(
        (i for i, m in enumerate(history) if m.role in SYSTEM_ROLES and not m.summary), -1
    )
    system = history[system_index] if system_index >= 0 else None
    insertion_point = locate_summarization_boundary(history)
    if insertion_point == len(history):
        insertion_point = 0
    would_go = system is not None and system_index < len(history) - target_count
    index = locate_safe_reduction_index(
        history, target_count, threshold_count, offset_count=insertion_point,
        has_system_message=would_go,
    )  # fmt: skip
    if index is None:
        return None
    to_summarize = extract_range(
        history,
        start=0 if use_single_summary else insertion_point,
        end=index,
        filter_func=None if include_function_content_in_summary
        else contains_function_call_or_result,
        preserve_pairs=include_function_content_in_summary,
    )  # fmt: skip
    if not to_summarize:
        return None
    return SummaryPlan(to_summarize, index, insertion_point, system)


def summarized_history(
    history: list[Chat], plan: SummaryPlan, summary: Chat, *, use_single_summary: bool = True
) -> list[Chat]:
    """The history after a summary: kept summaries (not single), the summary, the tail,
    the system message first when it was summarised away."""
    keep: list[Chat] = []
    if plan.insertion_point > 0 and not use_single_summary:
        keep = history[: plan.insertion_point]
    new = [*keep, summary, *history[plan.truncation_index :]]
    if plan.system is not None and not any(m is plan.system for m in new):
        new = [plan.system, *new]
    return new
