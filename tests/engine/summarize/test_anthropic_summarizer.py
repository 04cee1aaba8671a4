from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the shared fake
from fake_anthropic import MESSAGES, FakeAnthropic, Reply  # noqa: E402

from ctxlab.engine.core.summary_request import PromptMessage, SummarizerError, SummaryRequest  # noqa: E402
from ctxlab.engine.summarize.adapters.anthropic_summarizer import (  # noqa: E402
    AnthropicSummarizer,
    MemorySummaryCache,
    build_params,
    cache_key,
)

SECRET = "sk-ant-test-DO-NOT-LEAK-4242"
SYSTEM = (
    "You are a context compaction assistant. Your role is to create structured summaries of "
    "conversations\nthat can be used to restore context in future sessions."
)
USER = "# conversation\n[user]: fix src/app.py\n\nCreate a structured summary …"


def request(**kw: object) -> SummaryRequest:
    base: dict[str, object] = {
        "strategy": "qwenpaw",
        "system": SYSTEM,
        "messages": (PromptMessage("user", USER),),
        "max_output_tokens": 1234,
    }
    base.update(kw)
    return SummaryRequest(**base)  # type: ignore[arg-type]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=SECRET) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        yield server


def test_summarizer_sends_the_exact_prompt(fake: FakeAnthropic) -> None:
    fake.queue(
        Reply.ok(
            "## Goal\nfix it",
            usage={
                "input_tokens": 50,
                "output_tokens": 7,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            },
        )
    )
    summ = AnthropicSummarizer(model="claude-haiku-4-5", max_retries=0, timeout=5)
    out = summ.summarize(request())
    assert (out.text, out.error, out.model) == ("## Goal\nfix it", "", "claude-haiku-4-5")
    assert out.usage is not None
    assert (out.usage.input_tokens, out.usage.output_tokens, out.usage.estimated) == (50, 7, False)
    (sent,) = fake.requests_to(MESSAGES)
    assert sent.body == {
        "model": "claude-haiku-4-5",
        "max_tokens": 1234,
        "system": SYSTEM,
        "messages": [{"role": "user", "content": USER}],
        "thinking": {"type": "disabled"},
    }
    assert sent.api_key == SECRET  # read from the environment by the SDK
    (call,) = summ.calls
    assert call.cost_usd == summ.total_cost > 0 and not call.cached
    assert call.request_id.startswith("req_fake")


@pytest.mark.parametrize(
    ("req", "model", "expected"),
    [
        # BaseAgent: the system message sits in the history, then the compaction prompt
        (
            request(
                system="",
                messages=(
                    PromptMessage("system", "SYS"),
                    PromptMessage("user", "task"),
                    PromptMessage("assistant", "done"),
                    PromptMessage("user", "COMPACT"),
                ),
            ),
            "claude-haiku-4-5",
            {
                "system": "SYS",
                "messages": [
                    {"role": "user", "content": "task"},
                    {"role": "assistant", "content": "done"},
                    {"role": "user", "content": "COMPACT"},
                ],
            },
        ),
        # CowAgent: temperature 0, cap 500 — the 5.x models reject sampling parameters
        (
            request(temperature=0.0, max_output_tokens=500),
            "claude-haiku-4-5",
            {"temperature": 0.0, "max_tokens": 500},
        ),
        (request(temperature=0.0), "claude-haiku-5-5", {"temperature": None}),
        # no cap from the strategy: the API still needs one
        (request(max_output_tokens=None), "claude-haiku-4-5", {"max_tokens": 4096}),
        # always-on thinking cannot be disabled; models without thinking get no parameter
        (request(), "claude-opus-5-5", {"thinking": None}),
        (request(), "claude-3-5-haiku", {"thinking": None}),
        # an unknown model id is passed through untouched
        (request(temperature=0.3), "claude-future-9", {"temperature": 0.3, "thinking": None}),
    ],
    ids=[
        "baseagent-system-in-history",
        "cowagent-temperature",
        "no-sampling-on-5x",
        "default-cap",
        "always-thinking",
        "no-thinking-param",
        "unknown-model",
    ],
)
def test_build_params_follows_strategy_and_model(
    req: SummaryRequest, model: str, expected: dict[str, object]
) -> None:
    params = build_params(req, model=model)
    for key, value in expected.items():
        assert params.get(key) == value, key


