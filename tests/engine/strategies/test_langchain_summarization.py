"""LangChain SummarizationMiddleware: the counter port, triggers, keep, the tool-pair cutoff
(with #38352 reproduced), the summary message, failure paths and a golden replay."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import (
    EchoSummarizer,
    assistant,
    call,
    conv,
    results,
    system,
    tool_result,
    tool_use,
    user,
)

from ctxlab.engine import cli
from ctxlab.engine.core.model import Usage
from ctxlab.engine.core.records import Fate
from ctxlab.engine.native_config import native_config
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, PRESETS
from ctxlab.engine.strategies import _langchain_tokens as lc
from ctxlab.engine.strategies.langchain_summarization import (
    DEFAULT_SUMMARY_PROMPT,
    SUMMARY_TEMPLATE,
    LangChainSummarizationStrategy,
)
from ctxlab.engine.summarize.offline import FailingSummarizer

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SESSION = CORPUS / "claude-code" / "agentcmd-full-session.jsonl"
L = lc.LcMessage
CALL = ({"name": "bash", "args": {"cmd": "ls"}, "id": "t1", "type": "tool_call"},)


# -- count_tokens_approximately: ceil(chars / 4) per message + 3, then ceil -------------------


@pytest.mark.parametrize(
    ("messages", "kwargs", "tokens"),
    [
        ([], {}, 0),
        ([L("human", "Hello")], {}, 6),  # 5 + "user" 4 = 9 chars -> 3 + 3
        ([L("human", "abcd")], {}, 5),  # 8 chars -> 2 + 3
        ([L("system", "S")], {}, 5),  # 1 + "system" 6 = 7 -> 2 + 3
        # tool calls counted as repr(tool_calls) (74 chars) + "assistant" 9 = 83 -> 21 + 3
        ([L("ai", "", tool_calls=CALL)], {}, 24),
        # Anthropic content list: the tool_use block's repr (72) instead, tool_calls skipped
        (
            [
                L(
                    "ai",
                    ({"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "ls"}},),
                    tool_calls=CALL,
                )
            ],
            {},
            24,
        ),  # fmt: skip
        # tool message: content 2 + tool_call_id 2 + "tool" 4 + name 4 = 12 -> 3 + 3
        ([L("tool", "ok", tool_call_id="t1", name="bash")], {}, 6),
        ([L("tool", "ok", tool_call_id="t1", name="bash")], {"count_name": False}, 5),
        # text block 4 chars + "user" 4 -> 2 + 3, plus 85 per image block
        ([L("human", ({"type": "text", "text": "abcd"}, {"type": "image_url"}))], {}, 90),
        # langchain-core 0.3: len(repr(content)) = 57 + 4 -> 16 + 3
        (
            [L("human", ({"type": "text", "text": "abcd"}, {"type": "image_url"}))],
            {"content_rule": "repr"},
            19,
        ),  # fmt: skip
        ([L("human", "Hello"), L("human", "abcd")], {}, 11),  # rounded per message
        ([L("human", "Hello")], {"chars_per_token": 3.3}, 6),  # ceil(9 / 3.3) = 3
    ],
)
def test_count_tokens_approximately(messages, kwargs, tokens) -> None:  # type: ignore[no-untyped-def]
    assert lc.count_tokens_approximately(messages, **kwargs) == tokens


def test_usage_metadata_scaling_is_clamped_to_1_25() -> None:
    # human 40 + 4 -> 14; ai 36 + 9 -> 15: 29 approx at the AI message, reported 100
    msgs = [L("human", "x" * 40), L("ai", "y" * 36, total_tokens=100, model_provider="p")]
    assert lc.count_tokens_approximately(msgs, use_usage_metadata_scaling=True) == 37  # 29*1.25
    near = [msgs[0], lc.replace(msgs[1], total_tokens=30)]
    assert (
        lc.count_tokens_approximately(near, use_usage_metadata_scaling=True) == 31
    )  # 29 * (30/29) is 30.000000000000004 in floats: ceil 31, as upstream
    mixed = [*msgs, L("ai", "", total_tokens=500, model_provider="q")]
    # two providers: no scaling at all, 14 + 15 + (0 + 9 chars -> 3 + 3)
    assert lc.count_tokens_approximately(mixed, use_usage_metadata_scaling=True) == 35


# -- strategy helpers ------------------------------------------------------------------------


def strategy(**params: object) -> LangChainSummarizationStrategy:
    return LangChainSummarizationStrategy(params)


Echo = EchoSummarizer


def summarize_events(result):  # type: ignore[no-untyped-def]
    return [e for e in result.events if e.kind == "summarise"]


def fates(event) -> dict[int, Fate]:  # type: ignore[no-untyped-def]
    return {c.index: c.fate for c in event.changes}


def chat(turns: int, size: int = 40) -> list:  # type: ignore[type-arg]
    out = [system("S")]
    for k in range(turns):
        out += [user(f"q{k} " + "x" * size), assistant(f"a{k} " + "y" * size)]
    return out


# -- configuration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"trigger": ["tokens", 0]}, "thresholds must be greater than 0"),
        ({"trigger": ["fraction", 1.5], "max_input_tokens": 1000}, "between 0 and 1"),
        ({"trigger": ["bytes", 10]}, "Unsupported context size type"),
        ({"trigger": ["fraction", 0.5]}, "Model profile information is required"),
        ({"keep": ["fraction", 0.5]}, "Model profile information is required"),
        ({"keep": "20"}, "not a ContextSize"),
    ],
)
def test_invalid_context_sizes_raise(params: dict[str, object], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        strategy(**params)


def test_default_trigger_none_never_summarises() -> None:
    result = run(conv(*chat(30)), "langchain_summarization")
    assert not result.events and not result.summaries


# -- triggers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trigger", "first_step"),
    [
        # state before the call at step k (k >= 1) holds 2k messages (q0 a0 ... qk)... minus
        # the reply: 2k + 1 messages; ["messages", 7] first holds at k = 3
        (["messages", 7], 3),
        # each message is 9 or 10 tokens (44-char content + role): 10 + 10 + ... >= 50 at
        # 5 messages (q0 a0 q1 a1 q2: 10 + 13 + 10 + 13 + 10 = 56 with "assistant")
        (["tokens", 50], 2),
        (["fraction", 0.05], 2),  # int(1000 * 0.05) = 50
        ([["messages", 1000], ["tokens", 50]], 2),  # any fires
        ([["messages", 7], ["tokens", 10_000]], 3),
    ],
)
def test_each_trigger_kind_and_a_list(trigger: object, first_step: int) -> None:
    params = {"trigger": trigger, "keep": ["messages", 2], "max_input_tokens": 1000}
    result = run(conv(*chat(6)), "langchain_summarization", params=params, summarizer=Echo())
    assert summarize_events(result)[0].step == first_step


def test_reported_usage_fires_a_token_trigger_and_stays_stale() -> None:
    msgs = [system("S"), user("q"), assistant("a", usage=Usage(input_uncached=900, output=100)),
            user("q2"), assistant("b"), user("q3"), assistant("c")]  # fmt: skip
    params = {"trigger": ["tokens", 1000], "keep": ["messages", 1]}
    result = run(conv(*msgs), "langchain_summarization", params=params, summarizer=Echo())
    events = summarize_events(result)
    # the reply to q reported 1000 total tokens; the estimate alone is far below 1000
    assert events[0].detail["trigger"] == "tokens reported 1000 >= 1000"
    assert result.steps[events[0].step].source_index == 4
    off = run(conv(*msgs), "langchain_summarization", summarizer=Echo(),
              params={**params, "reported_usage_trigger": False})  # fmt: skip
    assert not summarize_events(off)


# -- keep / cutoff ---------------------------------------------------------------------------


def hist() -> list[lc.LcMessage]:
    return [L("human", "h" * 36), L("ai", "a" * 31), L("human", "h" * 36), L("ai", "a" * 31),
            L("human", "h" * 36)]  # 13 tokens each (40 chars)  # fmt: skip


@pytest.mark.parametrize(
    ("keep", "cutoff"),
    [
        (["messages", 2], 3),
        (["messages", 5], 0),  # len <= keep: nothing
        (["tokens", 26], 3),  # the last two messages are 26 tokens
        (["tokens", 27], 3),
        (["tokens", 25], 4),
        (["tokens", 1], 4),  # nothing fits: clamped to len - 1
        (["tokens", 65], 0),  # everything fits
        (["fraction", 0.026], 3),  # int(1000 * 0.026) = 26
    ],
)
def test_keep_by_messages_tokens_fraction(keep: list[object], cutoff: int) -> None:
    s = strategy(keep=keep, max_input_tokens=1000, usage_metadata_scaling=False)
    assert s.determine_cutoff(hist()) == cutoff


def tool_run() -> list[lc.LcMessage]:
    """#38352: the tool run at the cutoff holds an orphan (x) and a paired result (b)."""
    b = ({"name": "f", "args": {}, "id": "b", "type": "tool_call"},)
    return [L("human", "h"), L("ai", "", tool_calls=b), L("tool", "r", tool_call_id="x"),
            L("tool", "r", tool_call_id="b"), L("human", "h2"), L("ai", "done")]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "cutoff"),
    [
        ("backward_any", 1),  # back to AI(b): the orphan x stays in the kept messages
        ("backward_all", 4),  # x is never covered: advance past the run
        ("forward", 4),  # langchain 1.1: always advance past the run
    ],
)
def test_cutoff_rules_at_a_tool_run(rule: str, cutoff: int) -> None:
    assert strategy(cutoff_rule=rule).safe_cutoff_point(tool_run(), 2) == cutoff


