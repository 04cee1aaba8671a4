"""What every model-backed summariser shares, whatever the provider.

- the cache hook (``SummaryCache``; ``MemorySummaryCache`` for tests and the CLI; the web
  app stores summaries in its database) keyed by ``cache_key`` over the exact request body;
- one ``CallRecord`` per ``summarize`` call (cached or not, with its usage, cost and error),
  which the web app's budget cap and accounting read;
- the call itself (``ProviderSummarizer.summarize``): cache look-up, the provider's request,
  the failure path (an SDK error, or an answer that cannot be read, raises ``SummarizerError``
  with a readable reason, never a credential), the record and the cache write.

A provider subclass says how a ``SummaryRequest`` becomes its request body (``params``), how
to send it (``_send``) and how to describe its SDK's errors (``_describe``).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import socket
import threading
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from ...core.model import Usage
from ...core.summary_request import SummarizerError, SummaryRequest, SummaryResponse, SummaryUsage

if TYPE_CHECKING:
    from ...cost.pricing import ModelInfo


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


def cache_key(params: dict[str, Any]) -> str:
    """sha256 over the exact request body (model, system, messages, max_tokens and the
    sampling/thinking settings sent): the same prompt to the same model is paid once."""
    blob = json.dumps(params, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def public_url(url: str) -> str:
    """A URL as it may be stored, shown or logged: scheme, host, port and path, never a user,
    password or query a base URL may carry."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


def is_local_endpoint(base_url: str | None) -> bool:
    """Whether a base URL is this machine or a private network (a local vLLM, Ollama,
    llama.cpp or LM Studio): such an endpoint costs nothing per token."""
    if not base_url:
        return False
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal", ".lan")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        try:  # the short IPv4 forms the resolver also takes: 127.1, 0x7f000001
            address = ipaddress.ip_address(socket.inet_aton(host))
        except OSError:
            return False
    return address.is_loopback or address.is_private or address.is_link_local


def describe_sdk_error(exc: BaseException, sdk: Any, *, timeout: float, attempts: int) -> str:
    """A readable one-line reason for a failed call (never includes credentials). ``sdk`` is
    the provider's SDK module: ``anthropic`` and ``openai`` name their errors alike."""
    if isinstance(exc, sdk.APITimeoutError):
        return f"timeout: no answer within {timeout:g}s (after {attempts} attempts)"
    if isinstance(exc, sdk.APIStatusError):
        body: dict[str, Any] = exc.body if isinstance(exc.body, dict) else {}
        raw_err = body.get("error", body)  # anthropic wraps the error, openai hands it over
        err: dict[str, Any] = raw_err if isinstance(raw_err, dict) else {}
        kind = str(err.get("type") or type(exc).__name__)
        message = str(err.get("message") or exc.message)
        rid = f" [request {exc.request_id}]" if exc.request_id else ""
        status = exc.status_code
        retried = status in (408, 409, 429) or status >= 500  # what the SDKs retry
        tail = f" (after {attempts} attempts)" if retried else ""
        return f"HTTP {status} {kind}: {message}{rid}{tail}"
    if isinstance(exc, sdk.APIConnectionError):
        return f"connection error: {exc.message} (after {attempts} attempts)"
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True, slots=True)
class Answer:
    """What a provider's call returned, in the engine's terms."""

    text: str
    usage: Usage
    model: str
    stop_reason: str = ""
    request_id: str = ""
    error: str = ""  # a refusal or an empty answer: the strategy's failure path


class MalformedAnswer(Exception):
    """The endpoint answered 2xx with a body that is not the API's shape."""


