"""claude_code against Claude Code's own compactions: the version table (pinned by real
boundaries), the count the agent compared, following the original's compactions, replaying
its microcompactions, continued files and a manual /compact with focus text.

The sessions are built line by line in Claude Code's JSONL shape and imported, as real
transcripts are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import EchoSummarizer, events_of

from ctxlab.engine import cli
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.core.records import Fate, ReplayResult
from ctxlab.engine.importers import parse
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import _claude_code_rules as rules
from ctxlab.engine.strategies import _claude_code_versions as versions
from ctxlab.engine.strategies.claude_code import (
    CLEARED_MARKER,
    DROPPED_ORIGINAL_SUMMARY,
    TYPICAL_OVERHEAD,
    ClaudeCodeStrategy,
    describe_rules,
)
from ctxlab.engine.summarize.recorded import RecordedSummarizer

PATH = "/Users/a/.claude/projects/-Users-a-w/s-1.jsonl"  # what the agent quotes
RESULT = "x" * 400  # 100 tokens under round(length / 4)


# -- real-shaped lines ----------------------------------------------------------------------


class Session:
    """Claude Code JSONL lines, each parented on the one before."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.lines: list[dict[str, Any]] = []

    def _add(self, kind: str, parent: str | None = "", **fields: Any) -> str:
        uuid = f"u{len(self.lines) + 1}"
        last = self.lines[-1]["uuid"] if self.lines else None
        self.lines.append({
            "parentUuid": last if parent == "" else parent, "isSidechain": False,
            "userType": "external", "cwd": "/Users/a/w", "sessionId": "s-1",
            "version": self.version, "type": kind, "uuid": uuid,
            "timestamp": f"2026-01-20T10:00:{len(self.lines):02d}.000Z", **fields,
        })  # fmt: skip
        return uuid

    def user(self, content: Any, **fields: Any) -> str:
        return self._add("user", message={"role": "user", "content": content}, **fields)

    def result(self, tool_id: str, text: str = RESULT) -> str:
        return self.user([{"type": "tool_result", "tool_use_id": tool_id, "content": text}])

    def assistant(self, msg_id: str, block: dict[str, Any], prompt: int, output: int) -> str:
        usage = {"input_tokens": 1, "cache_read_input_tokens": prompt - 1,
                 "cache_creation_input_tokens": 0, "output_tokens": output}  # fmt: skip
        message = {"id": msg_id, "type": "message", "role": "assistant",
                   "model": "claude-opus-4-5-20251101", "content": [block], "usage": usage}  # fmt: skip
        return self._add("assistant", message=message)

    def call(self, msg_id: str, tool_id: str, prompt: int, output: int = 1) -> str:
        block = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "ls"}}
        return self.assistant(msg_id, block, prompt, output)

    def text(self, msg_id: str, text: str, prompt: int, output: int = 1) -> str:
        return self.assistant(msg_id, {"type": "text", "text": text}, prompt, output)

    def boundary(self, trigger: str, pre_tokens: int) -> str:
        last = self.lines[-1]["uuid"]
        return self._add("system", None, subtype="compact_boundary",
                         content="Conversation compacted", logicalParentUuid=last,
                         level="info", isMeta=False,
                         compactMetadata={"trigger": trigger, "preTokens": pre_tokens})  # fmt: skip

    def summary(self, body: str = "Summary:\n1. Goal: ship it") -> str:
        return self.user(rules.summary_message("2.1", body, PATH), isCompactSummary=True)

    def microcompact(self, ids: list[str], pre_tokens: int, saved: int) -> str:
        meta = {"trigger": "auto", "preTokens": pre_tokens, "tokensSaved": saved,
                "compactedToolIds": ids, "clearedAttachmentUUIDs": []}  # fmt: skip
        return self._add("system", subtype="microcompact_boundary",
                         content="Context microcompacted", level="info", isMeta=False,
                         microcompactMetadata=meta)  # fmt: skip

    def conversation(self) -> Conversation:
        data = "".join(json.dumps(line) + "\n" for line in self.lines).encode()
        parsed = parse(data, name="s-1.jsonl")
        return max(parsed.conversations, key=lambda c: len(c.messages))


