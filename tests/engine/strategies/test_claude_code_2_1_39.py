"""claude_code at a real Claude Code 2.1.39 auto compaction (tests/data/claude-code-2.1.39/,
marot/spotter, MIT; see its README): a session the repository committed as a test fixture,
outside the Entire checkpoint branches the earlier sets came from. The last response's usage
line (167,701) and the tool result after it (30 by the estimate) give exactly the agent's
``preTokens``, 167,731: over the 2.1.21-2.1.42 threshold (200,000 - 20,000 - 13,000), so the
replay compacts at the same step by its own count, no open range for the original to settle."""

from __future__ import annotations

from pathlib import Path

from claude_code_decisions import decision, replay

from ctxlab.benchmarks.agreement import import_clean
from ctxlab.engine.importers import parse
from ctxlab.engine.summarize.recorded import agreements

DATA = Path(__file__).resolve().parents[2] / "data" / "claude-code-2.1.39"
NAME = "auto-compact-own-count.jsonl"


def test_a_2_1_39_auto_compaction_is_reproduced_by_the_replays_own_count() -> None:
    parsed = parse((DATA / NAME).read_bytes(), name=NAME)
    assert import_clean(parsed)
    (conversation,) = parsed.conversations
    (original,) = conversation.compactions
    assert original.trigger == "auto" and original.pre_tokens == 167_731
    result = replay(conversation)
    _, kind, detail = decision(result)
    assert kind == "compact" and detail["rules_version"] == "2.1.39"
    assert detail["reported"] == 167_701 and detail["tokens"] == 167_731 >= detail["threshold"]
    assert not detail.get("decided_by")
    (agreement,) = agreements(conversation, result)
    assert agreement.step_difference == 0 and agreement.replay_tokens == 167_731
