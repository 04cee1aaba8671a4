from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Role, TranscriptError
from ctxlab.engine.importers import _common
from tests.engine.importers.claude_shapes import (
    assistant as _assistant,
)
from tests.engine.importers.claude_shapes import (
    branch_trap_session as _branch_trap_session,
)
from tests.engine.importers.claude_shapes import (
    jsonl as _jsonl,
)
from tests.engine.importers.claude_shapes import (
    user as _user,
)

CORPUS = Path(__file__).parents[2] / "data" / "corpus"

# Per conversation: (messages, tool_use blocks, tool_result blocks). Main thread first, then
# sidechains in file order. The manifest's `messages` column counts JSONL lines (user +
# assistant); ours merges the lines of one API response (same message.id) into one message
# and the parallel tool results of one turn into one user message, so it is lower. Tool
# call/result counts equal the manifest's (summed over the sidechains).
PINNED = {
    "agentcmd-06381696-0074-49f8-863e-6ad4fac507f9.jsonl": [(9, 3, 2)],
    "agentcmd-full-session-five.jsonl": [(7, 5, 5)],
    "agentcmd-full-session-four.jsonl": [(63, 27, 27)],
    "agentcmd-full-session-two.jsonl": [(29, 10, 10)],
    "agentcmd-full-session.jsonl": [(20, 23, 20)],
    "ccviewer-1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": [(15, 12, 12)],
    "ccviewer-5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": [(21, 13, 13), (6, 2, 2), (14, 6, 6)],
    "ccviewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": [
        (19, 11, 11),
        (18, 8, 8),
        (68, 33, 33),
        (80, 39, 39),
        (50, 24, 24),
        (106, 52, 52),
    ],
    "sniffly-d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl": [(124, 59, 58)],
    "sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl": [(10, 7, 7)],
}


def _load(file: str) -> bytes:
    return (CORPUS / "claude-code" / file).read_bytes()


@pytest.mark.parametrize("file", sorted(PINNED), ids=lambda f: f[:24])
def test_claude_code_corpus_counts(file: str) -> None:
    data = _load(file)
    assert importers.detect(data, file) == "claude-code"
    parsed = importers.parse(data, name=file)
    got = [(len(c.messages), c.tool_call_count, c.tool_result_count) for c in parsed.conversations]
    assert got == PINNED[file]
    assert parsed.warnings == ()
    for conv in parsed.conversations:
        assert conv.title
        for m in conv.messages:
            assert m.source.file == file and m.source.line is not None
            if m.role is Role.ASSISTANT:
                assert m.usage is not None and m.usage.convention == "anthropic"


def test_claude_code_split_lines_merge_into_api_messages() -> None:
    file = "ccviewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    parsed = importers.parse(_load(file), name=file)
    assistants = [m for c in parsed.conversations for m in c.messages if m.role is Role.ASSISTANT]
    # 262 assistant lines hold 170 API responses (manifest note)
    assert len(assistants) == 170
    assert len({m.id for m in assistants}) == 170


def test_claude_code_sidechains_link_to_main() -> None:
    file = "ccviewer-5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    main, *side = importers.parse(_load(file), name=file).conversations
    assert main.id == "5c0375b4-57a5-4f26-b12d-d022ee4e51b7" and main.parent_id is None
    assert [c.parent_id for c in side] == [main.id, main.id]
    assert all("sidechain" in m.flags for c in side for m in c.messages)
    assert side[0].title.startswith("Examine the package.json")
    assert "meta" in main.messages[1].flags


def test_claude_code_summary_line_becomes_title() -> None:
    file = "sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl"
    conv = importers.parse(_load(file), name=file).conversations[0]
    assert conv.title == "AI Music Generation: Diverse Embedding Mapping"


def test_claude_code_image_block_kept_as_media_with_size() -> None:
    file = "agentcmd-full-session-two.jsonl"
    conv = importers.parse(_load(file), name=file).conversations[0]
    # the screenshot sits inside a tool_result's content list
    parts = [p for m in conv.messages for b in m.blocks for p in (b, *b.parts)]
    media = [b for b in parts if b.kind is BlockKind.MEDIA]
    assert media and all(b.size > 1000 and b.media_type.startswith("image/") for b in media)


