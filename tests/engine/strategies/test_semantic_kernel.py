"""Semantic Kernel history reducers (microsoft/semantic-kernel @ b39d95a3).

Ported as tables from the original's own tests:
``python/tests/unit/contents/test_chat_history_reducer_utils.py`` (the pairs fixture,
``extract_range``, ``locate_safe_reduction_index``, the TOOL-role regression),
``test_chat_history_truncation_reducer.py`` (system/developer preserved, target 1, late
system message, tools) and ``test_chat_history_summarization_reducer.py`` (no need, no
messages to summarise, system preserved, a summary SYSTEM message not preserved). Then the
replays: when reduce() runs, the summary request, the failure path, every corpus file."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import EchoSummarizer, assistant, call, conv, events_of, system, tool_result, user

from ctxlab.engine import cli
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES
from ctxlab.engine.strategies import _semantic_kernel as sk
from ctxlab.engine.strategies import semantic_kernel_summarization as sks
from ctxlab.engine.strategies._chat_history import Chat
from ctxlab.engine.summarize.offline import FailingSummarizer

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"

# DEFAULT_SUMMARIZATION_PROMPT, written out again (not read from the file) so a drift fails.
PROMPT = (
    "\nProvide a concise and complete summarization of the entire dialog that does not exceed "
    "5 sentences.\n\nThis summary must always:\n- Consider both user and assistant "
    "interactions\n- Maintain continuity for the purpose of further dialog\n- Include details "
    "from any existing summary\n- Focus on the most significant aspects of the dialog\n\nThis "
    "summary must never:\n- Critique, correct, interpret, presume, or assume\n- Identify "
    "faults, mistakes, misunderstanding, or correctness\n- Analyze what has not occurred\n- "
    "Exclude details from any existing summary\n"
)


def c(role: str, *, calls: tuple[str, ...] = (), results: tuple[str, ...] = (),
      summary: bool = False) -> Chat:  # fmt: skip
    return Chat(role, -1, calls=calls, results=results, summary=summary)


def pairs_fixture() -> list[Chat]:
    """test_chat_history_reducer_utils.py ``chat_messages_with_pairs``."""
    return [
        c("system", summary=True),
        c("user"),
        c("assistant", calls=("call1",)),
        c("assistant", results=("call1",)),
        c("user"),
        c("assistant", calls=("call2",)),
        c("user"),
        c("assistant", results=("callX",)),
        c("assistant", results=("call2",)),
    ]


def plain(*roles: str) -> list[Chat]:
    return [c(r) for r in roles]


# -- registration, prompt ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["semantic_kernel_truncation", "semantic_kernel_summarization"])
def test_registered_with_the_sample_defaults(name: str) -> None:
    cls = STRATEGIES[name]
    assert name in LIBRARY and name not in PRESETS
    params = {p.name: p.default for p in cls.PARAMS}
    assert params["target_count"] == 3 and params["threshold_count"] == 2
    assert params["reduce_at"] == "turn" and cls.WINDOW == "context_window"
    with pytest.raises(ValueError, match="target_count"):
        cls({"target_count": 0})


def test_summarization_prompt_byte_exact() -> None:
    assert sks.DEFAULT_SUMMARIZATION_PROMPT.encode() == PROMPT.encode()
    summ = EchoSummarizer()
    run(conv(*chat(2)), "semantic_kernel_summarization", summarizer=summ,
        params={"target_count": 2, "threshold_count": 0})  # fmt: skip
    assert summ.requests[0].messages[-1].text.encode() == PROMPT.encode()
    summ = EchoSummarizer()
    run(conv(*chat(2)), "semantic_kernel_summarization", summarizer=summ,
        params={"target_count": 2, "threshold_count": 0,
                "summarization_instructions": "Summarise."})  # fmt: skip
    assert summ.requests[0].messages[-1].text == "Summarise."


# -- chat_history_reducer_utils ----------------------------------------------------------------


def test_get_call_result_pairs_fixture_has_pairs() -> None:
    assert sk.get_call_result_pairs(pairs_fixture()) == [(2, 3), (5, 8)]


@pytest.mark.parametrize(
    ("msg", "expected"),
    [
        (c("user"), False),
        (c("user", calls=("x",)), True),
        (c("user", results=("t",)), True),
        (c("tool"), True),
    ],  # fmt: skip
)
def test_contains_function_call_or_result(msg: Chat, expected: bool) -> None:
    assert sk.contains_function_call_or_result(msg) is expected


@pytest.mark.parametrize(("start", "end", "kept"), [(2, 9, [2, 3, 4, 5, 8, 6, 7]),
                                                     (4, 9, [4, 5, 8, 6, 7])])  # fmt: skip
def test_extract_range_preserve_pairs(start: int, end: int, kept: list[int]) -> None:
    h = pairs_fixture()
    got = sk.extract_range(h, start, end, preserve_pairs=True)
    assert [h.index(m) for m in got] == kept  # a later result moves next to its call


def test_extract_range_filter_skips_calls_and_results() -> None:
    h = pairs_fixture()
    got = sk.extract_range(h, 0, 9, filter_func=sk.contains_function_call_or_result)
    assert [h.index(m) for m in got] == [1, 4, 6]  # the summary is SYSTEM: skipped too


def test_locate_summarization_boundary() -> None:
    assert sk.locate_summarization_boundary([]) == 0
    assert sk.locate_summarization_boundary(pairs_fixture()) == 1
    assert sk.locate_summarization_boundary([c("user", summary=True)]) == 1


@pytest.mark.parametrize(
    ("history", "target", "threshold", "offset", "system", "expected"),
    [
        (plain("system", "user", "assistant", "user", "assistant"), 3, 0, 0, True, 3),
        (plain("user", "assistant", "user", "assistant"), 2, 0, 0, False, 2),
        (plain("system", "user", "assistant"), 1, 0, 0, True, 3),  # target 0: len
        (plain("user", "assistant"), 2, 0, 0, False, None),
        (plain("user", "assistant", "user", "assistant"), 3, 10, 0, False, None),
        # TOOL role without a result item still pairs with the call before it
        ([c("user"), c("assistant", calls=("call1",)), c("tool"), c("user"), c("assistant")],
         3, 0, 0, False, 1),
        (pairs_fixture(), 4, 0, 0, False, 5),  # the call of call2 (5) is no cut past its result
        (pairs_fixture(), 3, 0, 5, False, 6),
        # the threshold window is searched back for a user message
        (plain("user", "assistant", "user", "assistant", "assistant", "assistant"), 2, 2, 0,
         False, 2),
    ],
)  # fmt: skip
def test_locate_safe_reduction_index(
    history: list[Chat], target: int, threshold: int, offset: int, system: bool,
    expected: int | None,
) -> None:  # fmt: skip
    got = sk.locate_safe_reduction_index(history, target, threshold, offset, system)
    assert got == expected
    if got is not None and offset == 0:  # an offset can block the step back (SK's rule)
        for call_i, result_i in sk.get_call_result_pairs(history):
            assert (call_i >= got) == (result_i >= got)


# -- ChatHistoryTruncationReducer.reduce ---------------------------------------------------------


@pytest.mark.parametrize(
    ("roles", "target", "threshold", "kept"),
    [
        (("system", "user", "assistant", "user", "assistant"), 2, 0, [0, 4]),
        (("system", "user", "assistant", "user", "assistant"), 5, 0, None),
        (("developer", "user", "assistant", "user", "assistant"), 2, 0, [0, 4]),
        (("system", "user", "assistant", "user", "assistant"), 1, 0, [0]),
        (("user", "assistant", "user", "assistant"), 2, 0, [2, 3]),
        (("system", "developer", "user", "assistant", "user", "assistant"), 2, 0, [0, 5]),
        (("user", "assistant", "user", "system", "assistant"), 3, 0, [2, 3, 4]),
    ],
)
def test_truncation_reduce(
    roles: tuple[str, ...], target: int, threshold: int, kept: list[int] | None
) -> None:
    h = plain(*roles)
    got = sk.truncate(h, target, threshold)
    assert (None if got is None else [h.index(m) for m in got]) == kept


def test_truncation_with_tools() -> None:
    """``test_truncation_reducer_truncation_with_tools``: system + the last user/assistant."""
    h = [c("system"), c("user"), c("assistant", calls=("123",)), c("tool", results=("123",)),
         c("user"), c("assistant")]  # fmt: skip
    got = sk.truncate(h, 3, 0)
    assert got is not None and [h.index(m) for m in got] == [0, 4, 5]


# -- ChatHistorySummarizationReducer.reduce (up to the call) -------------------------------------


def test_summary_plan_no_need_and_nothing_to_summarise() -> None:
    assert sk.plan_summary(plain("user", "assistant"), 10, 0) is None
    only = [c("system", summary=True)]
    assert sk.plan_summary(only, 1, 0, use_single_summary=False) is None


def test_summary_plan_preserves_the_system_message_not_a_summary() -> None:
    h = plain("system", "user", "assistant", "user", "assistant", "user", "assistant")
    plan = sk.plan_summary(h, 3, 0)
    assert plan is not None and plan.system is h[0]
    assert [h.index(m) for m in plan.to_summarize] == [1, 2, 3, 4]
    new = sk.summarized_history(h, plan, c("assistant", summary=True))
    assert new[0] is h[0] and new[1].summary and new[2:] == h[5:]
    h[0].summary = True  # a SYSTEM summary is not the system prompt
    plan = sk.plan_summary(h, 3, 0)
    assert plan is not None and plan.system is None


def test_summary_plan_reduce_needed_with_an_existing_summary() -> None:
    """``test_summarization_reducer_reduce_needed``: target 3, threshold 1."""
    h = [c("system", summary=True), *plain("user", "assistant", "user", "assistant", "user",
                                           "assistant")]  # fmt: skip
    plan = sk.plan_summary(h, 3, 1)
    assert plan is not None and plan.insertion_point == 1 and plan.truncation_index == 3
    new = sk.summarized_history(h, plan, c("assistant", summary=True))
    assert len(new) <= 5 and sum(m.summary for m in new) == 1


# -- replays -----------------------------------------------------------------------------------


def chat(turns: int) -> list:  # type: ignore[type-arg]
    msgs = [system("sys")]
    for t in range(turns):
        msgs += [user(f"question {t}"), call(f"c{t}", text=f"look {t}"),
                 tool_result(f"c{t}", f"result {t}"), assistant(f"answer {t}")]  # fmt: skip
    return msgs


def test_truncation_replay_reduces_before_each_user_turn_only() -> None:
    msgs = chat(3)
    res = run(
        conv(*msgs), "semantic_kernel_truncation", params={"target_count": 4, "threshold_count": 0}
    )
    drops = events_of(res, "drop")
    # reduce() before the first call of turns 1 and 2 only; the cut moves back over the
    # call/result pair, so 5 stay after the first (sys, c0, r0, a0, u1), then 4 more arrive
    assert [e.detail["messages_before"] for e in drops] == [6, 9]
    for step in res.steps:
        ids = set(step.context_indexes)
        for i, m in enumerate(msgs):
            if i in ids and m.blocks[0].tool_id and m.role.value == "user":
                assert i - 1 in ids  # a result never without its call
    assert 0 in res.steps[-1].context_indexes  # the system message is kept
    every = run(conv(*msgs), "semantic_kernel_truncation",
                params={"target_count": 4, "threshold_count": 0, "reduce_at": "call"})  # fmt: skip
    assert len(events_of(every, "drop")) > len(drops)


def test_summarization_replay_request_and_result() -> None:
    msgs = chat(3)
    summ = EchoSummarizer("SUMMARY")
    res = run(conv(*msgs), "semantic_kernel_summarization",
              params={"target_count": 2, "threshold_count": 0}, summarizer=summ)  # fmt: skip
    first = summ.requests[0]
    # the messages before the cut, function calls/results left out, then the instruction
    assert [(m.role, m.text) for m in first.messages] == [
        ("user", "question 0"),
        ("assistant", "answer 0"),
        ("system", PROMPT),
    ]
    (ev, *_) = events_of(res, "summarise")
    fates = {ch.index: ch.fate.value for ch in ev.changes}
    assert fates == {1: "summarised", 2: "dropped", 3: "dropped", 4: "summarised"}
    # use_single_summary: the second summary summarises the first again
    assert [(m.role, m.text) for m in summ.requests[1].messages][0] == ("assistant", "SUMMARY")


def test_summarization_includes_function_content_in_pairs() -> None:
    summ = EchoSummarizer()
    run(conv(*chat(3)), "semantic_kernel_summarization", summarizer=summ,
        params={"target_count": 2, "threshold_count": 0,
                "include_function_content_in_summary": True})  # fmt: skip
    assert [m.text for m in summ.requests[0].messages][:4] == [
        "question 0",
        "look 0",
        "result 0",
        "answer 0",
    ]


def test_summarization_failure_leaves_the_history() -> None:
    res = run(conv(*chat(3)), "semantic_kernel_summarization",
              params={"target_count": 4, "threshold_count": 0},
              summarizer=FailingSummarizer("raise"))  # fmt: skip
    assert events_of(res, "summary_failed") and not events_of(res, "summarise")
    assert len(res.steps[-1].context_indexes) == len(chat(3)) - 1


CORPUS_FILES = sorted(
    p.relative_to(CORPUS).as_posix()
    for p in CORPUS.rglob("*")
    if p.is_file() and p.suffix not in {".md", ".tsv"} and not p.name.startswith(".")
)


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_replays_every_corpus_transcript(name: str) -> None:
    conversation = cli.load_file(CORPUS / name)
    for strategy in ("semantic_kernel_truncation", "semantic_kernel_summarization"):
        for params in ({}, {"target_count": 12, "threshold_count": 4, "reduce_at": "call"}):
            res = run(conversation, strategy, params=params)
            assert len(res.steps) >= 0
