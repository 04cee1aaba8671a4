"""Codex ``compacted`` lines as the importer shows them: the replacement history after the
boundary, the encrypted item opaque, no summary for ``message: ""``, the window chain."""

from __future__ import annotations

import json
from pathlib import Path

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Conversation, Role

DATA = Path(__file__).resolve().parents[2] / "data" / "codex-rollouts"
SPARK = DATA / "agentv-0.142.2-spark-window2.jsonl"
MANUAL_AUTO = DATA / "agentv-0.142.5-manual-then-auto.jsonl"


def load(path: Path) -> Conversation:
    (conversation,) = importers.parse(path.read_bytes(), name=path.name).conversations
    return conversation


def line(kind: str, payload: dict[str, object]) -> str:
    return json.dumps({"timestamp": "2026-07-06T00:00:00Z", "type": kind, "payload": payload})


def rollout(*lines: str) -> Conversation:
    meta = line("session_meta", {"id": "s", "cli_version": "0.142.5", "originator": "codex-tui"})
    data = "\n".join((meta, *lines)).encode()
    (conversation,) = importers.parse(data, name="r.jsonl").conversations
    return conversation


def text(role: str, words: str) -> dict[str, object]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": words}]}


def count(total: int, input_tokens: int, running: int) -> str:
    last = {"input_tokens": input_tokens, "output_tokens": 0 if not input_tokens else 10,
            "total_tokens": total}  # fmt: skip
    info = {"last_token_usage": last, "total_token_usage": {"total_tokens": running},
            "model_context_window": 258_400}  # fmt: skip
    return line("event_msg", {"type": "token_count", "info": info})


REPLACEMENT = [
    text("user", "first task"),
    text("developer", "<permissions instructions>sandbox</permissions instructions>"),
    {"type": "compaction", "encrypted_content": "gAAAA" + "x" * 600},
]


def mid_turn() -> Conversation:
    return rollout(
        line("event_msg", {"type": "task_started", "turn_id": "t1"}),
        line("response_item", text("user", "first task")),
        line("event_msg", {"type": "user_message", "message": "first task"}),
        line("response_item", text("assistant", "working")),
        count(120_000, 119_990, 120_000),
        line(
            "compacted",
            {
                "message": "",
                "replacement_history": REPLACEMENT,
                "window_number": 1,
                "first_window_id": "w0",
                "previous_window_id": "w0",
                "window_id": "w1",
            },
        ),  # fmt: skip
        count(9_000, 0, 120_000),  # recompute_token_usage: an estimate, not a response
        line("response_item", text("assistant", "resumed")),
        count(10_000, 9_990, 130_000),
    )


def test_empty_message_compaction_has_no_summary_and_shows_the_replacement_history() -> None:
    conversation = mid_turn()
    (compaction,) = conversation.compactions
    assert compaction.kind == "compacted" and compaction.summary_index is None
    assert compaction.trigger == "auto" and compaction.pre_tokens == 120_000
    assert compaction.agent_version == "0.142.5"
    start = compaction.before_index
    after = conversation.messages[start : start + 3]
    assert [m.role for m in after] == [Role.USER, Role.SYSTEM, Role.USER]
    assert all("replacement_history" in m.flags for m in after)
    assert after[0].text == "first task" and after[1].name == "developer"
    (opaque,) = after[2].blocks
    assert opaque.kind is BlockKind.OPAQUE and opaque.raw_type == "compaction"
    # no readable summary anywhere: nothing carries the compacted message's text
    assert not any(b.raw_type == "compacted" for m in conversation.messages for b in m.blocks)


def test_compaction_detail_counts_the_chain_and_codex_estimate_after_it() -> None:
    (compaction,) = mid_turn().compactions
    detail = dict(compaction.detail)
    assert detail["replacement_items"] == "3" and detail["encrypted"] == "1"
    assert (detail["window_number"], detail["previous_window_id"], detail["window_id"]) == (
        "1", "w0", "w1")  # fmt: skip
    assert detail["post_tokens"] == "9000"


def test_the_estimate_after_a_compaction_is_no_response_usage() -> None:
    conversation = mid_turn()
    replies = [m for m in conversation.messages if m.role is Role.ASSISTANT]
    assert [m.usage.context_tokens if m.usage else None for m in replies] == [120_000, 10_000]


