from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the shared fake
from fake_anthropic import COUNT_TOKENS, FakeAnthropic, Reply  # noqa: E402

from ctxlab.engine.core.model import Block, BlockKind, Message, Role  # noqa: E402
from ctxlab.engine.summarize.adapters.anthropic_counter import (  # noqa: E402
    AnthropicCounter,
    TokenBucket,
    TokenCountError,
)
from ctxlab.engine.tokens.cl100k import MEDIA_TOKENS, TokenCounter  # noqa: E402

SECRET = "sk-ant-count-SECRET-77"


def words_plus_ten(body: Any) -> int:
    """10 tokens of framing plus one per whitespace-separated word."""
    return 10 + sum(len(m["content"].split()) for m in body["messages"])


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=SECRET, counter=words_plus_ten) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        yield server


def counter(**kw: Any) -> AnthropicCounter:
    kw.setdefault("model", "claude-haiku-4-5")
    kw.setdefault("per_second", 1000.0)
    kw.setdefault("max_retries", 0)
    return AnthropicCounter(**kw)


def test_counter_counts_text_without_request_framing(fake: FakeAnthropic) -> None:
    c: TokenCounter = counter()
    assert c.name == "anthropic:claude-haiku-4-5"
    assert c.count("hello big world") == 3
    bodies = [r.body for r in fake.requests_to(COUNT_TOKENS)]
    assert {"model": "claude-haiku-4-5",
            "messages": [{"role": "user", "content": "hello big world"}]} in bodies  # fmt: skip


def test_counter_caches_by_content(fake: FakeAnthropic) -> None:
    c = counter()
    assert c.count("one two") == 2
    before = len(fake.requests_to(COUNT_TOKENS))
    assert c.count("one two") == 2
    assert len(fake.requests_to(COUNT_TOKENS)) == before  # no HTTP request the second time
    assert c.count("") == 0
    assert len(fake.requests_to(COUNT_TOKENS)) == before


def test_counter_store_is_shared_across_instances(fake: FakeAnthropic) -> None:
    store: dict[str, int] = {}
    assert counter(store=store).count("x y z") == 3
    made = len(fake.requests_to(COUNT_TOKENS))
    again = counter(store=store)
    assert again.count("x y z") == 3
    assert len(fake.requests_to(COUNT_TOKENS)) == made and again.requests == 0
    assert counter(store=store, model="claude-sonnet-4-6").count("x y z") == 3
    assert len(fake.requests_to(COUNT_TOKENS)) > made  # the key includes the model


def test_counter_count_message(fake: FakeAnthropic) -> None:
    msg = Message(
        Role.ASSISTANT,
        (
            Block(BlockKind.TEXT, text="reading the file"),
            Block(BlockKind.TOOL_USE, tool_id="t1", tool_name="read", tool_input={"p": "a.py"}),
            Block(BlockKind.MEDIA, media_type="image/png", size=10),
        ),
    )
    # "reading the file\nread {"p": "a.py"}" → 6 words; the image at the flat charge
    assert counter().count_message(msg) == 6 + MEDIA_TOKENS


def test_counter_error_is_readable(fake: FakeAnthropic) -> None:
    fake.queue_count(Reply.error(500), Reply.error(500))
    c = counter(max_retries=1)
    with pytest.raises(TokenCountError, match=r"HTTP 500 api_error.*after 2 attempts") as info:
        c.count("a")
    assert SECRET not in str(info.value) and SECRET not in repr(c)


def test_counter_without_key(fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(TokenCountError, match="ANTHROPIC_API_KEY"):
        counter().count("words here")
    assert fake.requests == []


def test_counter_goes_through_the_rate_limiter(fake: FakeAnthropic) -> None:
    clock = FakeClock()
    bucket = TokenBucket(2.0, 1.0, clock=clock, sleep=clock.sleep)
    c = counter(bucket=bucket)
    for text in ("p q", "r s", "t u"):
        c.count(text)
    # 2 overhead probes + 3 texts = 5 requests at 2/s with no burst: 4 waits of 0.5 s
    assert c.requests == 5
    assert clock.slept == pytest.approx([0.5] * 4)


@pytest.mark.parametrize(
    ("rate", "capacity", "calls", "expected_sleeps"),
    [
        (1.0, 1.0, 1, []),
        (1.0, 1.0, 3, [1.0, 1.0]),
        (4.0, 2.0, 4, [0.25, 0.25]),  # a burst of 2, then one every 0.25 s
    ],
    ids=["first-free", "steady", "burst"],
)
def test_token_bucket(
    rate: float, capacity: float, calls: int, expected_sleeps: list[float]
) -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate, capacity, clock=clock, sleep=clock.sleep)
    waited = [bucket.acquire() for _ in range(calls)]
    assert clock.slept == pytest.approx(expected_sleeps)
    assert sum(waited) == pytest.approx(sum(expected_sleeps))


def test_token_bucket_refills_over_time() -> None:
    clock = FakeClock()
    bucket = TokenBucket(1.0, 3.0, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        bucket.acquire()
    clock.now += 10  # idle: refills to capacity, not beyond
    for _ in range(3):
        assert bucket.acquire() == 0
    assert bucket.acquire() == pytest.approx(1.0)


def test_token_bucket_rejects_bad_rate() -> None:
    with pytest.raises(ValueError, match="rate"):
        TokenBucket(0)
