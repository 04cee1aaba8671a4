"""A step's many context ranges are shared chunks, and a removal nobody watches is in place.

A strategy that drops scattered messages (Vercel's ``pruneMessages`` removing emptied
tool messages) leaves thousands of ranges: each step's ``context`` is then
``RangeChunks``, read as the tuple it stands for, sharing the chunks the step did not
change with the previous step (a tuple per step was O(steps x ranges)).
"""

from __future__ import annotations

import pickle
from typing import Any, ClassVar

from builders import assistant, conv, plain, system, user

from ctxlab.engine.core.context_view import ContextView
from ctxlab.engine.core.model import Message
from ctxlab.engine.core.records import Fate, RangeChunks, expand, in_ranges, to_ranges
from ctxlab.engine.core.strategy import Strategy
from ctxlab.engine.replay import run

CHUNK = RangeChunks.CHUNK


class DropEveryOther(Strategy):
    """Before each call, drops the user message of the previous turn: the context becomes
    one range per turn. ``hold`` keeps a reference to the live list while removing."""

    name = "drop_every_other"
    estimator = "chars"
    PARAMS: ClassVar = ()
    hold = False

    def count_text(self, text: str) -> int:
        return len(text)

    def count_message(self, message: Message) -> int:
        return len(message.text) + 1

    def window(self, ctx: ContextView) -> int:
        return 1_000_000

    def before_call(self, ctx: ContextView) -> None:
        live = ctx.live
        if len(live) < 3:
            return
        target = live[-3]  # the user message of the previous turn
        if target % 2:
            before = list(live)
            identity = 0
            if not self.hold:
                del live  # nobody holds the list: it is cut in place
                identity = id(ctx.live)
            with ctx.action("drop") as act:
                act.remove([target], Fate.DROPPED)
            if self.hold:  # a list a strategy holds is never changed under it
                assert live == before and live is not ctx.live
            else:
                assert id(ctx.live) == identity
            assert target not in ctx.live


def _conversation(turns: int) -> Any:
    messages: list[Message] = [system("S")]
    for t in range(turns):
        messages += [user(f"question {t}"), assistant(f"answer {t}")]
    return conv(*messages)


def _expected(source_index: int) -> tuple[tuple[int, int], ...]:
    # kept: the system prompt, every assistant answer, the last turn's user message
    kept = [0] + [i for i in range(1, source_index) if i % 2 == 0 or i == source_index - 1]
    return to_ranges(kept)


def test_many_ranges_are_shared_chunks_read_as_the_tuple() -> None:
    turns = 3 * CHUNK
    result = run(_conversation(turns), DropEveryOther())
    steps = result.steps
    last = steps[-1]
    chunked = last.context
    assert isinstance(chunked, RangeChunks)
    expected = _expected(last.source_index)
    assert len(expected) > 2 * CHUNK
    # read as the tuple: equality both ways, hash, length, items, slices, iteration
    assert last.context == expected and expected == last.context
    assert hash(last.context) == hash(expected)
    assert len(last.context) == len(expected)
    assert last.context_len == sum(e - s for s, e in expected)
    assert [last.context[i] for i in (0, CHUNK, -1)] == [expected[0], expected[CHUNK], expected[-1]]
    assert last.context[3:7] == expected[3:7]
    assert list(reversed(last.context)) == list(reversed(expected))
    assert expected[5] in last.context and (1, 2) not in last.context
    assert expand(last.context) == last.context_indexes == expand(expected)
    assert in_ranges(last.context, expected[-1][0])
    assert pickle.loads(pickle.dumps(last.context)) == expected
    assert plain(last.context) == [list(r) for r in expected]
    # every step is right, and consecutive steps share the chunks they did not change
    for step in steps[::97]:
        assert step.context == _expected(step.source_index)
    before = steps[-2].context
    assert isinstance(before, RangeChunks)
    assert len(before.chunks) >= 3
    assert all(a is b for a, b in zip(before.chunks[:-2], chunked.chunks[:-2], strict=False))
    held = sum(len(s.context.chunks) for s in steps if isinstance(s.context, RangeChunks))
    assert held < len(steps) * (len(expected) // CHUNK + 2)


def test_few_ranges_stay_a_tuple() -> None:
    result = run(_conversation(CHUNK // 2), DropEveryOther())
    assert all(type(s.context) is tuple for s in result.steps)
    assert result.steps[-1].context == _expected(result.steps[-1].source_index)


def test_a_held_live_list_is_not_cut_under_the_strategy() -> None:
    strategy = DropEveryOther()
    strategy.hold = True  # the strategy's own assertions check the held list
    result = run(_conversation(40), strategy)
    assert result.steps[-1].context == _expected(result.steps[-1].source_index)
