"""AutoGen 0.4+ model contexts (microsoft/autogen @ 027ecf0, autogen-core 0.7.5):
``autogen_buffered``, ``autogen_head_and_tail``, ``autogen_token_limited``.

Ported from the original's tests (``python/packages/autogen-core/tests/test_model_context.py``)
as tables: ``test_buffered_model_context``, ``test_head_and_tail_model_context``,
``test_token_limited_model_context_with_token_limit`` (OpenAI client),
``test_token_limited_model_context_without_token_limit`` and
``test_token_limited_model_context_openai_with_function_result``; the middle-out gap against
the original's own loop (``messages.pop(len(messages) // 2)``); then the views in replays and
every corpus transcript replayed by each."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from builders import assistant, call, conv, cycle, system, tool_result, user

from ctxlab.engine import cli
from ctxlab.engine.core.model import BlockKind, Conversation, Message, Role
from ctxlab.engine.core.records import Fate
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, STRATEGIES
from ctxlab.engine.strategies import _agent_units as au
from ctxlab.engine.strategies import autogen_buffered as ab
from ctxlab.engine.strategies import autogen_head_and_tail as aht
from ctxlab.engine.strategies import autogen_token_limited as atl
from ctxlab.engine.strategies._autogen_context import AutoGenContextStrategy, ViewState, minus
from ctxlab.engine.summarize.offline import OfflineSummarizer
from ctxlab.engine.tokens import reference_stored
from ctxlab.engine.tokens.reference import ReferenceTokens

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SKIP = {"MANIFEST.tsv", "NOTICE.md", "README.md"}
CORPUS_FILES = sorted(
    str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file() and p.name not in SKIP
)
NAMES = ("autogen_buffered", "autogen_head_and_tail", "autogen_token_limited")
SEATTLE = [
    user("Hello!"),
    assistant("What can I do for you?"),
    user("Tell what are some fun things to do in seattle."),
    assistant("Pike place, space needle, mt rainer"),
    user("More places?"),
]


def units(*messages: Message) -> list[au.Unit]:
    out: list[au.Unit] = []
    for i, m in enumerate(messages):
        au.add(out, m, i)
    return out


is_result = AutoGenContextStrategy.is_result
is_calls = AutoGenContextStrategy.is_calls


# -- buffered ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("messages", "size", "start"),
    [
        (SEATTLE[:3], 2, 1),  # test_buffered_model_context: the last two
        (SEATTLE[:2], 2, 0),  # after load_state: both
        ([], 2, 0),  # after clear: none
        ([user("q"), call("t1"), tool_result("t1"), assistant("a")], 2, 3),  # leading result
        ([user("q"), call("t1"), tool_result("t1"), assistant("a")], 3, 1),
    ],
)
def test_buffered_view(messages: list[Message], size: int, start: int) -> None:
    assert ab.buffered_start(units(*messages), size, is_result) == start


# -- head and tail -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("messages", "head", "tail", "want"),
    [
        (SEATTLE, 1, 1, (1, 4, 3)),  # test_head_and_tail_model_context: 1 + placeholder + 1
        (SEATTLE[:2], 1, 1, None),  # nothing skipped: all
        ([user("q"), call("t1"), tool_result("t1"), assistant("a"), user("b")], 2, 2, (1, 3, 1)),
        ([user("q"), call("t1"), tool_result("t1"), call("t2"), tool_result("t2"),
          assistant("a")], 1, 2, (1, 5, 3)),  # a leading result leaves the tail
    ],
)  # fmt: skip
def test_head_and_tail_view(
    messages: list[Message], head: int, tail: int, want: tuple[int, int, int] | None
) -> None:
    assert aht.head_tail_view(units(*messages), head, tail, is_calls, is_result) == want
    assert aht.placeholder_text(3) == "Skipped 3 messages."


# -- token limited -----------------------------------------------------------------------------
def popped(n: int, k: int) -> tuple[int, int]:
    """The original's loop, on indexes."""
    messages = list(range(n))
    for _ in range(k):
        messages.pop(len(messages) // 2)
    gone = sorted(set(range(n)) - set(messages))
    return gone[0], gone[-1] + 1


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 10, 31])
def test_middle_gap_is_the_original_pop_loop(n: int) -> None:
    for k in range(1, n + 1):
        assert atl.middle_gap(n, k) == popped(n, k)


def prefix(counts: list[int]) -> list[int]:
    out = [0]
    for c in counts:
        out.append(out[-1] + c)
    return out