def test_cutoff_not_on_a_tool_message_is_kept_and_backward_search_finds_the_call() -> None:
    s = strategy()
    msgs = tool_run()
    assert s.safe_cutoff_point(msgs, 4) == 4 and s.safe_cutoff_point(msgs, 6) == 6
    assert s.safe_cutoff_point(msgs, 3) == 1  # T(b) alone -> back to AI(b)


def test_cutoff_never_splits_a_call_from_its_results_in_a_replay() -> None:
    msgs = [system("S"), user("go"), assistant("", tool_use("a"), tool_use("b")),
            results(("a", "1"), ("b", "2")), assistant("", tool_use("c")),
            tool_result("c", "3"), assistant("fin"), user("more"), assistant("ok")]  # fmt: skip
    # LangChain state before the last call: H, AI, T a, T b, AI, T c, AI, H  (8)
    # keep 5 -> cutoff 3 (T b) -> back to AI(a, b) at 1: only "go" is summarised
    params = {"trigger": ["messages", 8], "keep": ["messages", 5]}
    result = run(conv(*msgs), "langchain_summarization", params=params, summarizer=Echo())
    (event,) = summarize_events(result)
    assert event.detail["cutoff"] == 1 and fates(event) == {1: Fate.SUMMARISED}
    assert not [f for f in result.findings if f.kind == "tool_pair_broken"]


