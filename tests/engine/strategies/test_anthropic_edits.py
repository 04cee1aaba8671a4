"""Anthropic context editing: clear_tool_uses_20250919 + clear_thinking_20251015 as a
request view recomputed for every request from the full history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import cli
from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.core.records import Fate, ReplayResult, fates_at
from ctxlab.engine.native_config import native_config
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES
from ctxlab.engine.tokens.cl100k import reference_counter
from tests.engine.builders import (
    assistant,
    call,
    conv,
    results,
    system,
    tool_result,
    tool_use,
    user,
)

NEVER = {"trigger": 10**9}
ALWAYS = {"trigger": 0}


def tools_conv(n: int, names: list[str] | None = None, size: int = 600) -> Any:
    """system, one request, ``n`` call/result pairs (t0..), a final answer: n + 1 requests."""
    msgs: list[Message] = [system(), user("go")]
    for k in range(n):
        name = names[k] if names else "bash"
        msgs += [call(f"t{k}", name, cmd=f"c{k}"), tool_result(f"t{k}", f"out {k} " * size)]
    msgs.append(assistant("done"))
    return conv(*msgs)


def view_at(res: ReplayResult, step: int) -> dict[int, Message]:
    """Index -> the request-view version of every message edited at ``step``."""
    out: dict[int, Message] = {}
    for index, (change, _) in fates_at(res.events, step).items():
        assert change.fate is Fate.PRUNED and change.message is not None
        out[index] = change.message
    return out


def cleared_results(res: ReplayResult, placeholder: str = "[cleared]") -> list[str]:
    last = res.steps[-1].index
    return sorted(
        b.tool_id
        for m in view_at(res, last).values()
        for b in m.blocks
        if b.kind is BlockKind.TOOL_RESULT and b.text == placeholder
    )


def cleared_inputs(res: ReplayResult) -> list[str]:
    last = res.steps[-1].index
    return sorted(
        b.tool_id
        for m in view_at(res, last).values()
        for b in m.blocks
        if b.kind is BlockKind.TOOL_USE and b.tool_input == {}
    )


def ref(text: str) -> int:
    return reference_counter().count(text)


# -- registration and estimator ---------------------------------------------------------------


def test_registered_in_library_not_presets() -> None:
    assert "anthropic_edits" in STRATEGIES
    assert LIBRARY[: len(PRESETS)] == PRESETS
    assert "anthropic_edits" in LIBRARY[len(PRESETS) :]
    assert "anthropic_edits" not in PRESETS


def test_every_param_has_origin_help_and_default() -> None:
    cls = STRATEGIES["anthropic_edits"]
    for p in cls.PARAMS:
        assert p.origin and p.help, p.name
    assert cls().params["trigger"] == 100_000 and cls().params["keep"] == 3


@pytest.mark.parametrize("bad", ["yes", 3, ["Read", 1]])
def test_clear_tool_inputs_must_be_bool_or_names(bad: object) -> None:
    with pytest.raises(ValueError, match="clear_tool_inputs"):
        STRATEGIES["anthropic_edits"]({"clear_tool_inputs": bad})


@pytest.mark.parametrize(("ratio", "factor"), [(1.0, 1.0), (1.2, 1.2)])
def test_estimator_is_reference_times_ratio(ratio: float, factor: float) -> None:
    c = tools_conv(2)
    plain = run(c, "anthropic_edits", params=NEVER)
    scaled = run(c, "anthropic_edits", params={**NEVER, "token_ratio": ratio})
    for a, b in zip(plain.steps, scaled.steps, strict=True):
        assert a.tokens.strategy == a.tokens.reference
        assert abs(b.tokens.strategy - a.tokens.reference * factor) <= len(c.messages)


# -- trigger -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offset", "fires"),
    [pytest.param(1, False, id="below"), pytest.param(0, False, id="at"), (-1, True)],
)
def test_trigger_is_strictly_greater(offset: int, fires: bool) -> None:
    c = tools_conv(4)
    full = run(c, "anthropic_edits", params=NEVER).steps[-1].tokens.strategy
    res = run(c, "anthropic_edits", params={"trigger": full + offset, "keep": 1})
    assert cleared_results(res) == (["t0", "t1", "t2"] if fires else [])
    if fires:  # only the last request is over the trigger
        assert [e.step for e in res.events] == [res.steps[-1].index]
        assert res.events[0].detail["input_tokens"] == full


def test_trigger_type_tool_uses_counts_pairs() -> None:
    res = run(tools_conv(5), "anthropic_edits", params={"trigger_type": "tool_uses", "trigger": 3})
    # requests see 0..5 pairs; pairs > 3 from the request before call t4 (4 pairs) on
    assert [e.detail["applied_edit"]["cleared_tool_uses"] for e in res.events] == [1, 2]
    assert [e.step for e in res.events] == [4, 5]


# -- keep --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keep", "expected"),
    [
        pytest.param(0, ["t0", "t1", "t2", "t3"], id="keep-0-clears-all"),
        pytest.param(2, ["t0", "t1"], id="keep-2"),
        pytest.param(4, [], id="keep-equals-pairs"),
        pytest.param(9, [], id="keep-larger-than-pairs"),
    ],
)
def test_keep_most_recent_pairs(keep: int, expected: list[str]) -> None:
    res = run(tools_conv(4), "anthropic_edits", params={**ALWAYS, "keep": keep})
    assert cleared_results(res) == expected


# -- clear_at_least ----------------------------------------------------------------------------


def test_clear_at_least_unreachable_clears_nothing_and_says_so_once() -> None:
    res = run(
        tools_conv(4), "anthropic_edits", params={**ALWAYS, "keep": 1, "clear_at_least": 10**6}
    )
    assert cleared_results(res) == []
    skipped = [e for e in res.events if e.kind == "compact_skipped"]
    assert len(skipped) == 1 and not skipped[0].changes
    assert skipped[0].detail["clearable_tool_uses"] == 1  # first request with 2 pairs
    assert skipped[0].step == 2


def test_clear_at_least_applies_once_reachable() -> None:
    c = tools_conv(4)
    free = run(c, "anthropic_edits", params={**ALWAYS, "keep": 1})
    last = [e for e in free.events if e.kind == "clear_tool_uses"][-1]
    need = last.detail["applied_edit"]["cleared_input_tokens"]  # 3 results at the last request
    res = run(c, "anthropic_edits", params={**ALWAYS, "keep": 1, "clear_at_least": need})
    clears = [e for e in res.events if e.kind == "clear_tool_uses"]
    assert [e.step for e in clears] == [res.steps[-1].index]  # earlier requests reclaim less
    assert clears[0].detail["applied_edit"] == last.detail["applied_edit"]
    assert cleared_results(res) == ["t0", "t1", "t2"]


# -- exclude_tools / clear_tool_inputs ---------------------------------------------------------

NAMES = ["Read", "bash", "Read", "bash", "Read"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        pytest.param({}, ["t1", "t3"], id="excluded-count-towards-keep"),
        pytest.param({"keep_counts_excluded": False}, ["t1"], id="keep-counts-clearable-only"),
        pytest.param({"keep": 0}, ["t1", "t3"], id="keep-0"),
    ],
)
def test_exclude_tools(params: dict[str, Any], expected: list[str]) -> None:
    res = run(
        tools_conv(5, NAMES),
        "anthropic_edits",
        params={**ALWAYS, "keep": 1, "exclude_tools": ["Read"], **params},
    )
    assert cleared_results(res) == expected


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        pytest.param(False, [], id="results-only"),
        pytest.param(True, ["t0", "t1", "t2", "t3"], id="all-inputs"),
        pytest.param(["Read"], ["t0", "t2"], id="named-inputs"),
    ],
)
def test_clear_tool_inputs(inputs: bool | list[str], expected: list[str]) -> None:
    res = run(
        tools_conv(5, NAMES),
        "anthropic_edits",
        params={**ALWAYS, "keep": 1, "clear_tool_inputs": inputs},
    )
    assert cleared_results(res) == ["t0", "t1", "t2", "t3"]
    assert cleared_inputs(res) == expected
    first = next(e for e in res.events if e.kind == "clear_tool_uses")
    use = Block(BlockKind.TOOL_USE, tool_id="t0", tool_name="Read", tool_input={"cmd": "c0"})
    saving = ref("out 0 " * 600) - ref("[cleared]")
    if expected:
        saving += ref("Read " + use.input_json) - ref("Read {}")
    assert first.detail["applied_edit"] == {
        "type": "clear_tool_uses_20250919",
        "cleared_tool_uses": 1,
        "cleared_input_tokens": saving,
    }


# -- placeholder, multibyte, history -----------------------------------------------------------


@pytest.mark.parametrize("placeholder", ["[cleared]", "⟦gelöscht — 已清除⟧"])
def test_placeholder_is_byte_exact_and_multibyte_original_kept(placeholder: str) -> None:
    body = "日本語のテキスト 🚀 ünïcödé\n" * 50
    c = conv(system(), user("go"), call("a"), tool_result("a", body), call("b"),
             tool_result("b", "x"), assistant("done"))  # fmt: skip
    res = run(c, "anthropic_edits", params={**ALWAYS, "keep": 1, "placeholder": placeholder})
    (event,) = [e for e in res.events if e.kind == "clear_tool_uses"]
    (change,) = event.changes
    assert change.index == 3 and change.message is not None
    assert change.message.blocks[0].text.encode() == placeholder.encode()
    assert change.message.blocks[0].parts == ()
    assert c.messages[3].blocks[0].text == body  # the client's history is untouched
    saved = event.detail["applied_edit"]["cleared_input_tokens"]
    assert saved == ref(body) - ref(placeholder)
    assert event.tokens_before - event.tokens_after == saved


def test_cleared_result_stays_in_history_and_each_request_recomputes() -> None:
    c = tools_conv(4)
    res = run(c, "anthropic_edits", params={**ALWAYS, "keep": 1})
    clears = [e for e in res.events if e.kind == "clear_tool_uses"]
    # request k (before call t_k) holds k pairs: k - 1 are cleared, one more each request
    assert [e.step for e in clears] == [2, 3, 4]
    assert [e.messages for e in clears] == [(3,), (5,), (7,)]
    assert [e.detail["applied_edit"]["cleared_tool_uses"] for e in clears] == [1, 2, 3]
    # never removed: every request carries the whole history (edited copies, not drops)
    assert all(s.context == ((0, s.source_index),) for s in res.steps)
    full = run(c, "anthropic_edits", params=NEVER)
    last, unedited = res.steps[-1], full.steps[-1]
    assert (
        unedited.tokens.strategy - last.tokens.strategy
        == (clears[-1].detail["applied_edit"]["cleared_input_tokens"])
    )


def test_results_arriving_out_of_call_order_clear_by_call_order() -> None:
    c = conv(
        system(), user("go"),
        assistant("", tool_use("a"), tool_use("b")), results(("b", "B " * 300), ("a", "A " * 300)),
        call("c"), tool_result("c", "C " * 300), call("d"), tool_result("d", "D"), assistant("ok"),
    )  # fmt: skip
    res = run(c, "anthropic_edits", params={**ALWAYS, "keep": 2})
    assert cleared_results(res) == ["a", "b"]
    assert not [e for e in res.events if e.kind == "restore_request"]


def test_orphan_results_are_never_cleared_nor_counted() -> None:
    c = conv(
        system(), user("go"), tool_result("ghost", "G " * 300),
        call("a"), tool_result("a", "A " * 300), call("b"), tool_result("b", "B"), assistant("ok"),
    )  # fmt: skip
    res = run(c, "anthropic_edits", params={**ALWAYS, "keep": 1})
    assert cleared_results(res) == ["a"]


def test_empty_conversation() -> None:
    res = run(conv(), "anthropic_edits")
    assert res.steps == [] and res.events == []


# -- thinking ----------------------------------------------------------------------------------


def thinking_conv(turns: int = 4) -> Any:
    """Each turn: request, call with thinking, result, answer with thinking. The last
    request is made inside the last turn (before its answer)."""
    msgs: list[Message] = [system()]
    for k in range(turns):
        msgs += [
            user(f"q{k}"),
            assistant("", tool_use(f"t{k}"), thinking=f"plan {k} " * 40),
            tool_result(f"t{k}", "ok"),
            assistant(f"a{k}", thinking=f"check {k} " * 40),
        ]
    return conv(*msgs)


def thinking_kept(res: ReplayResult, c: Any) -> list[int]:
    """Source indexes whose thinking the last request still carries."""
    view = view_at(res, res.steps[-1].index)
    last = res.steps[-1].source_index
    return [
        i
        for i, m in enumerate(c.messages[:last])
        if m.role is Role.ASSISTANT
        and any(b.kind is BlockKind.THINKING for b in view.get(i, m).blocks)
    ]


@pytest.mark.parametrize(
    ("params", "kept", "cleared_turns"),
    [
        pytest.param({}, [14], 3, id="keep-1-current-turn-only"),
        pytest.param({"thinking_keep": 2}, [10, 12, 14], 2, id="keep-2"),
        pytest.param({"thinking_keep": 9}, [2, 4, 6, 8, 10, 12, 14], 0, id="keep-more-than-turns"),
        pytest.param({"thinking_keep_all": True}, [2, 4, 6, 8, 10, 12, 14], 0, id="keep-all"),
        pytest.param({"clear_thinking": False}, [14], 3, id="no-edit-api-default-keep-1"),
        pytest.param(
            {"thinking_keep_all": True, "strip_prior_thinking": True}, [14], 3, id="strip-prior"
        ),
    ],
)
def test_thinking_clearing(params: dict[str, Any], kept: list[int], cleared_turns: int) -> None:
    c = thinking_conv(4)
    res = run(c, "anthropic_edits", params={**NEVER, **params})
    assert thinking_kept(res, c) == kept
    events = [e for e in res.events if e.kind == "clear_thinking"]
    if not cleared_turns:
        assert not events
        return
    entry = events[-1].detail["applied_edit"]
    if params.get("clear_thinking", True):
        assert entry["type"] == "clear_thinking_20251015"
        assert entry["cleared_thinking_turns"] == cleared_turns
        thinking = sum(
            ref(b.text) for m in c.messages[:13] for b in m.blocks if b.kind is BlockKind.THINKING
        )
        if cleared_turns == 3:
            assert entry["cleared_input_tokens"] == thinking
    else:
        assert entry is None


def test_thinking_cleared_before_tool_trigger_is_measured() -> None:
    c = thinking_conv(4)
    unedited = run(c, "anthropic_edits", params={**NEVER, "thinking_keep_all": True})
    full = unedited.steps[-1].tokens.strategy
    # with keep 1 the old thinking no longer counts: the same trigger does not fire
    res = run(c, "anthropic_edits", params={"trigger": full - 1, "keep": 0})
    assert not [e for e in res.events if e.kind == "clear_tool_uses"]
    res = run(
        c, "anthropic_edits", params={"trigger": full - 1, "keep": 0, "thinking_keep_all": True}
    )
    assert [e.step for e in res.events if e.kind == "clear_tool_uses"] == [res.steps[-1].index]


# -- native configuration ----------------------------------------------------------------------


def test_native_config_is_the_context_management_body() -> None:
    cfg = native_config(
        "anthropic_edits",
        {"trigger": 30_000, "keep": 5, "clear_at_least": 5000, "exclude_tools": ["web_search"],
         "clear_tool_inputs": ["Read"], "thinking_keep": 2},
    )  # fmt: skip
    assert cfg.filename == "context_management.json"
    assert cfg.content == {
        "edits": [
            {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 30_000},
                "keep": {"type": "tool_uses", "value": 5},
                "clear_at_least": {"type": "input_tokens", "value": 5000},
                "exclude_tools": ["web_search"],
                "clear_tool_inputs": ["Read"],
            },
        ]
    }


def test_native_config_defaults_and_keep_all() -> None:
    edits = native_config("anthropic_edits", {"thinking_keep_all": True}).content["edits"]
    assert edits[0] == {"type": "clear_thinking_20251015", "keep": "all"}
    assert set(edits[1]) == {"type", "trigger", "keep"}
    edits = native_config("anthropic_edits", {"clear_thinking": False}).content["edits"]
    assert [e["type"] for e in edits] == ["clear_tool_uses_20250919"]


# -- golden replay over a real corpus transcript -----------------------------------------------

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus" / "claude-code"
AGENTCMD = CORPUS / "agentcmd-full-session.jsonl"
SNIFFLY = CORPUS / "sniffly-d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"


def test_golden_agentcmd_tool_uses_trigger() -> None:
    """Requests at messages 1, 3, 5, ..., 19 see 0, 1, 1, 3, 6, 9, 13, 16, 17, 20 pairs.
    Over 5 pairs the edit keeps the 3 newest (by call order, although messages 8, 14 and
    18 answer their calls out of order), so requests 4..9 clear 3, 6, 10, 13, 14, 17."""
    c = cli.load_file(AGENTCMD)
    res = run(c, "anthropic_edits", params={"trigger_type": "tool_uses", "trigger": 5})
    clears = [e for e in res.events if e.kind == "clear_tool_uses"]
    assert [e.kind for e in res.events] == ["clear_tool_uses"] * 6
    assert [e.step for e in clears] == [4, 5, 6, 7, 8, 9]
    assert [e.detail["applied_edit"]["cleared_tool_uses"] for e in clears] == [3, 6, 10, 13, 14, 17]
    assert [e.messages for e in clears] == [(2, 6), (8,), (10, 12), (12,), (14,), (14, 16)]
    # message 14 answers 5WkwLQ (cleared at step 8) then ctXWVX and J25Vy3 (step 9)
    kept = [b.tool_id for b in c.messages[18].blocks]  # the three newest pairs stay
    cleared = {b.tool_id for i in (2, 6, 8, 10, 12, 14, 16) for b in c.messages[i].blocks}
    assert sorted(cleared_results(res)) == sorted(cleared)
    assert not set(kept) & set(cleared_results(res))
    saving = sum(
        ref(b.text) - ref("[cleared]")
        for i in (2, 6, 8, 10, 12, 14, 16)
        for b in c.messages[i].blocks
    )
    assert clears[-1].detail["applied_edit"]["cleared_input_tokens"] == saving
    unedited = run(c, "anthropic_edits", params=NEVER).steps[-1].tokens.strategy
    assert res.steps[-1].tokens.strategy == unedited - saving


def test_golden_sniffly_input_tokens_trigger() -> None:
    """The first request over 20,000 tokens (step 14, 28,823 tokens without editing) clears
    all but the 3 newest pairs; later requests clear again exactly when a new pair arrived
    (all over the trigger: the history only grows). The last request holds all 58 pairs
    (no orphans), so it reports 55 cleared."""
    c = cli.load_file(SNIFFLY)
    unedited = [s.tokens.strategy for s in run(c, "anthropic_edits", params=NEVER).steps]
    res = run(c, "anthropic_edits", params={"trigger": 20_000})
    assert next(k for k, t in enumerate(unedited) if t > 20_000) == 14
    assert unedited[13:15] == [19_162, 28_823]
    pairs = [
        sum(len(m.tool_results) for m in c.messages[: s.source_index]) for s in res.steps
    ]  # every result answers an earlier call in this file
    expected_steps = [k for k in range(14, len(pairs)) if k == 14 or pairs[k] > pairs[k - 1]]
    clears = [e for e in res.events if e.kind == "clear_tool_uses"]
    assert [e.kind for e in res.events] == ["clear_tool_uses"] * len(clears)
    assert [e.step for e in clears] == expected_steps
    assert [e.detail["applied_edit"]["cleared_tool_uses"] for e in clears] == [
        pairs[k] - 3 for k in expected_steps
    ]
    assert clears[0].detail["input_tokens"] == 28_823
    assert clears[-1].detail["applied_edit"]["cleared_tool_uses"] == 55
    saved = [u - s.tokens.strategy for u, s in zip(unedited, res.steps, strict=True)]
    assert saved[:14] == [0] * 14 and all(x > 0 for x in saved[14:])
