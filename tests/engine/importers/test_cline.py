"""Cline / Roo Code task folders: the bundle a folder is read as, a lone
api_conversation_history.json, and each agent's own compactions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.engine import importers, sources
from ctxlab.engine.core.model import BlockKind, ParsedFile, Role, TranscriptError
from ctxlab.engine.sources import cline as cline_source

DATA = Path(__file__).resolve().parents[2] / "data" / "cline"
CLINE = DATA / "saoudrizwan.claude-dev" / "tasks" / "1769053680585"
ROO = DATA / "rooveterinaryinc.roo-cline" / "tasks" / "0199b2a4-3c1e-7a51-b7f0-5a7d2c9e8f10"


def _parse(folder: Path) -> ParsedFile:
    data = cline_source.bundle(folder)
    assert importers.detect(data, folder.name + ".cline-task.json") == "cline"
    return importers.parse(data, name=folder.name + ".cline-task.json")


def test_a_cline_task_reads_every_message_call_and_result() -> None:
    parsed = _parse(CLINE)
    assert not parsed.warnings
    (conversation,) = parsed.conversations
    history = json.loads((CLINE / "api_conversation_history.json").read_bytes())
    assert len(conversation.messages) == len(history) == 14
    assert [m.role.value for m in conversation.messages] == [h["role"] for h in history]
    calls = [b for m in conversation.messages for b in m.blocks if b.kind is BlockKind.TOOL_USE]
    results = [
        b for m in conversation.messages for b in m.blocks if b.kind is BlockKind.TOOL_RESULT
    ]
    assert len(calls) == 7 and len(results) == 6  # attempt_completion is answered by nobody
    assert [r.tool_id for r in results] == [c.tool_id for c in calls[:6]]
    assert results[0].text.startswith("[read_file for 'src/util.py'] Result:")
    assert "def add(a, b)" in results[0].text
    assert conversation.title.startswith("Add a subtract function")
    assert conversation.model == "claude-sonnet-4-5-20250929"
    assert ("cline version", "3.51.0") in conversation.metadata
    assert ("agent", "cline") in conversation.metadata


def test_each_request_s_figures_are_its_answer_s_usage() -> None:
    (conversation,) = _parse(CLINE).conversations
    history = json.loads((CLINE / "api_conversation_history.json").read_bytes())
    for index, message in enumerate(conversation.messages):
        if message.role is not Role.ASSISTANT:
            assert message.usage is None
            continue
        assert message.usage is not None, index
        # the assistant message's own metrics say the same output count
        assert message.usage.output == history[index]["metrics"]["tokens"]["completion"]


def test_cline_s_truncation_is_an_original_compaction() -> None:
    (conversation,) = _parse(CLINE).conversations
    (compaction,) = conversation.compactions
    assert compaction.kind == "truncation"
    assert dict(compaction.detail) == {"deleted_range": "2-5", "deleted_messages": "4"}
    # first sent with the request answered by message 9 (the fifth request's answer)
    assert compaction.before_index == 9
    assert conversation.messages[9].role is Role.ASSISTANT


def test_roo_s_condense_is_an_original_compaction_with_its_summary() -> None:
    parsed = _parse(ROO)
    (conversation,) = parsed.conversations
    assert len(conversation.messages) == 11
    (compaction,) = conversation.compactions
    assert compaction.kind == "condense"
    assert compaction.summary_index == compaction.before_index == 5
    assert compaction.pre_tokens == 41234
    detail = dict(compaction.detail)
    assert detail["condensed_messages"] == "1-4"
    assert detail["tokens_after"] == "5321"
    summary = conversation.messages[5]
    assert {"compact_summary", "meta"} <= summary.flags
    assert summary.text.startswith("## Conversation Summary")
    assert conversation.tool_call_count == 5 and conversation.tool_result_count == 4
    assert ("agent", "roo") in conversation.metadata
    assert conversation.messages[0].timestamp == "2025-10-09T08:53:20Z"


def test_a_lone_history_file_is_read_and_other_arrays_are_not_taken() -> None:
    path = ROO / "api_conversation_history.json"
    assert importers.detect(path.read_bytes(), path.name) == "cline"
    parsed = importers.parse(path.read_bytes(), name=path.name)
    assert len(parsed.conversations[0].messages) == 11
    assert parsed.conversations[0].compactions[0].kind == "condense"
    # a plain OpenAI chat messages array stays OpenAI chat
    tau = Path(__file__).resolve().parents[2] / "data" / "corpus" / "openai-chat"
    sample = tau / "taubench-gpt-4o-airline-task2-messages.json"
    assert importers.detect(sample.read_bytes(), sample.name) == "openai-chat"


def test_sources_find_every_task_folder_with_its_agent() -> None:
    place = sources.find(DATA)
    found = {Path(item.where).name: item for item in place.sessions}
    assert set(found) == {CLINE.name, ROO.name}
    assert not place.whole
    assert found[ROO.name].covers == ROO
    loaded = found[ROO.name].load()
    assert loaded.format == "cline" and loaded.facts["kind"] == "roo"
    assert json.loads(loaded.data)["cline_task"]["agent"] == "roo"
    assert sources.find(CLINE).sessions[0].load().facts["kind"] == "cline"


def test_results_with_brackets_newlines_and_a_described_tool() -> None:
    """Shapes seen in a real Cline task: a search regex with brackets, a question over
    several lines, a sub-agents call answered as ``[subagents]``, an interrupted call."""

    def call(n: int, name: str) -> dict[str, object]:
        return {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": {}}

    def said(text: str) -> dict[str, object]:
        return {"role": "user", "content": [{"type": "text", "text": text}]}

    history = [
        said("<task>\nfind the imports\n</task>"),
        {"role": "assistant", "content": [call(1, "search_files"), call(2, "use_subagents")]},
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "[search_files for 'from ['\"]@/lib[\"']'] Result:\nFound 4",
                },
                {"type": "text", "text": "[subagents] Result:\nSubagent results: 5"},
            ],
        },  # fmt: skip
        {"role": "assistant", "content": [call(3, "ask_followup_question")]},
        said("[ask_followup_question for '## Phase 1\n\n[x] done'] Result:\n<answer>yes</answer>"),
        {"role": "assistant", "content": [call(4, "execute_command")]},
        said("[TASK RESUMPTION] This task was interrupted 3 days ago."),
    ]
    data = json.dumps(history).encode()
    (conversation,) = importers.parse(data, name="api_conversation_history.json").conversations
    answered = [
        b.tool_id
        for m in conversation.messages
        for b in m.blocks
        if b.kind is BlockKind.TOOL_RESULT
    ]
    assert answered == ["toolu_1", "toolu_2", "toolu_3"]  # toolu_4 was interrupted


def test_a_lone_cline_3_history_with_ts_is_cline_not_roo() -> None:
    """Cline 3.x writes ``ts`` on every message too (a real task of Cline 3.x, its
    ``api_conversation_history.json`` alone): its ``modelInfo`` / ``metrics`` name it Cline;
    only Roo Code's own keys (or ``ts`` without either) name Roo Code."""
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nlist files\n</task>"}],
         "ts": 1777073160794},
        {"role": "assistant", "ts": 1777073173494,
         "modelInfo": {"modelId": "claude_4_5_opus", "providerId": "openai", "mode": "plan"},
         "metrics": {"tokens": {"prompt": 10049, "completion": 640, "cached": 0}},
         "content": [{"type": "tool_use", "id": "toolu_1", "name": "list_files",
                      "input": {"path": "src"}}]},
        {"role": "user", "ts": 1777073260137,
         "content": [{"type": "text", "text": "[list_files for 'src'] Result:\na.ts"}]},
    ]  # fmt: skip
    data = json.dumps(history).encode()
    parsed = importers.parse(data, name="api_conversation_history.json")
    conversation = parsed.conversations[0]
    assert dict(conversation.metadata)["agent"] == "cline"
    assert [m.role for m in conversation.messages] == [Role.USER, Role.ASSISTANT, Role.USER]
    assert conversation.messages[2].blocks[0].kind is BlockKind.TOOL_RESULT
    # ``ts`` alone (no Cline key) stays Roo Code, as do Roo's own keys
    bare = [{k: v for k, v in m.items() if k not in ("modelInfo", "metrics")} for m in history]
    parsed = importers.parse(json.dumps(bare).encode(), name="api_conversation_history.json")
    assert dict(parsed.conversations[0].metadata)["agent"] == "roo"
    roo = ROO / "api_conversation_history.json"
    parsed = importers.parse(roo.read_bytes(), name=roo.name)
    assert dict(parsed.conversations[0].metadata)["agent"] == "roo"


