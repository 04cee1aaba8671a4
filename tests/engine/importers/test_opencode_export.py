"""OpenCode importer: two real ``opencode export`` files of OpenCode 1.2.5 (tests/data/opencode,
MIT; one with OpenCode's own manual compaction) and small files of the same shape for what
they do not hold (errors, interrupted calls, steps, auto compactions)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.catalogue import original_kind_label
from ctxlab.engine.core.model import BlockKind, Conversation, Role, TranscriptError
from ctxlab.engine.importers import opencode
from ctxlab.engine.summarize.recorded import original_kind_key, summary_text

DATA = Path(__file__).parents[2] / "data"
PLAIN = DATA / "opencode" / "nimble-pixel.json"
COMPACTED = DATA / "opencode" / "curious-sailor-compaction.json"


def _conversation(path: Path) -> Conversation:
    parsed = importers.parse(path.read_bytes(), name=path.name)
    assert parsed.format == "opencode"
    (conversation,) = parsed.conversations
    return conversation


def _doc(path: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(path.read_bytes())
    return value


def _sent(message: dict[str, Any]) -> bool:
    """Whether OpenCode sends an assistant message again (toModelMessages)."""
    error = message["info"].get("error")
    if not error:
        return True
    return error.get("name") == "MessageAbortedError" and any(
        p["type"] not in ("step-start", "reasoning") for p in message["parts"]
    )


# --- detection ------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [PLAIN, COMPACTED], ids=lambda p: p.name)
def test_a_real_export_is_detected_as_opencode(path: Path) -> None:
    data = path.read_bytes()
    assert importers.detect(data, path.name) == "opencode"
    head = data[: importers.HEAD_BYTES]
    assert importers.detect_head(head, path.name, whole=len(head) == len(data)) == "opencode"


def test_an_export_whose_first_message_is_huge_is_still_opencode() -> None:
    """The head ends inside the first user message's file diffs (OpenCode keeps whole
    files there): the session's info decides."""
    doc = _doc(PLAIN)
    doc["messages"][0]["info"]["summary"] = {"diffs": [{"file": "a", "before": "x" * 300_000}]}
    data = json.dumps(doc, indent=2).encode()
    assert importers.detect(data[:65536] + b"x", "s.json") == "opencode"


def test_no_other_file_is_taken_for_opencode() -> None:
    files = [
        p
        for p in DATA.rglob("*")
        if p.is_file() and "opencode" not in p.parts and p.suffix in (".json", ".jsonl", ".traj")
    ]
    assert len(files) > 40
    claimed = [p.name for p in files if opencode.sniff(p.read_bytes()[:65536], p.name) >= 50]
    assert claimed == []


# --- every message, call and result -------------------------------------------------------------
@pytest.mark.parametrize("path", [PLAIN, COMPACTED], ids=lambda p: p.name)
def test_every_tool_call_and_result_is_imported(path: Path) -> None:
    doc = _doc(path)
    conversation = _conversation(path)
    tools = [
        part
        for m in doc["messages"]
        if m["info"]["role"] == "assistant" and _sent(m)
        for part in m["parts"]
        if part["type"] == "tool"
    ]
    assert tools
    calls = {b.tool_id: b for m in conversation.messages for b in m.tool_uses}
    results = {b.tool_id: b for m in conversation.messages for b in m.tool_results}
    assert list(calls) == [p["callID"] for p in tools]
    for part in tools:
        assert calls[part["callID"]].tool_name == part["tool"]
        assert calls[part["callID"]].tool_input == part["state"]["input"]
        assert results[part["callID"]].text == part["state"]["output"]
        assert not results[part["callID"]].is_error
    # each result follows its call, in the tool message right after the assistant step
    for i, message in enumerate(conversation.messages):
        if message.tool_uses:
            after = conversation.messages[i + 1]
            assert after.role is Role.TOOL
            assert [b.tool_id for b in after.tool_results] == [b.tool_id for b in message.tool_uses]


@pytest.mark.parametrize("path", [PLAIN, COMPACTED], ids=lambda p: p.name)
def test_every_text_the_model_saw_is_imported_in_order(path: Path) -> None:
    doc = _doc(path)
    conversation = _conversation(path)
    expected = []
    for m in doc["messages"]:
        if m["info"]["role"] == "assistant" and not _sent(m):
            continue
        for part in m["parts"]:
            if (
                part["type"] == "text"
                and not part.get("ignored")
                or part["type"] == "reasoning"
                and part["text"]
            ):
                expected.append(part["text"])
            elif part["type"] == "compaction":
                expected.append(opencode.COMPACTION_TEXT)
    got = [
        b.text
        for m in conversation.messages
        for b in m.blocks
        if b.kind in (BlockKind.TEXT, BlockKind.THINKING)
    ]
    assert got == expected