def test_summarizer_sends_temperature_to_models_that_take_it(fake: FakeAnthropic) -> None:
    summ = AnthropicSummarizer(model="claude-haiku-4-5", max_retries=0)
    summ.summarize(request(temperature=0.0, max_output_tokens=500))
    summ5 = AnthropicSummarizer(model="claude-haiku-5-5", max_retries=0)
    summ5.summarize(request(temperature=0.0, max_output_tokens=500))
    first, second = (r.body for r in fake.requests_to(MESSAGES))
    assert (first["temperature"], first["max_tokens"]) == (0.0, 500)
    assert "temperature" not in second and "thinking" in second


def test_summarizer_retries_rate_limit_then_succeeds(fake: FakeAnthropic) -> None:
    fake.queue(Reply.error(429, retry_after="0.01"), Reply.error(529), Reply.ok("ok"))
    summ = AnthropicSummarizer(model="claude-haiku-4-5", max_retries=2, timeout=5)
    assert summ.summarize(request()).text == "ok"
    sent = fake.requests_to(MESSAGES)
    assert len(sent) == 3
    assert [r.headers.get("x-stainless-retry-count") for r in sent] == ["0", "1", "2"]


@pytest.mark.parametrize(
    ("replies", "retries", "match", "requests"),
    [
        (
            [Reply.error(500)] * 3,
            2,
            r"HTTP 500 api_error: fake 500 \[request req_fake_\d+\] \(after 3",
            3,
        ),
        ([Reply.error(529)] * 2, 1, "HTTP 529 overloaded_error", 2),
        (
            [Reply.error(400, message="prompt is too long")],
            2,
            "400 invalid_request_error: prompt is too long",
            1,
        ),
        ([Reply.error(401, retry_after=None)], 2, "401 authentication_error", 1),
    ],
    ids=["500-exhausted", "529-exhausted", "400-not-retried", "401-not-retried"],
)
def test_summarizer_failure_raises_readable_error(
    fake: FakeAnthropic, replies: list[Reply], retries: int, match: str, requests: int
) -> None:
    fake.queue(*replies)
    summ = AnthropicSummarizer(model="claude-haiku-4-5", max_retries=retries, timeout=5)
    with pytest.raises(SummarizerError, match=match) as info:
        summ.summarize(request())
    assert len(fake.requests_to(MESSAGES)) == requests
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)
    assert summ.calls[-1].error and SECRET not in summ.calls[-1].error
    assert info.value.__cause__ is None  # the SDK exception (with headers) is not chained


def test_summarizer_timeout_raises(fake: FakeAnthropic) -> None:
    fake.queue(Reply.hang(30), Reply.hang(30))
    summ = AnthropicSummarizer(model="claude-haiku-4-5", max_retries=1, timeout=0.3)
    with pytest.raises(
        SummarizerError, match=r"timeout: no answer within 0.3s \(after 2 attempts\)"
    ):
        summ.summarize(request())
    assert len(fake.requests_to(MESSAGES)) == 2


def test_summarizer_refusal_takes_failure_path(fake: FakeAnthropic) -> None:
    fake.queue(Reply.ok("I can't help with that", stop_reason="refusal"))
    cache = MemorySummaryCache()
    summ = AnthropicSummarizer(model="claude-haiku-4-5", max_retries=0, cache=cache)
    out = summ.summarize(request())
    assert out.text == "" and out.error.startswith("refusal")
    assert len(cache) == 0  # failures are never cached


def test_summarizer_joins_text_blocks_and_skips_thinking(fake: FakeAnthropic) -> None:
    blocks = (
        {"type": "thinking", "thinking": "", "signature": "sig"},
        {"type": "text", "text": "## Goal\n"},
        {"type": "text", "text": "ship it"},
    )
    fake.queue(Reply.ok(content=blocks))
    out = AnthropicSummarizer(model="claude-opus-5-5", max_retries=0).summarize(request())
    assert out.text == "## Goal\nship it"