def test_backward_any_keeps_an_orphan_tool_result_38352() -> None:
    """A kept tool-result message whose call was summarised: the pinned cutoff rule keeps
    an orphan that the lab reports as tool_pair_broken; backward_all does not."""
    msgs = [system("S"), user("go"), call("x"), assistant("", tool_use("b")),
            results(("x", "late"), ("b", "ok")), user("h2"), assistant("done"),
            user("h3"), assistant("end")]  # fmt: skip
    # state before the last call: H, AI x, AI b, T x, T b, H, AI, H (8); keep 5 -> cutoff 3
    params = {"trigger": ["messages", 8], "keep": ["messages", 5]}
    pinned = run(conv(*msgs), "langchain_summarization", params=params, summarizer=Echo())
    (event,) = summarize_events(pinned)
    assert event.detail["cutoff"] == 2  # AI(b) shares b: AI(x) summarised, T x kept
    assert [f.detail["tool_ids"] for f in pinned.findings if f.kind == "tool_pair_broken"] == [
        ["x"]
    ]
    fixed = run(conv(*msgs), "langchain_summarization", summarizer=Echo(),
                params={**params, "cutoff_rule": "backward_all"})  # fmt: skip
    assert summarize_events(fixed)[0].detail["cutoff"] == 1  # back past AI(b) to AI(x)
    assert not [f for f in fixed.findings if f.kind == "tool_pair_broken"]


# -- summary call and summary message ----------------------------------------------------------


def fire_once(summarizer: object = None, **params: object):  # type: ignore[no-untyped-def]
    base = {"trigger": ["messages", 7], "keep": ["messages", 2]}
    return run(conv(*chat(4)), "langchain_summarization", params={**base, **params},
               summarizer=summarizer or Echo())  # fmt: skip