def tokens_at(result: ReplayResult, conversation: Conversation, msg_id: str) -> int:
    """The count at the request that produced the response ``msg_id``."""
    index = next(i for i, m in enumerate(conversation.messages) if m.id == msg_id)
    return next(s.tokens.strategy for s in result.steps if s.source_index == index)


# -- the version table ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "pre_tokens"),
    [
        ("2.0.76", 155_250),  # the lowest auto boundary of each version in the public
        ("2.1.5", 155_109),  # entireio/cli checkpoints
        ("2.1.7", 155_066),
        ("2.1.17", 155_031),
        ("2.1.20", 155_207),
        ("2.1.25", 167_066),
        ("2.1.29", 167_094),
        ("2.1.38", 167_038),
        ("2.1.42", 167_045),
    ],
)
def test_version_table_is_pinned_by_real_boundaries(version: str, pre_tokens: int) -> None:
    strategy = ClaudeCodeStrategy()
    threshold = strategy.auto_compact_threshold(versions.rules_for(version))
    # each fired at or just above its version's threshold (compared with >=) ...
    assert threshold <= pre_tokens < threshold + 300
    # ... and the other rule could not have fired there (2.1.20 -> 2.1.21 changed it)
    other = 167_000 if threshold == 155_000 else 155_000
    assert (pre_tokens >= other) is (other < threshold)


def test_agent_version_auto_pinned_or_refused() -> None:
    assert ClaudeCodeStrategy().auto_compact_threshold() == 167_000  # newest rules
    assert ClaudeCodeStrategy({"agent_version": "2.1.7"}).auto_compact_threshold() == 155_000
    with pytest.raises(ValueError, match="agent_version"):
        ClaudeCodeStrategy({"agent_version": "latest"})
    # a pinned reserve is the user's, whatever the version
    pinned = ClaudeCodeStrategy({"agent_version": "2.1.7", "output_reserve": 8_000})
    assert pinned.auto_compact_threshold() == 179_000
    table = describe_rules("2.1.7")
    assert table["selected"] == "2.1.7-2.1.11" and len(table["ranges"]) == len(versions.RANGES)
    assert all(r["sources"] for r in table["ranges"])


# -- the count the agent compared -----------------------------------------------------------


def parallel_calls(version: str, output: int) -> Session:
    """One response (A) with two tool calls, each result under its own call line."""
    s = Session(version)
    s.user("go")
    s.call("A", "t1", 150_000, output)
    s.result("t1")
    s.call("A", "t2", 150_000, output)
    s.result("t2")
    s.text("B", "done", 150_300, 3)
    return s


def test_count_adds_interleaved_results_not_the_responses_own_blocks() -> None:
    # 2.1.17 counted the usage line as written: 150 000 + 2 + both results, never the
    # response's later blocks (exact at all 29 real 2.1.12-2.1.20 boundaries)
    conversation = parallel_calls("2.1.17", 2).conversation()
    result = run(conversation, "claude_code", summarizer=EchoSummarizer())
    assert tokens_at(result, conversation, "B") == 150_002 + 200


def test_count_estimates_a_final_output_the_line_does_not_hold() -> None:
    # 2.1.32 counted the final output; the line holds the stream's first (2): the
    # response's own estimate (two tool_use blocks, round(len('Bash{"command":"ls"}') / 4)
    # = 5 each) stands in for it
    conversation = parallel_calls("2.1.32", 2).conversation()
    result = run(conversation, "claude_code", summarizer=EchoSummarizer())
    assert tokens_at(result, conversation, "B") == 150_000 + 10 + 200


# -- following the original's compactions ---------------------------------------------------


def compacted_session(version: str = "2.1.17", output: int = 40) -> Session:
    s = Session(version)
    s.user("go")
    # count before the boundary: 154 860 + 40 (a final output) + 100 = 155 000
    s.call("A1", "t1", 154_900 - output, output)
    s.result("t1")
    s.boundary("auto", 155_000)
    s.summary()
    s.text("A2", "resuming", 30_000, 5)
    s.user("x" * 40)  # 10 tokens
    s.text("A3", "ok", 30_100, 5)
    return s


