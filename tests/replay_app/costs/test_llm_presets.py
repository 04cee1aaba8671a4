"""Each of the five presets takes its OWN failure path when Claude keeps failing (the fake
answers 500 to every attempt; the real SDK retries), as the original agent does. Also the
regression for QwenPaw's fallback (it once raised TypeError: duplicate 'reason' kwarg).
No database, no key, no network."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the shared fake
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "engine"))  # builders
from builders import conv, cycle, system  # noqa: E402
from fake_anthropic import MESSAGES, FakeAnthropic, Reply  # noqa: E402

from ctxlab.engine.core.records import Fate, ReplayResult  # noqa: E402
from ctxlab.engine.replay import run  # noqa: E402
from ctxlab.engine.summarize.adapters.anthropic_summarizer import AnthropicSummarizer  # noqa: E402
from ctxlab.engine.summarize.offline import FailingSummarizer  # noqa: E402

SECRET = "sk-ant-test-presets-0000"
RETRIES = 1


def _conversation() -> Any:
    return conv(system("You are a careful coding agent."), *cycle(12, size=5000))


def _qwenpaw(r: ReplayResult) -> None:  # keeps the previous summary, drops messages
    kinds = [e.kind for e in r.events if e.kind != "offload"]
    assert kinds[:2] == ["summary_failed", "drop"]
    drops = [e for e in r.events if e.kind == "drop"]
    assert all({c.fate for c in e.changes} == {Fate.DROPPED} for e in drops)
    assert all(s.summary_id is None for s in r.steps)


def _copaw(r: ReplayResult) -> None:  # wipes the summary, drops messages
    failed = [e for e in r.events if e.kind == "summary_failed"]
    assert failed and all("previous_summary_lost" in e.detail for e in failed)
    assert any(e.kind == "drop" for e in r.events)
    assert all(s.summary_id is None for s in r.steps)


def _cowagent(r: ReplayResult) -> None:  # rule-based fallback summary is injected
    assert any(e.kind == "summary_failed" for e in r.events)
    injected = next(e for e in r.events if e.kind == "summary_injected")
    assert r.steps[injected.step].summary_id is not None


def _picoclaw(r: ReplayResult) -> None:  # fallback text after failed calls
    summ = next(e for e in r.events if e.kind == "summarise")
    assert summ.detail["failed_calls"] >= 1
    assert r.steps[summ.step].summary_id is not None


def _baseagent(r: ReplayResult) -> None:  # no compaction: the messages go out unchanged
    assert r.events and all(e.kind == "summary_failed" for e in r.events)
    assert not any(e.kind == "compact" for e in r.events)
    last = r.steps[-1]
    assert last.context == ((0, last.source_index),)


CASES: dict[str, tuple[dict[str, Any], Callable[[ReplayResult], None]]] = {
    "qwenpaw": ({"max_input_length": 12000}, _qwenpaw),
    "copaw": ({"max_input_length": 12000}, _copaw),
    "cowagent": ({"agent_max_context_tokens": 6000}, _cowagent),
    # the post-turn summary path: with the provider's overflow simulated, its llm_retry
    # compressions keep this session under the summary trigger
    "picoclaw": (
        {"context_window": 12000, "max_tokens": 1000, "simulate_overflow": False},
        _picoclaw,
    ),
    "baseagent": (
        {
            "model_context_limit": 12000,
            "output_token_max": 1000,
            "prune_protect": 100000,
            "prune_minimum": 100000,
        },
        _baseagent,
    ),  # fmt: skip
}


@pytest.fixture
def failing_fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=SECRET, default_reply=Reply.error(500)) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        yield server


def test_llm_qwenpaw_failure_fallback_has_no_duplicate_reason() -> None:
    result = run(
        _conversation(), "qwenpaw", params={"max_input_length": 12000},
        summarizer=FailingSummarizer(),
    )  # fmt: skip
    _qwenpaw(result)


@pytest.mark.parametrize("preset", list(CASES), ids=list(CASES))
def test_llm_preset_failure_path_with_claude_failing_500(
    failing_fake: FakeAnthropic, preset: str
) -> None:
    params, check = CASES[preset]
    summ = AnthropicSummarizer(model="claude-haiku-5-5", max_retries=RETRIES)
    result = run(_conversation(), preset, params=params, summarizer=summ)
    assert result.summaries, "the preset never asked for a summary"
    assert all("HTTP 500 api_error" in s.error and s.output == "" for s in result.summaries)
    assert len(failing_fake.requests_to(MESSAGES)) == (RETRIES + 1) * len(result.summaries)
    assert summ.total_cost == 0
    check(result)
    assert SECRET not in repr(result.events) and SECRET not in repr(result.summaries)


@pytest.mark.parametrize("preset", list(CASES), ids=list(CASES))
def test_llm_preset_failure_path_matches_the_offline_failing_summariser(
    failing_fake: FakeAnthropic, preset: str
) -> None:
    params, _ = CASES[preset]
    claude = run(_conversation(), preset, params=params,
                 summarizer=AnthropicSummarizer(model="claude-haiku-5-5", max_retries=0))  # fmt: skip
    simulated = run(_conversation(), preset, params=params, summarizer=FailingSummarizer())
    assert [(e.step, e.kind) for e in claude.events] == [(e.step, e.kind) for e in simulated.events]