def test_a_lone_ui_messages_json_is_named_and_refused_in_words() -> None:
    """A task's ``ui_messages.json`` alone (a real one of Cline 3.x: ``say`` / ``ask``
    messages with ``ts``, ``modelInfo``, ``conversationHistoryIndex``) was "a JSON array
    with none of the fields a known transcript format has": it is named as Cline's, and
    refused saying what to import instead."""
    ui = [
        {"ts": 1767644899093, "type": "say", "say": "text", "text": "yo wassup", "images": [],
         "files": [], "modelInfo": {"providerId": "cline", "modelId": "x-ai/grok-code-fast-1",
                                    "mode": "act"}, "conversationHistoryIndex": -1},
        {"ts": 1767644899120, "type": "say", "say": "api_req_started",
         "text": json.dumps({"request": "yo wassup", "tokensIn": 10, "tokensOut": 5}),
         "conversationHistoryIndex": -1},
        {"ts": 1767644901000, "type": "ask", "ask": "followup", "text": "{}",
         "conversationHistoryIndex": 1},
    ]  # fmt: skip
    data = json.dumps(ui).encode()
    assert importers.detect(data, "ui_messages.json") == "cline"
    with pytest.raises(TranscriptError) as caught:
        importers.parse(data, name="ui_messages.json")
    assert "ui_messages.json: what the task's chat showed" in str(caught.value)
    assert "api_conversation_history.json" in caught.value.expected
    assert caught.value.looks_like == "Cline / Roo Code task"
