"""pi session importer: the real pi-mono sessions (tests/data/pi, MIT) and small files of
each shape the session manager writes (v1 linear, v2+ id/parentId tree)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Role, TranscriptError
from ctxlab.engine.strategies import _pi_rules as rules

DATA = Path(__file__).parents[2] / "data"
PI = DATA / "pi"
BEFORE = PI / "before-compaction.jsonl"
LARGE = PI / "large-session.jsonl"


def _parse(lines: list[dict[str, object] | str], name: str = "t.jsonl") -> importers.ParsedFile:
    raw = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines)
    return importers.parse(raw.encode(), name=name, format="pi-session")


HEADER_V1 = {"type": "session", "id": "s1", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/w"}


def _msg(role: str, content: object, **extra: object) -> dict[str, object]:
    return {"type": "message", "timestamp": "2025-01-01T00:00:01Z",
            "message": {"role": role, "content": content, **extra}}  # fmt: skip


def _assistant(*blocks: dict[str, object], total: int = 0, stop: str = "stop") -> dict[str, object]:
    usage = {"input": 1, "output": 1, "cacheRead": total - 2, "cacheWrite": 0,
             "totalTokens": total} if total else None  # fmt: skip
    return _msg("assistant", list(blocks), usage=usage, stopReason=stop, model="m1")


# --- detection ------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [BEFORE, LARGE], ids=lambda p: p.name)
def test_pi_detect_picks_pi_for_real_sessions(path: Path) -> None:
    assert importers.detect(path.read_bytes(), path.name) == "pi-session"


def test_pi_detect_leaves_every_corpus_file_to_its_own_format() -> None:
    from ctxlab.engine.importers import pi

    files = [p for p in (DATA / "corpus").rglob("*") if p.is_file() and p.suffix != ".md"]
    assert len(files) > 20
    claimed = [p.name for p in files if pi.sniff(p.read_bytes()[:65536], p.name) >= 50]
    assert claimed == []


# --- the real sessions ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "messages", "calls", "results", "with_usage"),
    [(BEFORE, 992, 454, 448, 471), (LARGE, 914, 391, 373, 439)],
    ids=["before-compaction", "large-session"],
)
def test_pi_real_session_counts(
    path: Path, messages: int, calls: int, results: int, with_usage: int
) -> None:
    parsed = importers.parse(path.read_bytes(), name=path.name)
    assert parsed.format == "pi-session"
    assert parsed.warnings == ()
    (conv,) = parsed.conversations
    assert (len(conv.messages), conv.tool_call_count, conv.tool_result_count) == (
        messages, calls, results,
    )  # fmt: skip
    assert sum(m.usage is not None for m in conv.messages) == with_usage
    ids = {b.tool_id for m in conv.messages for b in m.tool_uses}
    assert all(b.tool_id in ids for m in conv.messages for b in m.tool_results)


def test_pi_real_session_compactions() -> None:
    (conv,) = importers.parse(BEFORE.read_bytes(), name=BEFORE.name).conversations
    rows = [(c.kind, c.pre_tokens, c.source.line, dict(c.detail)["first_kept"])
            for c in conv.compactions]  # fmt: skip
    assert rows == [("compaction", 175_004, 360, "288"), ("compaction", 185_014, 629, "546")]
    for c in conv.compactions:
        summary = conv.messages[c.summary_index]
        assert c.before_index == c.summary_index
        assert summary.role is Role.USER and "compact_summary" in summary.flags
        assert summary.text.startswith(rules.COMPACTION_SUMMARY_PREFIX + "# Context Checkpoint")
        assert summary.text.endswith("\n</summary>")
    # firstKeptEntryIndex 293 / 551 count the file's entries with the header at 0
    first = [conv.messages[int(dict(c.detail)["first_kept"])] for c in conv.compactions]
    assert [m.source.line for m in first] == [294, 552]
    # the usage just before the second compaction is the tokensBefore pi logged
    before = conv.messages[conv.compactions[1].before_index - 1]
    assert before.role is Role.ASSISTANT and before.usage is not None
    assert before.usage.context_tokens == 185_014


def test_pi_real_session_bash_execution_and_aborted() -> None:
    (conv,) = importers.parse(BEFORE.read_bytes(), name=BEFORE.name).conversations
    bash = [m for m in conv.messages if "bash_execution" in m.flags]
    assert len(bash) == 3
    assert all(m.role is Role.USER and m.text.startswith("Ran `") for m in bash)
    aborted = [m for m in conv.messages if "aborted" in m.flags]
    assert len(aborted) == 18  # an aborted response keeps what usage it reported
    assert sum(m.usage is None for m in aborted) == 12


# --- shapes ---------------------------------------------------------------------------------
def test_pi_v1_tool_pairing_usage_and_thinking() -> None:
    parsed = _parse([
        HEADER_V1,
        _msg("user", "fix it"),
        _assistant({"type": "thinking", "thinking": "hmm"},
                   {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}},
                   total=120, stop="toolUse"),
        _msg("toolResult", [{"type": "text", "text": "body"}], toolCallId="c1", toolName="read",
             isError=False),
        _assistant({"type": "text", "text": "done"}, total=150),
    ])  # fmt: skip
    (conv,) = parsed.conversations
    assert [m.role for m in conv.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    call = conv.messages[1].blocks[1]
    assert (call.kind, call.tool_id, call.tool_name, call.tool_input) == (
        BlockKind.TOOL_USE, "c1", "read", {"path": "a"},
    )  # fmt: skip
    assert conv.messages[1].blocks[0].kind is BlockKind.THINKING
    assert conv.messages[2].blocks[0].tool_id == "c1"
    assert conv.messages[3].usage is not None and conv.messages[3].usage.context_tokens == 150
    assert parsed.warnings == ()
    assert conv.title == "fix it"


def test_pi_v2_tree_keeps_the_leaf_branch_and_resolves_first_kept_id() -> None:
    head = {**HEADER_V1, "version": 3}

    def e(id_: str, parent: str | None, body: dict[str, object]) -> dict[str, object]:
        return {**body, "id": id_, "parentId": parent}

    parsed = _parse([
        head,
        e("a", None, _msg("user", "first")),
        e("b", "a", _assistant({"type": "text", "text": "one"}, total=10)),
        e("x", "b", _msg("user", "abandoned branch")),
        e("y", "x", _assistant({"type": "text", "text": "lost"}, total=12)),
        e("c", "b", {"type": "branch_summary", "fromId": "y", "summary": "tried x"}),
        e("d", "c", _msg("user", "second")),
        e("f", "d", _assistant({"type": "text", "text": "two"}, total=20)),
        e("g", "f", {"type": "compaction", "summary": "S", "firstKeptEntryId": "d",
                     "tokensBefore": 20, "details": {"readFiles": ["r"], "modifiedFiles": []}}),
        e("h", "g", _msg("user", "third")),
    ])  # fmt: skip
    (conv,) = parsed.conversations
    texts = [m.text for m in conv.messages]
    assert texts == [
        "first", "one", rules.branch_summary_text("tried x"), "second", "two",
        rules.compaction_summary_text("S"), "third",
    ]  # fmt: skip
    (c,) = conv.compactions
    assert (c.before_index, c.pre_tokens, dict(c.detail)["first_kept"]) == (5, 20, "3")
    assert dict(c.detail)["read_files"] == "1"
    (w,) = parsed.warnings
    assert (w.code, w.count, w.where) == ("off-branch-entries", 2, "line 4")


def test_pi_bad_line_is_a_located_warning_not_a_refusal() -> None:
    parsed = _parse([HEADER_V1, _msg("user", "hello"), '{"type": "message", "mess',
                     "[1, 2]", _assistant({"type": "text", "text": "hi"}, total=5)])  # fmt: skip
    (conv,) = parsed.conversations
    assert len(conv.messages) == 2
    assert {(w.code, w.where) for w in parsed.warnings} == {
        ("unreadable-line", "line 3"), ("unreadable-line", "line 4"),
    }  # fmt: skip


def test_pi_bash_execution_rendering_and_excluded_command() -> None:
    parsed = _parse([
        HEADER_V1,
        _msg("bashExecution", None, command="ls", output="a\nb", exitCode=2, cancelled=False,
             truncated=False),
        _msg("bashExecution", None, command="secret", output="x", exitCode=0, cancelled=False,
             truncated=False, excludeFromContext=True),
        _msg("bashExecution", None, command="true", output="", exitCode=0, cancelled=True,
             truncated=False),
        _assistant({"type": "text", "text": "ok"}, total=5),
    ])  # fmt: skip
    (conv,) = parsed.conversations
    first, second = conv.messages[0], conv.messages[1]
    assert first.text == "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 2"
    assert first.blocks[0].size == len("ls") + len("a\nb")
    assert second.text == "Ran `true`\n(no output)\n\n(command cancelled)"
    assert [w.code for w in parsed.warnings] == ["excluded-from-context"]


def test_pi_warnings_for_unknown_entries_and_unpaired_results() -> None:
    parsed = _parse([
        HEADER_V1,
        _msg("user", "q"),
        {"type": "mystery", "x": 1},
        {"type": "label", "targetId": "a", "label": "fine"},
        _msg("toolResult", [{"type": "text", "text": "?"}], toolCallId="nope", toolName="bash"),
        _assistant({"type": "text", "text": "a"}, total=5),
    ])  # fmt: skip
    assert sorted(w.code for w in parsed.warnings) == ["tool-result-unknown-id", "unknown-record"]


def test_pi_tool_result_image_is_a_media_part() -> None:
    (conv,) = _parse([
        HEADER_V1, _msg("user", "look"),
        _assistant({"type": "toolCall", "id": "c", "name": "read", "arguments": {"path": "p"}},
                   total=5, stop="toolUse"),
        _msg("toolResult", [{"type": "text", "text": "img"},
                            {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}],
             toolCallId="c", toolName="read"),
        _assistant({"type": "text", "text": "a"}, total=9),
    ]).conversations  # fmt: skip
    (result,) = conv.messages[2].blocks
    assert [p.kind for p in result.parts] == [BlockKind.TEXT, BlockKind.MEDIA]
    assert result.parts[1].size == 5


@pytest.mark.parametrize(
    ("lines", "match"),
    [
        ([_msg("user", "no header")], "no session header"),
        ([HEADER_V1], "no messages"),
        (["not json at all"], "no session header"),
    ],
    ids=["no-header", "header-only", "garbage"],
)
def test_pi_refuses_files_without_a_session(
    lines: list[dict[str, object] | str], match: str
) -> None:
    with pytest.raises(TranscriptError, match=match):
        _parse(lines, name="bad.jsonl")


def test_pi_truncated_real_file_still_imports() -> None:
    data = BEFORE.read_bytes()
    cut = data[: len(data) // 2]  # ends mid-line
    parsed = importers.parse(cut, name="cut.jsonl")
    assert [w.code for w in parsed.warnings] == ["unreadable-line"]
    last_line = cut.count(b"\n") + 1
    assert parsed.warnings[0].where == f"line {last_line}"


def test_pi_usage_total_that_is_not_the_sum_is_a_warning() -> None:
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 99}
    parsed = _parse([HEADER_V1, _msg("user", "q"),
                     _msg("assistant", [{"type": "text", "text": "a"}], usage=usage)])  # fmt: skip
    assert parsed.conversations[0].messages[1].usage.context_tokens == 15  # type: ignore[union-attr]
    assert [(w.code, w.where) for w in parsed.warnings] == [("usage-total-differs", "line 3")]
