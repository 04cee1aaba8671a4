"""What a strategy compares is what the run shows: the curve (``StepTokens.strategy``), each
event's before/after and the zone bar's ``unseen`` zone (the part of a provider's reported
usage that the transcript does not carry: system prompt, tools, attachments)."""

from __future__ import annotations

from pathlib import Path

from ctxlab.engine import cli
from ctxlab.engine.replay import run

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SESSION = CORPUS / "claude-code" / "agentcmd-full-session-four.jsonl"


def test_claude_code_curve_and_events_carry_what_its_trigger_compared() -> None:
    conversation = cli.load_file(SESSION)
    assert conversation.messages[0].role.value != "system" and not conversation.tools
    result = run(conversation, "claude_code", params={"context_window": 60_000})
    compactions = [e for e in result.events if e.kind == "compact"]
    assert compactions, "the small window makes Claude Code compact this session"
    for event in compactions:
        # before = the count the trigger compared (reported usage + newer messages' estimate)
        assert event.tokens_before == event.detail["tokens"] >= event.detail["threshold"]
        step = result.steps[event.step]
        assert step.tokens.strategy == event.tokens_after < event.tokens_before
    # The overhead the transcript does not show is its own zone, never counted as system.
    unseen = [s.zones.unseen for s in result.steps]
    assert all(s.zones.system == 0 and s.zones.tools == 0 for s in result.steps)
    assert max(unseen) > 10_000 and unseen[0] == 0  # unknown before the first response
    for s in result.steps:
        z = s.zones
        parts = z.system + z.tools + z.unseen + z.summary + z.compactable + z.reserved_recent
        assert parts == s.tokens.strategy


def test_strategies_without_reported_usage_show_their_estimate() -> None:
    result = run(cli.load_file(SESSION), "qwenpaw", params={"max_input_length": 60_000})
    assert all(s.zones.unseen == 0 for s in result.steps)
    for s in result.steps:
        z = s.zones
        assert z.system + z.tools + z.summary + z.compactable + z.reserved_recent == (
            s.tokens.strategy
        )