def test_a_readable_message_is_the_summary() -> None:
    conversation = rollout(
        line("response_item", text("user", "task")),
        line("compacted", {"message": "the summary"}),
        line("response_item", text("assistant", "ok")),
    )
    (compaction,) = conversation.compactions
    assert compaction.summary_index == compaction.before_index
    assert conversation.messages[compaction.summary_index].text == "the summary"


def test_a_turn_of_nothing_but_the_compaction_is_manual() -> None:
    conversation = load(MANUAL_AUTO)
    triggers = [(c.trigger, c.pre_tokens) for c in conversation.compactions]
    assert triggers == [("manual", 188_493), ("auto", 240_937)]


def test_window_chain_links_each_compaction_to_the_one_before() -> None:
    conversation = load(SPARK)
    first, second = (dict(c.detail) for c in conversation.compactions)
    assert first["window_number"] == "1" and second["window_number"] == "2"
    assert second["previous_window_id"] == first["window_id"]
    assert first["first_window_id"] == second["first_window_id"]
    assert conversation.compactions[0].before_index == 0  # the file starts after window 1


def test_a_repeated_count_or_a_count_without_items_keeps_usage_on_its_response() -> None:
    conversation = rollout(
        line("response_item", text("user", "task")),
        line("response_item", text("assistant", "one")),
        count(100, 90, 100),
        count(100, 90, 100),  # 0.14x writes the same count twice
        line("response_item", text("assistant", "two")),
        count(200, 190, 300),
    )
    replies = [m for m in conversation.messages if m.role is Role.ASSISTANT]
    assert [m.usage.context_tokens if m.usage else None for m in replies] == [100, 200]
    assert "model_context_windows" not in dict(conversation.metadata)  # no turn_context model


def test_tool_search_output_is_a_tool_output_not_a_skipped_item() -> None:
    found = {"type": "tool_search_output", "call_id": "c1", "status": "completed",
             "execution": "client", "tools": [{"type": "namespace", "name": "mcp__wiki"}]}  # fmt: skip
    search = {"type": "tool_search_call", "call_id": "c1", "arguments": {"query": "wiki"}}
    conversation = importers.parse(
        "\n".join(
            (
                line("session_meta", {"id": "s", "cli_version": "0.142.4"}),
                line("response_item", text("user", "task")),
                line("response_item", search),
                line("response_item", found),
                count(100, 90, 100),
                line("response_item", text("assistant", "next")),
            )
        ).encode(),  # fmt: skip
        name="r.jsonl",
    )
    assert not conversation.warnings
    (conv,) = conversation.conversations
    (result,) = [m for m in conv.messages if m.role is Role.TOOL]
    (block,) = result.blocks
    assert block.kind is BlockKind.OPAQUE and block.raw_type == "tool_search_output"
    assert block.size == len(json.dumps(found, separators=(",", ":")))


def test_two_records_run_together_on_one_line_are_both_read() -> None:
    """git-sync 0.118 rollouts hold a line with a token_count and the next turn's
    task_started written back to back ("Extra data"): both are read, a warning names the
    line, and the file is not refused."""
    meta = line("session_meta", {"id": "s", "cli_version": "0.118.0", "originator": "codex-tui"})
    together = count(1_000, 990, 1_000) + line("event_msg", {"type": "task_started"})
    data = "\n".join((
        meta,
        line("response_item", text("user", "first task")),
        line("response_item", text("assistant", "done")),
        together,
        line("response_item", text("user", "second task")),
        line("response_item", text("assistant", "done again")),
        "{not json",
        line("response_item", text("user", "third task")),
    )).encode()  # fmt: skip
    parsed = importers.parse(data, name="r.jsonl")
    (conversation,) = parsed.conversations
    texts = [m.blocks[0].text for m in conversation.messages if m.blocks]
    assert texts[-1] == "third task" and "second task" in texts
    first_reply = next(m for m in conversation.messages if m.role is Role.ASSISTANT)
    assert first_reply.usage is not None and first_reply.usage.context_tokens == 1_000
    where = {w.where.split(":")[0]: w for w in parsed.warnings}
    assert "records run together" in where["line 4"].message
    assert where["line 7"].code == "unreadable-json-text"
