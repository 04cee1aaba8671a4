"""A ``Summarizer`` (and probe judge) backed by any OpenAI-compatible endpoint through the
official ``openai`` SDK: OpenAI itself, a router, or a local vLLM, Ollama, llama.cpp or
LM Studio server.

Fidelity: the strategy's own prompt is sent as the original builds it. ``/v1/chat/completions``
(``api="chat"``, the default): its system prompt first as a ``system`` message, then every
message with its role and exact text (system-role messages stay where the strategy put
them: the Chat API takes them anywhere); ``/v1/responses`` (``api="responses"``, where the
endpoint has it): the system prompt as ``instructions``, the messages as ``input``. The
strategy's output cap is sent as the endpoint's cap field and its temperature when it sets
one; nothing else is added.

Endpoint and key: ``base_url`` or the SDK's own ``OPENAI_BASE_URL``; ``api_key`` or the SDK's
own ``OPENAI_API_KEY``. A local endpoint (loopback or private address) needs no key: a
placeholder is sent, which such servers ignore. This object never prints or logs the key
(it is not in ``repr``, in the records or in an error).

Cost: genai-prices where it knows the model (``pricing.find_priced_model``, OpenAI's rows
first); a local endpoint costs 0 (``local``: decided by the address, or by
``CTXLAB_OPENAI_LOCAL=1``/``0``), a remote model the dataset does not price is
``priced = False`` (the web app refuses to start it without a price).

Failures: 429 (honouring ``retry-after``), 5xx and timeouts are retried by the SDK
(``max_retries``, ``timeout``); a call that still fails, or a 2xx answer that is not the
API's shape, raises ``SummarizerError`` with a readable reason so the strategy's failure path
runs. A refusal (``content_filter``, a ``refusal`` text) returns an empty text with ``error``.
"""

from __future__ import annotations

import os
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from ...core.model import Usage
from ...core.summary_request import SummarizerError, SummaryRequest, approx_tokens
from .llm_common import (
    Answer,
    MalformedAnswer,
    ProviderSummarizer,
    SummaryCache,
    describe_sdk_error,
    is_local_endpoint,
    public_url,
)

if TYPE_CHECKING:
    import openai

KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
OPENAI_BASE_URL = "https://api.openai.com/v1"  # the SDK's default endpoint
# "1": the endpoint costs nothing whatever its address (your own GPU server on a public
# address); "0": it is priced even on a private network (a paid router on the LAN).
LOCAL_ENV = "CTXLAB_OPENAI_LOCAL"
LOCAL_KEY = "no-key-local-endpoint"  # sent to a local endpoint when no key is set
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 2  # the SDK's default
Api = Literal["chat", "responses"]
APIS: tuple[Api, ...] = ("chat", "responses")

_MALFORMED = (ValueError, TypeError, AttributeError, IndexError, KeyError)


def endpoint_url(base_url: str | None = None) -> str:
    """The base URL a client will use: the argument, else ``OPENAI_BASE_URL``, else OpenAI's."""
    return (base_url or os.environ.get(BASE_URL_ENV) or OPENAI_BASE_URL).rstrip("/")


def key_available(base_url: str | None = None) -> bool:
    """Whether a call can authenticate: a key in the environment, or a local endpoint."""
    return bool(os.environ.get(KEY_ENV)) or is_local_endpoint(endpoint_url(base_url))


