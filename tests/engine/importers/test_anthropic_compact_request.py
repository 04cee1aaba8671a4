"""Issue 31 item 4: a ``/compact`` in Claude Code HTTP traffic (claude-trace). The log holds
the session's calls, the summarisation call (the whole history closed by Claude Code's
compact prompt, answered by the summary) and the session that goes on after it (opening
with "This session is being continued…" and that summary). One conversation comes out,
with the compaction recorded where it happened and its summary readable; before, three
conversations (two with the same title) and no compaction.

Built from the corpus capture (tests/data/corpus/anthropic-messages: the real compaction
request and its response), arranged as claude-trace writes a log."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import Role
from ctxlab.engine.summarize.recorded import summary_text

DIR = Path(__file__).parents[2] / "data" / "corpus" / "anthropic-messages"
COMPACT_REQUEST = json.loads((DIR / "claude-trace-req34-request.json").read_text())
COMPACT_RESPONSE = json.loads((DIR / "claude-trace-req34-response.json").read_text())
MAIN_SYSTEM = [
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}
]
URL = "https://api.anthropic.com/v1/messages?beta=true"


def _record(body: dict[str, Any], response: dict[str, Any]) -> str:
    return json.dumps(
        {"request": {"method": "POST", "url": URL, "body": body},
         "response": {"status_code": 200, "body": response}}
    )  # fmt: skip


def _answer(text: str, prompt: int) -> dict[str, Any]:
    return {
        "id": "msg_x", "type": "message", "role": "assistant", "model": "claude-sonnet-4",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "usage": {"input_tokens": prompt, "output_tokens": 20},
    }  # fmt: skip


def _summary() -> str:
    text = COMPACT_RESPONSE["content"][0]["text"]
    return re.search(r"<summary>([\s\S]*?)</summary>", text).group(1).strip()  # type: ignore[union-attr]


def _log(*, same_first_message: bool, focus: str = "") -> bytes:
    history = COMPACT_REQUEST["messages"][:-1]  # the session up to the compact prompt
    tools = [{"name": "Write", "description": "w", "input_schema": {"type": "object"}}]
    main = [copy.deepcopy(m) for m in history]
    if not same_first_message:  # the session's first message without the IDE note
        main[0]["content"] = main[0]["content"][:2]
    lines = [
        _record({"model": "claude-sonnet-4", "max_tokens": 32000, "system": MAIN_SYSTEM,
                 "tools": tools, "messages": main[:1]}, _answer("Starting.", 9000)),
        _record({"model": "claude-sonnet-4", "max_tokens": 32000, "system": MAIN_SYSTEM,
                 "tools": tools, "messages": main[:-1]},
                {**_answer("", 15000), "content": main[-1]["content"]}),
    ]  # fmt: skip
    compact = copy.deepcopy(COMPACT_REQUEST)
    if focus:
        compact["messages"][-1]["content"][0]["text"] += f"\n\nAdditional Instructions:\n{focus}"
    lines.append(_record(compact, COMPACT_RESPONSE))
    continued = (
        "This session is being continued from a previous conversation that ran out of "
        "context. The conversation is summarized below:\nSummary:\n" + _summary()
        + ".\nPlease continue the conversation from where we left it off without asking "
        "the user any further questions. Continue with the last task that you were asked "
        "to work on."
    )  # fmt: skip
    after = [{"role": "user", "content": [{"type": "text", "text": continued}]}]
    lines.append(_record({"model": "claude-sonnet-4", "max_tokens": 32000, "system": MAIN_SYSTEM,
                          "tools": tools, "messages": after}, _answer("Done: it works.", 4000)))  # fmt: skip
    after2 = [*after, {"role": "assistant", "content": [{"type": "text", "text": "Done: it works."}]},
              {"role": "user", "content": [{"type": "text", "text": "make it blue"}]}]  # fmt: skip
    lines.append(_record({"model": "claude-sonnet-4", "max_tokens": 32000, "system": MAIN_SYSTEM,
                          "tools": tools, "messages": after2}, _answer("Blue now.", 4300)))  # fmt: skip
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("same_first_message", [False, True], ids=["own-first", "shared-first"])
def test_compact_request_joins_the_continued_session(same_first_message: bool) -> None:
    data = _log(same_first_message=same_first_message)
    assert importers.detect(data, "trace.jsonl") == "anthropic-messages"
    parsed = importers.parse(data, name="trace.jsonl")
    assert len(parsed.conversations) == 1
    conv = parsed.conversations[0]
    assert conv.title.startswith("create a folder weather")
    texts = [m.text for m in conv.messages]
    assert not any("Your task is to create a detailed summary" in t for t in texts)
    assert texts[-1] == "Blue now." and texts[-2] == "make it blue"
    assert sum(1 for m in conv.messages if m.role is Role.SYSTEM) == 1
    (compaction,) = conv.compactions
    assert compaction.kind == "compact_request"
    summary_at = next(i for i, t in enumerate(texts) if t.startswith("This session is being"))
    assert compaction.before_index == compaction.summary_index == summary_at
    assert summary_at == len(COMPACT_REQUEST["messages"])  # system + the 26 messages before
    assert "compact_summary" in conv.messages[summary_at].flags
    assert _summary()[:300] in summary_text(conv, compaction)
    usage = COMPACT_RESPONSE["usage"]
    assert compaction.pre_tokens == sum(
        usage.get(k) or 0
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    assert compaction.trigger == "" and compaction.instructions == ""


def test_compact_focus_text_is_the_manual_instructions() -> None:
    parsed = importers.parse(_log(same_first_message=False, focus="keep the API"), name="t.jsonl")
    (compaction,) = parsed.conversations[0].compactions
    assert (compaction.trigger, compaction.instructions) == ("manual", "keep the API")


def test_compact_request_without_the_continued_session_keeps_its_summary() -> None:
    lines = _log(same_first_message=False).decode().splitlines()[:3]  # ends at the compaction
    parsed = importers.parse(("\n".join(lines) + "\n").encode(), name="t.jsonl")
    (conv,) = parsed.conversations
    (compaction,) = conv.compactions
    assert compaction.summary_index == len(conv.messages) - 1
    assert summary_text(conv, compaction) == _summary()