def test_summarizer_cache_hit_makes_no_request(fake: FakeAnthropic) -> None:
    cache = MemorySummaryCache()
    first = AnthropicSummarizer(model="claude-haiku-4-5", max_retries=0, cache=cache)
    fake.queue(Reply.ok("cached summary"))
    assert first.summarize(request()).text == "cached summary"
    # a new run (new instance) with the same cache: no HTTP request, no cost
    second = AnthropicSummarizer(model="claude-haiku-4-5", max_retries=0, cache=cache)
    assert second.summarize(request()).text == "cached summary"
    assert len(fake.requests_to(MESSAGES)) == 1
    assert second.cache_hits == 1 and second.total_cost == 0
    # another model, cap or prompt is another key
    third = AnthropicSummarizer(model="claude-sonnet-4-6", max_retries=0, cache=cache)
    third.summarize(request())
    second.summarize(request(max_output_tokens=99))
    assert len(fake.requests_to(MESSAGES)) == 3


def test_cache_key_covers_model_system_messages_and_cap() -> None:
    base = build_params(request(), model="m")
    keys = {
        cache_key(base),
        cache_key(build_params(request(), model="m2")),
        cache_key(build_params(request(system="other"), model="m")),
        cache_key(build_params(request(messages=(PromptMessage("user", "x"),)), model="m")),
        cache_key(build_params(request(max_output_tokens=1), model="m")),
    }
    assert len(keys) == 5
    assert cache_key(base) == cache_key(build_params(request(), model="m"))
    assert len(cache_key(base)) == 64


def test_summarizer_base_url_argument_and_key_never_shown(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    summ = AnthropicSummarizer(model="claude-haiku-4-5", base_url=fake.base_url, max_retries=0)
    out = summ.summarize(request())
    assert out.text == "summary"
    for shown in (repr(summ), str(summ), repr(out), repr(summ.calls), str(vars(summ))):
        assert SECRET not in shown


def test_summarizer_without_key_fails_before_any_request(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(SummarizerError, match="ANTHROPIC_API_KEY"):
        AnthropicSummarizer(max_retries=0).summarize(request())
    assert fake.requests == []


def test_summarizer_empty_request_is_an_error(fake: FakeAnthropic) -> None:
    summ = AnthropicSummarizer(max_retries=0)
    with pytest.raises(SummarizerError, match="nothing to summarise"):
        summ.summarize(request(messages=(PromptMessage("user", ""),)))
    assert fake.requests == []


def _conversation():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from builders import conv, cycle, system

    return conv(system("You are a careful coding agent."), *cycle(12, size=5000))


def test_summarizer_in_a_replay_sends_the_strategy_prompt(fake: FakeAnthropic) -> None:
    from ctxlab.engine.replay import run

    fake.default_reply = Reply.ok("## Goal\nfix the modules\n## Next Steps\n1. continue")
    summ = AnthropicSummarizer(model="claude-haiku-4-5", max_retries=0)
    result = run(_conversation(), "qwenpaw", params={"max_input_length": 12000,
                                                      "language": "en"}, summarizer=summ)  # fmt: skip
    sent = fake.requests_to(MESSAGES)
    assert sent and len(sent) == len(result.summaries)
    body = sent[0].body
    assert body["system"].startswith("You are a context compaction assistant.")
    assert body["messages"][0]["content"].startswith("# conversation\n")
    # the record keeps the exact input and the model's output; usage is provider-reported
    first = result.summaries[0]
    assert first.output.startswith("## Goal") and not first.error and not first.usage_estimated
    assert first.input == f"[system]\n{body['system']}\n\n[user]\n{body['messages'][0]['content']}"
    assert summ.total_cost > 0


def test_summarizer_failure_takes_the_strategy_failure_path(fake: FakeAnthropic) -> None:
    from ctxlab.engine.replay import run

    # CowAgent: a failed memory summary falls back to its rule-based lines
    fake.default_reply = Reply.error(529)
    summ = AnthropicSummarizer(model="claude-haiku-4-5", max_retries=1)
    result = run(
        _conversation(), "cowagent", params={"agent_max_context_tokens": 6000}, summarizer=summ
    )
    assert result.summaries
    assert all("HTTP 529 overloaded_error" in s.error for s in result.summaries)
    assert all(s.output == "" for s in result.summaries)
    assert "summary_failed" in {e.kind for e in result.events}
    assert len(fake.requests_to(MESSAGES)) == 2 * len(result.summaries)  # 1 retry each
    assert SECRET not in repr(result.summaries) and SECRET not in repr(result.events)
