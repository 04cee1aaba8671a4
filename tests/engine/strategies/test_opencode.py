"""OpenCode: Token.estimate, prune walk, overflow rule, compaction request and summary zone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import assistant, call, conv, tool_result, tool_use, user

from ctxlab.engine import cli
from ctxlab.engine.core.model import Block, BlockKind, Message, Role, Usage
from ctxlab.engine.core.records import Fate, ReplayResult, expand
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse
from ctxlab.engine.core.tool_pairs import is_user_query
from ctxlab.engine.native_config import native_config
from ctxlab.engine.replay import run
from ctxlab.engine.stages.js_text import utf16_length
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES
from ctxlab.engine.strategies import opencode as oc
from ctxlab.engine.summarize.offline import FailingSummarizer

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"

# Byte-exact texts, written out again here (not imported) so a drift in the module fails.
SYSTEM_TEXT = (
    "You are a helpful AI assistant tasked with summarizing conversations.\n\n"
    "When asked to summarize, provide a detailed but concise summary of the conversation. \n"
    "Focus on information that would be helpful for continuing the conversation, including:\n"
    "- What was done\n- What is currently being worked on\n- Which files are being modified\n"
    "- What needs to be done next\n"
    "- Key user requests, constraints, or preferences that should persist\n"
    "- Important technical decisions and why they were made\n\n"
    "Your summary should be comprehensive enough to provide context but concise enough to be "
    "quickly understood.\n"
)
PROMPT_HEAD = (
    "Provide a detailed prompt for continuing our conversation above.\n"
    "Focus on information that would be helpful for continuing the conversation, including "
    "what we did, what we're doing, which files we're working on, and what we're going to do "
    "next.\nThe summary that you construct will be used so that another agent can read it and "
    "continue the work.\nDo not call any tools. Respond only with the summary text.\n\n"
    "When constructing the summary, try to stick to this template:\n---\n## Goal\n\n"
    "[What goal(s) is the user trying to accomplish?]\n\n## Instructions\n\n"
)
PROMPT_TAIL = (
    "## Relevant files / directories\n\n[Construct a structured list of relevant files that "
    "have been read, edited, or created that pertain to the task at hand. If all the files in "
    "a directory are relevant, include the path to the directory.]\n---"
)
CONTINUE = (
    "Continue if you have next steps, or stop and ask for clarification if you are unsure "
    "how to proceed."
)
NO_TRIGGER = {"compaction_auto": False}


class Capturing:
    """Records every request; answers with a fixed summary."""

    name = "capturing"

    def __init__(self, text: str = "SUMMARY") -> None:
        self.text = text
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.requests.append(request)
        return SummaryResponse(text=self.text)


def out(tokens: int) -> str:
    return "x" * (tokens * 4)  # ASCII: Token.estimate == tokens exactly


def turns(outputs: list[int], *, names: list[str] | None = None) -> list[Message]:
    """One turn per output: user, tool call, its result, a final reply (the loop end)."""
    msgs: list[Message] = []
    for k, tokens in enumerate(outputs):
        name = (names or [])[k] if names and k < len(names) else "bash"
        msgs += [
            user(f"task {k}"),
            call(f"t{k}", name),
            tool_result(f"t{k}", out(tokens)),
            assistant(f"done {k}"),
        ]
    return msgs


def trailer() -> list[Message]:
    # The replay never appends the last inference call: one more call lets the loop end
    # of the last real turn run.
    return [user("end"), assistant("bye")]


def pruned_results(res: ReplayResult) -> list[int]:
    """Source indexes pruned, in event order."""
    return [c.index for e in res.events if e.kind == "prune" for c in e.changes]


# -- registration ------------------------------------------------------------------------------


def test_registered_in_library_not_presets() -> None:
    assert "opencode" in STRATEGIES and "opencode" in LIBRARY[len(PRESETS) :]
    assert "opencode" not in PRESETS
    for p in STRATEGIES["opencode"].PARAMS:
        assert p.origin and p.help, p.name


# -- Token.estimate ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", 0, id="empty"),
        pytest.param("a", 0, id="0.25-down"),
        pytest.param("ab", 1, id="0.5-half-up"),
        pytest.param("abc", 1, id="0.75-up"),
        pytest.param("abcdef", 2, id="1.5-half-up"),
        pytest.param("abcdefghij", 3, id="2.5-half-up-not-bankers"),
        pytest.param("中", 0, id="cjk-one-unit"),
        pytest.param("中文", 1, id="cjk-two-units"),
        pytest.param("中文字", 1, id="cjk-three-units"),
        pytest.param("😀", 1, id="emoji-two-units"),
        pytest.param("😀😀😀", 2, id="emoji-six-units"),
        pytest.param("😀" * 5, 3, id="emoji-ten-units-2.5"),
        pytest.param("😀a", 1, id="emoji-plus-ascii"),
        pytest.param("é" * 6, 2, id="bmp-accent-one-unit-each"),
    ],
)
def test_token_estimate_utf16_half_up(text: str, expected: int) -> None:
    assert oc.estimate(text) == expected


def test_utf16_length_counts_astral_as_two() -> None:
    assert utf16_length("a😀中") == 4


# -- prune -------------------------------------------------------------------------------------

# Turns T0..T3 then the trailer; prune runs at the loop end of T3: T2 and T3 are the two
# protected user turns, T1 then T0 are scanned newest first. Message of turn k's result: 4k+2.
T = [2, 6, 10, 14]


@pytest.mark.parametrize(
    ("outputs", "names", "expected"),
    [
        pytest.param([20_000, 40_000, 50_000, 50_000], None, [], id="minimum-exactly-20000-no"),
        pytest.param([20_001, 40_000, 50_000, 50_000], None, [T[0]], id="minimum-plus-one"),
        pytest.param([30_000, 10_000, 50_000, 50_000], None, [], id="protect-exactly-40000"),
        pytest.param([4, 40_001, 50_000, 50_000], None, [T[1], T[0]], id="crossing-part-pruned"),
        pytest.param([30_000, 30_000, 50_000, 50_000], None, [T[0]], id="older-past-protect"),
        pytest.param(
            [30_000, 40_000, 0, 0], ["bash", "skill"], [], id="protected-skill-not-counted"
        ),
        pytest.param(
            [30_000, 40_000, 0, 0], ["bash", "Skill"], [T[0]], id="protection-case-sensitive"
        ),
    ],
)
def test_prune_walk(outputs: list[int], names: list[str] | None, expected: list[int]) -> None:
    res = run(conv(*turns(outputs, names=names), *trailer()), "opencode", params=NO_TRIGGER)
    assert pruned_results(res) == expected
    for e in res.events:
        for c in e.changes:
            assert c.fate is Fate.PRUNED and c.message is not None
            assert c.message.blocks[0].text == "[Old tool result content cleared]"
            assert c.message.blocks[0].parts == ()


def test_prune_keeps_the_last_two_user_turns_and_the_stored_output() -> None:
    msgs = turns([60_000, 60_000, 60_000]) + trailer()
    res = run(conv(*msgs), "opencode", params=NO_TRIGGER)
    # Loop end of T2: T1 and T2 protected, T0 alone is 60 000 > 40 000: pruned (60 000 > 20 000).
    assert pruned_results(res) == [T[0]]
    prune = next(e for e in res.events if e.kind == "prune")
    assert prune.detail["scanned_tokens"] == 60_000 and prune.detail["pruned_tokens"] == 60_000
    assert prune.step == 6  # steps: 2 calls per turn; the request for "bye" is step 6
    assert msgs[T[0]].blocks[0].text == out(60_000)  # the original keeps the output


def test_prune_stops_at_an_already_compacted_part() -> None:
    # Loop end of T3 prunes T0; at the loop end of T5 the walk counts T1 (30 000) and stops at
    # T0: without the stop T0's stored 30 000 would count again and be marked a second time.
    msgs = turns([30_000, 30_000, 0, 0, 0, 0]) + trailer()
    res = run(conv(*msgs), "opencode", params=NO_TRIGGER)
    assert pruned_results(res) == [T[0]]
    assert [e.kind for e in res.events] == ["prune"]


def test_prune_skips_error_results_and_counts_orphans() -> None:
    err = Message(
        Role.USER,
        (Block(BlockKind.TOOL_RESULT, tool_id="t1", text=out(40_000), is_error=True),),
    )
    orphan = tool_result("ghost", out(30_000))  # no tool_use anywhere
    msgs = [
        user("task 0"), orphan, assistant("done 0"),
        user("task 1"), call("t1"), err, assistant("done 1"),
        *turns([50_000, 50_000])[:0],
        user("task 2"), call("t2"), tool_result("t2", out(30_000)), assistant("done 2"),
        user("task 3"), assistant("done 3"),
        user("task 4"), assistant("done 4"),
        *trailer(),
    ]  # fmt: skip
    res = run(conv(*msgs), "opencode", params=NO_TRIGGER)
    # Scan at the loop end of T4 (T3, T4 protected): T2's 30 000, T1's error result is not
    # completed (skipped), the orphan's 30 000 crosses 40 000 and is pruned (30 000 > 20 000).
    assert pruned_results(res) == [1]


def test_prune_off_by_config() -> None:
    msgs = turns([60_000, 60_000, 60_000]) + trailer()
    res = run(conv(*msgs), "opencode", params={**NO_TRIGGER, "compaction_prune": False})
    assert not res.events


def test_prune_runs_only_when_the_prompt_loop_ends() -> None:
    # No assistant reply without tool calls: the loop never ends, nothing is pruned.
    msgs: list[Message] = []
    for k in range(4):
        msgs += [user(f"task {k}"), call(f"t{k}"), tool_result(f"t{k}", out(60_000))]
    msgs += [call("last")]
    res = run(conv(*msgs), "opencode", params=NO_TRIGGER)
    assert not res.events


# -- overflow ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "usable"),
    [
        pytest.param({}, 200_000 - 32_000, id="default-context-minus-max-output"),
        pytest.param({"input": 150_000}, 130_000, id="input-minus-min-buffer-output"),
        pytest.param({"input": 150_000, "output": 8_000}, 142_000, id="reserve-capped-by-output"),
        pytest.param({"input": 150_000, "compaction_reserved": 5_000}, 145_000, id="reserved"),
        pytest.param({"output": 0}, 168_000, id="output-zero-falls-back-to-32000"),
        pytest.param({"output": 64_000}, 168_000, id="output-capped-at-token-max"),
        pytest.param({"usable_rule": "limit-input", "input": 150_000}, 150_000, id="early-input"),
        pytest.param({"usable_rule": "limit-input"}, 168_000, id="early-no-input"),
        pytest.param({"usable_rule": "context-reserved"}, 180_000, id="later-context-reserved"),
    ],
)
def test_usable(params: dict[str, Any], usable: int) -> None:
    assert STRATEGIES["opencode"](params).usable() == usable  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("compare", "at_usable", "above"),
    [(">=", True, True), (">", False, True)],
)
def test_overflow_comparison_at_equality(compare: str, at_usable: bool, above: bool) -> None:
    s: Any = STRATEGIES["opencode"]({"overflow_compare": compare})
    assert s.is_overflow(168_000) is at_usable
    assert s.is_overflow(168_001) is above
    assert s.is_overflow(167_999) is False


@pytest.mark.parametrize(
    "params", [{"context": 0}, {"compaction_auto": False}], ids=["context-0", "auto-false"]
)
def test_overflow_disabled(params: dict[str, Any]) -> None:
    assert STRATEGIES["opencode"](params).is_overflow(10**9) is False  # type: ignore[attr-defined]


def _usage_conv(u: Usage | None) -> list[Message]:
    return [user("hi"), assistant("one", usage=u), user("again"), assistant("two")]


@pytest.mark.parametrize(
    ("rule", "count"), [("total", 185), ("input+cache.read+output", 160)], ids=["total", "early"]
)
def test_overflow_reads_reported_usage(rule: str, count: int) -> None:
    u = Usage(input_uncached=100, cache_read=50, cache_write_5m=25, output=10)
    params = {"context": 1_000, "output": 1_000, "output_token_max": 1_000, "usage_count": rule}
    # usable = 1000 - 1000 = 0: any count overflows; the event reports the count used.
    res = run(conv(*_usage_conv(u)), "opencode", params=params, summarizer=Capturing())
    (event,) = [e for e in res.events if e.kind == "compact"]
    assert event.detail["usage_source"] == "reported" and event.detail["count"] == count
    assert event.detail["usage_message"] == 1


def test_overflow_falls_back_to_the_estimate_without_usage() -> None:
    params = {"context": 1_000, "output": 1_000, "output_token_max": 1_000}
    res = run(conv(*_usage_conv(None)), "opencode", params=params, summarizer=Capturing())
    (event,) = [e for e in res.events if e.kind == "compact"]
    assert event.detail["usage_source"] == "estimate"
    assert event.detail["count"] == event.tokens_before


def test_overflow_exact_equality_per_version() -> None:
    u = Usage(input_uncached=500)  # total 500
    base = {"context": 1_500, "output": 1_000, "output_token_max": 1_000}  # usable 500
    fires = run(conv(*_usage_conv(u)), "opencode", params=base, summarizer=Capturing())
    assert [e.kind for e in fires.events] == ["compact"]
    early = {**base, "overflow_compare": ">"}
    quiet = run(conv(*_usage_conv(u)), "opencode", params=early, summarizer=Capturing())
    assert not quiet.events


# -- compaction --------------------------------------------------------------------------------


def _compacting_conv() -> list[Message]:
    from builders import system

    # Reported usage close to the estimate, so what a compaction saves shows in the count.
    return [
        system("MAIN AGENT PROMPT"),
        user("fix the bug"),
        assistant("", tool_use("c1", "read", path="a.py"), usage=Usage(input_uncached=10)),
        tool_result("c1", out(700)),
        assistant("found it", usage=Usage(input_uncached=900)),
        user("thanks, continue"),
        assistant("working", usage=Usage(input_uncached=950)),
        user("more"),
        assistant("done"),
    ]


SMALL = {"context": 1_800, "output": 1_000, "output_token_max": 1_000}  # usable 800
# Steps: 0 -> msg 2, 1 -> 4, 2 -> 6, 3 -> 8. Step 2 reads msg 4's 900 >= 800: compacts 1..5
# (the current user message too). Step 3 reads msg 6's 950 lowered by the ~700 saved: quiet.


def test_compaction_request_is_byte_exact() -> None:
    summarizer = Capturing()
    res = run(conv(*_compacting_conv()), "opencode", params=SMALL, summarizer=summarizer)
    first = summarizer.requests[0]
    assert first.system == SYSTEM_TEXT  # the compaction agent's prompt, not the main one
    assert "MAIN AGENT PROMPT" not in first.input_text()
    prompt = first.messages[-1]
    assert prompt.role == "user" and prompt.text.startswith(PROMPT_HEAD)
    assert prompt.text.endswith(PROMPT_TAIL) and prompt.text == oc.PROMPT_TEMPLATE
    assert (first.messages[-2].role, first.messages[-2].text) == ("user", "What did we do so far?")
    # The whole history before them, in order, the tool call with its input.
    roles = [m.role for m in first.messages[:-2]]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    assert first.messages[1].text == '[tool_call read] {"path": "a.py"}'
    assert first.max_output_tokens == 1_000
    assert res.summaries[0].messages == (1, 2, 3, 4, 5)


def test_plain_prompt_and_anchored_system_variants() -> None:
    summarizer = Capturing()
    params = {**SMALL, "prompt_version": "plain", "system_prompt": "anchored"}
    run(conv(*_compacting_conv()), "opencode", params=params, summarizer=summarizer)
    request = summarizer.requests[0]
    assert request.messages[-1].text.endswith(
        "what we're going to do next considering new session will not have access to our "
        "conversation."
    )
    assert request.system.startswith(
        "You are an anchored context summarization assistant for coding sessions.\n"
    )


def test_later_requests_start_at_the_summary_with_the_continue_message() -> None:
    summarizer = Capturing("SUMMARY")
    res = run(conv(*_compacting_conv()), "opencode", params=SMALL, summarizer=summarizer)
    compact = [e for e in res.events if e.kind == "compact"]
    assert [e.step for e in compact] == [2]
    assert compact[0].detail["synthetic_continue"] == CONTINUE
    assert compact[0].detail["usage_source"] == "reported"
    after = res.steps[3]
    assert expand(after.context) == [0, 6, 7]  # system + what came after the summary
    assert after.summary_id == 0
    z = after.zones
    estimate_now = (
        oc.estimate("MAIN AGENT PROMPT")
        + oc.estimate("What did we do so far?")
        + oc.estimate("SUMMARY")
        + oc.estimate(CONTINUE)
        + oc.estimate("working")
        + oc.estimate("more")
    )
    assert z.system + z.tools + z.summary + z.compactable + z.reserved_recent == estimate_now
    # The step's count is what OpenCode compares: message 6's reported 950 lowered by what
    # the compaction saved (the original history's estimate minus the request's now).
    strategy = oc.OpenCodeStrategy(SMALL)
    original = oc.estimate("MAIN AGENT PROMPT") + sum(
        strategy.count_message(m) for m in _compacting_conv()[1:8]
    )
    assert after.tokens.strategy == 950 - (original - estimate_now)


def test_second_compaction_carries_the_summary_zone() -> None:
    summarizer = Capturing("SUMMARY")
    msgs = _compacting_conv()[:-1] + [
        assistant("again", usage=Usage(input_uncached=5_000)),
        user("last"),
        assistant("end"),
    ]
    run(conv(*msgs), "opencode", params=SMALL, summarizer=summarizer)
    assert len(summarizer.requests) == 2
    head = [(m.role, m.text) for m in summarizer.requests[1].messages[:3]]
    assert head == [
        ("user", "What did we do so far?"),
        ("assistant", "SUMMARY"),
        ("user", CONTINUE),
    ]


@pytest.mark.parametrize("mode", ["raise", "error"])
def test_failing_summariser_stops_and_retries_next_step(mode: str) -> None:
    res = run(
        conv(*_compacting_conv()), "opencode", params=SMALL, summarizer=FailingSummarizer(mode)
    )
    kinds = [e.kind for e in res.events]
    assert "compact" not in kinds
    # lastFinished stays the overflowing reply: every later step tries (and fails) again.
    assert kinds == ["summary_failed", "summary_failed"]
    assert all(expand(s.context)[:1] == [0] for s in res.steps)
    assert expand(res.steps[-1].context) == [0, 1, 2, 3, 4, 5, 6, 7]


def test_empty_summary_still_cuts_the_history() -> None:
    res = run(
        conv(*_compacting_conv()), "opencode", params=SMALL, summarizer=FailingSummarizer("empty")
    )
    compact = [e for e in res.events if e.kind == "compact"]
    assert compact and compact[0].detail["empty_summary"] is True
    assert expand(res.steps[3].context) == [0, 6, 7]


def test_empty_conversation_and_system_only() -> None:
    assert not run(conv(), "opencode").steps
    from builders import system

    assert not run(conv(system()), "opencode").steps


def test_native_config_is_opencode_json() -> None:
    cfg = native_config("opencode", {"compaction_reserved": 10_000, "compaction_prune": False})
    assert cfg.filename == "opencode.json"
    assert cfg.content == {"compaction": {"auto": True, "prune": False, "reserved": 10_000}}
    assert any("limit" in n for n in cfg.notes)
    assert "reserved" not in native_config("opencode").content["compaction"]


# -- golden replay -----------------------------------------------------------------------------

GOLDEN = "claude-code/sniffly-d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"
GOLDEN_PARAMS = {"context": 90_000, "output": 8_000, "prune_protect": 2_000, "prune_minimum": 1_000}


def test_golden_sniffly_prunes_then_compacts() -> None:
    conversation = cli.load_file(CORPUS / GOLDEN)
    msgs = conversation.messages
    queries = [i for i, m in enumerate(msgs) if is_user_query(m)]
    assert queries == [0, 14, 42, 58, 102]
    res = run(conversation, "opencode", params=GOLDEN_PARAMS)
    kinds = [(e.step, e.kind) for e in res.events]
    # Loop ends (replies without tool calls) at 13, 41, 57, 101. At 13 and 41 every output is
    # inside the last two user turns. At 57 (turns 42, 14 protected) turn 0's outputs,
    # messages 1..13, are scanned newest first; past 2 000 the rest is pruned.
    outputs = [
        (i, j, oc.estimate(b.text))
        for i in range(13, 0, -1)
        for j, b in reversed(list(enumerate(msgs[i].blocks)))
        if b.kind is BlockKind.TOOL_RESULT and not b.is_error
    ]
    total, queued, pruned = 0, [], 0
    for i, _j, tokens in outputs:
        total += tokens
        if total > 2_000:
            queued.append(i)
            pruned += tokens
    assert (total, pruned, sorted(set(queued), reverse=True)) == (2_237, 2_007, [4, 2])
    prune = res.events[0]
    assert (prune.step, prune.kind, prune.messages) == (29, "prune", (4, 2))
    assert res.steps[29].source_index == 59  # the first request after the loop end at 57
    assert (prune.detail["scanned_tokens"], prune.detail["pruned_tokens"]) == (2_237, 2_007)
    # Usable = 90 000 - min(8 000, 32 000) = 82 000. The trigger reads the last reply's
    # reported total lowered by what the prune saved; the first crossing is before 97.
    compact = res.events[1]
    assert kinds == [(29, "prune"), (48, "compact")]
    assert res.steps[48].source_index == 97
    strategy: Any = STRATEGIES["opencode"](GOLDEN_PARAMS)
    saved = sum(
        strategy.count_message(msgs[i]) - strategy.count_message(c.message)
        for c in prune.changes
        for i in [c.index]
        if c.message is not None
    )
    assert msgs[95].usage is not None and msgs[93].usage is not None
    assert compact.detail["count"] == msgs[95].usage.context_tokens - saved >= 82_000
    assert msgs[93].usage.context_tokens - saved < 82_000  # step 47 did not fire
    assert compact.detail["usage_source"] == "reported-adjusted"
    assert compact.messages == tuple(range(97))
    assert len(res.summaries) == 1 and not res.summaries[0].error
    assert res.summaries[0].output.count("## Goal") == 1
    for step in res.steps[48:]:
        assert all(i >= 97 for i in expand(step.context))
