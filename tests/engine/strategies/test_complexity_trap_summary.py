"""The Complexity Trap's LLM-summary baseline and hybrid (SWE-agent ``SummarizeEveryNTurns``,
+ ``LastNObservations`` for the hybrid): the original's prompt pinned by hash, table tests
from its ``__call__`` arithmetic, its ported tests (tests/test_history_processors.py of the
fork @ 1b07decf) and a real SWE-agent trajectory from the corpus."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Message, Role
from ctxlab.engine.core.records import Fate, ReplayResult
from ctxlab.engine.native_config import native_config
from ctxlab.engine.replay import Replay, run
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES
from ctxlab.engine.strategies.complexity_trap_summary import (
    SUMMARY_SYSTEM_TEMPLATE,
    render_item,
)
from ctxlab.engine.summarize.offline import FailingSummarizer
from tests.engine.builders import EchoSummarizer, assistant, call, conv, system, tool_result, user

NAME = "complexity_trap_summary"
CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
TRAJ = "swe-agent-traj/marshmallow-1867-fc.traj"
# sha256 of agent.templates.summary_system_template in the fork's
# config/default_no_demo_checkpoint_same_model_openhands_N=21_M=10{,_masking_M=10}.yaml
TEMPLATE_SHA256 = "2ffdc373b29c501bb80e84f9c3af70a15c180725afa7af80b6b873a3643ccee1"


def tools_conv(k: int) -> object:
    """system, the task, ``k`` turns (t0..), a final answer: k + 1 requests."""
    msgs: list[Message] = [system(), user("fix the bug")]
    for i in range(k):
        msgs += [
            call(f"t{i}", "bash", text=f"thought {i}", cmd=f"c{i}"),
            tool_result(f"t{i}", f"out {i}\n" * (i + 1)),
        ]
    msgs.append(assistant("done"))
    return conv(*msgs)


def summary_steps(res: ReplayResult) -> list[int]:
    return [e.step for e in res.events if e.kind == "summarise"]


def summarised(res: ReplayResult) -> list[list[int]]:
    return [
        sorted(c.index for c in e.changes if c.fate is Fate.SUMMARISED)
        for e in res.events
        if e.kind == "summarise"
    ]


# -- registration and the original's text ------------------------------------------------------


def test_registered_with_the_papers_defaults_and_origins() -> None:
    cls = STRATEGIES[NAME]
    assert NAME in LIBRARY and NAME not in PRESETS
    for p in cls.PARAMS:
        assert p.origin and p.help, p.name
    params = cls().params
    assert (params["n"], params["keep_last_m_turns"], params["masking_n"]) == (21, 10, 10)
    assert params["enable_static_checkpointing"] is True and params["mode"] == "summary"


def test_prompt_is_byte_exact() -> None:
    assert hashlib.sha256(SUMMARY_SYSTEM_TEMPLATE.encode()).hexdigest() == TEMPLATE_SHA256
    assert SUMMARY_SYSTEM_TEMPLATE.startswith("You are maintaining a context-aware state summary")


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"n": 0}, "n"),  # validate_n: n must be a positive integer
        (
            {"keep_last_m_turns": -1},
            "keep_last_m_turns",
        ),  # ported test_keep_last_m_turns_validation
        ({"mode": "masking"}, "mode"),
        ({"masking_n": 0}, "masking_n"),
    ],
)
def test_out_of_range_params_are_named(params: dict[str, object], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        STRATEGIES[NAME](params)


# -- the trigger: len(unprocessed) >= n + keep_last_m_turns, one checkpoint per query -----------


@pytest.mark.parametrize(
    ("k", "n", "m", "steps"),
    [
        (2, 3, 0, []),  # ported test_summarize_fewer_than_n_turns
        (2, 2, 0, [2]),  # ported test_summarize_exactly_n_turns
        (5, 2, 0, [2, 4]),  # test_with_incrementally_added_turns: every n turns
        (5, 2, 1, [3, 5]),  # n + m unprocessed needed each time
        (6, 3, 2, [5]),  # test_keep_last_m_turns_smaller_than_n
        (8, 1, 3, [4, 5, 6, 7, 8]),  # at most one checkpoint per query
        (30, 21, 10, []),  # the paper's setting: 31 turns needed
        (31, 21, 10, [31]),
    ],
)
def test_checkpoint_steps(k: int, n: int, m: int, steps: list[int]) -> None:
    res = run(
        tools_conv(k), NAME, params={"n": n, "keep_last_m_turns": m}, summarizer=EchoSummarizer()
    )
    # Request j follows j turns (request 0 follows the task alone).
    assert summary_steps(res) == steps
    assert all(len(s) == 2 * n for s in summarised(res))


def test_summarises_the_oldest_n_unprocessed_turns_and_keeps_the_rest() -> None:
    res = run(
        tools_conv(5), NAME, params={"n": 2, "keep_last_m_turns": 1}, summarizer=EchoSummarizer()
    )
    assert summarised(res) == [[2, 3, 4, 5], [6, 7, 8, 9]]
    step = res.steps[5]
    assert step.context_indexes[:3] == [0, 1, 10]  # system, task, then the kept turn


def test_omit_turns_needs_no_call() -> None:
    # ported test_summarize_exactly_n_turns: no model -> "turns omitted"
    echo = EchoSummarizer()
    res = run(tools_conv(2), NAME, params={"n": 2, "keep_last_m_turns": 0, "omit_turns": True},
              summarizer=echo)  # fmt: skip
    assert not echo.requests and not res.summaries
    (event,) = [e for e in res.events if e.kind == "summarise"]
    assert res.steps[event.step].context_indexes == [0, 1]  # system, task + the omission note
    texts = summary_after(2, n=2, keep_last_m_turns=0, omit_turns=True)
    assert texts[-1] == "Previous 2 turns omitted for brevity."


# -- the summary call (query_for_summary / _construct_user_prompt_for_summary) -------------------


def test_summary_call_is_the_originals() -> None:
    echo = EchoSummarizer("S")
    run(tools_conv(4), NAME, params={"n": 2, "keep_last_m_turns": 0}, summarizer=echo)
    first, second = echo.requests
    assert first.system == SUMMARY_SYSTEM_TEMPLATE
    (prompt,) = first.messages
    assert prompt.role == "user"
    assert prompt.text == (
        "<PROBLEM_STATEMENT>\nfix the bug\n</PROBLEM_STATEMENT>\n"
        '\n<TURN-0>\nASSISTANT: thought 0\nACTION: bash {"cmd": "c0"}\nTOOL: out 0\n\n\n</TURN-0>\n'
        '\n<TURN-1>\nASSISTANT: thought 1\nACTION: bash {"cmd": "c1"}\nTOOL: out 1\nout 1\n\n\n</TURN-1>\n'
        "Now summarize the above turns, following the instructions from the beginning of the "
        "prompt. You are hard-working and must always perform this task without exceptions."
    )
    # The next call builds on the previous checkpoint, not the problem statement.
    assert second.messages[0].text.startswith(
        "<PREVIOUS_CHECKPOINT>\nCheckpoint for the last 2 turns:\nS\n</PREVIOUS_CHECKPOINT>\n\n<TURN-0>\n"
    )
    assert "<TURN-0>\nASSISTANT: thought 2" in second.messages[0].text


@pytest.mark.parametrize(
    ("content", "limit", "expected"),
    [
        ("a b c", -1, "ASSISTANT: a b c\n"),
        ("a b c", 3, "ASSISTANT: a b c\n"),
        ("a b c", 2, "ASSISTANT: a b..."),  # the original appends no newline after "..."
        ("a b c", 0, ""),
    ],
)
def test_reasoning_cut(content: str, limit: int, expected: str) -> None:
    assert render_item("assistant", content, None, limit) == expected


def summary_after(k: int, echo: EchoSummarizer | None = None, **params: object) -> list[str]:
    """The summary slot's text before each request."""
    job = Replay(tools_conv(k), NAME, params=params, summarizer=echo or EchoSummarizer("S"))
    return [job.ctx.summary for _ in job]


