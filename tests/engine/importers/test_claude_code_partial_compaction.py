"""Claude Code 2.1.2xx partial compaction inside one session file: the compact boundary's
``compactMetadata.preservedSegment`` keeps the messages from ``headUuid`` to ``tailUuid``
after the summary (``anchorUuid``), and the lines written after the compaction hang off
that tail, beside the boundary. Real lines: tests/data/claude-code-2.1.217 (a manual
``/compact`` of JanDeDobbeleer/oh-my-posh's Entire checkpoints, MIT; its README).

Before, the importer took the boundary and its summary for a rewound branch (an alternate
conversation of one message): the main conversation had no compaction at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import cli
from ctxlab.engine.core.model import Conversation, Role
from ctxlab.engine.importers import parse
from ctxlab.engine.replay import run
from ctxlab.engine.stages.originals import OriginalIndex, first_kept
from ctxlab.engine.summarize.recorded import RecordedSummarizer, agreements, summary_text

PATH = (
    Path(__file__).resolve().parents[2]
    / "data"
    / "claude-code-2.1.217"
    / "partial-compact-preserved-segment.jsonl"
)
FOCUS = "only keep the relevant parts in the conversations"


@pytest.fixture(scope="module")
def conversation() -> Conversation:
    return cli.load_file(PATH, format="claude-code")


def test_one_conversation_no_alternate_branch() -> None:
    parsed = parse(PATH.read_bytes(), name=PATH.name)
    assert len(parsed.conversations) == 1
    codes = [w.code for w in parsed.warnings]
    assert "alternate-branch" not in codes
    assert codes == ["parent-missing"]  # the cut's first line only (its parent is earlier)


def test_the_boundary_and_what_it_kept(conversation: Conversation) -> None:
    (compaction,) = conversation.compactions
    messages = conversation.messages
    assert compaction.kind == "compact_boundary" and compaction.trigger == "manual"
    assert compaction.pre_tokens == 297_190 and compaction.agent_version == "2.1.217"
    assert compaction.instructions.startswith(FOCUS)
    assert compaction.source.line == 15  # the boundary line of the cut (543 of the source)
    # the boundary sits right before the summary, which opens the compacted context
    at = compaction.before_index
    assert compaction.summary_index == at
    assert "compact_summary" in messages[at].flags
    assert messages[at].text.startswith("This session is being continued")
    # the kept segment: the head (the assistant's "Phase 1 shipped." reply) up to the
    # boundary, where the file wrote it; the model's view is summary + it + later lines
    kept = first_kept(compaction)
    assert kept == at - 1
    assert dict(compaction.detail)["kept_messages"] == "1"
    head = messages[kept]
    assert head.role is Role.ASSISTANT and head.text.startswith("Phase 1 shipped.")
    assert head.source.line == 8  # headUuid's line (536 of the source)
    # the lines after the compaction follow the summary, in file order
    after = messages[at + 1 :]
    lines = [m.source.line or 0 for m in after]
    assert lines == sorted(lines) and lines[0] > compaction.source.line
    assert "<command-name>/compact</command-name>" in after[1].text
    assert any(m.role is Role.ASSISTANT and m.usage is not None for m in after)


def test_the_recorded_reading(conversation: Conversation) -> None:
    """What a strategy following the original reads: the compaction opens at its summary
    message, its summary is the file's, and it keeps the segment."""
    (compaction,) = conversation.compactions
    assert OriginalIndex(conversation).at(compaction.before_index) is compaction
    assert summary_text(conversation, compaction).startswith("Summary:")


def test_the_claude_code_replay_keeps_the_segment(conversation: Conversation) -> None:
    """Following the original's manual /compact, the replay summarises what came before
    the kept segment, drops the original's summary message (its recorded summary stands
    in) and keeps the segment after it, at the original's step."""
    (compaction,) = conversation.compactions
    result = run(conversation, "claude_code", summarizer=RecordedSummarizer())
    (event,) = [e for e in result.events if e.kind == "compact"]
    kept = first_kept(compaction)
    assert kept is not None
    assert set(event.messages) == {*range(kept), compaction.before_index}
    step = next(s for s in result.steps if s.index == event.step)
    assert kept in step.context_indexes
    assert not set(range(kept)) & set(step.context_indexes)
    (agreement,) = agreements(conversation, result)
    assert agreement.relation_key == "same_step" and agreement.original_tokens == 297_190


def test_session_now_counts_the_kept_segment_in_the_context(conversation: Conversation) -> None:
    """*Your session, now*: after the partial compaction the context starts at the kept
    segment (before the boundary), so the next compaction's span (the forecast) holds it."""
    from ctxlab.engine.evaluate.session_now import forecast, session_now

    (compaction,) = conversation.compactions
    kept = first_kept(compaction)
    now = session_now(conversation, "claude-code")
    (boundary,) = now.boundaries
    assert boundary.kept_from == kept
    before = [s for s in now.steps if s.message < compaction.before_index]
    after = [s for s in now.steps if s.message > compaction.before_index]
    assert before and after
    assert {s.span_start for s in before} == {0}
    assert {s.span_start for s in after} == {kept}
    assert after[0].compacted_before == boundary
    ahead = forecast(now, after[-1])
    assert ahead.span[0] == kept
