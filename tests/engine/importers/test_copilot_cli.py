"""GitHub Copilot CLI events.jsonl: a real session (tests/data/copilot-cli, MIT, system prompt
shortened) and small logs of the shapes the CLI's event schema gives (sub-agents, compaction,
truncation, failed tools), read before this importer as OpenAI chat or refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.catalogue import original_kind_label
from ctxlab.engine.core.model import BlockKind, Role, TranscriptError
from ctxlab.engine.importers import copilot_cli
from ctxlab.engine.summarize.recorded import original_kind_key

DATA = Path(__file__).parents[2] / "data"
REAL = DATA / "copilot-cli" / "list-models.events.jsonl"


def _log(*events: tuple[str, dict[str, Any]] | dict[str, Any]) -> bytes:
    lines = []
    for i, item in enumerate(events):
        if isinstance(item, tuple):
            kind, data = item
            item = {"type": kind, "data": data, "id": f"e{i}",
                    "timestamp": f"2026-05-26T16:14:{i:02d}.000Z", "parentId": f"e{i - 1}"}  # fmt: skip
        lines.append(json.dumps(item, separators=(",", ":")))
    return ("\n".join(lines) + "\n").encode()


START = ("session.start", {"sessionId": "s-1", "version": 1, "producer": "copilot-agent",
                           "copilotVersion": "1.0.55-1", "selectedModel": "claude-sonnet-4.6",
                           "context": {"cwd": "/w"}})  # fmt: skip
SYSTEM: tuple[str, dict[str, Any]] = (
    "system.message",
    {"role": "system", "content": "You are the GitHub Copilot CLI."},
)


def _user(text: str) -> tuple[str, dict[str, object]]:
    return ("user.message", {"content": text, "transformedContent": f"<t/>\n\n{text}"})


def _ask(
    call: str, name: str, args: dict[str, object], **extra: object
) -> tuple[str, dict[str, object]]:
    return ("assistant.message", {"messageId": f"m-{call}", "model": "claude-sonnet-4.6",
                                  "content": "", "toolRequests": [{"toolCallId": call,
                                  "name": name, "arguments": args, "type": "function"}], **extra})  # fmt: skip


def _done(
    call: str, content: str, ok: bool = True, **extra: object
) -> tuple[str, dict[str, object]]:
    data: dict[str, object] = {"toolCallId": call, "success": ok, **extra}
    if ok:
        data["result"] = {"content": content, "detailedContent": "diff ..."}
    else:
        data["error"] = {"message": content, "code": "failure"}
    return ("tool.execution_complete", data)


# --- detection ------------------------------------------------------------------------------
def test_detect_picks_copilot_for_the_real_session() -> None:
    assert importers.detect(REAL.read_bytes(), "events.jsonl") == "copilot-cli"


def test_detect_picks_copilot_for_compact_logs_without_session_start() -> None:
    data = _log(SYSTEM, _user("hi"), _ask("c1", "bash", {"command": "ls"}), _done("c1", "a"))
    assert importers.detect(data, "events.jsonl") == "copilot-cli"


def test_no_other_corpus_file_is_taken_for_copilot() -> None:
    files = [p for p in DATA.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")]
    files = [p for p in files if "copilot-cli" not in p.parts]
    assert len(files) > 20
    claimed = [p.name for p in files if copilot_cli.sniff(p.read_bytes()[:65536], p.name) >= 50]
    assert claimed == []


# --- the real session -----------------------------------------------------------------------
def test_the_real_session_every_message_call_and_result() -> None:
    parsed = importers.parse(REAL.read_bytes(), name="events.jsonl")
    assert parsed.format == "copilot-cli"
    assert parsed.warnings == ()
    (conv,) = parsed.conversations
    assert conv.id == "66957610-db49-4dea-972d-c079e1898044"
    assert conv.title == "list available models"
    assert conv.model == "claude-sonnet-4.6"
    assert [m.role for m in conv.messages] == [
        Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT,
    ]  # fmt: skip
    assert conv.messages[0].text.startswith("You are the GitHub Copilot CLI")
    # what the model was sent: the typed prompt inside the CLI's date and reminders
    assert conv.messages[1].text.startswith("<current_datetime>")
    assert "\n\nlist available models\n\n<system_reminder>" in conv.messages[1].text
    call = conv.messages[2].tool_uses[0]
    assert (call.tool_id, call.tool_name, call.tool_input) == (
        "toolu_01AyqWYHijwfcmwT1AJwqqPs", "report_intent", {"intent": "Listing available models"},
    )  # fmt: skip
    assert conv.messages[2].blocks[0].kind is BlockKind.THINKING
    result = conv.messages[3].blocks[0]
    assert (result.kind, result.tool_id, result.text, result.is_error) == (
        BlockKind.TOOL_RESULT, "toolu_01AyqWYHijwfcmwT1AJwqqPs", "Intent logged", False,
    )  # fmt: skip
    assert "| `gpt-4.1` | GPT-4.1 |" in conv.messages[4].text
    facts = dict(conv.metadata)
    assert facts["copilot_version"] == "1.0.49-1" and facts["cwd"] == "/Users/testuser"
    assert "inputTokens 48243" in facts["tokens claude-sonnet-4.6"]


# --- shapes of the schema -------------------------------------------------------------------
def test_a_repeated_system_prompt_is_one_message_and_a_changed_one_is_kept() -> None:
    data = _log(START, SYSTEM, _user("a"), SYSTEM, _user("b"),
                ("system.message", {"role": "system", "content": "Changed prompt."}), _user("c"))  # fmt: skip
    (conv,) = importers.parse(data, name="events.jsonl").conversations
    assert [m.role for m in conv.messages] == [
        Role.SYSTEM, Role.USER, Role.USER, Role.SYSTEM, Role.USER,
    ]  # fmt: skip


def test_a_sub_agent_is_its_own_conversation_with_its_calls_and_results() -> None:
    """As in the CLI's `task` tool (copilot-agent 1.0.55): the sub-agent's events carry
    parentToolCallId / agentId; the main context holds the task call and its result only."""
    sub: dict[str, Any] = {"parentToolCallId": "task-1"}
    data = _log(
        START, SYSTEM, _user("inspect"),
        _ask("task-1", "task", {"agent_type": "explore", "prompt": "Count lines in hello.py"}),
        ("subagent.started", {"toolCallId": "task-1", "agentName": "explore"}),
        _ask("v1", "view", {"path": "hello.py"}, **sub, model="claude-haiku-4.5"),
        _done("v1", "1. print('hi')", **sub),
        ("assistant.message", {**sub, "messageId": "m9", "content": "6 lines", "toolRequests": []}),
        ("subagent.completed", {"toolCallId": "task-1"}),
        _done("task-1", "6 lines"),
        ("assistant.message", {"messageId": "m10", "content": "hello.py has 6 lines.", "toolRequests": []}),
    )  # fmt: skip
    parsed = importers.parse(data, name="events.jsonl")
    assert parsed.warnings == ()
    main, child = parsed.conversations
    assert [m.role for m in main.messages] == [
        Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT,
    ]  # fmt: skip
    assert main.tool_call_count == 1 and main.messages[3].blocks[0].text == "6 lines"
    assert child.parent_id == "s-1" and child.id == "s-1:task-1"
    assert [m.role for m in child.messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.ASSISTANT,
    ]
    assert child.messages[0].text == "Count lines in hello.py"
    assert child.messages[2].blocks[0].tool_id == "v1" and child.model == "claude-haiku-4.5"


def test_a_failed_tool_is_an_error_result_with_the_cli_message() -> None:
    data = _log(START, _user("x"), _ask("c1", "bash", {"command": "false"}),
                _done("c1", "command exited 1", ok=False))  # fmt: skip
    (conv,) = importers.parse(data, name="events.jsonl").conversations
    result = conv.messages[-1].blocks[0]
    assert (result.is_error, result.text, result.tool_name) == (True, "command exited 1", "bash")


def test_compaction_and_truncation_are_original_compactions() -> None:
    data = _log(
        START, SYSTEM, _user("long task"), _ask("c1", "bash", {"command": "ls"}), _done("c1", "a"),
        ("session.compaction_start", {"trigger": "threshold", "currentTokens": 150000}),
        ("session.compaction_complete", {"success": True, "trigger": "threshold",
                                         "preCompactionTokens": 151234, "postCompactionTokens": 9000,
                                         "messagesRemoved": 3, "preCompactionMessagesLength": 5,
                                         "summaryContent": "<summary>ran ls</summary>",
                                         "checkpointNumber": 1}),
        _user("go on"),
        ("session.truncation", {"tokenLimit": 128000, "preTruncationTokensInMessages": 130000,
                                "preTruncationMessagesLength": 9, "postTruncationTokensInMessages": 100000,
                                "postTruncationMessagesLength": 7, "tokensRemovedDuringTruncation": 30000,
                                "messagesRemovedDuringTruncation": 2, "performedBy": "BasicTruncator"}),
        ("session.compaction_complete", {"success": False, "error": "rate limited"}),
    )  # fmt: skip
    parsed = importers.parse(data, name="events.jsonl")
    (conv,) = parsed.conversations
    compaction, truncation = conv.compactions
    assert (compaction.kind, compaction.trigger, compaction.pre_tokens) == (
        "copilot_compaction",
        "auto",
        151234,
    )
    summary = conv.messages[compaction.summary_index or 0]
    assert summary.text == "<summary>ran ls</summary>" and "compact_summary" in summary.flags
    assert compaction.before_index == 4 and dict(compaction.detail)["messages_removed"] == "3"
    assert compaction.agent_version == "1.0.55-1"
    assert (truncation.kind, truncation.pre_tokens, truncation.tokens_saved) == (
        "copilot_truncation",
        130000,
        30000,
    )
    assert truncation.before_index == 6 and dict(truncation.detail)["messages_removed"] == "2"
    # named as Copilot's own on every page that names an original compaction
    labels = [original_kind_label(original_kind_key(c)) for c in conv.compactions]
    assert labels == ["Copilot CLI compaction", "Copilot CLI truncation"]
    assert [w.message for w in parsed.warnings] == [
        "a compaction the CLI reports as failed: nothing compacted"
    ]


def test_usage_events_give_the_message_its_usage() -> None:
    data = _log(START, _user("x"), ("assistant.message", {"messageId": "m", "content": "hi",
                                                          "toolRequests": [], "apiCallId": "a1"}),
                ("assistant.usage", {"model": "claude-sonnet-4.6", "apiCallId": "a1", "inputTokens": 1000,
                                     "cacheReadTokens": 600, "cacheWriteTokens": 300, "outputTokens": 20}))  # fmt: skip
    (conv,) = importers.parse(data, name="events.jsonl").conversations
    usage = conv.messages[-1].usage
    assert usage is not None and (usage.prompt_tokens, usage.cache_read, usage.output) == (
        1000,
        600,
        20,
    )


def test_unknown_events_and_bad_lines_are_counted_warnings() -> None:
    data = _log(START, _user("x"), ("session.brand_new", {})) + b"{not json\n" + _log(_user("y"))
    parsed = importers.parse(data, name="events.jsonl")
    assert {w.code for w in parsed.warnings} == {"unknown-record", "unreadable-json-text"}
    assert len(parsed.conversations[0].messages) == 2


def test_a_file_without_copilot_events_is_refused_with_the_reason() -> None:
    with pytest.raises(TranscriptError, match="no Copilot CLI events"):
        importers.parse(b'{"type":"other","data":{}}\n', name="x.jsonl", format="copilot-cli")


def test_the_real_sub_agent_session_splits_the_two_contexts() -> None:
    """copilot-agent 1.0.55: the `task` tool's explore agent (claude-haiku-4.5) works in its
    own context; its two parallel `view` calls are not in the main one."""
    path = DATA / "copilot-cli" / "subagent-demo.events.jsonl"
    assert importers.detect(path.read_bytes(), "events.jsonl") == "copilot-cli"
    parsed = importers.parse(path.read_bytes(), name="events.jsonl")
    assert parsed.warnings == ()
    main, child = parsed.conversations
    assert (main.model, main.tool_call_count, main.tool_result_count) == (
        "claude-opus-4.7-1m-internal", 3, 3,
    )  # fmt: skip
    assert [b.tool_name for m in main.messages for b in m.tool_uses] == [
        "view",
        "report_intent",
        "task",
    ]
    assert main.messages[-1].text.startswith("Subagent findings:")
    assert child.parent_id == main.id and child.model == "claude-haiku-4.5"
    assert [m.role for m in child.messages] == [
        Role.USER, Role.ASSISTANT, Role.TOOL, Role.TOOL, Role.ASSISTANT,
    ]  # fmt: skip
    assert child.messages[0].text.startswith(
        "In the directory /Users/testuser/workspace/demo-project"
    )
    assert [b.tool_id for b in child.messages[1].tool_uses] == [
        "toolu_bdrk_01SteSnNRhtm3Bf9g9mQvj1t", "toolu_bdrk_011QTUCvCmSCC5NzxWsvC9Yj",
    ]  # fmt: skip
    assert child.messages[3].blocks[0].text.startswith("1. # Demo Project")