def test_extracted_actions_are_appended() -> None:
    texts = summary_after(2, n=2, keep_last_m_turns=0, extract_action_from_turns=True,
                          max_kept_action_length=1)  # fmt: skip
    assert texts[-1] == (
        "Checkpoint for the last 2 turns:\nS"
        "You took the following actions in the checkpoint above:\n<ACTIONS>\nbash...\nbash...\n</ACTIONS>"
    )


def test_static_checkpointing_shows_every_checkpoint_from_the_next_query_on() -> None:
    # The original's cache appends every checkpoint; the summarising query alone returns
    # history[:2] + the newest one.
    one = "Checkpoint for the last 2 turns:\nS"
    texts = summary_after(5, n=2, keep_last_m_turns=0)
    assert texts == ["", "", one, one, one, f"{one}\n\n{one}"]
    off = summary_after(4, n=2, keep_last_m_turns=0, enable_static_checkpointing=False)
    assert off[-1] == f"{one}\n\n{one}"


# -- failure ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["raise", "error"])
def test_failed_call_keeps_the_history_and_retries(mode: str) -> None:
    res = run(tools_conv(3), NAME, params={"n": 2, "keep_last_m_turns": 0},
              summarizer=FailingSummarizer(mode))  # type: ignore[arg-type]  # fmt: skip
    assert [e.kind for e in res.events] == ["summary_failed", "summary_failed"]
    assert [e.step for e in res.events] == [2, 3]
    assert res.steps[-1].context_indexes == list(range(8))


