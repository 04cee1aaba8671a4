"""PicoClaw's reactive path (pipeline_llm.go CallLLM @ cf67dd3): a context-length error
from the provider (simulated: the request's reference count over the window) compresses
the session (llm_retry), rebuilds the request with the current turn protected, trims the
older part and retries; the call fails when that cannot fit or the retries run out.

Ported from pkg/agent/turn_state_test.go (``TestMatchingTurnMessageTail_*``,
``TestSplitHistoryForActiveTurn_ProtectsPersistedTail``,
``TestTrimHistoryToFitContextWindow_WithProtectedTurnTailKeepsActiveTurn``),
agent_test.go ``TestAgentLoop_ContextExhaustionRetry`` and eventbus_test.go
``TestAgentLoop_EmitsContextCompressEventOnRetry`` (through the replay: the provider's
error comes from the reference count, not from a mock). ``TestPipeline_CallLLM_RetryCountLimit``
is about transient errors; its count (1 call + MaxLLMRetries retries) is checked here for
the context-error path.
"""

from __future__ import annotations

from pathlib import Path

from ctxlab.engine import cli
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.core.records import Fate, ReplayResult
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import _picoclaw_budget as pb
from ctxlab.engine.strategies import _picoclaw_retry as pr
from ctxlab.engine.strategies._picoclaw_budget import PicoMsg, PicoToolCall

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
# A real Codex rollout: one user turn of ~56 tool calls, then a second user message.
CODEX = (
    CORPUS
    / "codex-rollout"
    / ("agentcmd-rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl")
)

# -- turn_state_test.go ------------------------------------------------------------------------


def test_matching_turn_message_tail_compares_content_not_identity() -> None:
    """TestMatchingTurnMessageTail_IgnoresInternalRuntimeFields: the session's copies and
    the turn's persisted copies are equal by content (here: a different source index)."""
    call = (PicoToolCall("call_1", "read_file", '{"path":"/tmp/test"}'),)
    history = [PicoMsg("user", "question", src=1), PicoMsg("assistant", tool_calls=call, src=2)]
    persisted = [PicoMsg("user", "question", src=7), PicoMsg("assistant", tool_calls=call)]
    assert pr.matching_turn_tail(history, persisted) == 2
    assert pr.matching_turn_tail(history, [PicoMsg("user", "other"), persisted[1]]) == 1
    assert pr.matching_turn_tail(history, []) == 0


def test_split_history_for_active_turn_protects_persisted_tail() -> None:
    history = [
        PicoMsg("user", "old question"),
        PicoMsg("assistant", "old answer"),
        PicoMsg("user", "current question"),
        PicoMsg("tool", "tool output", tool_call_id="call_1"),
    ]
    persisted = [
        PicoMsg("user", "current question"),
        PicoMsg("tool", "tool output", tool_call_id="call_1"),
    ]
    stable, protected = pr.split_history_for_active_turn(history, persisted)
    assert len(stable) == 2 and len(protected) == 2
    assert protected[0].content == "current question"


def test_split_after_single_turn_compression_protects_nothing() -> None:
    """forceCompression of a one-turn session keeps only its user message, which matches no
    tail of what the turn persisted: the whole history is the (stable) older part."""
    turn = [PicoMsg("user", "task"), PicoMsg("assistant", "step"), PicoMsg("tool", "out")]
    stable, protected = pr.split_history_for_active_turn(turn[:1], turn)
    assert stable == turn[:1] and protected == []


def test_trim_with_protected_turn_tail_keeps_active_turn() -> None:
    """TestTrimHistoryToFitContextWindow_WithProtectedTurnTailKeepsActiveTurn (window 120,
    no tools, MaxTokens 0)."""
    current = "current turn " * 80
    history = [
        PicoMsg("user", "old turn " * 60),
        PicoMsg("assistant", "old reply " * 60),
        PicoMsg("user", current),
    ]
    stable, protected = pr.split_history_for_active_turn(history, [PicoMsg("user", current)])
    kept, messages, fit = pb.trim_history_to_fit(
        stable,
        lambda h: [*h, *protected],
        lambda m: pb.is_over_context_budget(120, m, 0, 0),
    )
    assert not fit
    assert kept == []
    assert [m.content for m in messages] == [current]


