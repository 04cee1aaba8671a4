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

import os
from typing import TYPE_CHECKING, Any

from ...core.model import Usage
from ...core.summary_request import SummarizerError, SummaryRequest
from ...cost.pricing import DEFAULT_SUMMARY_MODEL, find_model
from .llm_common import (
    Answer,
    CallRecord,
    MemorySummaryCache,
    ProviderSummarizer,
    SummaryCache,
    cache_key,
    describe_sdk_error,
)

if TYPE_CHECKING:
    import anthropic

__all__ = [  # the shared pieces, imported from here by earlier code
    "AnthropicSummarizer",
    "CallRecord",
    "MemorySummaryCache",
    "SummaryCache",
    "build_params",
    "cache_key",
    "describe_error",
    "usage_from_sdk",
]

DEFAULT_MAX_TOKENS = 4096  # when a strategy sends no cap (the API requires one)
DEFAULT_TIMEOUT = 120.0  # seconds per attempt (PicoClaw's own summary timeout)
DEFAULT_MAX_RETRIES = 2  # the SDK's default
KEY_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


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

    return describe_sdk_error(exc, anthropic, timeout=timeout, attempts=attempts)


class AnthropicSummarizer(ProviderSummarizer):
    """Claude as the summariser. Options are per instance (one per run)."""

    name = "anthropic"
    provider_label = "anthropic"

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
        super().__init__(model=model, info=find_model(model), cache=cache)
        self.max_retries = max_retries
        self.timeout = timeout
        self.base_url = base_url
        self.default_max_tokens = default_max_tokens
        self.disable_thinking = disable_thinking
        self._client: anthropic.Anthropic | None = None

    def __repr__(self) -> str:
        return (
            f"AnthropicSummarizer(model={self.model!r}, max_retries={self.max_retries}, "
            f"timeout={self.timeout:g}, cache={type(self.cache).__name__ if self.cache else None})"
        )

    # -- the provider's part -----------------------------------------------------------------
    def params(self, request: SummaryRequest) -> dict[str, Any]:
        return build_params(
            request,
            model=self.model,
            default_max_tokens=self.default_max_tokens,
            disable_thinking=self.disable_thinking,
        )

    def _send(self, params: dict[str, Any]) -> Answer:
        raw = self._get_client().messages.with_raw_response.create(**_sdk_kwargs(params))
        message = raw.parse()
        text = "".join(b.text for b in message.content if getattr(b, "type", "") == "text")
        stop = str(message.stop_reason or "")
        return Answer(
            text=text,
            usage=usage_from_sdk(message.usage),
            model=str(message.model or self.model),
            stop_reason=stop,
            request_id=raw.headers.get("request-id", ""),
            error="refusal: the model declined to summarise" if stop == "refusal" else "",
        )

    def _is_sdk_error(self, exc: BaseException) -> bool:
        import anthropic

        return isinstance(exc, anthropic.AnthropicError)

    def _describe(self, exc: BaseException) -> str:
        return describe_error(exc, timeout=self.timeout, attempts=self.max_retries + 1)

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


def _sdk_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """SDK 2.x has no sampling arguments any more (current models reject them): older
    models still take ``temperature`` in the body, so it goes through ``extra_body``."""
    kwargs = dict(params)
    if "temperature" in kwargs:
        kwargs["extra_body"] = {"temperature": kwargs.pop("temperature")}
    return kwargs
