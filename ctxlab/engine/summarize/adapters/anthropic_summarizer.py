"""A ``Summarizer`` backed by Claude through the official ``anthropic`` SDK.

Fidelity: the strategy's own prompt is sent as the original builds it — its system prompt as
``system`` (system-role messages, as BaseAgent sends them inside the history, are moved there
in order, because the Messages API takes the system prompt separately), every other message
with its role and exact text, and the strategy's output cap as ``max_tokens``. Nothing is
added except what the model needs to honour the cap: on models whose thinking can be turned
off it is (thinking tokens would otherwise eat the strategy's cap), and a temperature is only
sent to models that accept sampling parameters.

Secrets: the key comes from the environment only (``ANTHROPIC_API_KEY``, or
``ANTHROPIC_AUTH_TOKEN``; ``ANTHROPIC_BASE_URL`` is honoured) and is read by the SDK itself;
this object never holds, prints or logs it.

Failures: rate limits (429), 5xx/529 and timeouts are retried by the SDK (``max_retries``,
``timeout``); a call that still fails raises ``SummarizerError`` with a readable reason
(status, error type, message, request id) so the strategy's failure path runs. A refusal
returns an empty text with ``error`` set, which takes the same path.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from ...core.model import Usage
from ...core.summary_request import SummarizerError, SummaryRequest, SummaryResponse, SummaryUsage
from ...cost.pricing import DEFAULT_SUMMARY_MODEL, ModelInfo, cost, find_model

if TYPE_CHECKING:
    import anthropic

DEFAULT_MAX_TOKENS = 4096  # when a strategy sends no cap (the API requires one)
DEFAULT_TIMEOUT = 120.0  # seconds per attempt (PicoClaw's own summary timeout)
DEFAULT_MAX_RETRIES = 2  # the SDK's default
KEY_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


class SummaryCache(Protocol):
    """Where summaries are kept between runs (the web app stores them in its database)."""

    def get(self, key: str) -> SummaryResponse | None: ...

    def put(self, key: str, response: SummaryResponse) -> None: ...


class MemorySummaryCache:
    """A process-local ``SummaryCache`` (tests, CLI runs without a database)."""

    def __init__(self) -> None:
        self._data: dict[str, SummaryResponse] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> SummaryResponse | None:
        with self._lock:
            return self._data.get(key)

    def put(self, key: str, response: SummaryResponse) -> None:
        with self._lock:
            self._data[key] = response

    def __len__(self) -> int:
        return len(self._data)


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One ``summarize`` call as it went: for per-run accounting and the event's detail."""

    strategy: str
    key: str
    model: str
    cached: bool
    usage: Usage | None
    cost_usd: Decimal
    error: str = ""
    stop_reason: str = ""
    request_id: str = ""
    seconds: float = 0.0


def build_params(
    request: SummaryRequest,
    *,
    model: str,
    default_max_tokens: int = DEFAULT_MAX_TOKENS,
    disable_thinking: bool = True,
) -> dict[str, Any]:
    """The Messages API body for a summary request (also the cache key's input)."""
    info = find_model(model)
    system_parts = [request.system] if request.system else []
    messages: list[dict[str, str]] = []
    for m in request.messages:
        if m.role == "system":
            if m.text:
                system_parts.append(m.text)
        elif m.text:  # the API rejects empty text content
            messages.append({"role": "assistant" if m.role == "assistant" else "user",
                             "content": m.text})  # fmt: skip
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_output_tokens or default_max_tokens,
        "messages": messages,
    }
    if system_parts:
        params["system"] = "\n\n".join(system_parts)
    if request.temperature is not None and (info is None or info.sampling):
        params["temperature"] = request.temperature
    if disable_thinking and info is not None and info.thinking == "optional":
        params["thinking"] = {"type": "disabled"}
    return params


