"""claude_code on two real Claude Code 2.1.49 boundaries the transcript alone cannot count
(tests/data/claude-code-2.1.49/, FSM1/cipher-box, MIT; see its README): the agent compacted
at a count the file does not show, so the original's own compaction settles it.

- ``stream-start-output.jsonl``: the last usage line holds the stream's first output (24),
  and the response's own estimate adds nothing above it: the count the file shows (166,012)
  is under the 167,000 threshold, the agent's ``preTokens`` is 167,457.
- ``unwritten-result.jsonl``: the last response's ``Read`` ran (its PostToolUse hook line is
  there) but its result was never written before the boundary: the file shows 166,548, the
  agent counted 167,332.

Both excerpts also pin which versions count a response's later lines again on top of its
usage (``later_blocks``: ``tokenCountWithEstimation`` walking back to the response's first
line): 2.1.49 does not (its cli.js counts from the last line with usage), 2.1.64 and 2.1.69+
do, 2.1.67-2.1.68 do not."""

from __future__ import annotations

from pathlib import Path

import pytest
from claude_code_decisions import decision, replay

from ctxlab.engine.core.model import Conversation
from ctxlab.engine.importers import parse
from ctxlab.engine.summarize.recorded import agreements

DATA = Path(__file__).resolve().parents[2] / "data" / "claude-code-2.1.49"
THRESHOLD = 167_000


def _main(name: str) -> Conversation:
    parsed = parse((DATA / name).read_bytes(), name=name)
    return next(c for c in parsed.conversations if c.parent_id is None)


@pytest.mark.parametrize(
    ("name", "pre_tokens", "shown", "why"),
    [
        ("stream-start-output.jsonl", 167_457, 166_012, "unrecorded output"),
        ("unwritten-result.jsonl", 167_332, 166_519, "1 tool result counted but not written"),
    ],
)
def test_the_original_settles_a_count_the_file_cannot_show(
    name: str, pre_tokens: int, shown: int, why: str
) -> None:
    conversation = _main(name)
    (original,) = conversation.compactions
    assert original.trigger == "auto" and original.pre_tokens == pre_tokens
    result = replay(conversation)
    step, kind, detail = decision(result)
    assert kind == "compact"
    assert detail["tokens"] == shown < THRESHOLD <= pre_tokens
    assert why in detail["decided_by"]
    (agreement,) = agreements(conversation, result)
    assert agreement.step_difference == 0 and agreement.replay_step == step
    # the agreement says the original settled it: not the replay's own count
    assert agreement.decided_by == detail["decided_by"]
    assert agreement.as_dict()["decided_by"] == detail["decided_by"]


def test_a_call_whose_result_is_written_leaves_no_result_open() -> None:
    """In ``stream-start-output.jsonl`` the last response's call has its result before the
    boundary: no tool result is open, the unrecorded output is, and so is the boundary's
    logical parent, a line the file never wrote (a progress line before the boundary names
    it as its parent)."""
    _, _, detail = decision(replay(_main("stream-start-output.jsonl")))
    assert "tool result" not in detail["decided_by"]
    assert "the last response's unrecorded output" in detail["decided_by"]
    assert detail["decided_by"].endswith("(the boundary's logical parent)")


@pytest.mark.parametrize(
    ("version", "rules_range", "later"),
    [
        ("", "2.1.43-2.1.63", 0),  # the file's own 2.1.49
        ("2.1.64", "2.1.64-2.1.66", 29),
        ("2.1.67", "2.1.67-2.1.68", 0),
        ("2.1.69", "2.1.69 and later", 29),
    ],
)
def test_which_versions_count_the_response_s_later_lines_again(
    version: str, rules_range: str, later: int
) -> None:
    """The last response before the boundary is two lines (a text, then the ``Read`` call).
    Where ``tokenCountWithEstimation`` walks back to the response's first line (2.1.64,
    2.1.69+) the call's line is estimated on top of the usage (round((4 + 110) / 4) = 29,
    its name and JSON input); 2.1.49, like 2.1.42 and 2.1.67-2.1.68, stops at the usage."""
    conversation = _main("unwritten-result.jsonl")
    last = conversation.messages[conversation.compactions[0].before_index - 1]
    assert [b.kind.value for b in last.blocks] == ["text", "tool_use"]
    _, _, read = decision(replay(conversation, **({"agent_version": version} if version else {})))
    _, _, older = decision(replay(conversation, agent_version="2.1.42"))
    assert read["estimated_tail"] == later and read["rules_range"] == rules_range
    assert older["estimated_tail"] == 0 and older["tokens"] == read["tokens"] - later