class ProviderSummarizer:
    """The call, cache and record shared by the provider summarisers."""

    name = ""
    provider_label = ""  # "anthropic", "openai": the error messages' prefix
    base_url: str | None = None  # the endpoint (None: the SDK's default)

    def __init__(self, *, model: str, info: ModelInfo | None, cache: SummaryCache | None) -> None:
        self.model = model
        self.info = info
        self.cache = cache
        self.calls: list[CallRecord] = []
        self.replicate = 0  # which of N replicates this call is (``key``)
        self._lock = threading.Lock()

    # -- accounting --------------------------------------------------------------------------
    @property
    def total_cost(self) -> Decimal:
        return sum((c.cost_usd for c in self.calls if not c.cached), Decimal(0))

    @property
    def cache_hits(self) -> int:
        return sum(1 for c in self.calls if c.cached)

    def totals(self) -> dict[str, Any]:
        """The calls so far, as the command lines print them."""
        return {
            "calls": len(self.calls),
            "paid_calls": sum(1 for c in self.calls if c.usage is not None and not c.cached),
            "cache_hits": self.cache_hits,
            "errors": sum(1 for c in self.calls if c.error),
            "cost_usd": float(self.total_cost),
        }

    # -- what a provider says ----------------------------------------------------------------
    def params(self, request: SummaryRequest) -> dict[str, Any]:
        raise NotImplementedError

    def key(self, request: SummaryRequest) -> str:
        """The cache key: the request body (``_key_parts``) and, from the second replicate
        on, the replicate's number, so each replicate is its own call (replicate 0 keeps
        the plain key: the summaries cached before replicates existed still answer)."""
        parts = self._key_parts(request)
        return cache_key({"replicate": self.replicate, **parts} if self.replicate else parts)

    def _key_parts(self, request: SummaryRequest) -> dict[str, Any]:
        return self.params(request)

    def _has_input(self, params: dict[str, Any]) -> bool:
        return bool(params.get("messages"))

    def _send(self, params: dict[str, Any]) -> Answer:
        raise NotImplementedError

    def _is_sdk_error(self, exc: BaseException) -> bool:
        raise NotImplementedError

    def _describe(self, exc: BaseException) -> str:
        raise NotImplementedError

    def _price(self, usage: Usage) -> Decimal:
        # pricing loads genai-prices' metadata: only once a call has a usage to price,
        # not whenever the summariser registry loads (``replay --help``)
        from ...cost.pricing import cost

        return cost(usage, self.info) if self.info is not None else Decimal(0)

    # -- the seam ----------------------------------------------------------------------------
    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        params = self.params(request)
        key = self.key(request)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self._record(request, key, cached=True, usage=None)
                return hit
        if not self._has_input(params):
            raise SummarizerError("nothing to summarise: the request has no non-empty message")
        started = time.monotonic()
        try:
            answer = self._send(params)
        except MalformedAnswer as exc:
            reason = f"malformed response: {exc}"
            self._record(request, key, cached=False, usage=None, error=reason, started=started)
            raise SummarizerError(f"{self.provider_label} {self.model}: {reason}") from None
        except Exception as exc:  # the SDK already retried what is retryable
            if not self._is_sdk_error(exc):
                raise
            reason = self._describe(exc)
            self._record(request, key, cached=False, usage=None, error=reason, started=started)
            raise SummarizerError(f"{self.provider_label} {self.model}: {reason}") from None
        usage = answer.usage
        response = SummaryResponse(
            text="" if answer.error else answer.text,
            usage=SummaryUsage(input_tokens=usage.prompt_tokens, output_tokens=usage.output),
            error=answer.error,
            model=answer.model or self.model,
        )
        self._record(
            request, key, cached=False, usage=usage, error=answer.error,
            stop=answer.stop_reason, request_id=answer.request_id, started=started,
        )  # fmt: skip
        if self.cache is not None and not answer.error:
            self.cache.put(key, response)
        return response

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
        record = CallRecord(
            strategy=request.strategy,
            key=key,
            model=self.model,
            cached=cached,
            usage=usage,
            cost_usd=self._price(usage) if usage is not None else Decimal(0),
            error=error,
            stop_reason=stop,
            request_id=request_id,
            seconds=time.monotonic() - started if started is not None else 0.0,
        )
        with self._lock:
            self.calls.append(record)