def test_follows_the_original_auto_compaction_where_its_count_reaches_the_threshold() -> None:
    conversation = compacted_session().conversation()
    summary_index = conversation.compactions[0].summary_index
    result = run(conversation, "claude_code", summarizer=RecordedSummarizer())
    (compact,) = events_of(result, "compact")
    assert compact.tokens_before == 155_000 and compact.detail["threshold"] == 155_000
    assert compact.detail["rules_version"] == "2.1.17"
    assert compact.detail["rules_reason"].startswith("from the version of the original's")
    assert "decided_by" not in compact.detail  # the count is known: the line is final
    fates = {c.index: (c.fate, c.reason) for c in compact.changes}
    assert fates[summary_index] == (Fate.DROPPED, DROPPED_ORIGINAL_SUMMARY)
    assert {f for i, (f, _) in fates.items() if i != summary_index} == {Fate.SUMMARISED}
    (row,) = result.metrics["original_compactions"]
    assert row["step_difference"] == 0
    # the replay's summary is the original's (recorded, same text as sent): the reported
    # usage holds again, with no correction
    assert tokens_at(result, conversation, "A3") == 30_005 + 10


def test_does_not_follow_where_its_rules_would_not_have_fired() -> None:
    conversation = compacted_session().conversation()
    pinned = {"agent_version": "2.1.25"}  # threshold 167 000
    result = run(conversation, "claude_code", params=pinned, summarizer=RecordedSummarizer())
    assert not events_of(result, "compact")
    (skipped,) = events_of(result, "compact_skipped")
    assert skipped.detail["tokens"] == 155_000 and skipped.detail["threshold"] == 167_000
    assert skipped.detail["rules_reason"] == "pinned (agent_version)"


def test_an_uncertain_count_is_settled_by_the_original() -> None:
    # 2.1.25 counted the final output; the line holds the stream's first (1): the count
    # lies in 155 000 .. 187 000, under the threshold without the output, perhaps not with
    # it; the original compacted, so the replay does, and says why
    conversation = compacted_session("2.1.25", output=1).conversation()
    result = run(conversation, "claude_code", summarizer=RecordedSummarizer())
    (compact,) = events_of(result, "compact")
    assert compact.detail["threshold"] == 167_000
    assert compact.detail["count_range"] == [155_000, 187_000]
    assert "unrecorded output" in compact.detail["decided_by"]
    # without an original there, the same count never fires: only a certain one does
    s = compacted_session("2.1.25", output=1)
    s.lines = s.lines[:3] + [dict(s.lines[5], parentUuid=s.lines[2]["uuid"])]
    plain = run(s.conversation(), "claude_code", summarizer=EchoSummarizer())
    assert not events_of(plain, "compact")


def test_a_point_estimate_over_the_threshold_does_not_fire_alone() -> None:
    # 2.1.25 counted the final output; the line holds the stream's first (1) and the
    # response's text (8 000 characters, 2 000 tokens under round(length / 4)) stands in
    # for it: the point estimate 165 501 + 1 999 + 10 = 167 510 reaches the 167 000
    # threshold, the certain part 165 511 does not. The agent did not compact here (no
    # boundary): firing on the point estimate would compact a call early, as it would have
    # at 3 calls of the entireio/cli sessions (docs/fidelity.md), so only the certain part fires
    s = Session("2.1.25")
    s.user("go")
    s.text("A1", "y" * 8_000, 165_500, 1)
    s.user("x" * 40)  # 10 tokens
    s.text("A2", "ok", 167_200, 5)
    conversation = s.conversation()
    result = run(conversation, "claude_code", summarizer=EchoSummarizer())
    assert tokens_at(result, conversation, "A2") == 167_510
    assert ClaudeCodeStrategy().auto_compact_threshold(versions.rules_for("2.1.25")) == 167_000
    assert not events_of(result, "compact")


def test_manual_compact_followed_with_its_focus_text() -> None:
    s = Session("2.1.29")
    s.user("go")
    s.text("A1", "hi", 50_000, 40)
    s.user("<command-name>/compact</command-name>\n<command-message>compact</command-message>\n"
           "<command-args>keep the SQL</command-args>")  # fmt: skip
    s.boundary("manual", 50_010)
    s.summary()
    s.text("A2", "resuming", 9_000, 5)
    conversation = s.conversation()
    assert conversation.compactions[0].instructions == "keep the SQL"
    summarizer = EchoSummarizer("<summary>S</summary>")
    result = run(conversation, "claude_code", summarizer=summarizer)
    (compact,) = events_of(result, "compact")
    assert compact.detail["custom_instructions"] == "keep the SQL"
    assert "Additional Instructions:\nkeep the SQL" in summarizer.requests[0].messages[-1].text
    off = run(conversation, "claude_code", params={"follow_manual_compactions": False},
              summarizer=EchoSummarizer())  # fmt: skip
    assert not events_of(off, "compact") and events_of(off, "compact_skipped")