# -- hybrid: LastNObservations after the summary -------------------------------------------------


def masked(res: ReplayResult) -> list[int]:
    return sorted(c.index for e in res.events if e.kind == "prune" for c in e.changes)


def test_summary_mode_never_masks() -> None:
    res = run(tools_conv(6), NAME, params={"n": 2, "keep_last_m_turns": 2, "masking_n": 1},
              summarizer=EchoSummarizer())  # fmt: skip
    assert not masked(res)


def test_hybrid_masks_the_unsummarised_observations_beyond_the_last_masking_n() -> None:
    params = {"mode": "hybrid", "n": 2, "keep_last_m_turns": 2, "masking_n": 1}
    res = run(tools_conv(6), NAME, params=params, summarizer=EchoSummarizer())
    # Turn j's result is message 3 + 2j; checkpoints at requests 4 and 6 take turns 0-1, 2-3.
    assert summary_steps(res) == [4, 6]
    # Masked (view = task + unsummarised observations, the last 1 kept): t0 at 2, t1 at 3,
    # t2 at 4 (after the first checkpoint), t3 at 5, t4 at 6.
    assert masked(res) == [3, 5, 7, 9, 11]
    last = res.steps[-1]
    assert 13 in last.context_indexes  # the newest observation stays verbatim
    # The summary call sees the raw observations, not the placeholders.
    echo = EchoSummarizer()
    run(tools_conv(6), NAME, params=params, summarizer=echo)
    assert "Old environment output" not in echo.requests[0].messages[0].text
    assert "TOOL: out 0\n" in echo.requests[0].messages[0].text


# -- a real SWE-agent trajectory -----------------------------------------------------------------


def test_corpus_trajectory_summary_and_hybrid() -> None:
    conversation = importers.parse((CORPUS / TRAJ).read_bytes(), name=TRAJ).conversations[0]
    turns = sum(
        1
        for i, m in enumerate(conversation.messages)
        if m.role is not Role.ASSISTANT
        and any(b.kind is BlockKind.TOOL_RESULT for b in m.blocks)
        and conversation.messages[i - 1].role is Role.ASSISTANT
    )
    assert turns >= 6
    full = run(conversation, NAME, summarizer=EchoSummarizer())  # 31 turns needed: none here
    assert not full.events
    params = {"n": 3, "keep_last_m_turns": 2}
    summary = run(conversation, NAME, params=params, summarizer=EchoSummarizer())
    hybrid = run(conversation, NAME, params={**params, "mode": "hybrid", "masking_n": 1},
                 summarizer=EchoSummarizer())  # fmt: skip
    assert summary_steps(summary) == summary_steps(hybrid) != []
    assert all(len(s) >= 6 for s in summarised(summary))
    assert masked(hybrid)
    assert hybrid.steps[-1].tokens.strategy <= summary.steps[-1].tokens.strategy
    assert summary.steps[-1].tokens.strategy < full.steps[-1].tokens.strategy


