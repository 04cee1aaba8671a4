"""Observation masking (The Complexity Trap's SWE-agent ``LastNObservations``): table tests
from the original's ``_get_omit_indices`` arithmetic, its ported test, and a real SWE-agent
trajectory from the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Message, Role
from ctxlab.engine.core.records import Fate, ReplayResult
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES
from ctxlab.engine.strategies.observation_masking import (
    PLACEHOLDER,
    masked_text,
    omitted_count,
)
from tests.engine.builders import assistant, call, conv, results, system, tool_result, user

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
TRAJ = "swe-agent-traj/marshmallow-1867-fc.traj"


def tools_conv(k: int, names: list[str] | None = None) -> object:
    """system, the task, ``k`` call/result pairs (t0..), a final answer: k + 1 requests."""
    msgs: list[Message] = [system(), user("fix the bug")]
    for i in range(k):
        name = names[i] if names else "bash"
        msgs += [call(f"t{i}", name, cmd=f"c{i}"), tool_result(f"t{i}", f"line {i}\n" * (i + 1))]
    msgs.append(assistant("done"))
    return conv(*msgs)


def masked_ids(res: ReplayResult) -> list[str]:
    """Tool ids whose result was masked at some request (a mask persists once applied)."""
    out = []
    for event in res.events:
        for change in event.changes:
            assert change.fate is Fate.PRUNED and change.message is not None
            out += [
                b.tool_id
                for b in change.message.blocks
                if b.kind is BlockKind.TOOL_RESULT and b.text.startswith("Old environment output")
            ]
    return sorted(out, key=lambda t: int(t[1:]))


# -- registration ------------------------------------------------------------------------------


def test_registered_in_library_with_origins() -> None:
    cls = STRATEGIES["observation_masking"]
    assert "observation_masking" in LIBRARY and "observation_masking" not in PRESETS
    for p in cls.PARAMS:
        assert p.origin and p.help, p.name
    assert cls().params["n"] == 10 and cls().params["polling"] == 1


@pytest.mark.parametrize(("params", "name"), [({"n": 0}, "n"), ({"polling": 0}, "polling")])
def test_out_of_range_params_are_named(params: dict[str, int], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        STRATEGIES["observation_masking"](params)


def test_keep_output_tools_must_be_names() -> None:
    with pytest.raises(ValueError, match="keep_output_tools"):
        STRATEGIES["observation_masking"]({"keep_output_tools": ["edit", 3]})


# -- the original's arithmetic (_get_omit_indices) ---------------------------------------------


@pytest.mark.parametrize(
    ("observations", "n", "polling", "omitted"),
    [
        (1, 10, 1, 0),  # the template alone
        (11, 10, 1, 0),  # template + 10: all kept
        (12, 10, 1, 1),  # template + 11: the oldest masked
        (30, 10, 1, 19),  # template + 29: 29 - 10
        (5, 3, 1, 1),
        (12, 10, 5, 0),  # (12 // 5) * 5 - 10 = 0
        (15, 10, 5, 4),  # 15 - 10 = 5 -> obs[1:5]
        (19, 10, 5, 4),  # boundary waits for the next multiple of polling
        (20, 10, 5, 9),
    ],
)
def test_omitted_count_matches_get_omit_indices(
    observations: int, n: int, polling: int, omitted: int
) -> None:
    # The original: obs[1:max(0, (len // polling) * polling - n)], index 0 = template.
    obs = list(range(observations))
    assert len(obs[1 : max(0, (observations // polling) * polling - n)]) == omitted
    assert omitted_count(observations, n, polling) == omitted


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\nb\nc", "Old environment output: (3 lines omitted)"),
        ("a\nb\nc\n", "Old environment output: (3 lines omitted)"),  # splitlines: no empty tail
        ("", "Old environment output: (0 lines omitted)"),
        ("one", "Old environment output: (1 lines omitted)"),
        ("a\r\nb\x0bc", "Old environment output: (3 lines omitted)"),  # every splitlines break
    ],
)
def test_placeholder_text_is_the_originals(text: str, expected: str) -> None:
    assert (
        masked_text(text) == expected == PLACEHOLDER.replace("{lines}", str(len(text.splitlines())))
    )


# -- replay --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "n", "masked"), [(3, 3, 0), (4, 3, 1), (12, 10, 2), (6, 1, 5)])
def test_keeps_the_last_n_observations(k: int, n: int, masked: int) -> None:
    res = run(tools_conv(k), "observation_masking", params={"n": n})
    assert masked_ids(res) == [f"t{i}" for i in range(masked)]
    assert all(e.kind == "prune" for e in res.events)


def test_mask_lands_on_the_request_after_the_observation_arrives() -> None:
    # 4 observations, n=3: the oldest is masked from the request that follows the 4th.
    c = tools_conv(4)
    res = run(c, "observation_masking", params={"n": 3})
    (event,) = res.events
    assert event.step == 4  # requests 0..3 follow 0..3 observations: nothing to mask
    # A one-line output is shorter than its placeholder: masking it grows the request.
    assert event.tokens_after > event.tokens_before
    (change,) = event.changes
    assert change.index == 3  # t0's result
    assert change.message is not None
    assert change.message.blocks[0].text == "Old environment output: (1 lines omitted)"


def test_tokens_shrink_by_the_masked_text() -> None:
    c = tools_conv(8)
    full = run(c, "observation_masking", params={"n": 100})
    masked = run(c, "observation_masking", params={"n": 2})
    assert not full.events
    assert masked.steps[-1].tokens.strategy < full.steps[-1].tokens.strategy


def test_task_and_assistant_messages_are_never_masked() -> None:
    res = run(tools_conv(6), "observation_masking", params={"n": 1})
    touched = {c.index for e in res.events for c in e.changes}
    assert touched == {3, 5, 7, 9, 11}  # the result messages only, never index 1 (the task)


def test_parallel_results_are_one_observation_each_with_own_line_count() -> None:
    c = conv(
        system(),
        user("go"),
        assistant("", *call("a", "bash").blocks, *call("b", "bash").blocks),
        results(("a", "x\ny"), ("b", "z")),
        call("c", "bash"),
        tool_result("c", "w"),
        assistant("done"),
    )
    res = run(c, "observation_masking", params={"n": 1})
    (event,) = res.events
    (change,) = event.changes
    assert change.index == 3 and change.message is not None
    texts = [b.text for b in change.message.blocks]
    assert texts == [
        "Old environment output: (2 lines omitted)",
        "Old environment output: (1 lines omitted)",
    ]


def test_later_user_words_are_not_observations() -> None:
    c = conv(
        system(),
        user("go"),
        call("t0", "bash"),
        tool_result("t0", "out"),
        assistant("asked"),
        user("and now this"),
        call("t1", "bash"),
        tool_result("t1", "out"),
        assistant("done"),
    )
    res = run(c, "observation_masking", params={"n": 1})
    assert masked_ids(res) == ["t0"]
    assert {ch.index for e in res.events for ch in e.changes} == {3}


def test_keep_output_tools_count_but_stay() -> None:
    names = ["edit", "bash", "bash", "bash"]
    res = run(
        tools_conv(4, names), "observation_masking", params={"n": 1, "keep_output_tools": ["edit"]}
    )
    assert masked_ids(res) == ["t1", "t2"]


def test_polling_moves_the_boundary_in_steps() -> None:
    # 6 observations + template = 7; n=2, polling=3: (7 // 3) * 3 - 2 = 4 -> 3 masked.
    res = run(tools_conv(6), "observation_masking", params={"n": 2, "polling": 3})
    assert masked_ids(res) == ["t0", "t1", "t2"]
    # Before that (4 or 5 observations with the template): (4 // 3) * 3 - 2 = 1 -> none,
    # so all three land in one request, where polling=1 masks one per request.
    (event,) = res.events
    assert len(event.changes) == 3
    assert len(run(tools_conv(6), "observation_masking", params={"n": 2}).events) == 4


def test_custom_placeholder() -> None:
    res = run(
        tools_conv(2), "observation_masking", params={"n": 1, "placeholder": "[gone {lines}]"}
    )
    (event,) = res.events
    assert event.changes[0].message is not None
    assert event.changes[0].message.blocks[0].text == "[gone 1]"


# -- ported: tests/test_history_processors.py::test_last_n_observations ------------------------


def test_ported_elided_is_observations_minus_n_minus_template() -> None:
    name = TRAJ
    conversation = importers.parse((CORPUS / name).read_bytes(), name=name).conversations[0]
    observations = sum(
        1
        for m in conversation.messages
        if m.role is not Role.ASSISTANT and any(b.kind is BlockKind.TOOL_RESULT for b in m.blocks)
    )
    assert observations > 3
    res = run(conversation, "observation_masking", params={"n": 3})
    elided = {c.index for e in res.events for c in e.changes}
    # The original counts the template among its observations and keeps it: elided =
    # (observations + template) - 3 - 1. The last observation arrives after the last
    # request only if the trajectory ends on one; it is then never in a request.
    last_request = res.steps[-1].source_index
    in_requests = sum(
        1
        for i, m in enumerate(conversation.messages)
        if i < last_request
        and m.role is not Role.ASSISTANT
        and any(b.kind is BlockKind.TOOL_RESULT for b in m.blocks)
    )
    assert len(elided) == (in_requests + 1) - 3 - 1
    for e in res.events:
        for ch in e.changes:
            assert ch.message is not None
            for b in ch.message.blocks:
                if b.kind is BlockKind.TOOL_RESULT:
                    assert b.text.startswith("Old environment output: (")


def test_native_config_is_the_swe_agent_history_processors() -> None:
    from ctxlab.engine.native_config import native_config

    native = native_config("observation_masking", {"n": 5, "keep_output_tools": ["edit"]})
    assert native.filename == "config.yaml" and native.media_type == "application/yaml"
    processors = native.content["agent"]["history_processors"]
    assert [p["type"] for p in processors] == ["tag_tool_call_observations", "last_n_observations"]
    assert processors[1]["n"] == 5 and "      n: 5\n" in native.text
    assert native.unexpressed == ()