def test_summary_message_text_and_prompt_are_byte_exact() -> None:
    echo = Echo("  SUM \n")
    result = fire_once(echo)
    (event,) = summarize_events(result)
    step = result.steps[event.step]
    assert result.steps[-1].summary_id == event.summary_id
    # summarised: q0 a0 q1 a1 q2 (1..5); kept: a2? no: state q0..q3 (7) -> cutoff 5 -> a2 q3
    assert fates(event) == dict.fromkeys(range(1, 6), Fate.SUMMARISED)
    assert step.context_indexes == [0, 6, 7]
    assert result.summaries[0].output == "  SUM \n"
    assert event.tokens_after < event.tokens_before
    (request,) = echo.requests
    prompt = request.messages[0].text
    assert prompt.startswith("<role>\nContext Extraction Assistant\n</role>\n\n<primary_objective>")
    assert "## SESSION INTENT\n" in prompt and prompt.endswith("</messages>")
    head, _, tail = DEFAULT_SUMMARY_PROMPT.partition("{messages}")
    body = prompt[len(head) : len(prompt) - len(tail)]
    assert body.startswith("Human: q0 ") and "\nAI: a0 " in body
    assert request.system == ""
    assert SUMMARY_TEMPLATE.format(summary="SUM") == (
        "Here is a summary of the conversation to date:\n\nSUM"
    )


def test_summary_message_is_resummarised_next_time() -> None:
    echo = Echo("SUM")
    run(conv(*chat(8)), "langchain_summarization", summarizer=echo,
        params={"trigger": ["messages", 7], "keep": ["messages", 2]})  # fmt: skip
    assert len(echo.requests) >= 2
    assert "Human: Here is a summary of the conversation to date:\n\nSUM" in (
        echo.requests[1].messages[0].text
    )


@pytest.mark.parametrize(
    ("mode", "summary"),
    [
        ("raise", "Error generating summary: summariser failed (simulated)"),
        ("error", "Error generating summary: summariser failed (simulated)"),
        ("empty", ""),
    ],
)
def test_failing_or_empty_summariser_still_replaces_the_history(mode: str, summary: str) -> None:
    result = fire_once(FailingSummarizer(mode))  # type: ignore[arg-type]
    (event,) = summarize_events(result)
    assert len(fates(event)) == 5 and result.steps[event.step].context_indexes == [0, 6, 7]
    strat = LangChainSummarizationStrategy({"trigger": ["messages", 7]})
    assert strat.params["trigger"] == ["messages", 7]
    assert event.detail["summary_error"] is (mode != "empty")


def test_trim_tokens_to_summarize_drops_what_the_call_did_not_see() -> None:
    echo = Echo()
    # each of q0..q2/a0..a1 is 13-14 tokens; 30 tokens keep the newest ones from a human
    result = fire_once(echo, trim_tokens_to_summarize=30)
    (event,) = summarize_events(result)
    body = echo.requests[0].messages[0].text
    # last 30 tokens of q0 a0 q1 a1 q2 ending on ... start_on human: "q2" alone (13) or
    # "q1 a1 q2" (40 > 30) -> only q2 fits whole; a1's lines are partial but the result
    # must start on a human message, so the partial AI part is popped
    assert "Human: q2 " in body and "q1 " not in body and "AI:" not in body
    assert fates(event) == {1: Fate.DROPPED, 2: Fate.DROPPED, 3: Fate.DROPPED,
                            4: Fate.DROPPED, 5: Fate.SUMMARISED}  # fmt: skip


def test_nothing_left_after_trimming_means_no_call_and_the_too_long_summary() -> None:
    echo = Echo()
    result = fire_once(echo, trim_tokens_to_summarize=1)
    assert not echo.requests and not result.summaries
    (event,) = summarize_events(result)
    assert set(fates(event).values()) == {Fate.DROPPED}
    assert event.detail["no_call"] == "Previous conversation was too long to summarize."


def test_empty_and_tiny_conversations() -> None:
    assert not run(conv(), "langchain_summarization").steps
    result = run(conv(user("q"), assistant("a")), "langchain_summarization",
                 params={"trigger": ["messages", 1], "keep": ["messages", 1]})  # fmt: skip
    # one message in state, keep 1: cutoff 0 -> a skip event, nothing summarised
    assert [e.kind for e in result.events] == ["compact_skipped"]


def test_orphan_tool_result_in_the_transcript_is_summarised() -> None:
    msgs = [system("S"), user("q"), tool_result("ghost", "lost"), assistant("a"), user("q2"),
            assistant("b")]  # fmt: skip
    params = {"trigger": ["messages", 4], "keep": ["messages", 1]}
    result = run(conv(*msgs), "langchain_summarization", params=params, summarizer=Echo())
    (event,) = summarize_events(result)
    assert fates(event) == dict.fromkeys((1, 2, 3), Fate.SUMMARISED)


