"""Exact token counts from Anthropic's ``count_tokens`` endpoint, as another estimator.

``AnthropicCounter`` follows the engine's ``TokenCounter`` protocol (``name``, ``count``)
plus ``count_message``. Counts are cached by content (process memory, plus an optional
``store`` mapping the web app can back with its database), so a replay asks once per distinct
text; requests go through a token bucket (``per_second``, ``burst``) to stay inside the
endpoint's rate limit, and through the SDK's own retries.

``count(text)`` sends the text as one user message and subtracts the request's fixed framing,
measured once per counter (``overhead``): what the text adds to a request. ``count_message``
counts a ``Message``'s content the same way (one request per distinct content).
The key comes from the environment only, as for the summariser.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING

from ...core.model import BlockKind, Message
from ...cost.pricing import DEFAULT_SUMMARY_MODEL
from ...tokens.cl100k import MEDIA_TOKENS, block_text
from .anthropic_summarizer import DEFAULT_MAX_RETRIES, KEY_ENV, describe_error

if TYPE_CHECKING:
    import anthropic

DEFAULT_TIMEOUT = 30.0


class TokenCountError(RuntimeError):
    """The endpoint could not count (after the SDK's retries)."""


class TokenBucket:
    """``rate`` requests per second with bursts up to ``capacity``; ``acquire`` blocks.
    The clock and sleep are injectable so tests need no real time."""

    def __init__(
        self,
        rate: float,
        capacity: float = 1.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0 or capacity < 1:
            raise ValueError("rate must be > 0 and capacity ≥ 1")
        self.rate, self.capacity = rate, capacity
        self._clock, self._sleep = clock, sleep
        self._tokens = capacity
        self._last = clock()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Take one token, waiting if needed; returns the seconds waited."""
        waited = 0.0
        with self._lock:
            while True:
                now = self._clock()
                self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
                self._last = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return waited
                delay = (1 - self._tokens) / self.rate
                self._sleep(delay)
                waited += delay


def _content_key(model: str, kind: str, text: str) -> str:
    return hashlib.sha256(f"{model}\0{kind}\0{text}".encode()).hexdigest()


class AnthropicCounter:
    """Counts with the model's own tokenizer through ``POST /v1/messages/count_tokens``."""

    def __init__(
        self,
        *,
        model: str = DEFAULT_SUMMARY_MODEL,
        per_second: float = 5.0,
        burst: float = 5.0,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        base_url: str | None = None,
        store: MutableMapping[str, int] | None = None,
        bucket: TokenBucket | None = None,
    ) -> None:
        self.model = model
        self.name = f"anthropic:{model}"
        self.max_retries = max_retries
        self.timeout = timeout
        self.base_url = base_url
        self.store = store
        self.bucket = bucket or TokenBucket(per_second, burst)
        self.requests = 0  # HTTP calls made (cache misses)
        self._memo: dict[str, int] = {}
        self._overhead: int | None = None
        self._client: anthropic.Anthropic | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AnthropicCounter(model={self.model!r}, requests={self.requests})"

    # -- TokenCounter ------------------------------------------------------------------------
    def count(self, text: str) -> int:
        if not text:
            return 0
        return max(0, self._cached("text", text, lambda: self._raw(text)) - self.overhead)

    def count_message(self, message: Message) -> int:
        """What the message's content adds to a request: its text-like blocks joined (as
        the reference counter renders them), media at the reference's flat charge. Role
        framing (a few tokens) is left out, as the tokenizer does not depend on the role."""
        parts = [block_text(b) for b in message.blocks if b.kind is not BlockKind.MEDIA]
        media = MEDIA_TOKENS * sum(1 for b in message.blocks if b.kind is BlockKind.MEDIA)
        return self.count("\n".join(p for p in parts if p)) + media

    @property
    def overhead(self) -> int:
        """The framing of a one-message request: ``2·n("a") − n("a a")`` cancels the text's
        own tokens whatever the tokenizer does with a single letter."""
        if self._overhead is None:
            one = self._cached("text", "a", lambda: self._raw("a"))
            two = self._cached("text", "a a", lambda: self._raw("a a"))
            self._overhead = max(0, 2 * one - two)
        return self._overhead

    # -- internals ---------------------------------------------------------------------------
    def _cached(self, kind: str, text: str, fetch: Callable[[], int]) -> int:
        key = _content_key(self.model, kind, text)
        hit = self._memo.get(key)
        if hit is None and self.store is not None:
            hit = self.store.get(key)
        if hit is None:
            hit = fetch()
            if self.store is not None:
                self.store[key] = hit
        self._memo[key] = hit
        return hit

    def _raw(self, text: str) -> int:
        self.bucket.acquire()
        client = self._get_client()
        import anthropic

        try:
            self.requests += 1
            result = client.messages.count_tokens(
                model=self.model, messages=[{"role": "user", "content": text}]
            )
        except anthropic.AnthropicError as exc:
            reason = describe_error(exc, timeout=self.timeout, attempts=self.max_retries + 1)
            raise TokenCountError(f"anthropic count_tokens {self.model}: {reason}") from None
        return int(result.input_tokens)

    def _get_client(self) -> anthropic.Anthropic:
        with self._lock:
            if self._client is None:
                if not any(os.environ.get(name) for name in KEY_ENV):
                    raise TokenCountError(
                        "anthropic: no API key — set ANTHROPIC_API_KEY in the environment"
                    )
                import anthropic

                self._client = anthropic.Anthropic(
                    base_url=self.base_url, max_retries=self.max_retries, timeout=self.timeout
                )
            return self._client
