"""Cline compaction: cases ported from ``compaction.test.ts`` (cline/cline @ 21cb8d25; the
basic fold run on Cline-shaped messages with the tests' JSON-length estimator), table tests
of the shared rules, replays through the strategy, and a real corpus session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.core.records import Fate, ReplayResult
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, STRATEGIES
from ctxlab.engine.strategies import _cline_rules as r
from ctxlab.engine.strategies._cline_basic import basic_compaction
from ctxlab.engine.strategies.cline import ClineStrategy
from tests.engine.builders import (
    EchoSummarizer,
    assistant,
    call,
    conv,
    events_of,
    system,
    tool_result,
    user,
)

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SESSION = "gemini-cli/agentcmd-session-2025-10-27T19-55-981c87cb.json"


def jlen(message: dict[str, Any]) -> int:
    return len(json.dumps(message, ensure_ascii=False, separators=(",", ":")))


def forced(messages: list[dict[str, Any]], target: int) -> list[dict[str, Any]]:
    """``runForcedBasicCompaction``: trigger = target; unchanged when nothing folds."""
    out = basic_compaction(messages, target, target, jlen)
    return [m for _, m in out] if out is not None else messages


def use(tool_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def res(tool_id: str, content: Any, name: str = "tool") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "name": name, "content": content}


def texts(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    return [b["text"] if b["type"] == "text" else f"[{b['type']}]" for b in content]


# -- basic compaction (ported) -----------------------------------------------------------------


def test_bridges_user_turns_with_dropped_work_summaries() -> None:
    grep = (
        'grep -rn "sidebarItem\\|sidebarText\\|sidebar:\\|variant" '
        '/repo/webview/components/ui/button.tsx --include "*.tsx" --color=never'
    )
    diff = json.dumps({
        "query": "edit:/repo/webview/components/agent-sidebar.tsx",
        "result": "Edited /repo/webview/components/agent-sidebar.tsx\n```diff\n-467: \told\n"
        "+467: \tnew\n-479: \tolder\n+479: \tnewer\n```",
    })  # fmt: skip
    sidebar = "/repo/webview/components/agent-sidebar.tsx"
    messages = [
        {"id": "u1", "role": "user", "content": [
            {"type": "text", "text": "request one"},
            {"type": "file", "path": sidebar, "content": "x" * 5_000}]},
        {"id": "a1", "role": "assistant", "metrics": {"inputTokens": 100},
         "content": [use("tool-edit", "editor", path=sidebar, old_text="a", new_text="b")]},
        {"id": "t1", "role": "user", "content": [res("tool-edit", diff, "editor")]},
        {"id": "a2", "role": "assistant", "content": [use(
            "tool-read", "read_files",
            files=[{"path": sidebar, "start_line": 462, "end_line": 480}])]},
        {"id": "t2", "role": "user", "content": [res("tool-read", "462 | ...", "read_files")]},
        {"id": "a3", "role": "assistant", "content": "Done with the first request."},
        {"id": "u2", "role": "user", "content": [{"type": "text", "text": "request two"}]},
        {"id": "a4", "role": "assistant", "content": [use("tool-grep", "run_commands",
                                                            commands=[grep])]},
        {"id": "t3", "role": "user", "content": [res("tool-grep", "button.tsx:12: ...")]},
        {"id": "a5", "role": "assistant", "content": "Done with the second request."},
        {"id": "u3", "role": "user", "content": [{"type": "text", "text": "request three"}]},
        {"id": "a6", "role": "assistant", "content": "Final answer for request three."},
    ]  # fmt: skip
    target = sum(jlen(messages[i]) for i in (0, 6, 10, 5, 9, 11)) + 200
    compacted = forced(messages, target)
    assert [m["id"] for m in compacted] == ["u1", "a3", "u2", "a5", "u3", "a6"]
    first = texts(compacted[0])
    assert len(first) == 2 and first[0] == "request one"
    assert "<SYSTEM_NOTICE>" in first[1]
    assert f"Files read:\n{sidebar}:462-480" in first[1]
    assert f"Files edited:\n{sidebar}:467-479" in first[1]
    assert "Your recent responses" not in json.dumps(compacted)
    assert compacted[1]["content"] == "Done with the first request."
    second = texts(compacted[2])
    assert second[0] == "request two" and "Commands ran:\ngrep -rn" in second[1]
    assert "--color=never" not in second[1] and "..." in second[1]
    assert compacted[5]["content"] == "Final answer for request three."
    assert '"type": "file"' not in json.dumps(compacted)


def keep_newest_messages() -> list[dict[str, Any]]:
    return [
        {"id": "u1", "role": "user", "content": "do the thing"},
        {"id": "a1", "role": "assistant",
         "content": [use("pair-1", "read_files", file_paths=["/tmp/one.ts"])]},
        {"id": "t1", "role": "user", "content": [res("pair-1", "x" * 3_000, "read_files")]},
        {"id": "a2", "role": "assistant",
         "content": [use("pair-2", "read_files", file_paths=["/tmp/two.ts"])]},
        {"id": "t2", "role": "user", "content": [res("pair-2", "small result", "read_files")]},
        {"id": "a3", "role": "assistant", "content": "Done with the thing."},
    ]  # fmt: skip


def test_keeps_the_newest_messages_of_the_latest_turn() -> None:
    messages = keep_newest_messages()
    target = sum(jlen(messages[i]) for i in (0, 3, 4, 5)) + 150
    compacted = forced(messages, target)
    assert [m["id"] for m in compacted] == ["u1", "a2", "t2", "a3"]
    notice = texts(compacted[0])[1]
    assert "Files read:\n/tmp/one.ts" in notice and "/tmp/two.ts" not in notice
    # Tighter: the kept suffix snaps forward to an assistant message (no split pair).
    tight = sum(jlen(messages[i]) for i in (0, 4, 5)) + 100
    assert [m["id"] for m in forced(messages, tight)] == ["u1", "a3"]


def test_does_not_refold_an_earlier_compaction() -> None:
    first_pass = [
        {"id": "u1", "role": "user", "content": "set up the feature"},
        {"id": "a1", "role": "assistant",
         "content": [use("pair-a", "read_files", file_paths=["/tmp/a.ts"])]},
        {"id": "t1", "role": "user", "content": [res("pair-a", "a" * 600, "read_files")]},
        {"id": "a2", "role": "assistant", "content": "Feature is set up."},
        {"id": "u2", "role": "user", "content": "now polish it"},
        {"id": "a3", "role": "assistant", "content": "Polished."},
    ]  # fmt: skip
    once = forced(first_pass, sum(map(jlen, first_pass)) + 300)
    assert [m["id"] for m in once] == ["u1", "a2", "u2", "a3"]
    assert once[1]["metadata"]["compaction"] == "preserved"
    assert once[3]["metadata"]["compaction"] == "preserved"
    second = [
        *once,
        {"id": "u3", "role": "user", "content": "add tests"},
        {"id": "b1", "role": "assistant",
         "content": [use("pair-b", "read_files", file_paths=["/tmp/b.ts"])]},
        {"id": "t2", "role": "user", "content": [res("pair-b", "b" * 3_000, "read_files")]},
        {"id": "b3", "role": "assistant", "content": "Tests added."},
    ]  # fmt: skip
    target = sum(map(jlen, once)) + jlen(second[4]) + jlen(second[7]) + 250
    twice = forced(second, target)
    assert [m["id"] for m in twice] == ["u1", "a2", "u2", "a3", "u3", "b3"]
    assert "/tmp/a.ts" not in json.dumps(twice[4])  # only the new span's work
    assert "Files read:\n/tmp/b.ts" in texts(twice[4])[-1]


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "Only current request"}],  # a single typed message
        [  # no typed user prompt: nothing to fold around
            {"role": "assistant", "content": [use("tool-custom", "custom_reporter")]},
            {"role": "user", "content": [res("tool-custom", [{"type": "text", "text": "x" * 9}])]},
        ],
    ],
)
def test_nothing_to_fold(messages: list[dict[str, Any]]) -> None:
    assert basic_compaction(messages, 1, 1, jlen) is None


def test_budgets_the_complete_output_including_the_latest_turn() -> None:
    messages = [
        {"role": "user", "content": "original task"},
        {"role": "assistant", "content": "old assistant " + "x" * 10_000},
        {"role": "user", "content": "latest typed prompt"},
        {"role": "assistant", "content": [use("tool-live", "run_commands", commands=["ls"])]},
        {"role": "user", "content": [res("tool-live", "live result " + "y" * 10_000)]},
    ]
    compacted = forced(messages, 700)
    # The fold fits the target; the notices are added after the budget (the original's
    # test has no message ids, so it adds none): the dropped answer returns inside one.
    bare = [
        {**m, "content": [b for b in m["content"] if "<SYSTEM_NOTICE>" not in b.get("text", "")]}
        for m in compacted
    ]
    assert sum(map(jlen, bare)) <= 700
    assert "latest typed prompt" in json.dumps(compacted)
    assert "tool_use" not in json.dumps(compacted)  # the live pair went as a whole
    notice = texts(compacted[0])[-1]
    assert "Your recent responses:\nold assistant x" in notice


# -- shared rules (ported and table) -----------------------------------------------------------


def test_serialized_tool_results_are_truncated_the_same_either_form() -> None:
    long = "x" * (r.TOOL_RESULT_CHAR_LIMIT + 100)
    as_string = r.serialize_message({"role": "user", "content": [res("t", long)]})
    as_blocks = r.serialize_message(
        {"role": "user", "content": [res("t", [{"type": "text", "text": long}])]}
    )
    assert as_string == as_blocks and "...[truncated 100 chars]" in as_string
    assert len(as_string) < len(long)


@pytest.mark.parametrize(
    ("chars", "tokens"), [(0, 1), (1, 1), (3, 1), (4, 2), (300, 100), (301, 101)]
)
def test_estimate_tokens_is_chars_over_three_rounded_up(chars: int, tokens: int) -> None:
    assert r.estimate_tokens(chars) == tokens


def test_cut_never_lands_inside_a_tool_pair() -> None:
    messages = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [use("p1", "run_commands", commands=["a"])]},
        {"role": "user", "content": [res("p1", "out " * 50)]},
        {"role": "assistant", "content": [use("p2", "run_commands", commands=["b"])]},
        {"role": "user", "content": [res("p2", "out " * 50)]},
    ]
    for preserve in range(1, 400, 7):
        cut = r.find_cut_index(messages, preserve, jlen)
        assert cut == 0 or messages[cut]["role"] == "assistant", preserve


def test_ensure_files_section_and_request_sections() -> None:
    assert r.ensure_files_section("## Goal\nx\n## Files\nRead: a", [], []).endswith("Read: a")
    added = r.ensure_files_section("## Goal\nx", ["a.py"], [])
    assert added.endswith("## Files\nRead:\n- a.py\nModified:\n- none")
    text = r.build_summary_request("old", "[User]: hi", ["a.py"], ["b.py"])
    for heading in ("## Goal", "## State", "## Highlights", "## Next", "## Files"):
        assert heading in text
    assert "Read: a.py\nEdited: b.py" in text
    assert "Previous summary:\nold" in text and text.endswith("Conversation:\n[User]: hi")


# -- the strategy --------------------------------------------------------------------------------


def turns(k: int, size: int = 600) -> list[Message]:
    out: list[Message] = []
    for n in range(k):
        out += [
            user(f"request {n}"),
            call(f"r{n}", "Read", file_path=f"/src/f{n}.py"),
            tool_result(f"r{n}", "x" * size),
            call(f"e{n}", "Edit", file_path=f"/src/g{n}.py", old="a", new="b"),
            tool_result(f"e{n}", "ok"),
            assistant(f"done {n}"),
        ]
    return out


def replay(msgs: list[Message], summarizer: Any = None, **params: Any) -> ReplayResult:
    return run(conv(system("S"), *msgs), "cline",
               params={"max_input_tokens": 1_000, **params}, summarizer=summarizer)  # fmt: skip


def test_agentic_summary_with_files_from_tool_calls() -> None:
    echo = EchoSummarizer("## Goal\nfix things\n\n## Next\ncontinue")
    res_ = replay(turns(6), echo, preserve_recent_tokens=200)
    done = events_of(res_, "summarise")
    assert done and all(e.detail["estimate"] >= 900 for e in done)
    request = echo.requests[0]
    assert request.system == r.SUMMARY_SYSTEM and request.max_output_tokens == 4_096
    body = request.messages[0].text
    assert "Read: /src/f0.py" in body and "/src/g0.py" in body
    assert "[Bot tool calls]: Read(file_path=" in body
    # The files section is appended (the answer has none), from the folded calls.
    later = [q for q in echo.requests[1:] if "Previous summary:" in q.messages[0].text]
    assert later and "Modified:\n- /src/g0.py" in later[0].messages[0].text


def test_agentic_failure_falls_back_to_basic() -> None:
    class Failing:
        name = "failing"

        def summarize(self, request: SummaryRequest) -> SummaryResponse:
            return SummaryResponse(text="", error="boom")

    res_ = replay(turns(6), Failing(), preserve_recent_tokens=200)
    failed = events_of(res_, "summary_failed")
    assert failed and "basic" in failed[0].detail["outcome"]
    drops = events_of(res_, "drop")
    assert drops
    notices = [c.message for e in drops for c in e.changes if c.fate is Fate.TRUNCATED]
    assert any("<SYSTEM_NOTICE>" in (m.text if m else "") for m in notices)


def test_empty_summary_skips() -> None:
    res_ = replay(turns(6), EchoSummarizer(" "), preserve_recent_tokens=200)
    assert events_of(res_, "summary_empty") and not events_of(res_, "summarise")


def test_basic_keeps_prompts_and_records_notices() -> None:
    res_ = replay(turns(6), strategy="basic")
    drops = events_of(res_, "drop")
    assert drops
    dropped = {c.index for e in drops for c in e.changes if c.fate is Fate.DROPPED}
    prompts = {i for i, m in enumerate(conv(system("S"), *turns(6)).messages)
               if m.role is Role.USER and m.blocks[0].kind is BlockKind.TEXT}  # fmt: skip
    assert dropped and not dropped & prompts
    rewritten = [c.message for e in drops for c in e.changes if c.fate is Fate.TRUNCATED]
    text = "\n".join(m.text for m in rewritten if m)
    assert "Files read:\n/src/f0.py" in text and "Files edited:\n/src/g0.py" in text


def test_strict_tool_names_find_no_files() -> None:
    res_ = replay(turns(6), strategy="basic", tool_aliases={})
    rewritten = [c.message for e in events_of(res_, "drop") for c in e.changes
                 if c.fate is Fate.TRUNCATED and c.message]  # fmt: skip
    assert not any("/src/f0.py" in m.text for m in rewritten)


@pytest.mark.parametrize(
    ("params", "pairs", "want"),
    [
        ({}, 1, (900, 630)),  # trigger 0.9 x 1000; target floor(900 x 0.7)
        ({"trigger_ratio": 0.75}, 1, (750, 525)),  # the extension's older threshold
        ({"max_tokens": 500}, 4, (900, 630)),  # under 5 pairs: the usual target
        ({"max_tokens": 500}, 5, (900, 500)),  # long conversation: half the input budget
        ({"max_tokens": 2000}, 5, (900, 630)),  # maxTokens not below the input limit
    ],
)
def test_trigger_and_target(params: dict[str, Any], pairs: int, want: tuple[int, int]) -> None:
    strategy = ClineStrategy({"max_input_tokens": 1_000, **params})
    messages = [
        {"role": role, "content": "x"} for _ in range(pairs) for role in ("user", "assistant")
    ]
    assert strategy.targets(messages, 0) == want
    assert strategy.targets(messages, 100) == (want[0] - 100, want[1] - 100)


def test_estimator_counts_the_message_json() -> None:
    message = Message(Role.USER, (Block(BlockKind.TEXT, text="hello"),))
    body = '{"role":"user","content":[{"type":"text","text":"hello"}]}'
    assert ClineStrategy().count_message(message) == -(-len(body) // 3)


def test_registered_with_origins_and_window() -> None:
    cls = STRATEGIES["cline"]
    assert "cline" in LIBRARY
    assert all(p.origin and p.help for p in cls.PARAMS)
    assert cls.window_params(200_000) == {"max_input_tokens": 200_000}
    with pytest.raises(ValueError, match="strategy"):
        cls({"strategy": "magic"})
    with pytest.raises(ValueError, match="tool_aliases"):
        cls({"tool_aliases": {"Read": 3}})


@pytest.mark.parametrize("mode", ["agentic", "basic"])
def test_real_session(mode: str) -> None:
    conversation = importers.parse((CORPUS / SESSION).read_bytes(), name=SESSION).conversations[0]
    echo = EchoSummarizer("## Goal\nship it")
    res_ = run(conversation, "cline", params={"max_input_tokens": 2_000, "strategy": mode},
               summarizer=echo)  # fmt: skip
    base = run(conversation, "cline")  # 128k: never compacts
    assert not base.events
    kind = "summarise" if mode == "agentic" else "drop"
    assert events_of(res_, kind)
    peak = max(step.tokens.strategy for step in res_.steps)
    assert peak < max(step.tokens.strategy for step in base.steps)