def test_incremental_total_equals_the_counter_over_the_state() -> None:
    conversation = cli.load_file(SESSION)
    s = strategy(trigger=["messages", 12], keep=["messages", 4])
    from ctxlab.engine.replay import Replay

    job = Replay(conversation, s, summarizer=Echo())
    for _ in job:
        state = job.ctx.state
        assert s.total_tokens(state) == s.counter(scaled=True)(state.messages)


# -- registry and native config ----------------------------------------------------------------


def test_registered_in_library_not_presets_and_native_config() -> None:
    assert "langchain_summarization" in LIBRARY and "langchain_summarization" not in PRESETS
    config = native_config("langchain_summarization",
                           {"trigger": [["tokens", 4000], ["messages", 50]],
                            "keep": ["messages", 20]})  # fmt: skip
    assert config.content["trigger"] == [["tokens", 4000], ["messages", 50]]
    assert config.text == (
        "from langchain.agents.middleware import SummarizationMiddleware\n\n"
        "SummarizationMiddleware(\n"
        '    model="<summary model>",\n'
        '    trigger=[("tokens", 4000), ("messages", 50)],\n'
        '    keep=("messages", 20),\n'
        "    trim_tokens_to_summarize=4000,\n"
        ")\n"
    )


# -- golden replay -----------------------------------------------------------------------------


def test_golden_claude_code_session_summarises_three_times() -> None:
    """agentcmd-full-session: 20 messages, parallel tool results (6: 2, 8: 3, 10: 3, 12: 4,
    14: 3, 18: 3 ToolMessages). LangChain state sizes before the calls at sources 9 / 13 /
    17 reach 12 (H0 AI1 T2 AI3 H4 AI5 T6x2 AI7 T8x3); cutoffs 12-4=8 (AI7), 14-4=10 (T12a ->
    back to AI11 at 9), 12-4=8 (T14b -> back to AI13 at 6)."""
    conversation = cli.load_file(SESSION)
    params = {"trigger": ["messages", 12], "keep": ["messages", 4],
              "reported_usage_trigger": False, "trim_tokens_to_summarize": 0}  # fmt: skip
    result = run(conversation, "langchain_summarization", params=params, summarizer=Echo())
    events = summarize_events(result)
    assert [result.steps[e.step].source_index for e in events] == [9, 13, 17]
    assert [e.detail["cutoff"] for e in events] == [8, 9, 6]
    assert [sorted(fates(e)) for e in events] == [list(range(7)), [7, 8, 9, 10], [11, 12]]
    assert all(f is Fate.SUMMARISED for e in events for f in fates(e).values())
    assert result.steps[-1].context_indexes == [13, 14, 15, 16, 17, 18]
    assert not [f for f in result.findings if f.kind == "tool_pair_broken"]
    # With the default trim_tokens_to_summarize (4000) the 2nd and 3rd calls are skipped:
    # the newest 4000 tokens of the messages to summarise hold no human message (the only
    # one is the previous summary, first), start_on="human" empties the trimmed list, and
    # the summary becomes "Previous conversation was too long to summarize." - the earlier
    # summary is lost and nothing the call did not see counts as summarised.
    trimmed = run(conversation, "langchain_summarization", summarizer=Echo(),
                  params={**params, "trim_tokens_to_summarize": 4000})  # fmt: skip
    notes = [e.detail["no_call"] for e in summarize_events(trimmed)]
    assert notes == ["", "Previous conversation was too long to summarize.",
                     "Previous conversation was too long to summarize."]  # fmt: skip
    assert len(trimmed.summaries) == 1
    assert {f for e in summarize_events(trimmed)[1:] for f in fates(e).values()} == {Fate.DROPPED}
    # The reported usage (14 570 at the first reply) fires a 3000-token trigger at once.
    reported = run(conversation, "langchain_summarization", summarizer=Echo(),
                   params={"trigger": ["tokens", 3000], "keep": ["messages", 6]})  # fmt: skip
    first = reported.events[0]
    assert first.kind == "compact_skipped"  # 3 messages <= keep 6
    assert first.detail["trigger"] == "tokens reported 14570 >= 3000"