@pytest.mark.parametrize(
    ("counts", "limit", "k"),
    [
        ([8, 11, 18], 30, 1),  # ..._with_token_limit (OpenAI): 40 -> 29 (its comment: 29)
        ([8, 11, 18], 128_000, 0),  # ..._without_token_limit: all three
        ([8, 11, 18], 3, 3),  # nothing fits: the loop ends on an empty list
        ([5] * 10, 3 + 5 * 4, 6),
    ],
)
def test_pops(counts: list[int], limit: int, k: int) -> None:
    assert atl.pops(prefix(counts), limit, 3) == k


def test_estimator_is_count_tokens_openai() -> None:
    s = atl.AutoGenTokenLimitedStrategy()
    # 3 + "user" + "user" (name) + 1 + "Hello!" (2)
    assert s.count_message(user("Hello!")) == 8
    assert s.count_message(assistant("What can I do for you?")) == 3 + 1 + 7
    assert s.count_message(user("Tell what are some fun things to do in seattle.")) == 18
    assert s.count_message(tool_result("t1", "ok")) == 3 + 1 + 1 + 2  # content, "tool", id


def test_token_limited_openai_cases() -> None:
    # test_token_limited_model_context_with_token_limit: 3 messages, limit 30: two kept.
    result = run(conv(*SEATTLE[:3], assistant("Sure.")), "autogen_token_limited",
                 params={"token_limit": 30})  # fmt: skip
    trims = [e for e in result.events if e.kind == "trim"]
    assert [c.index for c in trims[-1].changes] == [1]  # the middle one (assistant)
    # ..._without_token_limit: the model's limit keeps all three.
    result = run(conv(*SEATTLE[:3], assistant("Sure.")), "autogen_token_limited")
    assert not result.events


def test_token_limited_drops_a_leading_result() -> None:
    # ..._openai_with_function_result: the leading FunctionExecutionResultMessage goes.
    msgs = [tool_result("t0", ""), *SEATTLE[:3], assistant("Sure.")]
    result = run(conv(*msgs), "autogen_token_limited", params={"token_limit": 60})
    assert [c.index for e in result.events for c in e.changes] == [0]


def test_interval_difference() -> None:
    assert minus([(0, 10)], [(3, 5)]) == [(0, 3), (5, 10)]
    assert minus([(2, 4)], [(0, 10)]) == []
    assert minus([(0, 2), (5, 8)], [(1, 6)]) == [(0, 1), (6, 8)]


# -- in replays --------------------------------------------------------------------------------
def test_buffered_keeps_the_last_messages() -> None:
    result = run(conv(system(), *cycle(3, size=50)), "autogen_buffered",
                 params={"buffer_size": 3})  # fmt: skip
    last = result.steps[-1]
    # The last request: the last three messages before it, less a leading tool result.
    # The last request: the last three of the eleven messages before it (user, call, result).
    assert last.context_indexes == [0, 9, 10, 11]  # the system prompt, then the view
    smaller = run(conv(system(), *cycle(3, size=50)), "autogen_buffered",
                  params={"buffer_size": 1})  # fmt: skip
    # The last one is the tool result (its call fell outside): it goes too, nothing is left.
    assert smaller.steps[-1].context_indexes == [0]
    assert all(c.fate is Fate.DROPPED for e in result.events for c in e.changes)


def test_head_and_tail_shows_the_placeholder_in_place() -> None:
    result = run(conv(system(), *SEATTLE, assistant("Done.")), "autogen_head_and_tail",
                 params={"head_size": 1, "tail_size": 1})  # fmt: skip
    first, last = [e for e in result.events if e.kind == "trim"]
    # Three messages stored: head 1, "Skipped 1 messages." in the place of the second, tail 1.
    assert [(c.index, c.fate) for c in first.changes] == [(2, Fate.PRUNED)]
    assert first.changes[0].message is not None
    assert first.changes[0].message.text == "Skipped 1 messages."
    # Five: the placeholder counts three, the two after it leave the request.
    fates = {c.index: c.fate for c in last.changes}
    assert fates == {2: Fate.PRUNED, 3: Fate.DROPPED, 4: Fate.DROPPED}
    shown = next(c for c in last.changes if c.index == 2)
    assert shown.message is not None and shown.message.text == "Skipped 3 messages."
    assert shown.message.role is Role.USER