def test_claude_code_merge_usage_once_and_parallel_results() -> None:
    read = {"type": "tool_use", "name": "Read", "input": {}}
    two = [{"type": "text", "text": "two"}]
    data = _jsonl(
        _user("u1", None, "hello there"),
        _assistant("a1", "u1", "msg_1", {"type": "text", "text": "let me look"}, output=1),
        _assistant("a2", "a1", "msg_1", {**read, "id": "t1"}),
        _assistant("a3", "a2", "msg_1", {**read, "id": "t2"}, output=9),
        _user(
            "u2",
            "a3",
            [{"type": "tool_result", "tool_use_id": "t1", "content": "one"}],
            toolUseResult={"stdout": "one (structured duplicate)"},
        ),
        _user(
            "u3",
            "u2",
            [{"type": "tool_result", "tool_use_id": "t2", "content": two, "is_error": True}],
        ),
    )
    conv = importers.parse(data, name="s.jsonl", format="claude-code").conversations[0]
    assert [m.role for m in conv.messages] == [Role.USER, Role.ASSISTANT, Role.USER]
    reply = conv.messages[1]
    assert [b.kind for b in reply.blocks] == [
        BlockKind.TEXT,
        BlockKind.TOOL_USE,
        BlockKind.TOOL_USE,
    ]
    assert reply.usage is not None
    assert (reply.usage.input_uncached, reply.usage.cache_read) == (3, 100)
    assert (reply.usage.cache_write_5m, reply.usage.cache_write_1h, reply.usage.output) == (
        20,
        30,
        9,
    )
    results = conv.messages[2].tool_results
    assert [(b.tool_id, b.text, b.is_error) for b in results] == [
        ("t1", "one", False),
        ("t2", "two", True),
    ]
    assert "structured duplicate" not in conv.messages[2].text
    assert conv.title == "hello there"


def test_claude_code_compact_boundary_records_original_compaction() -> None:
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "b1",
        "parentUuid": None,
        "logicalParentUuid": "a1",
        "sessionId": "s1",
        "content": "Conversation compacted",
        "compactMetadata": {"trigger": "auto", "preTokens": 155000},
    }
    data = _jsonl(
        _user("u1", None, "first"),
        _assistant("a1", "u1", "msg_1", {"type": "text", "text": "ok"}),
        boundary,
        _user("u2", "b1", "This session is being continued ...", isCompactSummary=True),
        _assistant("a2", "u2", "msg_2", {"type": "text", "text": "continuing"}),
    )
    parsed = importers.parse(data, name="c.jsonl")
    (conv,) = parsed.conversations
    assert len(conv.messages) == 4
    (comp,) = conv.compactions
    assert (comp.kind, comp.trigger, comp.pre_tokens) == ("compact_boundary", "auto", 155000)
    assert comp.before_index == 2 and comp.summary_index == 2
    assert "compact_summary" in conv.messages[2].flags
    assert comp.source.line == 3


def test_claude_code_unknown_types_skipped_with_counted_warning() -> None:
    data = _jsonl(
        {"type": "brand-new-thing", "x": 1},
        _user("u1", None, "hi"),
        {"type": "brand-new-thing", "x": 2},
        _assistant("a1", "u1", "msg_1", {"type": "text", "text": "yo"}),
    )
    parsed = importers.parse(data, name="w.jsonl")
    assert len(parsed.conversations[0].messages) == 2
    (warning,) = parsed.warnings
    assert "brand-new-thing" in warning.message and warning.count == 2 and warning.where == "line 1"


def test_claude_code_2_1_150_bridge_and_file_history_delta_are_known_metadata() -> None:
    """Claude Code 2.1.150 - 2.1.218 write ``bridge-session`` (the remote-control bridge) and
    ``file-history-delta`` (a file-history checkpoint as a change) lines, shaped as real
    sessions hold them: no warning, no message; the raw lines stay in the upload."""
    data = _jsonl(
        {"type": "bridge-session", "sessionId": "s1", "bridgeSessionId": "cse_01AS",
         "lastSequenceNum": 0},
        _user("u1", None, "hi"),
        {"type": "file-history-delta", "messageId": "u1", "snapshotMessageId": "u0",
         "trackingPath": "/tmp/p/git.go",
         "backup": {"backupFileName": "42960b3aa286d92c@v1", "version": 1,
                    "backupTime": "2026-07-21T14:05:10.345Z"}},
        _assistant("a1", "u1", "msg_1", {"type": "text", "text": "yo"}),
    )  # fmt: skip
    parsed = importers.parse(data, name="w.jsonl")
    assert not parsed.warnings
    assert [m.text for m in parsed.conversations[0].messages] == ["hi", "yo"]


def test_claude_code_rewind_keeps_newest_branch_and_the_old_one_as_an_alternate() -> None:
    data = _jsonl(
        _user("u1", None, "q"),
        _assistant("a1", "u1", "msg_1", {"type": "text", "text": "old answer"}),
        _assistant("a2", "u1", "msg_2", {"type": "text", "text": "new answer"}),
    )
    parsed = importers.parse(data, name="r.jsonl")
    main, alternate = parsed.conversations
    assert [m.text for m in main.messages] == ["q", "new answer"]
    assert [m.text for m in alternate.messages] == ["old answer"]
    assert alternate.parent_id == main.id and alternate.id == "s1~alt-a1"
    assert dict(alternate.metadata)["alternate_of"] == main.id
    assert dict(alternate.metadata)["forks_after_line"] == "1"
    assert alternate.title == "alternate branch at line 1 of “q”"
    (warning,) = parsed.warnings
    assert (warning.code, warning.count, warning.where) == ("alternate-branch", 1, "line 2")