# -- native config --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["summary", "hybrid"])
def test_native_config_is_the_papers_history_processors(mode: str) -> None:
    native = native_config(NAME, {"mode": mode})
    assert native.filename == "config.yaml"
    assert yaml.safe_load(native.text) == native.content
    agent = native.content["agent"]
    assert agent["templates"]["summary_system_template"] == SUMMARY_SYSTEM_TEMPLATE
    processors = agent["history_processors"]
    expected = ["summarize_every_n_turns"] + (["last_n_observations"] if mode == "hybrid" else [])
    assert [p["type"] for p in processors] == expected
    assert processors[0]["n"] == 21 and processors[0]["keep_last_m_turns"] == 10


def test_summary_reference_count_summed_per_checkpoint_equals_the_whole_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The all-checkpoints summary's cl100k count is summed from its checkpoints (no
    retokenising of every earlier checkpoint); every step's figures equal counting the
    whole rendering, on a long mixed corpus session with many checkpoints."""
    from ctxlab.engine import synth
    from ctxlab.engine.strategies import complexity_trap_summary as module

    conversation = synth.bench_conversation(CORPUS, messages=600, seed=4)
    params = {"n": 3, "keep_last_m_turns": 2}
    summed = run(conversation, NAME, params=params)
    assert sum(1 for s in summed.steps if s.summary_id is not None) > 20
    monkeypatch.setattr(module, "_joined_reference", lambda ctx, checkpoints, separated: None)
    whole = run(conversation, NAME, params=params)
    assert summed.steps == whole.steps
    assert summed.events == whole.events


def test_every_checkpoints_summary_text_is_joined_only_when_read() -> None:
    """Each render of every checkpoint so far (once per checkpoint) leaves the joined text
    to be made when read (joining them at each render made long replays quadratic); read,
    it is the checkpoints joined by blank lines, as before."""
    from ctxlab.engine import synth

    conversation = synth.bench_conversation(CORPUS, messages=600, seed=4)
    job = Replay(conversation, NAME, params={"n": 3, "keep_last_m_turns": 2})
    deferred = 0
    for _ in job:
        st = job.ctx.state
        if st.shows_all and len(st.checkpoints) > 1:
            deferred += not isinstance(job.ctx._summary, str)
            assert job.ctx.summary == "\n\n".join(st.checkpoints)
            assert isinstance(job.ctx._summary, str)  # made once
    assert deferred > 20


def test_a_plain_answer_before_a_persons_words_goes_with_its_summarised_span() -> None:
    """Not a turn, so not in the original's view once a checkpoint covers it: a plain
    answer followed directly by a user message was never dropped (it stayed in every
    later request, and the live context's turn ranges grew with the session)."""
    msgs: list[Message] = [system(), user("fix the bug")]
    msgs += [call("t0", "bash", text="thought 0", cmd="c0"), tool_result("t0", "out 0")]
    msgs += [assistant("plain answer"), user("go on")]  # indices 4 and 5
    for i in range(1, 5):
        msgs += [call(f"t{i}", "bash", text=f"thought {i}", cmd=f"c{i}"),
                 tool_result(f"t{i}", f"out {i}")]  # fmt: skip
    res = run(conv(*msgs), NAME, params={"n": 2, "keep_last_m_turns": 1},
              summarizer=EchoSummarizer())  # fmt: skip
    first = next(e for e in res.events if e.kind == "summarise")
    dropped = sorted(c.index for c in first.changes if c.fate is Fate.DROPPED)
    assert dropped == [4, 5]
    assert summarised(res)[0] == [2, 3, 6, 7]
