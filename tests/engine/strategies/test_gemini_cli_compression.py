"""Gemini CLI ``ChatCompressionService``: the original's own test cases
(``chatCompressionService.test.ts`` @ 5411f113) ported as table tests, the estimator and
preview format, the pinned prompt, and a real Gemini CLI session from the corpus."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.records import Fate, ReplayResult
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, STRATEGIES
from ctxlab.engine.strategies import _gemini_cli_rules as rules
from tests.engine.builders import assistant, call, conv, events_of, system, tool_result, user

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SESSION = "gemini-cli/agentcmd-session-2025-10-27T19-55-981c87cb.json"
SMALL = {"token_limit": 1000}  # compress at 500 estimated tokens


class Scripted:
    """Answers each summary request with ``answer(request, n)`` (n = 0, 1, ...)."""

    name = "scripted"

    def __init__(self, answer: Callable[[SummaryRequest, int], str]) -> None:
        self.answer = answer
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.requests.append(request)
        return SummaryResponse(text=self.answer(request, len(self.requests) - 1))


def item(role: str, text: str) -> rules.Item:
    return rules.Item(role, ({"text": text},))


FIVE = [
    item("user", "This is the first message."),
    item("model", "This is the second message."),
    item("user", "This is the third message."),
    item("model", "This is the fourth message."),
    item("user", "This is the fifth message."),
]


# -- findCompressSplitPoint (ported) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("contents", "fraction", "want"),
    [
        ([], 0.5, 0),  # an empty history
        (FIVE, 0.5, 4),  # a fraction in the middle
        (FIVE, 0.9, 4),  # a fraction of last index
        (FIVE[:4], 0.8, 4),  # after the last index: everything (ends on a model text)
        (  # no valid split after the threshold: the earlier one (a function call last)
            [*FIVE[:3], rules.Item("model", ({"functionCall": {"name": "foo", "args": {}}},))],
            0.99,
            2,
        ),
        ([item("user", "Message 1")], 0.5, 0),  # only one item
        (  # weird parts
            [
                item("user", "Message 1"),
                rules.Item("model", ({"fileData": {"fileUri": "derp", "mimeType": "text/plain"}},)),
                item("user", "Message 2"),
            ],
            0.5,
            2,
        ),
    ],
)
def test_find_compress_split_point(contents: list[rules.Item], fraction: float, want: int) -> None:
    assert rules.find_compress_split_point(contents, fraction) == want


@pytest.mark.parametrize("fraction", [0, -0.1, 1, 1.5])
def test_split_fraction_out_of_range_raises(fraction: float) -> None:
    with pytest.raises(ValueError, match="Fraction must be between 0 and 1"):
        rules.find_compress_split_point([], fraction)


def test_split_never_at_a_function_response() -> None:
    result = rules.Item(
        "user", ({"functionResponse": {"name": "ls", "response": {"output": "x"}}},)
    )
    contents = [item("user", "a" * 100), item("model", "b"), result, item("model", "c")]
    # The only user turn after the target is a tool result: not a split point.
    assert rules.find_compress_split_point(contents, 0.5) == 4
    contents[-1] = rules.Item("model", ({"functionCall": {"name": "ls", "args": {}}},))
    assert rules.find_compress_split_point(contents, 0.5) == 0


# -- estimator, preview, prompt ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("parts", "want"),
    [
        ([{"text": "abcd" * 10}], 10),
        ([{"text": "é" * 10}], 15),  # 1.5 per non-ASCII character
        ([{"text": "a" * 3}, {"text": "a" * 3}], 1),  # floored once over all parts
        ([{"text": "é" * 100_001}], 25_000),  # length / 4 beyond 100,000 characters
        (
            [{"functionResponse": {"name": "ls", "response": {"output": "x" * 30}}}],
            11,
        ),  # (2 + 43) / 4
        ([{"inlineData": {"mimeType": "image/png", "size": 9}}], 3000),
    ],
)
def test_estimate_token_count_sync(parts: list[dict[str, object]], want: int) -> None:
    assert rules.estimate_parts(parts) == want


def test_preview_format_is_the_originals() -> None:
    text = "0123456789" * 5
    got = rules.format_truncated_tool_output(text, "/tmp/x/tool-outputs/ls_1.txt", 10)
    assert got == (
        "Output too large. Showing first 2 and last 8 characters. For full output see: "
        "/tmp/x/tool-outputs/ls_1.txt\n01\n\n... [40 characters omitted] ...\n\n23456789"
    )
    assert rules.format_truncated_tool_output("short", "f", 10) == "short"
    big = rules.format_truncated_tool_output("y" * 60_000, "f", 40_000)
    assert "Showing first 8,000 and last 32,000 characters" in big
    assert "[20,000 characters omitted]" in big


def test_prompt_file_is_the_pinned_one() -> None:
    data = rules.PROMPT_FILE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == rules.PROMPT_SHA256
    prompt = rules.compression_prompt()
    assert prompt.startswith("You are a specialized system component")
    assert prompt.endswith("</task_state>\n</state_snapshot>")
    assert "- Build Command: `npm run build`" in prompt  # the template's \` unescaped
    assert "APPROVED PLAN" not in prompt


# -- the service (ported cases) ----------------------------------------------------------------


def turns(k: int, size: int = 400) -> list:
    out = []
    for n in range(k):
        out += [
            user(f"request {n}: " + "u" * size),
            call(f"t{n}", "read_file", path=f"f{n}.py"),
            tool_result(f"t{n}", f"line {n} " * (size // 7)),
            assistant(f"done {n}"),
        ]
    return out


def replay(msgs: list, summarizer: Scripted, **params: object) -> ReplayResult:
    return run(conv(system("S"), *msgs), "gemini_cli", params={**SMALL, **params},
               summarizer=summarizer)  # fmt: skip


SNAP = "<state_snapshot><overall_goal>g</overall_goal></state_snapshot>"


def test_noop_under_threshold() -> None:
    s = Scripted(lambda r, n: SNAP)
    res = run(conv(system("S"), *turns(3, 50)), "gemini_cli", summarizer=s)
    assert not res.events and not s.requests


def test_compress_over_threshold_with_verification_turn() -> None:
    s = Scripted(lambda r, n: "first" if n % 2 == 0 else SNAP)
    res = replay(turns(4), s)
    first = events_of(res, "summarise")[0]
    assert first.detail["estimate"] >= 500
    a, b = s.requests[:2]
    assert a.system == rules.compression_prompt() == b.system
    assert a.messages[-1].text == rules.ANCHOR_NEW + rules.SCRATCHPAD
    assert b.messages[-2].role == "assistant" and b.messages[-2].text == "first"
    assert b.messages[-1].text == rules.VERIFY
    assert b.messages[:-2] == a.messages[:-1]  # the same history both times
    assert res.summaries[1].output == SNAP  # the verified snapshot is installed
    removed = sorted(c.index for c in first.changes if c.fate is Fate.SUMMARISED)
    # The oldest part, cut before a typed request (not a tool result).
    assert removed == list(range(1, removed[-1] + 1)) and len(removed) == first.detail["split"]
    assert removed[-1] % 4 == 0  # turns of 4 after the system prompt: ends on a reply


def test_falls_back_to_first_summary_when_verification_is_empty() -> None:
    s = Scripted(lambda r, n: SNAP if n % 2 == 0 else "   ")
    res = replay(turns(8), s)
    first = events_of(res, "summarise")[0]
    assert first.summary_id == res.summaries[0].id  # the first call's snapshot installed
    assert s.requests[2].messages[0].text == SNAP  # and carried into the next compression


def test_anchor_instruction_when_a_previous_snapshot_exists() -> None:
    s = Scripted(lambda r, n: SNAP)
    res = replay(turns(8), s)
    assert len(events_of(res, "summarise")) >= 2
    second = s.requests[2]  # first call of the second compression
    assert second.messages[0].text == SNAP  # the snapshot pair opens the history
    assert second.messages[1].text == rules.ACK
    assert second.messages[-1].text == rules.ANCHOR_PREVIOUS + rules.SCRATCHPAD


def test_single_call_without_verification() -> None:
    s = Scripted(lambda r, n: SNAP)
    res = replay(turns(4), s, verification=False)
    assert len(s.requests) == len(events_of(res, "summarise"))
    assert all(r.messages[-1].text != rules.VERIFY for r in s.requests)


def test_inflated_summary_is_rejected_and_remembered() -> None:
    s = Scripted(lambda r, n: "x" * 40_000)
    res = replay(turns(8), s)
    failed = events_of(res, "compact_failed")
    assert len(failed) == 1 and failed[0].detail["new_tokens"] > failed[0].detail["tokens"]
    assert not events_of(res, "summarise")
    assert len(s.requests) == 2  # never asked again: later triggers only truncate


def test_empty_summary_changes_nothing_and_is_not_remembered() -> None:
    s = Scripted(lambda r, n: "")
    res = replay(turns(6), s)
    empties = events_of(res, "summary_empty")
    assert len(empties) >= 2  # asked again at the next trigger
    assert not events_of(res, "summarise") and not events_of(res, "compact_failed")


def test_failed_call_keeps_the_history() -> None:
    class Failing(Scripted):
        def summarize(self, request: SummaryRequest) -> SummaryResponse:
            self.requests.append(request)
            return SummaryResponse(text="", error="503")

    s = Failing(lambda r, n: "")
    res = replay(turns(4), s)
    assert events_of(res, "summary_failed") and not events_of(res, "summarise")


# -- reverse token budget (ported) -------------------------------------------------------------


def test_summariser_reads_full_outputs_under_the_limit() -> None:
    # High fidelity: the budget previews r0 (older than r1), but the part sent to the
    # summariser is under the token limit, so it gets the original outputs.
    msgs = [user("A"), call("g0", "grep"), tool_result("g0", "0" * 50_000, name="grep")]
    msgs += [call("g1", "grep"), tool_result("g1", "1" * 50_000, name="grep"), user("B")]
    msgs += [call("g2", "ls"), tool_result("g2", "x"), assistant("done")]
    s = Scripted(lambda r, n: SNAP)
    res = replay(msgs, s, token_limit=100_000, compression_threshold=0.2,
                 function_response_token_budget=15_000)  # fmt: skip
    (event,) = events_of(res, "summarise")
    assert event.detail["split"] == 5  # before B
    sent = "\n".join(m.text for m in s.requests[0].messages)
    assert "0" * 50_000 in sent and "Output too large" not in sent
    assert not res.offloads  # the previewed output was summarised, not kept


def test_budget_keeps_newest_output_whole_and_previews_older() -> None:
    # system 0, A 1, a 2, B 3, c0 4, r0 5, c1 6, r1 7, c2 8, r2 9 (pending), final 10
    msgs = [user("A"), assistant("a"), user("B")]
    for n in range(3):
        msgs += [call(f"g{n}", "grep"), tool_result(f"g{n}", f"{n}" * 50_000, name="grep")]
    msgs.append(assistant("fine"))
    s = Scripted(lambda r, n: "<state_snapshot>s</state_snapshot>")
    res = replay(msgs, s, token_limit=100_000, compression_threshold=0.2,
                 function_response_token_budget=15_000, preserve_threshold=0.9)  # fmt: skip
    (event,) = events_of(res, "summarise")
    assert event.detail["split"] == 2  # before B: the history ends on a function call
    assert {c.index for c in event.changes if c.fate is Fate.SUMMARISED} == {1, 2}
    (offload,) = [c for c in event.changes if c.fate is Fate.OFFLOADED]
    assert offload.index == 5  # r0: past the budget; r1 (newest in history) stays whole
    assert offload.message is not None
    preview = offload.message.blocks[0].text
    assert preview.startswith("Output too large. Showing first 8,000 and last 32,000")
    assert res.offloads[offload.offload_path] == "0" * 50_000


def test_falls_back_to_truncated_history_when_the_original_is_massive() -> None:
    msgs = [user("go")]
    for n in range(2):
        msgs += [call(f"g{n}", "grep"), tool_result(f"g{n}", "q" * 60_000, name="grep")]
    msgs += [assistant("ok"), user("continue"), call("l", "ls"), tool_result("l", "x")]
    msgs.append(assistant("done"))
    s = Scripted(lambda r, n: SNAP)
    replay(msgs, s, token_limit=20_000, function_response_token_budget=1_000)
    sent = "\n".join(m.text for m in s.requests[0].messages)
    assert "Output too large." in sent  # over the limit: the summariser gets previews


# -- registration and a real session -----------------------------------------------------------


def test_registered_with_origins_and_window() -> None:
    cls = STRATEGIES["gemini_cli"]
    assert "gemini_cli" in LIBRARY
    assert all(p.origin and p.help for p in cls.PARAMS)
    assert cls.window_params(200_000) == {"token_limit": 200_000}
    assert cls().params["compression_threshold"] == 0.5
    assert cls({"compression_threshold": 0.7}).params["compression_threshold"] == 0.7
    with pytest.raises(ValueError, match="compression_threshold"):
        cls({"compression_threshold": 1.5})


def test_real_gemini_cli_session() -> None:
    data = (CORPUS / SESSION).read_bytes()
    conversation = importers.parse(data, name=SESSION).conversations[0]
    s = Scripted(lambda r, n: SNAP)
    res = run(conversation, "gemini_cli", params={"token_limit": 4000}, summarizer=s)
    done = events_of(res, "summarise")
    assert done and all(e.detail["estimate"] >= 2000 for e in done)
    base = run(conversation, "gemini_cli")  # 1M limit: never compresses
    assert not base.events
    peak = max(step.tokens.strategy for step in res.steps)
    assert peak < max(step.tokens.strategy for step in base.steps)
    assert s.requests[0].system == rules.compression_prompt()


def test_after_a_remembered_failure_only_tool_outputs_are_truncated() -> None:
    # system 0, A 1, c0 2, r0 3, c1 4, r1 5, B 6, c2 7, r2 8, c3 9, r3 10, done 11
    msgs = [user("A")]
    for n in range(2):
        msgs += [call(f"g{n}", "grep"), tool_result(f"g{n}", f"{n}" * 50_000, name="grep")]
    msgs.append(user("B"))
    for n in range(2, 4):
        msgs += [call(f"g{n}", "grep"), tool_result(f"g{n}", f"{n}" * 50_000, name="grep")]
    msgs.append(assistant("done"))
    s = Scripted(lambda r, n: "x" * 400_000)  # inflates the history: rejected
    res = replay(msgs, s, token_limit=100_000, compression_threshold=0.2,
                 function_response_token_budget=15_000)  # fmt: skip
    assert [e.kind for e in res.events] == ["compact_failed", "offload"]
    assert len(s.requests) == 2  # the failed compression's two calls, never again
    (offload,) = events_of(res, "offload")
    assert {c.index for c in offload.changes} == {3, 5}  # r2 (newest) stays whole
    assert all(c.fate is Fate.OFFLOADED for c in offload.changes)
    assert offload.detail["new_tokens"] < offload.detail["estimate"]
    assert len(res.offloads) == 2


def test_each_message_version_is_measured_once_across_compressions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``findCompressSplitPoint`` reads every history item's JSON length at each
    compression; the replay measures each version of a message once and gives the same
    replay as measuring every item every time."""
    from ctxlab.engine import synth

    conversation = synth.bench_conversation(CORPUS, messages=800, seed=2)
    params = {"token_limit": 60_000, "function_response_token_budget": 5_000}
    calls = 0
    measure = rules.Item.json_length

    def counted(self: rules.Item) -> int:
        nonlocal calls
        calls += 1
        return measure(self)

    monkeypatch.setattr(rules.Item, "json_length", counted)
    kept = run(conversation, "gemini_cli", params=params)
    compressions = sum(1 for e in kept.events if e.kind == "summarise")
    offloaded = sum(1 for e in kept.events for c in e.changes if c.fate is Fate.OFFLOADED)
    assert compressions >= 5
    assert calls <= len(conversation.messages) + 2 * offloaded + 2 * compressions
    once = calls
    split = rules.find_compress_split_point
    monkeypatch.setattr(rules, "find_compress_split_point", lambda c, f, counts=None: split(c, f))
    every = run(conversation, "gemini_cli", params=params)
    assert calls - once > 2 * once  # measuring every item at each compression: 2,086 vs 809
    assert kept.steps == every.steps and kept.events == every.events
