"""*Your session, now* counts each call as the agent's own replay strategy does: the
count of a step is the one the strategy checks its threshold with (issue 38, "one of each
rule"), read from the strategy's own functions.

- Codex 0.118+: the usage plus the encrypted reasoning of the earlier turns' replies
  (``codex.reasoning_tokens``). On every vendored rollout with an automatic compaction the
  step count before it, plus the items Codex estimates after that reply, is exactly the
  total the ``codex`` strategy compared with its limit there.
- Claude Code 2.1.64 and 2.1.69+: the usage plus the response's own later lines
  (``_claude_code_versions.count_after_response``), exactly the ``claude_code`` strategy's
  count on a real 2.1.49 boundary read under those rules (tests/data/claude-code-2.1.49,
  FSM1/cipher-box, MIT); 2.1.49 itself counts the usage alone.

Each test fails on the count session-now used before (the response's reported usage)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine.core.model import Conversation
from ctxlab.engine.core.records import ReplayResult
from ctxlab.engine.evaluate.session_now import forecast_hits, session_now
from ctxlab.engine.importers import parse
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import _codex_versions as cv
from ctxlab.engine.strategies.codex import CodexStrategy
from ctxlab.engine.summarize.recorded import RecordedSummarizer

DATA = Path(__file__).resolve().parents[2] / "data"
ROLLOUTS = sorted((DATA / "codex-rollouts").glob("*.jsonl"))


def _main(path: Path) -> tuple[Conversation, str]:
    parsed = parse(path.read_bytes(), name=path.name)
    return next(c for c in parsed.conversations if c.parent_id is None), parsed.format


def _details(result: ReplayResult, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """The detail of each compaction decision of the replay, in order."""
    return [
        dict(event.detail) for step in result.steps for event in step.events if event.kind in kinds
    ]


@pytest.mark.parametrize("path", ROLLOUTS, ids=lambda p: p.stem)
def test_codex_step_count_is_the_strategy_s_count(path: Path) -> None:
    conversation, fmt = _main(path)
    now = session_now(conversation, fmt)
    rules = cv.BY_NAME[now.rules.rules]
    assert rules is not cv.LEGACY
    result = run(conversation, "codex", summarizer=RecordedSummarizer())
    totals = {d["total_tokens"] for d in _details(result, ("compact",)) if d["phase"] == "mid_turn"}
    checked = 0
    for boundary in now.boundaries:
        before = [s for s in now.steps if s.message < boundary.before_index]
        if boundary.trigger != "auto" or not before:
            continue
        last = before[-1]
        usage = conversation.messages[last.message].usage
        assert usage is not None and last.count is not None
        after = range(last.message + 1, boundary.before_index)
        items = sum(CodexStrategy._item_tokens(conversation.messages[i], rules) for i in after)
        # what Codex compared with its limit there: this count + the items after the reply
        assert last.count + items in totals
        assert last.count + items >= now.rules_at(last).threshold  # type: ignore[operator]
        assert last.count >= usage.context_tokens
        checked += 1
    assert checked >= 1


def test_codex_forecast_sees_the_reasoning() -> None:
    """The agentv 0.142.2 session of the agreement set (its Entire checkpoint file)
    compacted 10 calls after the forecast's point. With the earlier turns' reasoning the
    count at the last call before it is the limit's (114,943 of 115,200; the usage alone
    is 88,246, the compaction's own ``pre_tokens``) and the forecast says 25 turns (it said
    78 from the usage alone)."""
    path = DATA / "agreement" / "agentv" / "00" / "34f597b72d" / "1" / "full.jsonl"
    conversation, fmt = _main(path)
    now = session_now(conversation, fmt)
    (boundary,) = now.boundaries
    last = [s for s in now.steps if s.message < boundary.before_index][-1]
    assert last.reported is not None and boundary.pre_tokens == 88_246
    assert last.count == 114_943 and now.rules.threshold == 115_200
    (hit,) = forecast_hits(conversation, fmt, "agentv")
    assert hit.actual == 10 and hit.predicted == 25


@pytest.mark.parametrize(("version", "later"), [("", 0), ("2.1.69", 29)])
def test_claude_code_2_1_49_step_count_is_the_strategy_s_count(version: str, later: int) -> None:
    """The last response before the boundary is two lines (a text, then a ``Read`` call):
    2.1.49 counts the usage alone (166,519); read as 2.1.69, whose count walks back to the
    response's first line, the call's line (29 tokens) is on top. Either way the step's count
    is the strategy's count at the boundary."""
    conversation, fmt = _main(DATA / "claude-code-2.1.49" / "unwritten-result.jsonl")
    if version:
        meta = tuple(
            (k, version if k in ("version", "first_version") else v)
            for k, v in conversation.metadata
        )
        conversation = replace(conversation, metadata=meta)
    (boundary,) = conversation.compactions
    now = session_now(conversation, fmt)
    last = [s for s in now.steps if s.message < boundary.before_index][-1]
    usage = conversation.messages[last.message].usage
    assert usage is not None
    result = run(conversation, "claude_code", summarizer=RecordedSummarizer())
    (detail,) = _details(result, ("compact", "compact_skipped"))
    assert last.count == detail["tokens"] == 166_519 + later
    assert last.count == usage.context_tokens + later
    # the JSON twin's forecast starts from the same count
    assert now.counts_before(last)[-1] == 166_519 + later


def test_claude_code_before_2_1_43_counts_the_usage_alone() -> None:
    """The same lines read as 2.1.42 (whose count stops at the usage): no later lines."""
    conversation, fmt = _main(DATA / "claude-code-2.1.49" / "unwritten-result.jsonl")
    meta = tuple(
        (k, "2.1.42" if k in ("version", "first_version") else v) for k, v in conversation.metadata
    )
    now = session_now(replace(conversation, metadata=meta), fmt)
    assert now.rules.version == "2.1.42"
    last = [s for s in now.steps if s.message < conversation.compactions[0].before_index][-1]
    usage = conversation.messages[last.message].usage
    assert usage is not None and last.count == usage.context_tokens
