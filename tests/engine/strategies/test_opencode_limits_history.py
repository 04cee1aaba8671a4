"""The opencode strategy takes a model's models.dev limits as published on the session's day
(OpenCode reads models.dev's api.json live): unseen set 47's savekirk/session-bridge session
(OpenCode 1.4.3, github-copilot claude-sonnet-4.6, 2026-04-13) compacted at a reported 112,579
tokens, over the 108,000 its then input limit 128,000 left (- 20,000), under today's 148,000."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from builders import assistant

from ctxlab.engine import cli
from ctxlab.engine.core.model import Conversation, Usage
from ctxlab.engine.replay import Replay, run
from ctxlab.engine.strategies import _models_dev
from ctxlab.engine.strategies._models_dev import model_limits
from ctxlab.engine.summarize.recorded import RecordedSummarizer, agreements

# dayhaysoos/nimbus, MIT (README there): a real OpenCode 1.2.26 cut, re-dated and re-modelled
CUT = (
    Path(__file__).resolve().parents[2] / "data" / "opencode" / "nimbus-1.2.26" / "prune-pass.json"
)
APRIL = "2026-04-13T18:40:41.967Z"  # between models.dev's 2026-03-20 and 2026-05-29 changes
JUNE = "2026-06-20T10:00:00.000Z"


def _session(when: str, reported: int = 112_579) -> Conversation:
    conversation = cli.load_file(CUT)
    msgs = [
        dataclasses.replace(m, timestamp=when, model="claude-sonnet-4.6" if m.model else "")
        for m in conversation.messages
    ]
    msgs[4] = dataclasses.replace(msgs[4], usage=Usage(input_uncached=reported))
    msgs.append(dataclasses.replace(assistant("next", model="claude-sonnet-4.6"), timestamp=when))
    metadata = tuple(
        (k, "github-copilot" if k == "provider" else v) for k, v in conversation.metadata
    )
    return dataclasses.replace(conversation, messages=tuple(msgs), metadata=metadata)


def _compactions(conversation: Conversation, **params: Any) -> list[dict[str, Any]]:
    res = run(conversation, "opencode", params=params)
    return [dict(e.detail) for e in res.events if e.kind == "compact"]


def test_the_vendored_history_of_the_set_47_model() -> None:
    april = 1776105641.967
    assert model_limits("github-copilot", "claude-sonnet-4.6") == (200_000, 168_000, 32_000)
    assert model_limits("github-copilot", "claude-sonnet-4.6", april) == (200_000, 128_000, 32_000)
    # before its first recorded change a model's first limits hold; unlisted stays None
    assert model_limits("github-copilot", "claude-sonnet-4.6", 0) == (128_000, 0, 32_000)
    assert model_limits("no-such-provider", "claude-sonnet-4.6", april) is None


def test_a_session_compacts_at_its_days_limits() -> None:
    (event,) = _compactions(_session(APRIL))
    assert event["usable"] == 108_000


def test_the_same_session_later_runs_at_the_later_limits() -> None:
    assert _compactions(_session(JUNE)) == []  # usable 168 000 - 20 000


def test_explicit_params_still_pin_the_limits() -> None:
    (event,) = _compactions(_session(JUNE), input=128_000)
    assert event["usable"] == 108_000


# savekirk/session-bridge, MIT (LICENSE.md there): the real compaction, cut (README beside it)
REAL = CUT.parents[1] / "session-bridge-1.4.3" / "compaction-at-then-limits.json"


def test_the_real_compaction_at_the_limits_of_its_day() -> None:
    conversation = cli.load_file(REAL)
    (row,) = agreements(
        conversation, Replay(conversation, "opencode", summarizer=RecordedSummarizer()).exhaust()
    )
    assert row.agree and row.replay_tokens == 112_579
    assert row.rules_reason == (
        "limits context 200000, input 128000, output 32000 (models.dev github-copilot/claude-sonnet-4.6)"
    )


def test_at_todays_limits_the_replay_would_not_have_compacted(monkeypatch: Any) -> None:
    today = _models_dev.model_limits
    monkeypatch.setattr(
        "ctxlab.engine.strategies.opencode.model_limits",
        lambda provider, model, at=None: today(provider, model),
    )
    conversation = cli.load_file(REAL)
    (row,) = agreements(
        conversation, Replay(conversation, "opencode", summarizer=RecordedSummarizer()).exhaust()
    )
    assert not row.agree and row.replay_step is None