def test_token_limited_gives_messages_back() -> None:
    # A big message in the middle is popped; once the middle moves past it, smaller ones
    # it had taken out with it come back.
    msgs = [system(), user("a " * 50), assistant("b " * 50), user("c " * 400),
            assistant("d"), user("e"), assistant("f"), user("g"), assistant("h"),
            user("i"), assistant("j")]  # fmt: skip
    result = run(conv(*msgs), "autogen_token_limited", params={"token_limit": 400})
    kinds = [e.kind for e in result.events]
    assert "trim" in kinds and "restore_request" in kinds


@pytest.mark.parametrize("name", NAMES)
def test_registered_and_in_the_library(name: str) -> None:
    assert name in STRATEGIES and name in LIBRARY
    assert STRATEGIES[name].WINDOW == "model_token_limit"


def test_defaults() -> None:
    assert {p.name: p.default for p in ab.AutoGenBufferedStrategy.PARAMS}["buffer_size"] == 5
    ht = {p.name: p.default for p in aht.AutoGenHeadAndTailStrategy.PARAMS}
    assert (ht["head_size"], ht["tail_size"]) == (3, 2)
    assert {p.name: p.default for p in atl.AutoGenTokenLimitedStrategy.PARAMS}["token_limit"] == 0
    with pytest.raises(ValueError, match="buffer_size"):
        ab.AutoGenBufferedStrategy({"buffer_size": 0})


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_every_corpus_transcript_replays(name: str) -> None:
    conversation = cli.load_file(CORPUS / name)
    small = {"autogen_buffered": {"buffer_size": 3},
             "autogen_head_and_tail": {"head_size": 2, "tail_size": 3},
             "autogen_token_limited": {"token_limit": 3000}}  # fmt: skip
    for strategy in NAMES:
        for params in ({}, small[strategy]):
            result = run(conversation, strategy, params=params, summarizer=OfflineSummarizer())
            assert {e.kind for e in result.events} <= {"trim", "restore_request"}


def test_native_export_is_the_declarative_component() -> None:
    from ctxlab.engine.native_config import native_config

    buffered = native_config("autogen_buffered", {"buffer_size": 7})
    assert buffered.filename == "model_context.json"
    assert buffered.content == {
        "provider": "autogen_core.model_context.BufferedChatCompletionContext",
        "component_type": "chat_completion_context",
        "config": {"buffer_size": 7},
    }
    ht = native_config("autogen_head_and_tail")
    assert ht.content["config"] == {"head_size": 3, "tail_size": 2}
    limited = native_config("autogen_token_limited", {"token_limit": 3000})
    assert limited.content["config"]["token_limit"] == 3000
    assert native_config("autogen_token_limited").content["config"]["token_limit"] is None
    wide = native_config("autogen_buffered", {"model_token_limit": 64_000})
    assert wide.unexpressed == (("model_token_limit", 64_000),)


# -- the estimator in a replay: the texts' counts read from the run's reference -----------------
def _references(conversation: Conversation) -> list[ReferenceTokens]:
    """The run's reference counted now, and as the worker seeds it (stored at import)."""
    stored, tables = reference_stored.stored_counts(conversation.messages)
    return [ReferenceTokens(conversation), ReferenceTokens(conversation, stored, tables)]


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_replay_counter_is_count_tokens_openai(name: str) -> None:
    conversation = cli.load_file(CORPUS / name)
    strategy = atl.AutoGenTokenLimitedStrategy()
    for reference in _references(conversation):
        counter = strategy.message_counter(reference, ViewState())
        for m in conversation.messages:
            assert counter(m) == strategy.count_message(m)
            # a modified copy (its texts counted by the reference's memo, not stored)
            copy = replace(m, blocks=tuple(
                replace(b, text=f" {b.text}.") if b.kind is BlockKind.TEXT else b
                for b in m.blocks
            ))  # fmt: skip
            assert counter(copy) == strategy.count_message(copy)


def test_replay_counter_reads_the_stored_counts() -> None:
    # A text message and a tool-result message take their texts' count from the counts
    # stored at import (not tokenized again); a message of calls counts its JSON itself.
    messages = [user("Hello!"), call("t1"), tool_result("t1", "ok"), assistant("Sure.")]
    conversation = conv(*messages)
    stored, tables = reference_stored.stored_counts(conversation.messages)
    altered = [c + 100 for c in stored]
    reference = ReferenceTokens(conversation, altered, tables)
    strategy = atl.AutoGenTokenLimitedStrategy()
    counter = strategy.message_counter(reference, ViewState())
    got = [counter(m) - strategy.count_message(m) for m in conversation.messages]
    assert got == [100, 0, 100, 100]
