"""Claude Code CLI 2.1.x sessions: one main thread across parallel calls, hook lines and
compactions, on lines cut from real sessions (tests/data/claude-code-2.1/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, ParsedFile, Role
from ctxlab.engine.importers.claude_code import CONTINUED
from tests.engine.importers.claude_shapes import assistant, jsonl, user

DATA = Path(__file__).parents[2] / "data" / "claude-code-2.1"


def _data(name: str) -> bytes:
    return (DATA / name).read_bytes()


def _parse(name: str, data: bytes | None = None) -> ParsedFile:
    return importers.parse(_data(name) if data is None else data, name=name)


def _codes(parsed: ParsedFile) -> dict[str, int]:
    return {w.code: w.count for w in parsed.warnings}


def _line(name: str, number: int) -> dict[str, object]:
    record: dict[str, object] = json.loads(_data(name).split(b"\n")[number - 1])
    return record


def test_parallel_calls_and_hook_lines_are_one_main_thread() -> None:
    # Two tool_use lines of one response (the second one's parent is the first), each
    # result under its own call's line: the uuid tree forks, the conversation does not.
    name = "parallel-calls-hooks.jsonl"
    assert importers.detect(_data(name), name) == "claude-code"
    parsed = _parse(name)
    (conv,) = parsed.conversations
    assert parsed.warnings == ()
    assert [m.role for m in conv.messages] == [Role.USER, Role.ASSISTANT] * 3
    calls, results = conv.messages[1].tool_uses, conv.messages[2].tool_results
    assert [b.tool_id for b in calls] == [b.tool_id for b in results]
    assert [b.tool_id for b in calls] == [
        "toolu_01T7M9PavPbk12ZmgNTwAom9",
        "toolu_01VLh22c8DuyN3PCeqyzCe6W",
    ]
    assert conv.messages[1].id.endswith("24ncsL") and conv.messages[1].source.line == 5
    # the next request hangs off a stop_hook_summary line, itself under hook progress
    assert conv.messages[-2].source.line == 16 and conv.title.startswith("I opened a PR")
    assert CONTINUED not in dict(conv.metadata)  # the session's own first lines


def test_folding_parallel_lines_keeps_a_retyped_request_an_alternate() -> None:
    call = {"type": "tool_use", "name": "Read", "input": {}}
    data = jsonl(
        user("u1", None, "read both files"),
        assistant("a1", "u1", "msg_1", {**call, "id": "t1"}),
        assistant("a2", "a1", "msg_1", {**call, "id": "t2"}),
        user("r1", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": "one"}]),
        user("r2", "a2", [{"type": "tool_result", "tool_use_id": "t2", "content": "two"}]),
        user("u2", "r2", "now summarise them"),
        assistant("a3", "u2", "msg_2", {"type": "text", "text": "old summary"}),
        user("u3", "r2", "now compare them"),  # the user rewound and typed another request
        assistant("a4", "u3", "msg_3", {"type": "text", "text": "comparison"}),
    )
    parsed = importers.parse(data, name="retype.jsonl")
    main, alternate = parsed.conversations
    assert [m.text for m in main.messages][-2:] == ["now compare them", "comparison"]
    assert [len(m.tool_results) for m in main.messages[:3]] == [0, 0, 2]
    assert [m.text for m in alternate.messages] == ["now summarise them", "old summary"]
    assert _codes(parsed) == {"alternate-branch": 2}


def test_auto_compact_boundary_continues_from_its_logical_parent() -> None:
    name = "auto-compact-boundary.jsonl"
    parsed = _parse(name)
    (conv,) = parsed.conversations  # not cut in two at the boundary (its parentUuid is null)
    (comp,) = conv.compactions
    assert (comp.kind, comp.trigger, comp.pre_tokens) == ("compact_boundary", "auto", 155241)
    assert (comp.agent_version, comp.source.line) == ("2.1.7", 2)
    assert comp.before_index == comp.summary_index == 1
    assert conv.messages[0].text.startswith("ah I messed up")  # the logical parent
    assert "compact_summary" in conv.messages[1].flags
    # cut from a longer session: its first line follows one that is not in the file
    assert dict(conv.metadata)[CONTINUED] == "1"


def test_manual_compact_keeps_its_focus_text() -> None:
    # The boundary's logicalParentUuid is a stop_hook_summary line, and the /compact
    # command with its arguments comes after the summary.
    name = "manual-compact-focus.jsonl"
    assert _line(name, 9)["logicalParentUuid"] == _line(name, 6)["uuid"]
    parsed = _parse(name)
    (conv,) = parsed.conversations
    (comp,) = conv.compactions
    assert (comp.trigger, comp.pre_tokens, comp.agent_version) == ("manual", 153697, "2.1.14")
    assert comp.instructions == (
        "we've finished the base implementation for the checkpoint explain, but are "
        "debugging an inconsistency in the checkpointing"
    )
    assert conv.messages[comp.summary_index or 0].source.line == 10
    assert comp.before_index == 2 and conv.messages[1].source.line == 2


def test_resumed_answer_is_an_alternate_and_boundary_with_missing_parent_continues() -> None:
    # The session was left mid-answer (/exit) and resumed: the agent's new answer to the
    # same tool result is a different response, a real branch. Later a manual /compact
    # whose logical parent is not in the file.
    name = "resume-branch-manual-compact.jsonl"
    parsed = _parse(name)
    main, alternate = parsed.conversations
    assert alternate.parent_id == main.id and dict(alternate.metadata)["forks_after_line"] == "6"
    assert alternate.messages[0].source.line == 7 and alternate.messages[0].role is Role.ASSISTANT
    assert [m.source.line for m in main.messages if m.role is Role.ASSISTANT] == [2, 16]
    assert main.messages[-1].text == "let's review the PR comments together"
    (comp,) = main.compactions
    assert (comp.trigger, comp.pre_tokens, comp.source.line) == ("manual", 149025, 24)
    assert comp.instructions == ""  # "/compact" with empty arguments
    assert main.messages[comp.before_index].source.line == 25
    assert _codes(parsed)["alternate-branch"] == 4
    (missing,) = [w for w in parsed.warnings if "compact boundary" in w.message]
    assert (missing.code, missing.where) == ("parent-missing", "line 24")


def test_microcompact_boundary_names_the_cleared_results() -> None:
    name = "microcompact.jsonl"
    parsed = _parse(name)
    (conv,) = parsed.conversations
    (comp,) = conv.compactions
    meta = _line(name, 13)["microcompactMetadata"]
    assert isinstance(meta, dict)
    assert comp.kind == "microcompact" and comp.summary_index is None
    assert (comp.trigger, comp.pre_tokens, comp.tokens_saved) == ("auto", 58573, 20801)
    assert comp.cleared_tool_ids == tuple(meta["compactedToolIds"])
    assert len(comp.cleared_tool_ids) == 11 and comp.agent_version == "2.1.12"
    assert conv.messages[comp.before_index].source.line == 14  # the next message


def test_file_starting_from_a_compaction_summary_is_continued() -> None:
    name = "continued-session.jsonl"
    parsed = _parse(name)
    (conv,) = parsed.conversations
    (comp,) = conv.compactions
    assert (comp.kind, comp.before_index, comp.summary_index) == ("compact_boundary", 0, 0)
    assert (comp.trigger, comp.pre_tokens, comp.agent_version) == ("", None, "2.1.7")
    assert dict(conv.metadata)[CONTINUED] == "1"
    assert conv.messages[0].text.startswith("This session is being continued")
    assert not conv.title.startswith("This session")


def test_continued_text_without_the_flag_is_recognised_at_the_start_only() -> None:
    preamble = "This session is being continued from a previous conversation that ran out"
    data = jsonl(
        user("u1", None, preamble),
        assistant("a1", "u1", "m1", {"type": "text", "text": "ok"}),
        user("u2", "a1", preamble + " (quoted later)"),
    )
    (conv,) = importers.parse(data, name="c.jsonl").conversations
    assert [(c.before_index, c.summary_index) for c in conv.compactions] == [(0, 0)]
    assert "compact_summary" in conv.messages[0].flags
    assert "compact_summary" not in conv.messages[2].flags


def test_records_run_together_on_one_line_are_each_read() -> None:
    name = "records-run-together.jsonl"
    parsed = _parse(name)
    (conv,) = parsed.conversations
    assert conv.title == "Implement status command short/long output modes"  # 2nd record
    (joined,) = [w for w in parsed.warnings if w.code == "unreadable-json-text"]
    assert joined.where == "line 5" and joined.message.startswith("2 JSON records")


def test_torn_lines_are_located_warnings_not_a_refusal() -> None:
    name = "parallel-calls-hooks.jsonl"
    lines = _data(name).split(b"\n")
    lines[9] = lines[9][: len(lines[9]) // 2]  # the first call's result, cut mid-write
    lines[12] = lines[12][:40]  # a hook line: the stop-hook summary under it loses its parent
    lines[13] = lines[13].replace(b'{"parentUuid"', b'{"k":1,"k":2,"parentUuid"', 1)
    parsed = _parse(name, b"\n".join(lines))
    (conv,) = parsed.conversations
    torn, orphan, repeated = parsed.warnings
    assert (torn.code, torn.count) == ("unreadable-json-text", 2)
    assert torn.where == "line 10: invalid JSON: Unterminated string"
    assert (orphan.code, orphan.where) == ("parent-missing", "line 14")
    assert (repeated.code, repeated.where) == ("duplicate-key", "line 14: 'k'")
    assert [b.tool_id for b in conv.messages[2].tool_results] == ["toolu_01VLh22c8DuyN3PCeqyzCe6W"]
    assert len(conv.messages) == 6


def test_version_is_the_newest_lines_and_the_first_is_kept() -> None:
    data = jsonl(
        user("u1", None, "hi", version="2.1.14"),
        assistant("a1", "u1", "m1", {"type": "text", "text": "yo"}),
        user("u2", "a1", "again", version="2.1.20"),
    )
    (conv,) = importers.parse(data, name="v.jsonl").conversations
    assert dict(conv.metadata)["version"] == "2.1.20"
    assert dict(conv.metadata)["first_version"] == "2.1.14"
    (same,) = importers.parse(data.replace(b"2.1.20", b"2.1.14"), name="v.jsonl").conversations
    assert dict(same.metadata)["version"] == "2.1.14" and "first_version" not in dict(same.metadata)


def test_result_line_carrying_typed_text_keeps_its_turn_together() -> None:
    call = {"type": "tool_use", "name": "Edit", "input": {}}
    data = jsonl(
        user("u1", None, "fix it"),
        assistant("a1", "u1", "msg_1", {**call, "id": "t1"}),
        assistant("a2", "a1", "msg_1", {**call, "id": "t2"}),
        user(
            "r1",
            "a1",
            [
                {"type": "tool_result", "tool_use_id": "t1", "content": "done"},
                {"type": "text", "text": "also update the callers"},
            ],
        ),
        user("r2", "a2", [{"type": "tool_result", "tool_use_id": "t2", "content": "done"}]),
        assistant("a3", "r2", "msg_2", {"type": "text", "text": "ok"}),
    )
    (conv,) = importers.parse(data, name="t.jsonl").conversations
    turn = conv.messages[2]
    assert [(b.kind, b.tool_id) for b in turn.blocks] == [
        (BlockKind.TOOL_RESULT, "t1"),
        (BlockKind.TOOL_RESULT, "t2"),
        (BlockKind.TEXT, ""),
    ]
    assert len(conv.messages) == 4


def test_file_starting_with_a_boundary_line_is_continued_with_that_compaction_only() -> None:
    name = "auto-compact-boundary.jsonl"
    data = _data(name).split(b"\n", 1)[1]  # from the boundary line on
    (conv,) = _parse(name, data).conversations
    (comp,) = conv.compactions
    assert (comp.before_index, comp.summary_index, comp.pre_tokens) == (0, 0, 155241)
    assert dict(conv.metadata)[CONTINUED] == "1"


def test_task_sub_agent_progress_lines_become_its_sidechain_conversation() -> None:
    # CLI 2.1.x keeps a sub-agent's own transcript in another file and reports each of its
    # messages in the session as an agent_progress line (three parallel calls here).
    name = "task-sub-agent-progress.jsonl"
    parsed = _parse(name)
    main, agent = parsed.conversations
    (task,) = main.messages[1].tool_uses
    assert task.tool_name == "Task" and isinstance(task.tool_input, dict)
    assert agent.id == f"{main.id}/agent-a325871" and agent.parent_id == main.id
    assert agent.messages[0].text == task.tool_input["prompt"]
    assert agent.model == "claude-haiku-4-5-20251001"
    assert [m.role for m in agent.messages] == [Role.USER, Role.ASSISTANT, Role.USER] + [
        Role.ASSISTANT,
        Role.USER,
    ]
    calls = [b.tool_id for b in agent.messages[1].tool_uses]
    assert len(calls) == 3 and [b.tool_id for b in agent.messages[2].tool_results] == calls
    assert all("sidechain" in m.flags for m in agent.messages)
    assert (agent.tool_call_count, agent.tool_result_count) == (5, 4)  # cut mid-run
    assert {w.code for w in parsed.warnings} == {"parent-missing"}