def cache_key(params: dict[str, Any]) -> str:
    """sha256 over the exact request body (model, system, messages, max_tokens and the
    sampling/thinking settings sent): the same prompt to the same model is paid once."""
    blob = json.dumps(params, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def usage_from_sdk(usage: Any) -> Usage:
    """The SDK's usage (Anthropic convention: input excludes cache buckets) → ``Usage``."""
    created = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
    split = getattr(usage, "cache_creation", None)
    write_1h = int(getattr(split, "ephemeral_1h_input_tokens", 0) or 0) if split else 0
    return Usage(
        input_uncached=int(usage.input_tokens or 0),
        cache_read=int(getattr(usage, "cache_read_input_tokens", 0) or 0),
        cache_write_5m=max(0, created - write_1h),
        cache_write_1h=write_1h,
        output=int(usage.output_tokens or 0),
        convention="anthropic",
    )


def describe_error(exc: BaseException, *, timeout: float, attempts: int) -> str:
    """A readable one-line reason for a failed call (never includes credentials)."""
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return f"timeout: no answer within {timeout:g}s (after {attempts} attempts)"
    if isinstance(exc, anthropic.APIStatusError):
        body: dict[str, Any] = exc.body if isinstance(exc.body, dict) else {}
        raw_err = body.get("error")
        err: dict[str, Any] = raw_err if isinstance(raw_err, dict) else {}
        kind = str(err.get("type") or type(exc).__name__)
        message = str(err.get("message") or exc.message)
        rid = f" [request {exc.request_id}]" if exc.request_id else ""
        status = exc.status_code
        retried = status in (408, 409, 429) or status >= 500  # what the SDK retries
        tail = f" (after {attempts} attempts)" if retried else ""
        return f"HTTP {status} {kind}: {message}{rid}{tail}"
    if isinstance(exc, anthropic.APIConnectionError):
        return f"connection error: {exc.message} (after {attempts} attempts)"
    return f"{type(exc).__name__}: {exc}"


class AnthropicSummarizer:
    """Claude as the summariser. Options are per instance (one per run)."""

    name = "anthropic"

    def __init__(
        self,
        *,
        model: str = DEFAULT_SUMMARY_MODEL,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        base_url: str | None = None,  # None: the SDK reads ANTHROPIC_BASE_URL
        cache: SummaryCache | None = None,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        disable_thinking: bool = True,
    ) -> None:
        if max_retries < 0 or timeout <= 0:
            raise ValueError("max_retries must be ≥ 0 and timeout > 0")
        self.model = model
        self.info: ModelInfo | None = find_model(model)
        self.max_retries = max_retries
        self.timeout = timeout
        self.base_url = base_url
        self.cache = cache
        self.default_max_tokens = default_max_tokens
        self.disable_thinking = disable_thinking
        self.calls: list[CallRecord] = []
        self._client: anthropic.Anthropic | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"AnthropicSummarizer(model={self.model!r}, max_retries={self.max_retries}, "
            f"timeout={self.timeout:g}, cache={type(self.cache).__name__ if self.cache else None})"
        )

    # -- accounting --------------------------------------------------------------------------
    @property
    def total_cost(self) -> Decimal:
        return sum((c.cost_usd for c in self.calls if not c.cached), Decimal(0))

    @property
    def cache_hits(self) -> int:
        return sum(1 for c in self.calls if c.cached)

    # -- the seam ----------------------------------------------------------------------------
    def params(self, request: SummaryRequest) -> dict[str, Any]:
        return build_params(
            request,
            model=self.model,
            default_max_tokens=self.default_max_tokens,
            disable_thinking=self.disable_thinking,
        )

    def key(self, request: SummaryRequest) -> str:
        return cache_key(self.params(request))

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        params = self.params(request)
        key = cache_key(params)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self._record(request, key, cached=True, usage=None)
                return hit
        if not params["messages"]:
            raise SummarizerError("nothing to summarise: the request has no non-empty message")
        client = self._get_client()
        started = time.monotonic()
        try:
            raw = client.messages.with_raw_response.create(**_sdk_kwargs(params))
            message = raw.parse()
        except Exception as exc:  # the SDK already retried what is retryable
            if not _is_sdk_error(exc):
                raise
            reason = describe_error(exc, timeout=self.timeout, attempts=self.max_retries + 1)
            self._record(request, key, cached=False, usage=None, error=reason, started=started)
            raise SummarizerError(f"anthropic {self.model}: {reason}") from None
        usage = usage_from_sdk(message.usage)
        text = "".join(b.text for b in message.content if getattr(b, "type", "") == "text")
        stop = str(message.stop_reason or "")
        error = "refusal: the model declined to summarise" if stop == "refusal" else ""
        response = SummaryResponse(
            text="" if error else text,
            usage=SummaryUsage(input_tokens=usage.prompt_tokens, output_tokens=usage.output),
            error=error,
            model=str(message.model or self.model),
        )
        self._record(
            request, key, cached=False, usage=usage, error=error, stop=stop,
            request_id=raw.headers.get("request-id", ""), started=started,
        )  # fmt: skip
        if self.cache is not None and not error:
            self.cache.put(key, response)
        return response

    # -- internals ---------------------------------------------------------------------------
    def _get_client(self) -> anthropic.Anthropic:
        with self._lock:
            if self._client is None:
                if not any(os.environ.get(name) for name in KEY_ENV):
                    raise SummarizerError(
                        "anthropic: no API key — set ANTHROPIC_API_KEY in the environment"
                    )
                import anthropic

                # The SDK reads the key (and ANTHROPIC_BASE_URL) from the environment itself.
                self._client = anthropic.Anthropic(
                    base_url=self.base_url, max_retries=self.max_retries, timeout=self.timeout
                )
            return self._client

    def _record(
        self,
        request: SummaryRequest,
        key: str,
        *,
        cached: bool,
        usage: Usage | None,
        error: str = "",
        stop: str = "",
        request_id: str = "",
        started: float | None = None,
    ) -> None:
        price = Decimal(0)
        if usage is not None and self.info is not None:
            price = cost(usage, self.info)
        record = CallRecord(
            strategy=request.strategy,
            key=key,
            model=self.model,
            cached=cached,
            usage=usage,
            cost_usd=price,
            error=error,
            stop_reason=stop,
            request_id=request_id,
            seconds=time.monotonic() - started if started is not None else 0.0,
        )
        with self._lock:
            self.calls.append(record)


def _sdk_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """SDK 2.x has no sampling arguments any more (current models reject them): older
    models still take ``temperature`` in the body, so it goes through ``extra_body``."""
    kwargs = dict(params)
    if "temperature" in kwargs:
        kwargs["extra_body"] = {"temperature": kwargs.pop("temperature")}
    return kwargs


def _is_sdk_error(exc: BaseException) -> bool:
    import anthropic

    return isinstance(exc, anthropic.AnthropicError)