def test_max_llm_retries_zero_falls_back_to_two() -> None:
    assert pr.effective_max_retries(0) == 2
    assert pr.effective_max_retries(-1) == 2
    assert pr.effective_max_retries(3) == 3


# -- replays -----------------------------------------------------------------------------------


def _text(role: Role, text: str) -> Message:
    return Message(role, (Block(BlockKind.TEXT, text=text),))


def _tool_round(k: int, output: str) -> list[Message]:
    use = Block(BlockKind.TOOL_USE, tool_id=f"c{k}", tool_name="sh", tool_input={"k": k})
    res = Block(BlockKind.TOOL_RESULT, tool_id=f"c{k}", text=output)
    return [Message(Role.ASSISTANT, (use,)), Message(Role.TOOL, (res,))]


# CJK text: cl100k spends about a token per character, PicoClaw's estimator 2/5 of one, so
# the provider rejects what the proactive check let through.
CJK = "上下文窗口压缩测试记录"


def _kinds(res: ReplayResult, step: int) -> list[str]:
    return [e.kind for e in res.events if e.step == step]


def _exhaustion_conversation() -> Conversation:
    msgs = [_text(Role.SYSTEM, "sys")]
    for k in range(2):
        msgs += [_text(Role.USER, f"Old message {k} " + CJK * 40), _text(Role.ASSISTANT, "ok")]
    msgs += [_text(Role.USER, "Trigger message " + CJK * 40), _text(Role.ASSISTANT, "done")]
    return Conversation("c", "t", tuple(msgs))


def test_context_exhaustion_retry_compresses_and_the_retry_succeeds() -> None:
    """TestAgentLoop_ContextExhaustionRetry / _EmitsContextCompressEventOnRetry: the first
    call of the turn is rejected, the session is compressed (reason llm_retry, dropped
    messages recorded), the retry goes through."""
    params = {"context_window": 1200, "max_tokens": 100, "enable_summary": False}
    res = run(_exhaustion_conversation(), "picoclaw", params=params)
    last = len(res.steps) - 1
    assert res.steps[last].tokens.strategy + 100 <= 1200  # the proactive check let it pass
    assert _kinds(res, last) == ["warning", "force_compression"]
    warning, comp = [e for e in res.events if e.step == last]
    assert warning.detail["message"] == pr.RETRY_NOTICE
    assert comp.detail["retry"] == 1 and comp.detail["window"] == 1200
    assert comp.detail["compress_reason"] == "llm_retry"
    assert comp.detail["reference"] > 1200 >= res.steps[last].tokens.reference
    # three turns in the session (two old + the current): the oldest floor(3/2) = 1 dropped
    assert comp.detail["dropped_messages"] == 2 and comp.messages == (1, 2)
    assert all(c.reason.startswith("llm_retry") and c.fate is Fate.DROPPED for c in comp.changes)
    assert not res.findings  # the request sent after the retry fits


def test_without_simulate_overflow_the_request_goes_over() -> None:
    params = {"context_window": 1200, "max_tokens": 100, "enable_summary": False}
    res = run(_exhaustion_conversation(), "picoclaw", params={**params, "simulate_overflow": False})
    assert not res.events or {e.kind for e in res.events} == {"sanitize"}
    assert [f.kind for f in res.findings] == ["overflow"]


def test_retries_run_out_after_one_call_plus_max_retries() -> None:
    """A single turn whose user message alone is over the provider's window: the first
    retry compresses the turn to that message, the second has nothing left to compress,
    the third call is rejected too and the call fails (1 call + 2 retries)."""
    msgs = [_text(Role.SYSTEM, "sys"), _text(Role.USER, CJK * 150)]
    for k in range(3):
        msgs += _tool_round(k, "fine")
    msgs.append(_text(Role.ASSISTANT, "done"))
    params = {"context_window": 1500, "max_tokens": 100, "enable_summary": False}
    res = run(Conversation("c", "t", tuple(msgs)), "picoclaw", params=params)
    failed = [e for e in res.events if e.kind == "compact_failed"]
    assert failed, [e.kind for e in res.events]
    first = failed[0]
    kinds = _kinds(res, first.step)
    assert kinds[0] == "warning" and kinds[-1] == "compact_failed"
    assert first.detail["error"] == pr.RETRIES_EXHAUSTED_ERROR
    assert first.detail["retries"] == 2 and first.detail["reference"] > 1500
    assert any(f.kind == "overflow" and f.step == first.step for f in res.findings)
    one_retry = run(
        Conversation("c", "t", tuple(msgs)), "picoclaw", params={**params, "max_llm_retries": 1}
    )
    assert next(e for e in one_retry.events if e.kind == "compact_failed").detail["retries"] == 1