# -- microcompact ---------------------------------------------------------------------------


def test_microcompact_replayed_from_the_cleared_tool_ids() -> None:
    s = Session("2.1.20")
    s.user("go")
    s.call("A1", "t1", 20_000)
    s.result("t1")
    s.call("A2", "t2", 20_200)
    s.result("t2")
    s.microcompact(["t1"], 60_300, 100)
    s.text("A3", "ok", 60_200, 5)
    conversation = s.conversation()
    result = run(conversation, "claude_code", summarizer=EchoSummarizer())
    (cleared,) = events_of(result, "clear_tool_uses")
    (change,) = cleared.changes
    assert change.fate is Fate.TRUNCATED and "microcompact_boundary" in change.reason
    assert change.message is not None
    (block,) = change.message.tool_results
    assert block.tool_id == "t1" and block.text == CLEARED_MARKER
    assert cleared.detail["tokens_saved"] == 100 - round(len(CLEARED_MARKER) / 4)
    assert result.steps[cleared.step].source_index == conversation.messages.index(
        next(m for m in conversation.messages if m.id == "A3")
    )


# -- a file that starts after a compaction --------------------------------------------------


def test_continued_file_shows_context_not_in_the_file() -> None:
    s = Session("2.1.29")
    s.user(rules.summary_message("2.1", "Summary:\n1. Goal", PATH))  # no boundary line
    s.text("A1", "resuming", 120_000, 5)
    s.user("x" * 400)
    s.text("A2", "ok", 120_200, 5)
    conversation = s.conversation()
    covered = sum(ClaudeCodeStrategy().count_message(m) for m in conversation.messages[:2])
    params = {"context_window": 80_000}  # threshold 47 000: the first request compacts
    result = run(conversation, "claude_code", params=params, summarizer=EchoSummarizer())
    (compact,) = events_of(result, "compact")
    assert compact.detail["overhead"] == TYPICAL_OVERHEAD
    assert compact.detail["not_in_file"] == 120_005 - covered - TYPICAL_OVERHEAD
    assert "continued" in compact.detail["not_in_file_reason"]


# -- real sessions ----------------------------------------------------------------------------

AGREEMENT = Path(__file__).resolve().parents[2] / "data" / "agreement" / "entireio-cli"


@pytest.mark.parametrize(
    "path",
    sorted(AGREEMENT.glob("*/*/*/full.jsonl")),
    ids=lambda p: "/".join(p.parts[-4:-1]),
)
def test_real_sessions_compact_where_claude_code_did(path: Path) -> None:
    """The vendored entireio/cli sessions (CLI 2.0.76-2.1.14, auto and manual): every
    compaction inside the file at the original's step, its count within 1% of preTokens."""
    conversation = cli.load_file(path)
    result = run(conversation, "claude_code", summarizer=RecordedSummarizer())
    rows = [
        r
        for r in result.metrics["original_compactions"]
        if r["original_step"] and r["original_kind"] == "compact_boundary"
    ]  # (a microcompact whose cleared results are before the file has nothing to clear)
    assert rows
    for row in rows:
        assert row["step_difference"] == 0, row
        error = abs(row["replay_tokens"] - row["original_tokens"]) / row["original_tokens"]
        assert error <= 0.01, row


def test_continued_file_has_its_own_zone_not_overhead() -> None:
    s = Session("2.1.29")
    s.user(rules.summary_message("2.1", "Summary:\n1. Goal", PATH))  # no boundary line
    s.text("A1", "resuming", 120_000, 5)
    s.user("x" * 400)
    s.text("A2", "ok", 120_200, 5)
    result = run(s.conversation(), "claude_code", summarizer=EchoSummarizer())
    last = result.steps[-1].zones
    # What the usage reports beyond the file's messages and a typical fixed overhead is
    # context the file does not hold: its own zone, and the overhead is only the fixed part.
    assert last.not_in_file > 60_000
    assert last.unseen <= TYPICAL_OVERHEAD
    assert last.as_dict()["not_in_file"] == last.not_in_file
