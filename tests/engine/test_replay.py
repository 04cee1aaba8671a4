from __future__ import annotations

from typing import Any, ClassVar

import pytest
from builders import assistant, call, conv, cycle, system, tool_result, user

from ctxlab.engine.core.context import ReplayContext
from ctxlab.engine.core.model import Message
from ctxlab.engine.core.records import Fate, expand, fates_at, to_ranges
from ctxlab.engine.core.strategy import Strategy
from ctxlab.engine.replay import call_starts, replay, run


class Toy(Strategy):
    """Drops the oldest message before every call once history > limit; defers a marker."""

    name = "toy"
    estimator = "chars"
    PARAMS: ClassVar = ()
    limit = 10_000
    defer_at: int | None = None
    drop_use = False

    def count_text(self, text: str) -> int:
        return len(text)

    def count_message(self, message: Message) -> int:
        return len(message.text) + 1

    def window(self, ctx: ReplayContext) -> int:
        return 1_000_000

    def before_call(self, ctx: ReplayContext) -> None:
        if self.drop_use and len(ctx.live) >= 3:
            with ctx.action("drop") as act:
                act.remove(ctx.live[1:2], Fate.DROPPED)
        while ctx.history_tokens > self.limit and len(ctx.live) > (0 if self.limit == 0 else 1):
            with ctx.action("drop", limit=self.limit) as act:
                act.remove(ctx.live[:1], Fate.DROPPED, reason="oldest")
        if self.defer_at is not None and ctx.step == self.defer_at:

            def land(c: ReplayContext) -> None:
                c.emit("landed", origin=self.defer_at)

            ctx.defer("inject", "summary injection", land, skip_next=True)


def test_call_starts_merges_same_id_assistant_records() -> None:
    msgs = (user("q"), assistant("a", id="m1"), assistant("b", id="m1"), assistant("c", id="m2"))
    assert call_starts(msgs) == [1, 3]


def test_replay_empty_conversation_yields_nothing() -> None:
    assert list(replay(conv(), Toy())) == []
    assert list(replay(conv(system(), user("only")), Toy())) == []


def test_replay_context_ranges_and_tokens() -> None:
    c = conv(system("S"), user("hi"), assistant("yo"), user("more"), assistant("ok"))
    steps = list(replay(c, Toy()))
    assert [s.source_index for s in steps] == [2, 4]
    assert steps[1].context == ((0, 4),)
    assert steps[1].tokens.strategy == 1 + (2 + 1) + (2 + 1) + (4 + 1)
    assert steps[1].tokens.reference > 0


def test_replay_drop_events_carry_fates() -> None:
    toy = Toy()
    toy.limit = 12
    c = conv(system("S"), user("aaaa"), assistant("bbbb"), user("cccc"), assistant("dddd"))
    result = run(c, toy)
    assert result.steps[1].context == ((0, 1), (2, 4))
    drop = result.events[0]
    assert (drop.kind, drop.step, drop.messages) == ("drop", 1, (1,))
    assert drop.changes[0].fate is Fate.DROPPED
    assert drop.tokens_before - drop.tokens_after == 5
    assert fates_at(result.events, 1)[1][0].reason == "oldest"
    assert result.metrics["messages_removed"] == 1


def test_replay_findings_tool_pair_and_latest_user() -> None:
    toy = Toy()
    toy.drop_use = True
    c = conv(system(), user("go"), call("t1"), tool_result("t1"), assistant("done"))
    result = run(c, toy)
    kinds = {f.kind for f in result.findings}
    assert "tool_pair_broken" in kinds
    toy2 = Toy()
    toy2.limit = 0
    result2 = run(conv(system(), user("go"), assistant("a"), user("x" * 50), assistant("b")), toy2)
    assert "latest_user_dropped" in {f.kind for f in result2.findings}


def test_replay_orphan_in_original_is_not_a_finding() -> None:
    c = conv(system(), user("go"), tool_result("ghost"), assistant("a"))
    assert run(c, Toy()).findings == []


def test_defer_lands_one_request_later_and_shows_pending() -> None:
    toy = Toy()
    toy.defer_at = 0
    c = conv(system(), *cycle(2, 10))
    steps = list(replay(c, toy))
    assert steps[0].pending == ("summary injection",)
    assert steps[1].pending == ()
    landed = [e for s in steps for e in s.events if e.kind == "landed"]
    assert landed and landed[0].step == 1


def test_ranges_roundtrip() -> None:
    idx = [0, 1, 2, 5, 6, 9]
    assert to_ranges(idx) == ((0, 3), (5, 7), (9, 10))
    assert expand(to_ranges(idx)) == idx


def test_unknown_strategy_and_param_errors() -> None:
    with pytest.raises(ValueError, match="unknown strategy 'nope'"):
        run(conv(), "nope")
    with pytest.raises(ValueError, match="compact_threshold_ratio"):
        run(conv(), "qwenpaw", params={"compact_threshold_ratio": 2})


def test_step_record_size_does_not_grow_with_context() -> None:
    toy = Toy()
    toy.limit = 2000
    c = conv(system(), *cycle(200, 10))
    steps = list(replay(c, toy))
    assert all(len(s.context) <= 2 for s in steps)
    assert steps[-1].context_len < 200


def _spec(**kw: Any) -> dict[str, Any]:
    return {"strategy": "qwenpaw", "params": kw}


def test_spec_dict_is_accepted() -> None:
    result = run(conv(system(), *cycle(3, 10)), _spec(max_input_length=2048))
    assert result.params["max_input_length"] == 2048


class HideAndRestore(Toy):
    """Hides the tool pair at the first call, puts it back at the next one."""

    def before_call(self, ctx: ReplayContext) -> None:
        if ctx.step == 1:
            with ctx.action("trim") as act:  # a request-local hide
                act.remove([2, 3], Fate.DROPPED)
        elif ctx.step == 2:
            with ctx.action("restore_request") as act:
                assert act.restore([2, 3, 4, 0]) == [2, 3]  # alive 4, system 0: ignored


def test_restore_puts_messages_back_in_source_order_with_their_tokens() -> None:
    c = conv(system("S"), user("go"), call("t1"), tool_result("t1", "out"), assistant("a"),
             user("next"), assistant("b"), user("last"), assistant("c"))  # fmt: skip
    result = run(c, HideAndRestore())
    hidden, back = result.steps[1], result.steps[2]
    assert hidden.context == ((0, 2),)
    assert "tool_pair_broken" not in {f.kind for f in result.findings}  # the pair left together
    assert back.context == ((0, 6),)
    restore = result.events[-1]
    assert [c.fate for c in restore.changes] == [Fate.RESTORED, Fate.RESTORED]
    assert restore.tokens_after - restore.tokens_before == sum(
        Toy().count_message(c.messages[i]) for i in (2, 3)
    )
    # the totals equal a fresh replay that never hid anything
    plain = run(c, Toy())
    assert back.tokens == plain.steps[2].tokens
    assert fates_at(result.events, 2) == {}
    assert result.metrics["compactions"] == {"trim": 1}