def test_protected_turn_too_big_fails_without_dropping_it() -> None:
    """The current turn's persisted messages are never trimmed: when they alone are over
    the budget the call fails ('refusing to drop active turn messages')."""
    msgs = [_text(Role.SYSTEM, "sys"), _text(Role.USER, "old"), _text(Role.ASSISTANT, "ok")]
    msgs.append(_text(Role.USER, "current task"))
    for k in range(12):
        msgs += _tool_round(k, "x" * 2400)
    msgs.append(_text(Role.ASSISTANT, "done"))
    params = {"context_window": 3000, "max_tokens": 100, "enable_summary": False}
    res = run(Conversation("c", "t", tuple(msgs)), "picoclaw", params=params)
    failed = next(e for e in res.events if e.kind == "compact_failed")
    assert failed.detail["error"] == pr.NOT_FIT_ERROR
    comp = next(e for e in res.events if e.kind == "force_compression")
    assert comp.step == failed.step and comp.messages == (1, 2)  # the older turn only
    # every message of the current turn is still in the failing request
    assert set(range(3, res.steps[failed.step].source_index)) <= set(
        res.steps[failed.step].context_indexes
    )


# -- the real Codex rollout ---------------------------------------------------------------------


def test_codex_rollout_never_sends_a_request_over_the_window() -> None:
    """Before the reactive path, PicoClaw let this one-turn session grow to ~30k reference
    tokens at a 15k window (33 steps over it) until the next user turn. Now every request
    it sends fits: the provider's rejection compresses the turn and the retry goes out."""
    conv = cli.load_file(CODEX)
    # as `replay --window 15000` sets it: context_window, and max_tokens a quarter of it
    res = cli.replay_conversation(conv, strategy="picoclaw", window=15_000)
    assert res.params["max_tokens"] == 3750
    assert not res.findings
    assert all(s.tokens.reference <= 15_000 for s in res.steps)
    comps = [e for e in res.events if e.kind == "force_compression"]
    assert len(comps) >= 2
    for comp in comps:
        assert comp.detail["retry"] == 1 and comp.detail["reference"] > 15_000
        assert comp.detail["compress_reason"] == "llm_retry"
        assert _kinds(res, comp.step)[:2] == ["warning", "force_compression"]
        assert {c.reason.split(":")[0] for c in comp.changes} == {"llm_retry"}
        # one long turn: only its user message is left
        assert comp.detail["remaining_messages"] == 1
        assert len(res.steps[comp.step].context_indexes) == 1
        before = res.steps[comp.step - 1].tokens.reference
        assert before <= 15_000 < comp.detail["reference"]  # rejected only once it went over
    off = cli.replay_conversation(
        conv, strategy="picoclaw", window=15_000, params={"simulate_overflow": False}
    )
    assert len([f for f in off.findings if f.kind == "overflow"]) == 33
    assert max(s.tokens.reference for s in off.steps) > 2 * 15_000


def test_corpus_requests_over_the_window_are_only_failed_calls() -> None:
    """What the original allows: a request the provider accepts is never over its window;
    only a call that fails (its rebuild cannot fit, or the retries run out) leaves one
    over. Every corpus session at a half and a third of its peak."""
    from ctxlab.engine import budget

    runs = failures = 0
    for path in sorted(CORPUS.glob("*/*.jsonl")):
        conv = cli.load_file(path)
        peak = budget.peak_reference_tokens(conv)
        for window in {peak // 2, peak // 3}:
            if window < 1024:
                continue
            res = cli.replay_conversation(conv, strategy="picoclaw", window=window)
            runs += 1
            failed = {e.step for e in res.events if e.kind == "compact_failed"}
            failures += len(failed)
            over = {s.index for s in res.steps if s.tokens.reference > window}
            assert over <= failed, (path.name, window, sorted(over - failed)[:5])
    assert runs >= 10 and failures >= 1
