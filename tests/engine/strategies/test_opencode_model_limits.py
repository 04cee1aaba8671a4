"""The opencode strategy replays at the session's model's models.dev limits (OpenCode's
own lookup: providerID + modelID), unless the limit params are set."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from builders import assistant

from ctxlab.engine import cli
from ctxlab.engine.budget import window_params
from ctxlab.engine.core.model import Conversation, Usage
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import STRATEGIES
from ctxlab.engine.strategies._models_dev import model_limits

# dayhaysoos/nimbus, MIT (README there): OpenCode 1.2.26, provider opencode, gpt-5.3-codex
CUT = (
    Path(__file__).resolve().parents[2] / "data" / "opencode" / "nimbus-1.2.26" / "prune-pass.json"
)


def _session(model: str = "gpt-5.3-codex", reported: int = 200_000) -> Conversation:
    """The real cut, its last reply reporting ``reported`` tokens (over the 168 000 a
    200 000 window leaves, under gpt-5.3-codex's 272 000 - 20 000), and one more request."""
    conversation = cli.load_file(CUT)
    msgs = list(conversation.messages)
    assert [m.model for m in msgs if m.model] == ["gpt-5.3-codex"] * 3
    msgs[4] = dataclasses.replace(msgs[4], usage=Usage(input_uncached=reported))
    msgs.append(assistant("next", model=model))
    msgs = [dataclasses.replace(m, model=model) if m.model else m for m in msgs]
    return dataclasses.replace(conversation, messages=tuple(msgs))


def _compactions(conversation: Conversation, **params: Any) -> list[dict[str, Any]]:
    res = run(conversation, "opencode", params=params)
    return [dict(e.detail) for e in res.events if e.kind == "compact"]


def test_vendored_limits_of_the_set_46_model() -> None:
    assert model_limits("opencode", "gpt-5.3-codex") == (400_000, 272_000, 128_000)
    assert model_limits("openai", "gpt-5.3-codex") == (400_000, 272_000, 128_000)
    assert model_limits("no-such-provider", "gpt-5.3-codex") is None


def test_the_sessions_model_decides_at_the_default_params() -> None:
    assert dict(_session().metadata)["provider"] == "opencode"
    assert _compactions(_session()) == []  # usable 272 000 - 20 000: no overflow at 200 000


def test_an_unknown_model_keeps_the_200k_default() -> None:
    (event,) = _compactions(_session("not-in-models-dev"))
    assert event["usable"] == 168_000 and "rules_reason" not in event


def test_a_listed_model_over_its_limit_says_why() -> None:
    (event,) = _compactions(_session(reported=260_000))
    assert event["usable"] == 252_000
    assert event["rules_reason"] == (
        "limits context 400000, input 272000, output 128000 (models.dev opencode/gpt-5.3-codex)"
    )


@pytest.mark.parametrize(
    ("params", "usable"),
    [({"context": 190_000}, 158_000), ({"input": 180_000}, 160_000)],
    ids=["context", "input"],
)
def test_explicit_params_pin_the_limits(params: dict[str, Any], usable: int) -> None:
    (event,) = _compactions(_session(), **params)
    assert event["usable"] == usable and "rules_reason" not in event


def test_another_agents_transcript_keeps_the_params() -> None:
    session = dataclasses.replace(_session(), metadata=())
    (event,) = _compactions(session)
    assert event["usable"] == 168_000


def test_without_a_replay_the_params_decide() -> None:
    assert STRATEGIES["opencode"]({}).usable() == 168_000  # type: ignore[attr-defined]


def test_a_budget_at_the_default_window_pins_it() -> None:
    """A comparison budget of 200 000 means 200 000, not "the session's model"."""
    params = window_params("opencode", 200_000)
    assert params == {"context": 200_000, "output": 32_000, "window_from_session": False}
    (event,) = _compactions(_session(), **params)
    assert event["usable"] == 168_000 and "rules_reason" not in event
