"""What the claude_code replay decided at the original's compaction (the Claude Code
agreement tests' one reading of a replay): replayed with the recorded summariser."""

from __future__ import annotations

from typing import Any

from ctxlab.engine.core.model import Conversation
from ctxlab.engine.core.records import ReplayResult
from ctxlab.engine.replay import run
from ctxlab.engine.summarize.recorded import RecordedSummarizer


def replay(conversation: Conversation, **params: Any) -> ReplayResult:
    return run(conversation, "claude_code", params=params, summarizer=RecordedSummarizer())


def decision(result: ReplayResult) -> tuple[int, str, dict[str, Any]]:
    """The step, kind and detail of the replay's decision at the original's compaction."""
    for step in result.steps:
        for event in step.events:
            if event.kind in ("compact", "compact_skipped"):
                return step.index, event.kind, dict(event.detail)
    raise AssertionError("no decision at the original's compaction")