def build_chat_params(
    request: SummaryRequest, *, model: str, cap_field: str = "max_tokens"
) -> dict[str, Any]:
    """The ``/v1/chat/completions`` body for a summary request (without ``stream``)."""
    messages: list[dict[str, str]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for m in request.messages:
        if m.text:  # as the Claude adapter: an empty message is not a turn
            messages.append({"role": _role(m.role), "content": m.text})
    params: dict[str, Any] = {"model": model, "messages": messages}
    if request.max_output_tokens:
        params[cap_field] = request.max_output_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    return params


def build_responses_params(request: SummaryRequest, *, model: str) -> dict[str, Any]:
    """The ``/v1/responses`` body for a summary request (without ``stream``)."""
    params: dict[str, Any] = {"model": model}
    if request.system:
        params["instructions"] = request.system
    params["input"] = [
        {"role": _role(m.role), "content": m.text} for m in request.messages if m.text
    ]
    if request.max_output_tokens:
        params["max_output_tokens"] = request.max_output_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    return params


def _role(role: str) -> str:
    return role if role in ("system", "assistant") else "user"


def usage_from_openai(usage: Any) -> Usage:
    """Chat (``prompt_tokens``/``completion_tokens``) or Responses (``input_tokens``/
    ``output_tokens``) usage → ``Usage``; OpenAI counts cached tokens inside the prompt."""
    prompt = getattr(usage, "prompt_tokens", None)
    if prompt is None:
        prompt = usage.input_tokens
        output = usage.output_tokens
        details = getattr(usage, "input_tokens_details", None)
    else:
        output = usage.completion_tokens
        details = getattr(usage, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    prompt, output = int(prompt or 0), int(output or 0)
    return Usage(
        input_uncached=max(0, prompt - cached), cache_read=min(cached, prompt), output=output,
        convention="openai",
    )  # fmt: skip


def _estimated_usage(params: dict[str, Any], text: str) -> Usage:
    """An endpoint that reports no usage (some local servers when streaming): ~4 bytes a
    token of what was sent and received."""
    sent = [params.get("instructions", "")]
    sent += [m["content"] for m in params.get("messages", params.get("input", []))]
    return Usage(
        input_uncached=sum(approx_tokens(t) for t in sent if t), output=approx_tokens(text),
        convention="estimated",
    )  # fmt: skip


def describe_error(exc: BaseException, *, timeout: float, attempts: int) -> str:
    import openai

    return describe_sdk_error(exc, openai, timeout=timeout, attempts=attempts)


class OpenAISummarizer(ProviderSummarizer):
    """An OpenAI-compatible model as the summariser. Options are per instance (one per run)."""

    name = "openai"
    provider_label = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,  # None: the SDK's OPENAI_BASE_URL, else OpenAI's
        api_key: str | None = None,  # None: the SDK's OPENAI_API_KEY
        api: Api = "chat",
        stream: bool = False,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        cache: SummaryCache | None = None,
        cap_field: str | None = None,
        local: bool | None = None,  # None: decided by the base URL (``is_local_endpoint``)
    ) -> None:
        if max_retries < 0 or timeout <= 0:
            raise ValueError("max_retries must be ≥ 0 and timeout > 0")
        if api not in APIS:
            raise ValueError(f"api must be one of {', '.join(APIS)}, not {api!r}")
        if not model:
            raise ValueError("the OpenAI-compatible summariser needs a model name")
        self.base_url = endpoint_url(base_url)
        if local is None and os.environ.get(LOCAL_ENV) in ("0", "1"):
            local = os.environ[LOCAL_ENV] == "1"
        self.local = is_local_endpoint(self.base_url) if local is None else local
        self.endpoint = public_url(self.base_url)  # what may be stored and shown
        from ...cost.pricing import find_priced_model  # not for the registry alone

        super().__init__(
            model=model, info=None if self.local else find_priced_model(model), cache=cache
        )
        self.priced = self.local or self.info is not None
        self.api: Api = api
        self.stream = stream
        self.max_retries = max_retries
        self.timeout = timeout
        # OpenAI's own models take max_completion_tokens (its reasoning models refuse
        # max_tokens); the local servers read max_tokens.
        self.cap_field = cap_field or (
            "max_completion_tokens" if self.base_url == OPENAI_BASE_URL else "max_tokens"
        )
        self._api_key = api_key
        self._client: openai.OpenAI | None = None

    def __repr__(self) -> str:
        return (
            f"OpenAISummarizer(model={self.model!r}, base_url={self.endpoint!r}, "
            f"api={self.api!r}, stream={self.stream}, local={self.local})"
        )

    # -- the provider's part -----------------------------------------------------------------
    def params(self, request: SummaryRequest) -> dict[str, Any]:
        if self.api == "responses":
            return build_responses_params(request, model=self.model)
        return build_chat_params(request, model=self.model, cap_field=self.cap_field)

    def _key_parts(self, request: SummaryRequest) -> dict[str, Any]:
        """The body, the API and the endpoint: the same model name on another server is
        another model."""
        return {"openai": [self.base_url, self.api], **self.params(request)}

    def _has_input(self, params: dict[str, Any]) -> bool:
        return bool(params.get("messages") or params.get("input"))

    def _price(self, usage: Usage) -> Decimal:
        return Decimal(0) if self.local else super()._price(usage)

    def _is_sdk_error(self, exc: BaseException) -> bool:
        import openai

        return isinstance(exc, openai.OpenAIError)

    def _describe(self, exc: BaseException) -> str:
        return describe_error(exc, timeout=self.timeout, attempts=self.max_retries + 1)

    def _send(self, params: dict[str, Any]) -> Answer:
        client = self._get_client()
        body = dict(params)
        if self.stream:
            body["stream"] = True
            if self.api == "chat":
                body["stream_options"] = {"include_usage": True}
        if self.api == "responses":
            raw = client.responses.with_raw_response.create(**body)
        else:
            raw = client.chat.completions.with_raw_response.create(**body)
        rid = raw.headers.get("x-request-id", "")
        try:
            parsed = raw.parse()
            if self.api == "responses":
                found = self._read_responses(parsed, params)
            else:
                found = self._read_chat(parsed, params)
        except _MALFORMED as exc:
            raise MalformedAnswer(f"{type(exc).__name__}: {str(exc)[:200]}") from None
        return Answer(
            text=found.text, usage=found.usage, model=found.model,
            stop_reason=found.stop_reason, request_id=rid, error=found.error,
        )  # fmt: skip

    def _read_chat(self, parsed: Any, params: dict[str, Any]) -> Answer:
        if self.stream:
            parts: list[str] = []
            refusal, stop, model, usage = "", "", "", None
            for chunk in parsed:
                model = chunk.model or model
                usage = chunk.usage or usage
                for choice in chunk.choices or ():
                    parts.append(choice.delta.content or "")
                    refusal += getattr(choice.delta, "refusal", None) or ""
                    stop = choice.finish_reason or stop
            text = "".join(parts)
        else:
            choice = parsed.choices[0]
            text = choice.message.content or ""
            refusal = getattr(choice.message, "refusal", None) or ""
            stop, model, usage = choice.finish_reason or "", parsed.model, parsed.usage
        if not isinstance(text, str):
            raise TypeError("the message content is not text")
        error = ""
        if refusal or stop == "content_filter":
            error = "refusal: the model declined to summarise"
        found = usage_from_openai(usage) if usage is not None else _estimated_usage(params, text)
        return Answer(text=text, usage=found, model=str(model or self.model), stop_reason=stop,
                      error=error)  # fmt: skip

    def _read_responses(self, parsed: Any, params: dict[str, Any]) -> Answer:
        if self.stream:
            final = None
            for event in parsed:
                if event.type in ("response.completed", "response.incomplete"):
                    final = event.response
                elif event.type == "response.failed":
                    raise ValueError("the response failed")
            if final is None:
                raise ValueError("the stream ended without a completed response")
            parsed = final
        texts: list[str] = []
        refused = False
        for item in parsed.output or ():
            for part in getattr(item, "content", None) or ():
                if part.type == "output_text":
                    texts.append(part.text)
                refused = refused or part.type == "refusal"
        text = "".join(texts)
        usage = parsed.usage
        found = usage_from_openai(usage) if usage is not None else _estimated_usage(params, text)
        details = getattr(parsed, "incomplete_details", None)
        stop = str(getattr(details, "reason", "") or parsed.status or "")
        error = "refusal: the model declined to summarise" if refused else ""
        return Answer(text=text, usage=found, model=str(parsed.model or self.model),
                      stop_reason=stop, error=error)  # fmt: skip

    def _get_client(self) -> openai.OpenAI:
        with self._lock:
            if self._client is None:
                key = self._api_key or os.environ.get(KEY_ENV)
                if not key and not self.local:
                    raise SummarizerError(
                        f"openai: no API key for {self.endpoint} — set OPENAI_API_KEY in the "
                        "environment (a local endpoint needs none)"
                    )
                import openai

                self._client = openai.OpenAI(
                    api_key=key or LOCAL_KEY, base_url=self.base_url,
                    max_retries=self.max_retries, timeout=self.timeout,
                )  # fmt: skip
            return self._client