def test_claude_code_branch_trap_keeps_the_whole_main_thread() -> None:
    parsed = importers.parse(_branch_trap_session(), name="trap.jsonl")
    main, agent = parsed.conversations
    lines = [m.source.line for m in main.messages]
    # 335 main-thread lines: 1 request + 111 x (assistant response split over 2 lines, one
    # tool result) + the final answer = 1 + 111 * 2 + 1 messages.
    assert len(main.messages) == 224 and lines[0] == 1 and lines[-1] == 335
    assert main.messages[-1].text == "Done." and main.tool_call_count == 111
    assert main.title == "Refactor the parser to stream lines"
    assert agent.parent_id == main.id and agent.title == "Find every caller of parse()"
    (warning,) = parsed.warnings
    assert warning.code == "side-lines-set-aside" and warning.count == 5  # user lines
    assert warning.where == "line 336"


def test_claude_code_title_is_never_a_local_command() -> None:
    data = _jsonl(
        _user(
            "c1",
            None,
            "Caveat: The messages below were generated by the user while running local commands.",
            isMeta=True,
        ),
        _user("c2", "c1", "<command-name>/clear</command-name>\n<command-args></command-args>"),
        _user("c3", "c2", "<local-command-stdout></local-command-stdout>"),
        _user("u1", "c3", "(no content)"),
        _user("u2", "u1", "why does the build fail?"),
        _assistant("a1", "u2", "m1", {"type": "text", "text": "Because."}),
    )
    (conv,) = importers.parse(data, name="t.jsonl").conversations
    assert conv.title == "why does the build fail?"
    args = "<command-name>/review</command-name>\n<command-args>the login form</command-args>"
    data = _jsonl(
        _user("u1", None, args), _assistant("a1", "u1", "m1", {"type": "text", "text": "ok"})
    )
    (conv,) = importers.parse(data, name="t.jsonl").conversations
    assert conv.title == "the login form"


def test_claude_code_parent_cycle_is_set_aside_with_a_warning() -> None:
    data = _jsonl(
        _user("u1", None, "hello"),
        _assistant("a1", "u1", "m1", {"type": "text", "text": "hi"}),
        _user("x1", "x3", "loop one"),
        _assistant("x2", "x1", "m2", {"type": "text", "text": "loop two"}),
        _user("x3", "x2", "loop three"),
        _user("x4", "x4", "its own parent"),
    )
    parsed = importers.parse(data, name="cycle.jsonl")
    (conv,) = parsed.conversations
    assert [m.text for m in conv.messages] == ["hello", "hi"]
    (warning,) = parsed.warnings
    assert (warning.code, warning.count, warning.where) == ("parent-cycle", 4, "line 3")


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"", "empty"),
        (b'{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"us', "invalid JSON"),
        (b"\x00\x01\x02\xff" * 100, "binary"),
        ('{"type":"user","message":"caf\xe9"}\n'.encode("latin-1"), "invalid UTF-8"),
        (b"[1, 2, 3]\n", "no Claude Code session lines"),
    ],
    ids=["empty", "truncated", "binary", "latin1", "not-claude"],
)
def test_claude_code_bad_input_raises_located_error(data: bytes, needle: str) -> None:
    with pytest.raises(TranscriptError) as info:
        importers.parse(data, name="bad.jsonl", format="claude-code")
    assert needle in str(info.value) and "bad.jsonl" in str(info.value)


def test_claude_code_cut_last_line_is_a_warning_naming_it() -> None:
    """A session still being written: what is complete is imported, the torn line named."""
    data = _load("sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl")
    cut = data[: data.index(b"\n", 5000) - 20]
    complete_lines = cut.count(b"\n")
    parsed = importers.parse(cut, name="cut.jsonl", format="claude-code")
    (warning,) = [w for w in parsed.warnings if w.code == "cut-off-last-line"]
    assert warning.where.startswith(f"line {complete_lines + 1}: invalid JSON")
    whole = importers.parse(data, name="whole.jsonl").conversations[0]
    complete = [m for m in whole.messages if (m.source.line or 0) <= complete_lines]
    assert len(parsed.conversations[0].messages) == len(complete) > 0


def test_claude_code_enormous_line_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_common, "MAX_LINE_BYTES", 1000)
    data = _jsonl(_user("u1", None, "x" * 5000))
    with pytest.raises(TranscriptError, match="bytes long") as info:
        importers.parse(data, name="big.jsonl", format="claude-code")
    assert info.value.line == 1


@pytest.mark.parametrize(
    "other",
    [
        "codex-rollout/agentcmd-rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl",
        "codex-exec-json/agentcmd-stream-output-2.jsonl",
        "anthropic-messages/claude-trace-req34-response.json",
    ],
    ids=["codex", "codex-exec", "anthropic"],
)
def test_claude_code_forced_on_other_format_raises(other: str) -> None:
    with pytest.raises(TranscriptError, match="expected"):
        importers.parse((CORPUS / other).read_bytes(), name=other, format="claude-code")
