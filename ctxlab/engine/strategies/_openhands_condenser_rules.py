"""OpenHands condensers' arithmetic and prompt, framework-free and event-id based.

Pinned source: github.com/All-Hands-AI/OpenHands @ 156d0686c46aafb0fa9d291da6421fb6f64dddc0

- ``openhands/memory/condenser/impl/llm_summarizing_condenser.py`` (``get_condensation``,
  ``should_condense``, the prompt below verbatim, ``_truncate``)
- ``openhands/memory/condenser/impl/amortized_forgetting_condenser.py``
- ``openhands/memory/condenser/impl/recent_events_condenser.py``
- ``openhands/memory/condenser/impl/observation_masking_condenser.py``
- ``openhands/memory/view.py`` ``View.from_events`` (forgotten ids, summary at its offset)
- ``openhands/events/serialization/event.py`` ``truncate_content``

The functions take a view as a list of event ids (any hashable) and return what the
original keeps or forgets, Python slicing quirks included (``view[-0:]`` is the whole
view): the strategy maps ctxlab messages onto them, the tests run the original's harness
over them.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

E = TypeVar("E", bound=Hashable)

SUMMARY_PROMPT = 'You are maintaining a context-aware state summary for an interactive agent.\nYou will be given a list of events corresponding to actions taken by the agent, and the most recent previous summary if one exists.\nIf the events being summarized contain ANY task-tracking, you MUST include a TASK_TRACKING section to maintain continuity.\nWhen referencing tasks make sure to preserve exact task IDs and statuses.\n\nTrack:\n\nUSER_CONTEXT: (Preserve essential user requirements, goals, and clarifications in concise form)\n\nTASK_TRACKING: {Active tasks, their IDs and statuses - PRESERVE TASK IDs}\n\nCOMPLETED: (Tasks completed so far, with brief results)\nPENDING: (Tasks that still need to be done)\nCURRENT_STATE: (Current variables, data structures, or relevant state)\n\nFor code-specific tasks, also include:\nCODE_STATE: {File paths, function signatures, data structures}\nTESTS: {Failing cases, error messages, outputs}\nCHANGES: {Code edits, variable updates}\nDEPS: {Dependencies, imports, external calls}\nVERSION_CONTROL_STATUS: {Repository state, current branch, PR status, commit history}\n\nPRIORITIZE:\n1. Adapt tracking format to match the actual task type\n2. Capture key user requirements and goals\n3. Distinguish between completed and pending tasks\n4. Keep all sections concise and relevant\n\nSKIP: Tracking irrelevant details for the current task type\n\nExample formats:\n\nFor code tasks:\nUSER_CONTEXT: Fix FITS card float representation issue\nCOMPLETED: Modified mod_float() in card.py, all tests passing\nPENDING: Create PR, update documentation\nCODE_STATE: mod_float() in card.py updated\nTESTS: test_format() passed\nCHANGES: str(val) replaces f"{val:.16G}"\nDEPS: None modified\nVERSION_CONTROL_STATUS: Branch: fix-float-precision, Latest commit: a1b2c3d\n\nFor other tasks:\nUSER_CONTEXT: Write 20 haikus based on coin flip results\nCOMPLETED: 15 haikus written for results [T,H,T,H,T,H,T,T,H,T,H,T,H,T,H]\nPENDING: 5 more haikus needed\nCURRENT_STATE: Last flip: Heads, Haiku count: 15/20'
# sha256 of SUMMARY_PROMPT as cut from the pinned file (a test checks it).
SUMMARY_PROMPT_SHA256 = "d9a9cf17df6182b1c365abb04d9d91975943651d3dddaf035faf42b16d8f01a7"
MASKED = "<MASKED>"
TRUNCATED_NOTE = "\n[... Observation truncated due to length ...]\n"
NO_SUMMARY = "No events summarized"


def truncate_content(content: str, max_chars: int | None = None) -> str:
    """``truncate_content``: the middle cut out, half of ``max_chars`` kept each side."""
    if max_chars is None or len(content) <= max_chars or max_chars < 0:
        return content
    half = max_chars // 2
    return content[:half] + TRUNCATED_NOTE + content[-half:]


def check_rolling_config(max_size: int, keep_first: int) -> None:
    """The LLMSummarizing/AmortizedForgetting constructors' checks, same order and words."""
    if keep_first >= max_size // 2:
        raise ValueError(
            f"keep_first ({keep_first}) must be less than half of max_size ({max_size})"
        )
    if keep_first < 0:
        raise ValueError(f"keep_first ({keep_first}) cannot be negative")
    if max_size < 1:
        raise ValueError(f"max_size ({max_size}) cannot be non-positive")


def should_condense(view_size: int, max_size: int) -> bool:
    """Rolling condensers condense when the view is *longer* than ``max_size``."""
    return view_size > max_size


def llm_summarizing_forgotten(
    view: Sequence[E], keep_first: int, max_size: int, summary: E
) -> list[E]:
    """The events ``LLMSummarizingCondenser.get_condensation`` forgets (the previous
    summary ``summary`` is never among them). Empty: the original's ``min()`` raises."""
    head = view[:keep_first]
    events_from_tail = max_size // 2 - len(head) - 1
    return [e for e in view[keep_first:-events_from_tail] if e != summary]


def amortized_forgotten(view: Sequence[E], keep_first: int, max_size: int) -> list[E]:
    """The events ``AmortizedForgettingCondenser.get_condensation`` forgets, in view order."""
    head = list(view[:keep_first])
    events_from_tail = max_size // 2 - len(head)
    keep = set(head) | set(view[-events_from_tail:])
    return [e for e in view if e not in keep]


def recent_view(view: Sequence[E], keep_first: int, max_events: int) -> list[E]:
    """``RecentEventsCondenser.condense``: head + tail (a zero tail is ``view[-0:]``: all)."""
    head = list(view[:keep_first])
    tail_length = max(0, max_events - len(head))
    return head + list(view[-tail_length:])


def masked_positions(view_size: int, attention_window: int) -> range:
    """View positions outside the attention window (observations there are masked)."""
    return range(max(0, view_size - attention_window))


def from_events(
    history: Sequence[E],
    forgotten: set[E],
    summary_offset: int | None,
    summary: E,
) -> list[E]:
    """``View.from_events``: the history minus forgotten ids, the latest summary inserted
    at its offset (``list.insert``: an offset past the end appends)."""
    kept = [e for e in history if e not in forgotten]
    if summary_offset is not None:
        kept.insert(summary_offset, summary)
    return kept
