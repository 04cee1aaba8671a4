"""The replay core's incremental bookkeeping equals its one-at-a-time definition.

A removal takes its messages' tool ids out of the live ledger in one call
(``ToolLedger.remove_all``); the original's ids so far are read from where each id first
occurs (``OriginalIds``) instead of a ledger every appended message joined; a tool input's
JSON comes from a C encoder made once.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from ctxlab.engine import synth
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.core.tool_pairs import OriginalIds, SeenTools, ToolLedger, tool_ids
from ctxlab.engine.replay import Replay

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"

Ids = tuple[tuple[str, ...], tuple[str, ...]]


def _state(ledger: ToolLedger) -> tuple[dict[str, int], dict[str, int], set[str], set[str]]:
    return dict(ledger.uses), dict(ledger.results), set(ledger.unmatched), set(ledger.changed)


def test_remove_all_equals_adding_each_with_minus_one() -> None:
    rng = random.Random(7)
    names = [f"t{k}" for k in range(12)]
    for _ in range(200):
        many: list[Ids] = [
            (
                tuple(rng.sample(names, rng.randint(0, 2))),
                tuple(rng.sample(names, rng.randint(0, 2))),
            )
            for _ in range(rng.randint(1, 6))
        ]
        one, batch = ToolLedger(), ToolLedger()
        for ids in many + many[: rng.randint(0, len(many))]:
            one.add(ids)
            batch.add(ids)
        one.changed.clear()
        batch.changed.clear()
        for ids in many:
            one.add(ids, -1)
        batch.remove_all(many)
        assert _state(batch) == _state(one)


def _use(tid: str) -> Block:
    return Block(BlockKind.TOOL_USE, tool_id=tid, tool_name="x", tool_input={})


def _result(tid: str) -> Block:
    return Block(BlockKind.TOOL_RESULT, tool_id=tid, text="ok")


def test_original_ids_seen_before_upto_equal_a_ledger_of_those_messages() -> None:
    messages = (
        Message(Role.SYSTEM, (_use("sys"),)),  # never appended: not the original's so far
        Message(Role.USER, (Block(BlockKind.TEXT, text="go"),)),
        Message(Role.ASSISTANT, (_use("a"), _use("b"))),
        Message(Role.TOOL, (_result("a"),)),
        Message(Role.ASSISTANT, (_use("a"),)),  # a repeated id: its first call counts
        Message(Role.TOOL, (_result("b"), _result("c"))),
        Message(Role.USER, (_result("sys"),)),
    )
    known = OriginalIds(messages, 1)
    assert known.first_use == {"a": 2, "b": 2}
    assert known.first_result == {"a": 3, "b": 5, "c": 5, "sys": 6}
    assert known.query == bytearray([0, 1, 0, 0, 0, 0, 0])
    for upto in range(1, len(messages) + 1):
        seen = SeenTools()
        for m in messages[1:upto]:
            seen.add(tool_ids(m))
        made = known.seen(upto)
        assert (made.uses, made.results) == (seen.uses, seen.results)


def test_orig_tools_is_made_when_read_and_kept_until_the_next_append() -> None:
    conversation = synth.bench_conversation(CORPUS, messages=200, seed=4)
    job = Replay(conversation, "baseagent")
    steps = iter(job)
    next(steps)
    ctx = job.ctx
    first = ctx.orig_tools
    assert ctx.orig_tools is first and job.ctx.view.orig_tools is first
    next(steps)
    later = ctx.orig_tools
    assert later is not first
    expected = SeenTools()
    start = 0 if ctx.system_index is None else 1
    for i in range(start, ctx.source_index):
        expected.add(tool_ids(conversation.messages[i]))
    assert (later.uses, later.results) == (expected.uses, expected.results)


def test_input_json_is_json_dumps_without_ascii_escapes() -> None:
    values = [
        {"a": 1.5, "b": [True, None, float("nan"), float("inf"), -0.0, 1e300, 10**30]},
        {"ü": 'é\u2028"\\', "nested": [{"q": [1, [2, [3]]]}]},
        {1: 2, 2.5: 3, False: 4, None: 5},
        [],
        {},
        3,
        None,
        "a raw string stays as given",
    ]
    for value in values:
        block = Block(BlockKind.TOOL_USE, tool_id="t", tool_name="x", tool_input=value)
        expected = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        assert block.input_json == expected
        assert block.input_json is block.input_json or isinstance(value, str)


def test_conversation_without_system_counts_every_message_as_appended() -> None:
    messages = (
        Message(Role.ASSISTANT, (_use("a"),)),
        Message(Role.TOOL, (_result("a"),)),
    )
    known = OriginalIds(Conversation("c", "t", messages).messages)
    assert known.first_use == {"a": 0} and known.first_result == {"a": 1}
    assert known.ids == [(("a",), ()), ((), ("a",))]
