"""Strategy configurations, replay runs and what a run stored.

Storage (grows with steps + events, never with steps x context size):

- ``StrategyConfig``: a named, user-owned parameter set for one strategy preset.
- ``RunGroup``: runs started together on one transcript (a comparison).
- ``Run``: one replay of a transcript under a config *snapshot* (``strategy`` + ``params``;
  ``config`` is only a back-link, editing the config never changes a finished run). Status,
  progress, heartbeat, error and the engine's metrics (``metrics`` JSON) live here.
- ``RunStep``: ONE row per step (inference call): tokens (strategy / reference / reported),
  zones, the context as half-open source-index ranges (``[[start, end], ...]``: O(ranges),
  usually 1-3 pairs), the summary in force and pending async work.
- ``RunEvent``: one row per strategy action. ``changes`` carries each touched message's new
  fate (``{"index", "fate", "reason", "message", "offload_path"}``; ``message`` is the modified
  message as codec JSON for truncated / offloaded / pruned fates). A message's fate at step
  ``s`` = the last change of the events with ``step <= s`` (``ctxlab.engine.core.records.fates_at``), so fates are
  never stored per step.
- ``RunSummary``: each summariser call with its exact input and output and usage.
- ``RunFinding``: broken invariants per step.
- ``RunOffload``: the full text a strategy wrote to a file (path -> text), once per path.
- ``StoredText`` / ``RunText``: summary inputs, modified message texts and offloaded texts
  by content hash, each distinct text once, shared by the runs that use it; the parts that
  are the transcript's own text are references into its messages (``runs.textstore``).
- ``RunAnalysis``: analyses derived from a finished run (what each compaction lost), one
  row per run, computed off the page request (``retention``; ``survival`` by category).
- ``OriginalSurvival``: the same survival table for the transcript's own recorded
  compactions (the compare page's "original" pseudo-run), one row per transcript.

Message texts are never copied: the original is ``sessions_app.Message`` (transcript,
index), and a summary input, a modified message or an offloaded file points into it
(``RunSummary.input_parts``, ``changes[].message@``, ``RunOffload.text_parts``; rows
written before these existed keep their texts inline and are read as they are); ``textstore.replay_result(run)`` rebuilds the engine's ``ReplayResult`` for
inspection code.

The models live in four modules (``runs``, ``rows``, ``derived``, ``texts``); this package re-exports
them, so ``replay_app.models.Run`` and the app label stay as they were.
"""

from __future__ import annotations

from replay_app.models.derived import OriginalSurvival, RunAnalysis, SummaryCache, TokenCountCache
from replay_app.models.rows import (
    RunEvent,
    RunFinding,
    RunOffload,
    RunStep,
    RunSummary,
    change_from_dict,
    change_to_dict,
)
from replay_app.models.runs import (
    ACTIVE_STATUSES,
    RETRYABLE_STATUSES,
    Run,
    RunGroup,
    RunStatus,
    StrategyConfig,
)
from replay_app.models.texts import RunText, StoredText

__all__ = [
    "ACTIVE_STATUSES",
    "OriginalSurvival",
    "RETRYABLE_STATUSES",
    "Run",
    "RunAnalysis",
    "RunEvent",
    "RunFinding",
    "RunGroup",
    "RunOffload",
    "RunStatus",
    "RunStep",
    "RunSummary",
    "RunText",
    "StoredText",
    "StrategyConfig",
    "SummaryCache",
    "TokenCountCache",
    "change_from_dict",
    "change_to_dict",
]
