"""The OpenAI-compatible summariser against a local fake server, through the real SDK."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the shared fakes
from fake_openai import CHAT, RESPONSES, FakeOpenAI, Reply  # noqa: E402

from ctxlab.engine.core.summary_request import (  # noqa: E402
    PromptMessage,
    SummarizerError,
    SummaryRequest,
    SummaryResponse,
)
from ctxlab.engine.summarize.adapters.llm_common import (  # noqa: E402
    MemorySummaryCache,
    is_local_endpoint,
)
from ctxlab.engine.summarize.adapters.openai_summarizer import (  # noqa: E402
    OpenAISummarizer,
    build_chat_params,
    build_responses_params,
)

SECRET = "sk-openai-test-DO-NOT-LEAK-9191"
SYSTEM = "You are a context compaction assistant.\nKeep the file paths — «exactly»."
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
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=SECRET) as server:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


def summarizer(**kw: object) -> OpenAISummarizer:
    options: dict[str, object] = {"model": "gpt-4o-mini", "max_retries": 0, "timeout": 5}
    options.update(kw)
    return OpenAISummarizer(**options)  # type: ignore[arg-type]


def test_chat_sends_the_exact_prompt_and_prices_a_remote_model(fake: FakeOpenAI) -> None:
    fake.queue(Reply.ok("## Goal\nfix it", usage={"prompt": 50, "completion": 7, "cached": 10}))
    summ = summarizer(local=False)
    out = summ.summarize(request())
    assert (out.text, out.error, out.model) == ("## Goal\nfix it", "", "gpt-4o-mini")
    assert out.usage is not None and (out.usage.input_tokens, out.usage.output_tokens) == (50, 7)
    (sent,) = fake.requests_to(CHAT)
    assert sent.body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}],
        "max_tokens": 1234,
    }
    assert sent.api_key == SECRET  # the SDK read OPENAI_API_KEY itself
    (call,) = summ.calls
    assert call.usage is not None and (call.usage.input_uncached, call.usage.cache_read) == (40, 10)
    # genai-prices, gpt-4o-mini: $0.15 in, $0.075 cached, $0.60 out per million
    assert float(call.cost_usd) == pytest.approx((40 * 0.15 + 10 * 0.075 + 7 * 0.6) / 1e6)
    assert call.request_id.startswith("req_fake") and summ.priced


def test_local_endpoint_costs_nothing_and_needs_no_key(
    fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    fake.api_key = None
    summ = summarizer(model="qwen3-coder-local")
    assert summ.local and summ.priced and summ.info is None
    summ.summarize(request())
    (sent,) = fake.requests_to(CHAT)
    assert sent.api_key == "no-key-local-endpoint" and summ.total_cost == 0
    assert is_local_endpoint("http://192.168.1.20:11434/v1")
    assert is_local_endpoint("http://localhost:1234/v1")
    assert not is_local_endpoint("https://api.openai.com/v1")
    assert not is_local_endpoint("https://openrouter.example.com/api/v1")


def test_credentials_in_a_base_url_are_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    summ = OpenAISummarizer(model="m", base_url="https://user:pa55word@llm.example.com/v1?k=1")
    assert summ.endpoint == "https://llm.example.com/v1"
    assert "pa55word" not in repr(summ)
    with pytest.raises(SummarizerError) as caught:
        summ.summarize(request())
    assert "pa55word" not in str(caught.value) and "llm.example.com" in str(caught.value)


def test_remote_endpoint_without_key_fails_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    summ = OpenAISummarizer(model="gpt-4o-mini", base_url="https://api.openai.com/v1")
    assert summ.cap_field == "max_completion_tokens" and not summ.local
    with pytest.raises(SummarizerError, match="no API key"):
        summ.summarize(request())


def test_unpriced_remote_model_says_so(fake: FakeOpenAI) -> None:
    assert not summarizer(model="my-own-finetune", local=False).priced


def test_chat_streaming_joins_the_deltas_and_reads_usage(fake: FakeOpenAI) -> None:
    long = "## Goal\n" + "keep src/app.py and the failing test. " * 5
    fake.queue(Reply.ok(long, usage={"prompt": 80, "completion": 30}))
    out = summarizer(stream=True).summarize(request())
    assert out.text == long and out.usage is not None
    assert (out.usage.input_tokens, out.usage.output_tokens) == (80, 30)
    (sent,) = fake.requests_to(CHAT)
    assert sent.body["stream"] is True and sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["messages"][0]["content"] == SYSTEM


@pytest.mark.parametrize("stream", [False, True])
def test_responses_api_sends_instructions_and_input(fake: FakeOpenAI, stream: bool) -> None:
    fake.queue(Reply.ok("a summary from /v1/responses", usage={"prompt": 20, "completion": 6}))
    summ = summarizer(api="responses", stream=stream, local=False)
    out = summ.summarize(request(temperature=0.2))
    assert out.text == "a summary from /v1/responses"
    (sent,) = fake.requests_to(RESPONSES)
    expected = {
        "model": "gpt-4o-mini",
        "instructions": SYSTEM,
        "input": [{"role": "user", "content": USER}],
        "max_output_tokens": 1234,
        "temperature": 0.2,
    }
    assert sent.body == (expected | {"stream": True} if stream else expected)
    assert summ.calls[0].usage is not None and summ.calls[0].usage.output == 6
    assert summ.total_cost > 0


def test_cache_hit_makes_no_request(fake: FakeOpenAI) -> None:
    cache = MemorySummaryCache()
    first = summarizer(cache=cache).summarize(request())
    again = summarizer(cache=cache)
    assert again.summarize(request()) == first
    assert len(fake.requests_to(CHAT)) == 1 and again.cache_hits == 1
    # another endpoint or API is another model: no hit
    summarizer(cache=cache, api="responses").summarize(request())
    assert len(fake.requests_to(RESPONSES)) == 1 and len(cache) == 2


def test_rate_limit_is_retried_after_its_retry_after(fake: FakeOpenAI) -> None:
    fake.queue(Reply.error(429, retry_after="0.01"), Reply.ok("after the limit"))
    summ = summarizer(max_retries=2)
    assert summ.summarize(request()).text == "after the limit"
    assert len(fake.requests_to(CHAT)) == 2 and not summ.calls[0].error


def test_server_error_raises_a_readable_reason(fake: FakeOpenAI) -> None:
    fake.default_reply = Reply.error(500, message="the GPU fell over")
    summ = summarizer(max_retries=1)
    with pytest.raises(SummarizerError) as caught:
        summ.summarize(request())
    reason = str(caught.value)
    assert reason.startswith("openai gpt-4o-mini: HTTP 500 server_error: the GPU fell over")
    assert "(after 2 attempts)" in reason and len(fake.requests_to(CHAT)) == 2
    assert summ.calls[0].error and summ.calls[0].cost_usd == 0


def test_timeout_raises(fake: FakeOpenAI) -> None:
    fake.queue(Reply.hang(10))
    with pytest.raises(SummarizerError, match=r"timeout: no answer within 0.3s"):
        summarizer(timeout=0.3).summarize(request())


@pytest.mark.parametrize(
    "body", ['{"choices": [{"message": ', '{"object": "chat.completion"}', "<html>502</html>"]
)
def test_malformed_answer_raises(fake: FakeOpenAI, body: str) -> None:
    fake.queue(Reply.malformed(body))
    summ = summarizer()
    with pytest.raises(SummarizerError, match="malformed response"):
        summ.summarize(request())
    assert summ.calls[0].error.startswith("malformed response")


def test_refusal_takes_the_failure_path_and_is_not_cached(fake: FakeOpenAI) -> None:
    cache = MemorySummaryCache()
    fake.queue(Reply.ok("", refusal="I can't help with that"))
    out = summarizer(cache=cache).summarize(request())
    assert out.text == "" and out.error.startswith("refusal") and len(cache) == 0


def test_the_key_is_never_logged_or_recorded(
    fake: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # the SDK and httpx log requests at DEBUG
    fake.queue(Reply.error(429), Reply.ok("fine"), Reply.error(401, retry_after=None))
    summ = summarizer(max_retries=1)
    summ.summarize(request())
    with pytest.raises(SummarizerError) as caught:
        summ.summarize(request(max_output_tokens=99))
    assert caplog.records  # the SDK did log its requests
    logged = "\n".join(f"{r.getMessage()} {r.args!r} {r.__dict__!r}" for r in caplog.records)
    assert SECRET not in logged
    assert SECRET not in repr(summ) and SECRET not in repr(summ.calls)
    assert SECRET not in str(caught.value)


def test_empty_request_is_an_error(fake: FakeOpenAI) -> None:
    with pytest.raises(SummarizerError, match="nothing to summarise"):
        summarizer().summarize(request(system="", messages=(PromptMessage("user", ""),)))
    assert fake.requests == []


class Recording:
    """Wraps the summariser: keeps each request the strategy built."""

    def __init__(self, inner: OpenAISummarizer) -> None:
        self.inner, self.name = inner, "openai"
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.requests.append(request)
        return self.inner.summarize(request)


def _conversation():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from builders import conv, cycle, system

    return conv(system("You are a careful coding agent."), *cycle(12, size=5000))


def test_every_summarising_strategy_prompt_arrives_byte_exact(fake: FakeOpenAI) -> None:
    """Each strategy that summarises, replayed with a small window: the bytes the fake
    received decode to exactly the strategy's own system prompt and messages, its cap and
    temperature, nothing else."""
    from ctxlab.engine.budget import window_params
    from ctxlab.engine.replay import run
    from ctxlab.engine.strategies import STRATEGIES

    fake.default_reply = Reply.ok("## Goal\nfix the modules\n## Next Steps\n1. continue")
    conversation = _conversation()
    summarising = []
    for name in sorted(STRATEGIES):
        try:
            params = window_params(name, 12000)
        except ValueError:
            continue
        recording = Recording(summarizer())
        before = len(fake.raw_bodies)
        try:
            run(conversation, name, params=params, summarizer=recording)
        except Exception:  # noqa: BLE001 (a strategy that cannot run this shape: not ours)
            continue
        received = fake.raw_bodies[before:]
        sent = [r for r in recording.requests if build_chat_params(r, model="m")["messages"]]
        assert len(received) == len(sent), name
        for raw, req in zip(received, sent, strict=True):
            body = json.loads(raw.decode("utf-8"))
            assert body == build_chat_params(req, model="gpt-4o-mini"), name
            expected = ([req.system] if req.system else []) + [
                m.text for m in req.messages if m.text
            ]
            assert [m["content"] for m in body["messages"]] == expected, name
            for text in expected:  # byte-exact in the request's own bytes (JSON-escaped)
                assert (
                    json.dumps(text).encode() in raw
                    or json.dumps(text, ensure_ascii=False).encode("utf-8") in raw
                ), name
        if received:
            summarising.append(name)
    assert len(summarising) >= 8, summarising
    assert {"qwenpaw", "claude_code", "codex"} <= set(summarising), summarising


def test_responses_params_keep_system_role_messages_in_place() -> None:
    req = request(messages=(PromptMessage("system", "rules"), PromptMessage("user", "go")))
    assert build_responses_params(req, model="m")["input"] == [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "go"},
    ]
