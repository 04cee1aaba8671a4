"""PicoClaw's per-message estimate memo and the plain-value marshal path stay exact."""

from __future__ import annotations

import dataclasses

from ctxlab.engine.strategies import _picoclaw_budget as pb
from ctxlab.engine.strategies._picoclaw_budget import PicoMsg, PicoToolCall
from ctxlab.engine.summarize.offline import _readable


def test_marshal_of_plain_nested_values_matches_go() -> None:
    value = {"b": [{"z": "<&>", "a": None}, 3], "a": True, "c": "\u2028"}
    assert pb._plain(value)
    assert pb.go_json_marshal(value) == (
        '{"a":true,"b":[{"a":null,"z":"\\u003c\\u0026\\u003e"},3],"c":"\\u2028"}'
    )


def test_marshal_still_normalises_floats_tuples_and_other_keys() -> None:
    value = {"a": 1.0, "b": (1, 2.5), 3: "x", "d": {"e": 2e21}}
    assert not pb._plain(value)
    assert pb.go_json_marshal(value) == '{"3":"x","a":1,"b":[1,2.5],"d":{"e":2e+21}}'


def test_estimate_is_remembered_per_estimator_and_never_copied() -> None:
    msg = PicoMsg("assistant", "x" * 100, tool_calls=(PicoToolCall("call_1", "Read", "{}"),))
    first = pb.estimate_message_tokens(msg)
    assert msg.estimated == ("chars*2/5", first)
    assert pb.estimate_message_tokens(msg) == first
    quarter = pb.estimate_message_tokens(msg, "ceil(chars/4)")
    assert quarter != first and quarter == pb._estimate(msg, "ceil(chars/4)")
    longer = dataclasses.replace(msg, content="x" * 400)
    assert longer.estimated is None  # replace starts without the old message's estimate
    assert pb.estimate_message_tokens(longer) == pb._estimate(longer, "chars*2/5") > first
    assert msg == dataclasses.replace(msg)  # the memo is no part of equality


def test_readable_drops_a_line_number_left_after_a_tool_id() -> None:
    assert _readable("toolu_abc12345 12→ foo_bar") == "foo_bar"
    assert _readable("  42\tvalue = 1") == "value = 1"
    assert _readable("a_b 12→ x") == "a_b 12→ x"  # a prefix only starts a line
    assert _readable("٣→ arabic digit") == "arabic digit"  # \d is any decimal digit
