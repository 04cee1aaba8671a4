"""claude_code takes the window the transcript shows: a session that grew past a 200K
window's compaction point without compacting ran on a 1M window (Opus 4.6/4.7 sessions of
2.1.9x-2.1.19x CLIs in public checkpoints reached 176k-597k uncompacted), so the replay must
not compact it at 167k. Built in Claude Code's JSONL shape and imported, as real files are."""

from __future__ import annotations

from test_claude_code_agreement import Session

from ctxlab.engine.replay import run
from ctxlab.engine.strategies.claude_code import LARGE_WINDOW, ClaudeCodeStrategy
from ctxlab.engine.summarize.recorded import RecordedSummarizer


def _growing(prompts: list[int], *, boundary_after: int | None = None) -> Session:
    """One tool call per request at the given prompt sizes (an original auto-compaction
    after the request ``boundary_after`` when given)."""
    s = Session("2.1.126")
    s.user("refactor the parser")
    for n, prompt in enumerate(prompts):
        s.call(f"msg_{n}", f"t{n}", prompt)
        s.result(f"t{n}")
        if boundary_after == n:
            s.boundary("auto", prompt + 100)
            s.summary()
    s.text("msg_end", "done", prompts[-1] // 2)
    return s


def _compactions(session: Session, **params: object) -> int:
    result = run(session.conversation(), "claude_code", params=params,
                 summarizer=RecordedSummarizer())  # fmt: skip
    return sum(1 for e in result.events if e.kind == "compact")


def test_two_requests_in_a_row_over_the_threshold_show_a_1m_window() -> None:
    session = _growing([150_000, 168_000, 171_000, 176_000])
    strategy = ClaudeCodeStrategy()
    conversation = session.conversation()
    window, why = strategy.window_shown(conversation, strategy.resolve_rules("2.1.126", "")[0])
    assert window == LARGE_WINDOW
    assert "168,000 and 171,000" in why
    assert _compactions(session) == 0  # the original never compacted: neither does the replay
    # With the model window taken as it is, the replay compacts where Claude Code did not.
    assert _compactions(session, window_from_transcript=False) >= 1


def test_a_request_over_the_window_shows_a_1m_window() -> None:
    session = _growing([120_000, 150_000, 230_000])
    strategy = ClaudeCodeStrategy()
    window, why = strategy.window_shown(session.conversation(), strategy.resolve_rules("", "")[0])
    assert window == LARGE_WINDOW and "230,000" in why


def test_one_request_over_the_threshold_then_the_original_compacts_stays_200k() -> None:
    # A big tool result carried one request past the threshold; the next check compacted.
    session = _growing([150_000, 166_000, 173_000, 40_000], boundary_after=2)
    strategy = ClaudeCodeStrategy()
    window, _ = strategy.window_shown(session.conversation(), strategy.resolve_rules("", "")[0])
    assert window == 0
    assert _compactions(session) == 1


def test_a_window_the_user_set_is_used_as_set() -> None:
    session = _growing([150_000, 168_000, 171_000, 176_000])
    strategy = ClaudeCodeStrategy({"context_window": 180_000})
    window, _ = strategy.window_shown(session.conversation(), strategy.resolve_rules("", "")[0])
    assert window == 0
    assert _compactions(session, context_window=180_000) >= 1


def test_another_agents_usage_shows_no_window_of_claude_codes() -> None:
    """A Codex rollout (gpt-5.6-sol, requests up to 225,254 on its 272K window) replayed under
    claude_code: its requests are over 200,000, but they are Codex's usage, not evidence of
    a Claude Code 1M session. The default window stays, the events say why, and the replay
    compacts (at 1M it never did)."""
    from pathlib import Path

    from ctxlab.engine import importers

    path = Path(__file__).resolve().parents[2] / "data" / "codex-rollouts"
    data = (path / "entire-sem-0.145.0-collab-window1.jsonl").read_bytes()
    (conversation,) = importers.parse(data, name="rollout.jsonl").conversations
    strategy = ClaudeCodeStrategy()
    window, why = strategy.window_shown(conversation, strategy.resolve_rules("", "")[0])
    assert window == 0 and "not Claude's (openai)" in why and "200,000" in why
    result = run(conversation, "claude_code", summarizer=RecordedSummarizer())
    compacts = [e for e in result.events if e.kind == "compact"]
    assert compacts and "not Claude's" in compacts[0].detail["window_reason"]