def test_the_plain_session_message_by_message() -> None:
    conversation = _conversation(PLAIN)
    assert conversation.id == "ses_39b4c1891ffezxPVc5OPmcqF33"
    assert conversation.title == "Re-enable protobuf transport, logging.ts review"
    assert conversation.model == "gpt-5.3-codex"
    roles = [m.role.value for m in conversation.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant", "user",
                     "assistant", "tool", "assistant", "tool"]  # fmt: skip
    first = conversation.messages[0]
    # The typed request, then OpenCode's synthetic read of the attached file (text/plain:
    # its content is the synthetic text; the file part itself is not sent).
    assert first.blocks[0].text.startswith("ADd 1. Re-enable real protobuf")
    assert not any(b.kind is BlockKind.MEDIA for b in first.blocks)
    assert "meta" not in first.flags
    assert dict(conversation.metadata)["opencode_version"] == "1.2.5"
    assert dict(conversation.metadata)["directory"] == "/Users/alex/repos/vfp/dark-factory"


def test_the_aborted_last_message_without_content_is_left_out_with_a_warning() -> None:
    parsed = importers.parse(PLAIN.read_bytes(), name=PLAIN.name)
    (warning,) = [w for w in parsed.warnings if w.code == "excluded-from-context"]
    assert warning.where == "record 7"
    assert parsed.conversations[0].messages[-1].source.record == 6


@pytest.mark.parametrize("path", [PLAIN, COMPACTED], ids=lambda p: p.name)
def test_each_step_carries_its_reported_tokens(path: Path) -> None:
    doc = _doc(path)
    conversation = _conversation(path)
    finishes = [
        p["tokens"]
        for m in doc["messages"]
        if m["info"]["role"] == "assistant" and _sent(m)
        for p in m["parts"]
        if p["type"] == "step-finish"
    ]
    assistants = [m for m in conversation.messages if m.role is Role.ASSISTANT]
    assert len(assistants) == len(finishes)
    for message, tokens in zip(assistants, finishes, strict=True):
        usage = message.usage
        assert usage is not None and usage.convention == "opencode"
        assert usage.input_uncached == tokens["input"]
        assert usage.cache_read == tokens["cache"]["read"]
        assert usage.output == tokens["output"]
        assert usage.reasoning == tokens["reasoning"]
        # OpenAI via OpenCode: the total is input + cache + output (reasoning inside output)
        assert usage.context_tokens == tokens["total"]


# --- OpenCode's own compaction ------------------------------------------------------------------
def test_the_real_manual_compaction_is_recorded() -> None:
    conversation = _conversation(COMPACTED)
    (compaction,) = conversation.compactions
    assert compaction.kind == "opencode_compaction"
    assert original_kind_label(original_kind_key(compaction)) == "OpenCode compaction"
    assert compaction.trigger == "manual"
    request = conversation.messages[compaction.before_index]
    assert request.role is Role.USER
    assert request.text == "What did we do so far?"
    assert request.blocks[0].raw_type == "compaction"
    assert compaction.summary_index == compaction.before_index + 1
    summary = conversation.messages[compaction.summary_index]
    assert summary.role is Role.ASSISTANT and "compact_summary" in summary.flags
    assert summary.usage is not None and summary.usage.context_tokens == 54382
    # The context before it: the last reply's reported total (OpenCode's overflow count).
    assert compaction.pre_tokens == 118210
    assert compaction.source.record == 8
    text = summary_text(conversation, compaction)
    assert text.startswith("## Goal\n\nCreate research notes and an OpenCode skill")
    assert "Preparing detailed summary prompt" not in text  # the reasoning is not the summary


# --- the shapes the real files do not hold ------------------------------------------------------
def _export(*messages: dict[str, Any]) -> bytes:
    doc = {
        "info": {"id": "ses_x", "slug": "s", "projectID": "p", "directory": "/w",
                 "title": "New session - 2026-01-01T00:00:00.000Z", "version": "1.2.5",
                 "time": {"created": 1, "updated": 2}},
        "messages": list(messages),
    }  # fmt: skip
    return json.dumps(doc, indent=2).encode()


def _user(mid: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"info": {"id": mid, "sessionID": "ses_x", "role": "user", "time": {"created": 1},
                     "agent": "build", "model": {"providerID": "p", "modelID": "m"}},
            "parts": list(parts)}  # fmt: skip


