"""CowAgent: a turn drop takes a reply's merged tool results with it, whole.

In chatgpt-on-wechat @ 55aaf60 the results of one reply's tool calls are ONE user message
(``agent/protocol/agent_stream.py`` L459-L464: ``self.messages.append({"role": "user",
"content": tool_result_blocks})``). ``_truncate_historical_tool_results`` (L1148-L1198)
cuts ``block["content"]`` in place, so every message dict stays whole;
``_identify_complete_turns`` (L1085-L1139) puts those dicts into turns, and ``_trim_messages``
(L1352-L1508) rebuilds ``self.messages`` from the kept turns only. The token check after
the turn-count cut sums the kept turns alone (L1418: ``current_tokens = sum(...
for turn in turns)``). So a dropped turn takes its merged results message with it in the
same step, and nothing of it is left for the budget check or for the sanitiser
(``_validate_and_fix_messages``, run after the trim, L261-L266).

The replay holds consecutive results-only transcript messages as one merged row; these
cases check the drop (turn limit and compression) removes every member of that row.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.core.records import Fate
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import _cowagent_rules as cow
from ctxlab.engine.strategies._cowagent_rules import CowMsg


def _user(text: str) -> Message:
    return Message(Role.USER, (Block(BlockKind.TEXT, text=text),))


def _assistant(text: str = "", *tool_ids: str) -> Message:
    blocks = [Block(BlockKind.TEXT, text=text)] if text else []
    blocks += [
        Block(BlockKind.TOOL_USE, tool_id=t, tool_name="bash", tool_input={"c": t})
        for t in tool_ids
    ]
    return Message(Role.ASSISTANT, tuple(blocks))


def _result(tool_id: str, text: str = "ok") -> Message:
    # one transcript message per result, as Claude Code logs parallel calls
    return Message(Role.USER, (Block(BlockKind.TOOL_RESULT, tool_id=tool_id, text=text),))


def _conversation(turns: int, *, second_result: str = "ok", last_query: str = "") -> Conversation:
    """Turn 0 has two parallel tool calls answered by two results-only messages (indexes 3
    and 4: one merged CowAgent message); every other turn is a query, one tool call, its
    result and an answer (turn k >= 1 starts at message 4k + 2)."""
    msgs = [
        Message(Role.SYSTEM, (Block(BlockKind.TEXT, text="sys"),)),
        _user("query 0"),
        _assistant("", "a", "b"),
        _result("a"),
        _result("b", second_result),
        _assistant("answer 0"),
    ]
    for k in range(1, turns):
        query = last_query if k == turns - 1 and last_query else f"query {k}"
        msgs += [_user(query), _assistant("", f"t{k}"), _result(f"t{k}"), _assistant(f"answer {k}")]
    return Conversation("c", "t", tuple(msgs))


def test_turn_limit_drop_removes_the_whole_merged_results_message() -> None:
    """agent_max_context_turns=2: the third query drops turn 0 (messages 1-5) in one drop;
    the original never leaves result ``b`` behind for the sanitiser."""
    res = run(_conversation(3), "cowagent", params={"agent_max_context_turns": 2})
    drop = next(e for e in res.events if e.kind == "drop")
    assert sorted(c.index for c in drop.changes) == [1, 2, 3, 4, 5]
    assert {c.fate for c in drop.changes if c.index in (3, 4)} == {Fate.DROPPED}
    assert not any(e.kind == "sanitize" for e in res.events)
    # the last request: turns 1-2, the final answer not yet in it
    assert res.steps[-1].context_indexes == [0, *range(6, 13)]


def test_budget_check_after_the_turn_cut_does_not_count_a_dropped_result() -> None:
    """Seven turns, agent_max_context_turns=6, agent_max_context_tokens=3000: result ``b``
    (6,000 chars: 1,531 tokens) lives in turn 0 and the last query is 7,600 chars (1,901).
    At the seventh query the turn cut drops turns 0-2; the four kept turns are within the
    budget (the original returns at L1421-L1432), so their tool chains stay. Counting
    ``b`` as still present would put the request over and compress the four kept turns
    to text (fewer than 5 turns)."""
    conv = _conversation(7, second_result="r" * 6000, last_query="Q" * 7600)
    assert cow.estimate_message(conv.messages[4]) == 1531
    res = run(
        conv,
        "cowagent",
        params={"agent_max_context_turns": 6, "agent_max_context_tokens": 3000},
    )
    kinds = [e.kind for e in res.events if e.kind != "summary_injected"]
    assert kinds == ["drop"]
    drop = next(e for e in res.events if e.kind == "drop")
    assert drop.detail["turns"] == 7 and drop.detail["dropped_turns"] == 3
    assert {3, 4} <= {c.index for c in drop.changes}
    last = res.steps[-1]
    assert 4 not in last.context_indexes
    assert last.context_indexes == [0, *range(14, 29)]  # turns 3-6 whole, bar the final answer


CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus" / "claude-code"


def _results_split(conv: Conversation) -> tuple[Conversation, list[int]]:
    """The conversation with each results-only message of several tool results split into
    one tool-role message per result (as OpenAI-style logs keep parallel calls), and the
    original index of every new message."""
    msgs: list[Message] = []
    where: list[int] = []
    for i, msg in enumerate(conv.messages):
        if len(msg.blocks) > 1 and cow.is_results_only(msg):
            msgs += [Message(Role.TOOL, (b,)) for b in msg.blocks]
            where += [i] * len(msg.blocks)
        else:
            msgs.append(msg)
            where.append(i)
    return Conversation(conv.id, conv.title, tuple(msgs)), where


@pytest.mark.parametrize(
    ("name", "turns"),
    [
        ("sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl", 1),
        ("sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl", 2),
        ("ccviewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl", 1),
    ],
)
def test_corpus_results_logged_one_per_message_replay_as_one_message(name: str, turns: int) -> None:
    """Real Claude Code sessions whose parallel tool results the importer holds as one
    message; the same sessions with those results one per message (merged again by the
    replay, as CowAgent holds them) give the same events, tokens and contexts at every step:
    the turn drops take each merged group whole and the sanitiser has nothing to remove."""
    conv = importers.parse((CORPUS / name).read_bytes(), name=name).conversations[0]
    split, where = _results_split(conv)
    assert len(split.messages) > len(conv.messages)
    params = {"agent_max_context_turns": turns}
    whole, parts = run(conv, "cowagent", params=params), run(split, "cowagent", params=params)
    assert any(e.kind == "drop" for e in whole.events)
    assert [e.kind for e in parts.events] == [e.kind for e in whole.events]
    assert [s.tokens.strategy for s in parts.steps] == [s.tokens.strategy for s in whole.steps]
    assert [sorted({where[i] for i in s.context_indexes}) for s in parts.steps] == [
        s.context_indexes for s in whole.steps
    ]
    for a, b in zip(whole.events, parts.events, strict=True):
        assert sorted({where[c.index] for c in b.changes}) == sorted({c.index for c in a.changes})


def test_tool_role_row_equals_the_message_with_role_user() -> None:
    """``to_cow`` builds the user-role copy of a tool message positionally: it must equal
    ``replace(msg, role=USER)`` for a message with every field set, and the field list it
    copies is the model's."""
    import dataclasses

    from ctxlab.engine.core.model import SourcePos, Usage

    names = [f.name for f in dataclasses.fields(Message)]
    assert names == [
        "role", "blocks", "source", "timestamp", "model", "usage", "id", "name", "flags",
    ]  # fmt: skip
    msg = Message(
        Role.TOOL,
        (Block(BlockKind.TOOL_RESULT, tool_id="a", text="out"),),
        SourcePos(line=3),
        "2026-01-01T00:00:00Z",
        "m",
        Usage(input_uncached=5),
        "id-1",
        "bash",
        frozenset({"meta"}),
    )
    assert cow.to_cow(7, msg) == CowMsg(7, dataclasses.replace(msg, role=Role.USER))
