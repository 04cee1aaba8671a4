"""PicoClaw's per-message estimate memo and the plain-value marshal path stay exact."""

from __future__ import annotations

import dataclasses

import pytest

from ctxlab.engine.core.model import Block, BlockKind, Message, Role
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


MARSHALLED: tuple[object, ...] = (
    {"b": [1, 2.5, "<x>"], "a": "\u2028é\u2029", "c": {"z": None, "y": False}},
    {"path": "/tmp/x", "content": 'line "one"\n\ttwo\\ \x01 中文 ✓'},
    {"nested": [[{"k": [1, {"j": "&"}]}], []], "n": -3, "big": 10**30},
    [],
    {},
    "a top-level string <b>",
    None,
    {"f": 1.0, "t": (1, 2), 7: "key"},  # normalised first
)


@pytest.mark.parametrize("value", MARSHALLED)
def test_prebuilt_c_encoder_marshals_as_the_json_encoder(value: object) -> None:
    assert pb._C_ENCODER is not None  # CPython's accelerator: made once, not per call
    plain = value if pb._plain(value) else pb._normalise(value)
    expected = (
        pb._GO_ENCODER.encode(plain)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )
    assert pb.go_json_marshal(value) == expected


@pytest.mark.parametrize("calls", [0, 1, 2])
def test_to_pico_marshals_each_call_of_an_assistant_message(calls: int) -> None:
    every: tuple[object, ...] = ({"b": "<1>", "a": 1}, "raw string", None)
    inputs = every[:calls]
    uses = tuple(
        Block(BlockKind.TOOL_USE, tool_id=f"t{n}", tool_name="Run", tool_input=v)
        for n, v in enumerate(inputs)
    )
    msg = Message(Role.ASSISTANT, (Block(BlockKind.TEXT, text="hi"), *uses))
    (part,) = pb.to_pico(3, msg)
    expected = tuple(
        PicoToolCall(
            f"t{n}", "Run", v if isinstance(v, str) else pb.go_json_marshal(v if v else {})
        )
        for n, v in enumerate(inputs)
    )
    assert part == PicoMsg("assistant", "hi", tool_calls=expected)
    assert part.src == 3
    assert [c.arguments for c in part.tool_calls] == [
        '{"a":1,"b":"\\u003c1\\u003e"}',
        "raw string",
        "{}",
    ][:calls]
