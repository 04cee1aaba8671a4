"""claude_code at a real Claude Code 2.1.45 boundary whose logical parent the file never
wrote (tests/data/claude-code-2.1.45/, PackmindHub/context-evaluator, Apache-2.0; see its
README). The boundary's ``logicalParentUuid`` names the last line the agent had when it
compacted; where no line of the file has it, the agent counted a line it did not write
(in 2.1.42 sessions of the unseen set: the prompt the user had just sent, quoted in the
summary), so the count before the boundary is open by that line and the original's own
compaction settles it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from claude_code_decisions import decision, replay

from ctxlab.engine.core.model import Conversation, Role
from ctxlab.engine.importers import parse
from ctxlab.engine.strategies._claude_code_versions import UNWRITTEN_PARENT
from ctxlab.engine.summarize.recorded import agreements

DATA = Path(__file__).resolve().parents[2] / "data" / "claude-code-2.1.45"
NAME = "unwritten-parent.jsonl"
THRESHOLD = 167_000
PARENT = "3330e554-5de6-4624-b0e2-6e050348c45f"
LINE = "a line counted but not written (the boundary's logical parent)"


def _main() -> Conversation:
    parsed = parse((DATA / NAME).read_bytes(), name=NAME)
    assert any("logical parent not in this file" in w.message for w in parsed.warnings)
    return next(c for c in parsed.conversations if c.parent_id is None)


def _output_recorded(conversation: Conversation) -> Conversation:
    """The same conversation with the last response's final output in its usage line, so
    that only the unwritten line leaves the count open."""
    at = conversation.compactions[0].before_index - 1
    last = max(i for i, m in enumerate(conversation.messages[: at + 1]) if m.role is Role.ASSISTANT)
    message = conversation.messages[last]
    assert message.usage is not None and message.usage.output == 1  # the stream's start
    usage = replace(message.usage, output=len(message.text) // 4)
    messages = list(conversation.messages)
    messages[last] = replace(message, usage=usage)
    return replace(conversation, messages=tuple(messages))


def test_the_importer_names_the_unwritten_logical_parent() -> None:
    (original,) = _main().compactions
    assert original.trigger == "auto" and original.pre_tokens == 167_081
    assert dict(original.detail)[UNWRITTEN_PARENT] == PARENT


def test_the_original_settles_a_count_open_by_an_unwritten_line() -> None:
    conversation = _main()
    result = replay(conversation)
    step, kind, detail = decision(result)
    assert kind == "compact"
    assert detail["tokens"] == 166_979 < THRESHOLD <= 167_081  # the original's preTokens
    assert detail["decided_by"].endswith(LINE)
    (agreement,) = agreements(conversation, result)
    assert agreement.step_difference == 0 and agreement.decided_by == detail["decided_by"]


def test_the_unwritten_line_alone_decides_where_the_output_is_recorded() -> None:
    conversation = _output_recorded(_main())
    _, kind, detail = decision(replay(conversation))
    assert kind == "compact" and detail["tokens"] < THRESHOLD
    assert detail["decided_by"] == "the original's compaction: the count is uncertain by " + LINE
    # without the unwritten parent the file bounds the count: under the threshold, no
    # compaction where the agent made one
    (original,) = conversation.compactions
    bare = replace(conversation, compactions=(replace(original, detail=()),))
    _, kind, detail = decision(replay(bare))
    assert kind == "compact_skipped" and "decided_by" not in detail