def _assistant(mid: str, *parts: dict[str, Any], **info: Any) -> dict[str, Any]:
    head = {"id": mid, "sessionID": "ses_x", "role": "assistant", "time": {"created": 2},
            "parentID": "u1", "modelID": "claude-x", "providerID": "anthropic", "mode": "build",
            "agent": "build", "path": {"cwd": "/w", "root": "/w"}, "cost": 0,
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            "finish": "stop", **info}  # fmt: skip
    return {"info": head, "parts": list(parts)}


def _tool(call: str, status: str, **state: Any) -> dict[str, Any]:
    return {"type": "tool", "callID": call, "tool": "bash",
            "state": {"status": status, "input": {"command": "ls"}, **state}}  # fmt: skip


def _finish(inp: int, out: int, read: int = 0, write: int = 0) -> dict[str, Any]:
    return {"type": "step-finish", "reason": "tool-calls", "cost": 0,
            "tokens": {"input": inp, "output": out, "reasoning": 0,
                       "cache": {"read": read, "write": write}}}  # fmt: skip


START = {"type": "step-start"}


def test_steps_errors_and_interrupted_calls() -> None:
    data = _export(
        _user("u1", {"type": "text", "text": "list it"},
              {"type": "text", "text": "hidden", "ignored": True}),
        _assistant(
            "a1",
            START, {"type": "reasoning", "text": "think"}, _tool("c1", "completed", output="a b"),
            _finish(10, 2, read=100, write=5),
            START, _tool("c2", "error", error="boom"),
            _tool("c3", "error", error="Tool execution aborted",
                  metadata={"interrupted": True, "output": "partial"}),
            _finish(12, 3),
            START, _tool("c4", "running"), {"type": "text", "text": "done"}, _finish(14, 4),
        ),
        _assistant("a2", START, {"type": "text", "text": "x"},
                   error={"name": "APIError", "data": {"message": "down"}}),
    )  # fmt: skip
    parsed = importers.parse(data, name="x.json")
    assert parsed.format == "opencode"
    (conversation,) = parsed.conversations
    assert conversation.title == "list it"  # OpenCode's default title is no title
    roles = [m.role for m in conversation.messages]
    assert roles == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.TOOL,
                     Role.ASSISTANT, Role.TOOL]  # fmt: skip
    assert conversation.messages[0].text == "list it"
    results = {b.tool_id: b for m in conversation.messages for b in m.tool_results}
    assert (results["c1"].text, results["c1"].is_error) == ("a b", False)
    assert (results["c2"].text, results["c2"].is_error) == ("boom", True)
    assert (results["c3"].text, results["c3"].is_error) == ("partial", False)
    assert (results["c4"].text, results["c4"].is_error) == (opencode.INTERRUPTED_TEXT, True)
    usages = [m.usage for m in conversation.messages if m.role is Role.ASSISTANT]
    assert [u.prompt_tokens for u in usages if u] == [115, 12, 14]
    assert usages[0] is not None and usages[0].cache_write_5m == 5
    assert [m.id for m in conversation.messages if m.role is Role.ASSISTANT] == [
        "a1", "a1#1", "a1#2",
    ]  # fmt: skip
    codes = sorted(w.code for w in parsed.warnings)
    assert codes == ["excluded-from-context", "excluded-from-context"]  # ignored text, a2


def _compaction_session(*, finished: bool) -> bytes:
    summary = _assistant(
        "a2", START, {"type": "text", "text": "## Goal\nship it"}, _finish(900, 50),
        parentID="u2", summary=True, mode="compaction", agent="compaction",
        **({} if finished else {"finish": None}),
    )  # fmt: skip
    return _export(
        _user("u1", {"type": "text", "text": "go"}),
        _assistant("a1", START, {"type": "text", "text": "ok"}, _finish(800, 20, read=1000)),
        _user("u2", {"type": "compaction", "auto": True, "overflow": True}),
        summary,
        _user("u3", {"type": "text", "text": opencode_continue(), "synthetic": True}),
        _assistant("a3", START, {"type": "text", "text": "continuing"}, _finish(300, 5)),
    )


def opencode_continue() -> str:
    return "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."  # noqa: E501


def test_an_auto_compaction_with_its_continue_message() -> None:
    conversation = importers.parse(_compaction_session(finished=True), name="c.json").conversations[
        0
    ]
    (compaction,) = conversation.compactions
    assert (compaction.trigger, compaction.pre_tokens) == ("auto", 1820)
    assert dict(compaction.detail) == {"overflow": "true"}
    assert conversation.messages[compaction.before_index].text == "What did we do so far?"
    assert summary_text(conversation, compaction) == "## Goal\nship it"
    after = conversation.messages[compaction.summary_index + 1]  # type: ignore[operator]
    assert after.role is Role.USER and "meta" in after.flags  # OpenCode's own words


