"""deepagents' SummarizationMiddleware: the original's unit tests
(libs/deepagents/tests/unit_tests/middleware/test_summarization_middleware.py @ 23b83ad5)
ported as tables (trigger clauses, argument truncation, the compact_conversation gate, the
summary message and the offloaded history, chained summaries, the system prompt and tool
schemas in the count), the byte-exact prompt, and every corpus transcript replayed."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from builders import EchoSummarizer, assistant, call, conv, system, tool_result, tool_use, user

from ctxlab.engine import cli
from ctxlab.engine.core.model import ToolDef, Usage
from ctxlab.engine.core.records import Fate
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY
from ctxlab.engine.strategies import _langchain_tokens as lc
from ctxlab.engine.strategies.deepagents_summarization import (
    DEEPAGENTS_SUMMARY_PROMPT,
    HISTORY_PATH,
    NOTHING_TO_COMPACT,
    SESSION_ID,
    DeepAgentsSummarizationStrategy,
    history_section,
    parse_clauses,
    xml_buffer,
)
from ctxlab.engine.summarize.offline import FailingSummarizer, OfflineSummarizer

NAME = "deepagents_summarization"
CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SKIP = {"MANIFEST.tsv", "NOTICE.md", "README.md"}
CORPUS_FILES = sorted(
    str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file() and p.name not in SKIP
)
NO_TRUNCATE = {"truncate_args_settings": None}
L = lc.LcMessage


def strategy(**params: Any) -> DeepAgentsSummarizationStrategy:
    return DeepAgentsSummarizationStrategy(params)


def test_registered_in_the_library() -> None:
    assert NAME in LIBRARY


def test_prompt_is_byte_exact() -> None:
    # deepagents 0.7.8 DEEPAGENTS_DEFAULT_SUMMARY_PROMPT (langchain 1.5.2's prompt + addendum)
    digest = hashlib.sha256(DEEPAGENTS_SUMMARY_PROMPT.encode()).hexdigest()
    assert digest == "403eb2c93d8f8684545e1d863e1e2844fceec6f8808df16a585290b3a18aa16e"
    assert len(SESSION_ID) == len("session_") + 32  # uuid4().hex's length


# -- trigger clauses (langchain 1.5 _normalize_trigger) -----------------------------------


@pytest.mark.parametrize(
    ("value", "clauses"),
    [
        (None, []),
        (["tokens", 3000], [{"tokens": 3000}]),
        ({"tokens": 4000, "messages": 10}, [{"tokens": 4000, "messages": 10}]),
        ([["tokens", 5000], {"messages": 3, "fraction": 0.5}],
         [{"tokens": 5000}, {"messages": 3, "fraction": 0.5}]),
    ],
)  # fmt: skip
def test_trigger_clauses(value: Any, clauses: list[dict[str, float]]) -> None:
    assert parse_clauses(value) == clauses


@pytest.mark.parametrize(
    "value",
    [{}, {"turns": 3}, {"messages": True}, {"tokens": 1.5}, {"fraction": 1.5},
     ["tokens", 0], [3]],
)  # fmt: skip
def test_bad_trigger_clauses_are_refused(value: Any) -> None:
    with pytest.raises(ValueError):
        strategy(trigger=value)


def test_fractions_need_a_profile() -> None:
    with pytest.raises(ValueError, match="max_input_tokens"):
        strategy(max_input_tokens=0)
    strategy(max_input_tokens=0, trigger=["tokens", 170000], keep=["messages", 6],
             truncate_args_settings={"trigger": ["messages", 20], "keep": ["messages", 20]})  # fmt: skip


@pytest.mark.parametrize(
    ("trigger", "messages", "total", "reported", "fires"),
    [
        ({"tokens": 4000, "messages": 10}, 10, 4000, None, True),  # AND: both hold
        ({"tokens": 4000, "messages": 10}, 9, 9000, None, False),  # messages short
        ({"tokens": 4000, "messages": 10}, 12, 3999, None, False),  # tokens short
        ({"tokens": 4000, "messages": 10}, 12, 100, 4000, True),  # reported usage counts
        ([{"tokens": 5000, "messages": 3}, {"tokens": 3000, "messages": 6}], 6, 3000, None,
         True),  # OR: the second clause
        (["fraction", 0.5], 2, 5000, None, True),  # int(10000 * 0.5)
        (["fraction", 0.5], 2, 4999, None, False),
    ],
)  # fmt: skip
def test_should_summarize(
    trigger: Any, messages: int, total: int, reported: int | None, fires: bool
) -> None:
    s = strategy(trigger=trigger, max_input_tokens=10000, **NO_TRUNCATE)
    st = s.State()
    st.messages = [L(lc.HUMAN, "m")] * messages
    if reported is not None:
        st.last_ai = L(lc.AI, "a", total_tokens=reported, model_provider=lc.REPLAY_PROVIDER)
    assert (s._fired(st, total) is not None) is fires


# -- compact_conversation: eligible from half a clause, reported usage only ----------------


@pytest.mark.parametrize(
    ("trigger", "messages", "reported", "eligible"),
    [
        (["tokens", 6000], 2, 3000, True),  # max(1, int(6000 * 0.5))
        (["tokens", 6000], 2, 2999, False),
        (["tokens", 6000], 200, None, False),  # the estimate never counts
        (["messages", 10], 5, None, True),
        (["messages", 10], 4, None, False),
        (["fraction", 0.8], 2, 4000, True),  # int(10000 * 0.8 * 0.5)
        (["fraction", 0.8], 2, 3999, False),
        ({"messages": 10, "tokens": 6000}, 5, 3000, True),
        ({"messages": 10, "tokens": 6000}, 4, 9000, False),
        (None, 100, 100000, False),  # no trigger: never
    ],
)  # fmt: skip
def test_compact_tool_gate(
    trigger: Any, messages: int, reported: int | None, eligible: bool
) -> None:
    s = strategy(trigger=trigger, max_input_tokens=10000, **NO_TRUNCATE)
    st = s.State()
    st.messages = [L(lc.HUMAN, "m")] * messages
    if reported is not None:
        st.last_ai = L(lc.AI, "a", total_tokens=reported, model_provider=lc.REPLAY_PROVIDER)
    assert (s.compact_eligible(st) is not None) is eligible


# -- argument truncation (test_truncate_*) ------------------------------------------------


def clip_case(name: str, **settings: Any) -> dict[str, Any]:
    s = strategy(trigger=["messages", 100], truncate_args_settings={
        "trigger": ["messages", 5], "keep": ["messages", 2], "max_length": 100, **settings})  # fmt: skip
    return s.clip_call({"name": name, "args": {"file_path": "/test.txt", "content": "x" * 200,
                                               "n": 3}, "id": "tc1", "type": "tool_call"})  # fmt: skip


@pytest.mark.parametrize(
    ("name", "settings", "content"),
    [
        ("write_file", {}, "x" * 20 + "...(argument truncated)"),
        ("edit_file", {}, "x" * 20 + "...(argument truncated)"),
        ("write_file", {"truncation_text": "[cut]"}, "x" * 20 + "[cut]"),
        ("write_file", {"max_length": 200}, "x" * 200),  # at the limit: kept
    ],
)  # fmt: skip
def test_clip_call(name: str, settings: dict[str, Any], content: str) -> None:
    clipped = clip_case(name, **settings)
    assert clipped["args"] == {"file_path": "/test.txt", "content": content, "n": 3}


@pytest.mark.parametrize(
    ("keep", "sizes", "cutoff"),
    [
        (["messages", 4], 6, 2),
        (["messages", 6], 6, 6),  # everything recent: nothing clipped
        (["tokens", 15], 6, 3),  # 5 tokens per message ("abcd" + role "user" = 8 chars -> 2 + 3)
        (["tokens", 1000], 6, 0),
    ],
)
def test_truncate_cutoff(keep: list[Any], sizes: int, cutoff: int) -> None:
    s = strategy(trigger=None, truncate_args_settings={"trigger": ["messages", 1], "keep": keep})
    assert s.truncate_cutoff([L(lc.HUMAN, "abcd")] * sizes) == cutoff


def write_session(big: int = 200) -> list[Any]:
    return [
        user("start"),
        call("tc1", "write_file", file_path="/test.txt", content="x" * big),
        tool_result("tc1", "File written"),
        assistant("", tool_use("tc2", "bash", cmd="y" * big)),
        tool_result("tc2", "ran"),
        user("Request 1"),
        assistant("Response 1"),
        user("Request 2"),
        assistant("Response 2"),
    ]


def test_old_write_file_arguments_are_clipped_in_the_request_view() -> None:
    # test_truncate_old_write_file_tool_call / test_truncate_ignores_other_tool_calls
    params = {"trigger": ["messages", 100], "truncate_args_settings": {
        "trigger": ["messages", 5], "keep": ["messages", 2], "max_length": 100}}  # fmt: skip
    result = run(conv(*write_session()), NAME, params=params)
    changes = [(e.kind, c.index, c.fate) for e in result.events for c in e.changes]
    assert changes == [("truncate", 1, Fate.PRUNED)]  # bash (index 3) untouched
    shown = next(c.message for e in result.events for c in e.changes)
    assert shown is not None
    assert shown.blocks[0].tool_input["content"] == "x" * 20 + "...(argument truncated)"


def test_recent_write_file_arguments_are_kept() -> None:
    # test_truncate_respects_recent_messages: the call is inside the keep window
    params = {"trigger": ["messages", 100], "truncate_args_settings": {
        "trigger": ["messages", 5], "keep": ["messages", 20], "max_length": 100}}  # fmt: skip
    assert not run(conv(*write_session()), NAME, params=params).events


def test_small_arguments_are_kept() -> None:
    # test_truncate_preserves_small_arguments
    params = {"trigger": ["messages", 100], "truncate_args_settings": {
        "trigger": ["messages", 5], "keep": ["messages", 2], "max_length": 100}}  # fmt: skip
    assert not run(conv(*write_session(big=100)), NAME, params=params).events


# -- the summary message, the offload, chained summaries ----------------------------------


def chat(n: int) -> list[Any]:
    return [user(f"S{i}") if i % 2 == 0 else assistant(f"S{i}") for i in range(n)]


def test_chained_summaries_offload_each_span_once() -> None:
    # test_chained_summarization_cutoff_index / test_filters_previous_summary_messages /
    # test_offload_appends_to_existing_content / test_summary_includes_file_path
    echo = EchoSummarizer("SUM")
    params = {"trigger": ["messages", 5], "keep": ["messages", 2], **NO_TRUNCATE}
    result = run(conv(*chat(20)), NAME, params=params, summarizer=echo)
    summaries = [e for e in result.events if e.kind == "summarise"]
    assert len(summaries) >= 3
    history = "".join(result.offloads[history_section(k + 1)] for k in range(len(summaries)))
    assert len(result.offloads) == len(summaries)
    sections = history.split("## Summarized at ")[1:]
    assert len(sections) == len(summaries)
    labels = [re.findall(r"S\d+", s) for s in sections]
    flat = [label for section in labels for label in section]
    assert flat == sorted(set(flat), key=lambda s: int(s[1:]))  # each message once, in order
    assert "You are in the middle" not in history  # the previous summary is not offloaded
    assert flat[0] == "S0"
    # The model sees one summary message naming the file, then the newest messages.
    assert list(result.steps[-1].context_indexes)[-2:] == [17, 18]  # before the call at 19
    # The second summary's input holds the first summary message, naming the file.
    second = echo.requests[1].messages[0].text
    assert f"has been saved to {HISTORY_PATH} should you need" in second
    assert "&lt;summary&gt;\nSUM\n&lt;/summary&gt;" in second


def test_summary_prompt_holds_the_xml_buffer() -> None:
    echo = EchoSummarizer("SUM")
    params = {"trigger": ["messages", 5], "keep": ["messages", 2], **NO_TRUNCATE}
    run(conv(*chat(6)), NAME, params=params, summarizer=echo)
    text = echo.requests[0].messages[0].text
    assert text.startswith("<role>\nContext Extraction Assistant\n</role>")
    assert 'Messages to summarize:\n<message type="human">S0</message>\n' in text
    assert text.endswith("</messages>")


@pytest.mark.parametrize(
    ("messages", "xml"),
    [
        ([L(lc.HUMAN, "a < b & c")], '<message type="human">a &lt; b &amp; c</message>'),
        ([L(lc.HUMAN, "")], '<message type="human"></message>'),
        ([L(lc.AI, "ok", tool_calls=({"name": "ls", "args": {"p": "é"}, "id": "t1"},))],
         '<message type="ai">\n  <content>ok</content>\n'
         '  <tool_call id="t1" name="ls">{"p": "é"}</tool_call>\n</message>'),
        ([L(lc.AI, "", tool_calls=({"name": "ls", "args": {}, "id": "x" * 70},))],
         f'<message type="ai">\n  <tool_call id="{"x" * 64}..." name="ls">{{}}</tool_call>\n'
         "</message>"),
        ([L(lc.TOOL, "out", tool_call_id="t1", name="ls")], '<message type="tool">out</message>'),
        ([L(lc.HUMAN, ({"type": "text", "text": "see"}, {"type": "image", "mime_type": "x"}))],
         '<message type="human">see</message>'),
    ],
)  # fmt: skip
def test_xml_buffer(messages: list[lc.LcMessage], xml: str) -> None:
    assert xml_buffer(messages) == xml


def test_failing_summary_keeps_the_history() -> None:
    params = {"trigger": ["messages", 5], "keep": ["messages", 2], **NO_TRUNCATE}
    result = run(conv(*chat(8)), NAME, params=params, summarizer=FailingSummarizer("raise"))
    kinds = {e.kind for e in result.events}
    assert "summary_failed" in kinds and "summarise" not in kinds
    assert not result.offloads
    assert list(result.steps[-1].context_indexes) == list(range(7))


# -- the count: system prompt and tool schemas (test_system_message_counts_for_trigger_only) -


def test_system_prompt_and_tools_count_for_the_trigger() -> None:
    messages = [system("s" * 400), *chat(4)]
    tools = (ToolDef("grep", "g" * 400, {"type": "object", "title": "T"}),)
    s = strategy()
    sys_tokens = s.count_system("s" * 400, None)
    tool_tokens = s.count_tools(tools)
    assert sys_tokens == 105  # ceil((400 + "system" 6) / 4) + 3
    schema = {"name": "grep", "description": "g" * 400, "parameters": {"type": "object"}}
    assert tool_tokens == math.ceil(len(json.dumps(schema)) / 4)  # the title popped
    chat_tokens = 5 + 6 + 5  # S0 (user), S1 (assistant), S2 (user) before the last call
    base = {"keep": ["messages", 1], **NO_TRUNCATE}
    at = sys_tokens + tool_tokens + chat_tokens
    fired = run(conv(*messages, tools=tools), NAME, params={**base, "trigger": ["tokens", at]})
    assert [e.kind for e in fired.events] == ["summarise"]
    early = run(conv(*messages, tools=tools), NAME, params={**base, "trigger": ["tokens", at + 1]})
    assert not early.events


def test_usage_metadata_trigger() -> None:
    # test_usage_metadata_trigger: the reported total fires a token clause
    messages = [user("hi"), assistant("a", usage=Usage(input_uncached=5000)), user("more"),
                assistant("b"), user("again"), assistant("c")]  # fmt: skip
    params = {"trigger": ["tokens", 4000], "keep": ["messages", 2], **NO_TRUNCATE}
    result = run(conv(*messages), NAME, params=params)
    assert any("reported 5000 >= 4000" in str(e.detail.get("trigger")) for e in result.events)
    assert not run(conv(*messages), NAME, params={**params, "reported_usage_trigger": False}).events


# -- the compact_conversation tool in a replay -------------------------------------------


@pytest.mark.parametrize(("reported", "compacts"), [(3000, True), (2999, False)])
def test_compact_conversation_call(reported: int, compacts: bool) -> None:
    compact = assistant(
        "", tool_use("k1", "compact_conversation"), usage=Usage(input_uncached=reported)
    )
    messages = [*chat(10), compact, tool_result("k1", "Conversation compacted."),
                assistant("done")]  # fmt: skip
    params = {"trigger": ["tokens", 6000], "keep": ["messages", 2], **NO_TRUNCATE}
    result = run(conv(*messages), NAME, params=params, summarizer=EchoSummarizer())
    kinds = [(e.kind, e.detail.get("via"), e.detail.get("reason")) for e in result.events]
    if compacts:
        assert kinds[0][:2] == ("summarise", "compact_conversation")
    else:
        assert kinds == [("compact_skipped", None,
                          f"compact_conversation: {NOTHING_TO_COMPACT}")]  # fmt: skip


# -- the corpus ---------------------------------------------------------------------------


@pytest.mark.parametrize("file", CORPUS_FILES)
def test_every_corpus_transcript_replays(file: str) -> None:
    conversation = cli.load_file(CORPUS / file)
    for params in ({}, {"max_input_tokens": 8000}):
        result = run(conversation, NAME, params=params, summarizer=OfflineSummarizer())
        assert len(result.steps) >= 0
        for event in result.events:
            if event.kind == "summarise":
                assert event.detail["offload_path"] in result.offloads


def test_a_real_session_summarises_and_offloads() -> None:
    session = cli.load_file(CORPUS / "claude-code" / "agentcmd-full-session.jsonl")
    result = run(session, NAME, params={"max_input_tokens": 20000})
    assert sum(e.kind == "summarise" for e in result.events) >= 2
    assert len(result.offloads) >= 2
    assert all(text.startswith("## Summarized at step ") for text in result.offloads.values())