def test_an_unfinished_summary_is_no_compaction() -> None:
    parsed = importers.parse(_compaction_session(finished=False), name="c.json")
    assert parsed.conversations[0].compactions == ()


def test_media_and_subtask_parts() -> None:
    png = "data:image/png;base64,iVBORw0KGgo="
    data = _export(
        _user("u1", {"type": "text", "text": "see"},
              {"type": "file", "mime": "image/png", "filename": "a.png", "url": png},
              {"type": "file", "mime": "text/plain", "filename": "b.txt", "url": "file:///b"},
              {"type": "subtask", "prompt": "p", "description": "d", "agent": "general"}),
        _assistant("a1", START, _tool("c1", "completed", output="img",
                   attachments=[{"type": "file", "mime": "image/png", "url": png}]),
                   _finish(1, 1)),
    )  # fmt: skip
    conversation = importers.parse(data, name="m.json").conversations[0]
    user = conversation.messages[0]
    assert [b.kind for b in user.blocks] == [BlockKind.TEXT, BlockKind.MEDIA, BlockKind.TEXT]
    assert user.blocks[1].media_type == "image/png" and user.blocks[1].data == "iVBORw0KGgo="
    assert user.blocks[2].text == opencode.SUBTASK_TEXT
    (result,) = conversation.messages[2].tool_results
    assert [p.kind for p in result.parts] == [BlockKind.MEDIA]


def test_a_broken_export_is_refused_as_opencode() -> None:
    doc = _doc(PLAIN)
    broken = copy.deepcopy(doc)
    broken["messages"] = []
    with pytest.raises(TranscriptError) as err:
        importers.parse(json.dumps(broken, indent=2).encode(), name="e.json")
    assert err.value.looks_like == "OpenCode session"


def test_an_export_saved_with_its_stderr_line_and_the_messages_alone() -> None:
    """``opencode export ID > f 2>&1`` keeps "Exporting session: ID" before the JSON; the
    server's ``GET /session/ID/message`` gives the messages alone. Both read as the export."""
    data = PLAIN.read_bytes()
    whole = _conversation(PLAIN)
    noisy = b"Exporting session: ses_39b4c1891ffezxPVc5OPmcqF33\n" + data
    assert importers.detect(noisy, "x.json") == "opencode"
    (read,) = importers.parse(noisy, name=PLAIN.name).conversations
    assert read.messages == whole.messages
    alone = json.dumps(_doc(PLAIN)["messages"], indent=2).encode()
    assert importers.detect(alone, "m.json") == "opencode"
    (read,) = importers.parse(alone, name=PLAIN.name).conversations
    assert read.id == whole.id and read.messages == whole.messages


PRUNED = DATA / "opencode" / "nimbus-1.2.26" / "prune-pass.json"  # dayhaysoos/nimbus, MIT (README)


def test_a_prune_pass_is_an_original_microcompact() -> None:
    """OpenCode's prune pass (stamps on the outputs it cleared, after the reply that ended
    the loop) is one original clearing in place, before the next message: the request
    after it is the first without those outputs."""
    conversation = _conversation(PRUNED)
    (prune,) = conversation.compactions
    assert prune.kind == "microcompact" and prune.trigger == "auto"
    assert prune.cleared_tool_ids == (
        "call_oe9Hkeb02uFLDHSPgaaznV67",  # stamped first (…345), though its message is later
        "call_pPfAyjfOEbElFsEIX9ZtDC25",
    )
    assert prune.agent_version == "1.2.26"
    assert dict(prune.detail) == {"agent_kind": "opencode_prune"}
    after = conversation.messages[prune.before_index]
    assert after.role is Role.USER and after.id == "msg_cf253f036001eMjaze2qyXwQZb"
    assert original_kind_key(prune) == "microcompact"
    assert dict(conversation.metadata)["pruned_tool_outputs"] == "2"


def test_a_prune_pass_after_the_last_message_is_outside_the_file() -> None:
    doc = _doc(PRUNED)
    doc["messages"] = doc["messages"][:-1]  # the file ends before the next request
    parsed = importers.parse(json.dumps(doc).encode(), name="cut.json")
    (prune,) = parsed.conversations[0].compactions
    assert prune.before_index == len(parsed.conversations[0].messages)


def test_outputs_without_a_prune_stamp_record_no_original() -> None:
    assert not _conversation(PLAIN).compactions or all(
        c.kind == "opencode_compaction" for c in _conversation(PLAIN).compactions
    )
    assert [c.kind for c in _conversation(COMPACTED).compactions] == ["opencode_compaction"]
