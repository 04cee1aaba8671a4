"""The model summarisers (Claude, any OpenAI-compatible endpoint) and the exact counter as
the web app (and ``manage.py replay``) use them.

- ``PROVIDERS``: the summariser names that call a model; ``make_llm`` builds one with the
  database cache, ``key_available``/``no_key_message`` say whether it can authenticate.

- ``DBSummaryCache`` implements the adapter's cache hook in the database (``SummaryCache``
  rows by the sha256 of the request body), so a replay from the web or the CLI never pays
  twice for the same summary.
- ``DBCountStore`` backs ``AnthropicCounter``'s store with ``TokenCountCache`` rows.
- ``MeteredSummarizer`` wraps any summariser: one ``CallInfo`` per ``summarize`` call in
  call order (= the replay's summary ids), and a spend cap: once the calls paid so far reach
  the budget, further calls fail (the strategy takes its own failure path) instead of paying.

The API keys are never read, stored or shown here: each SDK takes its own from the
environment (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``); ``key_available`` only checks that
it is set (an OpenAI-compatible endpoint on this machine or a private network needs none).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from ctxlab.engine.core.summary_request import (
    Summarizer,
    SummarizerError,
    SummaryRequest,
    SummaryResponse,
    SummaryUsage,
)
from ctxlab.engine.cost.pricing import find_model
from ctxlab.engine.summarize.adapters import openai_summarizer
from ctxlab.engine.summarize.adapters.anthropic_counter import AnthropicCounter
from ctxlab.engine.summarize.adapters.anthropic_summarizer import (
    KEY_ENV,
    AnthropicSummarizer,
    CallRecord,
)
from ctxlab.engine.summarize.adapters.llm_common import (
    ProviderSummarizer,
    is_local_endpoint,
    public_url,
)
from ctxlab.engine.summarize.adapters.openai_summarizer import OpenAISummarizer
from replay_app.models import SummaryCache, TokenCountCache

PROVIDERS = ("anthropic", "openai")  # the summarisers that call a model


def key_available(provider: str = "anthropic") -> bool:
    """Whether the SDK will find a key in this process's environment (never its value); an
    OpenAI-compatible endpoint on this machine or a private network needs none."""
    if provider == "openai":
        return openai_summarizer.key_available()
    return any(os.environ.get(name) for name in KEY_ENV)


NO_KEY_MESSAGE = (
    "The Claude summariser needs ANTHROPIC_API_KEY in the server's environment, and it is "
    "not set. Set it where the server and worker run (it is never stored or shown here), "
    "or use the offline summariser."
)
NO_OPENAI_KEY_MESSAGE = (
    "The OpenAI-compatible summariser needs OPENAI_API_KEY in the server's environment for "
    "a remote endpoint (OPENAI_BASE_URL, default OpenAI's), and it is not set. Set it where "
    "the server and worker run (it is never stored or shown here), point OPENAI_BASE_URL at "
    "a local server (vLLM, Ollama, llama.cpp, LM Studio: no key needed), or use the offline "
    "summariser."
)


def split_model(spec: str) -> tuple[str, str]:
    """A judge's model as one string: ``openai:NAME`` is an OpenAI-compatible endpoint's
    model, anything else a Claude model (the probe pages store it as one field)."""
    provider, sep, name = spec.partition(":")
    if sep and provider in PROVIDERS:
        return provider, name
    return "anthropic", spec


def endpoint_label() -> str:
    """The OpenAI-compatible endpoint as the pages show it (``public_url``: never a user or
    password a URL may carry), and whether it is local."""
    shown = public_url(openai_summarizer.endpoint_url())
    return f"{shown} (local: no cost)" if is_local_endpoint(shown) else shown


def no_key_message(provider: str) -> str:
    return NO_OPENAI_KEY_MESSAGE if provider == "openai" else NO_KEY_MESSAGE


def summary_models() -> list[str]:
    models = list(getattr(settings, "CTXLAB_SUMMARY_MODELS", []) or [])
    default = default_model()
    if default not in models:
        models.insert(0, default)
    return models


def default_model() -> str:
    return str(getattr(settings, "CTXLAB_DEFAULT_SUMMARY_MODEL", "claude-haiku-5-5"))


def model_label(model: str) -> str:
    info = find_model(model)
    return f"{info.name} ({model})" if info else model


def budget_default() -> Decimal:
    return Decimal(str(getattr(settings, "CTXLAB_RUN_BUDGET_USD", "5.00")))


def summarizer_label(summarizer: str, model: str) -> str:
    """What the run page shows: ``Claude (claude-haiku-5-5)`` / ``offline``."""
    if summarizer == "anthropic":
        return f"Claude ({model or default_model()})"
    if summarizer == "openai":
        return f"OpenAI-compatible ({model})"
    return summarizer


# --- the cache hook in the database ----------------------------------------------------------


class DBSummaryCache:
    """``SummaryCache`` protocol over ``SummaryCache`` rows (failed calls are never cached)."""

    def get(self, key: str) -> SummaryResponse | None:
        row = SummaryCache.objects.filter(key=key).first()
        if row is None:
            return None
        SummaryCache.objects.filter(pk=row.pk).update(hits=F("hits") + 1)
        return SummaryResponse(
            text=row.text,
            usage=SummaryUsage(row.input_tokens, row.output_tokens),
            model=row.response_model or row.model,
        )

    def put(self, key: str, response: SummaryResponse) -> None:
        usage = response.usage
        try:
            with transaction.atomic():
                SummaryCache.objects.get_or_create(
                    key=key,
                    defaults={
                        "model": response.model[:100],
                        "text": response.text,
                        "response_model": response.model[:100],
                        "input_tokens": usage.input_tokens if usage else 0,
                        "output_tokens": usage.output_tokens if usage else 0,
                    },
                )
        except IntegrityError:  # a concurrent run stored the same summary first
            pass


class DBCountStore(MutableMapping[str, int]):
    """``AnthropicCounter.store`` over ``TokenCountCache`` rows."""

    def __getitem__(self, key: str) -> int:
        value = TokenCountCache.objects.filter(key=key).values_list("tokens", flat=True).first()
        if value is None:
            raise KeyError(key)
        return int(value)

    def __setitem__(self, key: str, value: int) -> None:
        TokenCountCache.objects.update_or_create(key=key, defaults={"tokens": int(value)})

    def __delitem__(self, key: str) -> None:
        TokenCountCache.objects.filter(key=key).delete()

    def __iter__(self) -> Iterator[str]:
        return iter(TokenCountCache.objects.values_list("key", flat=True))

    def __len__(self) -> int:
        return TokenCountCache.objects.count()


# --- metering --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallInfo:
    """One summarize call as the run stores it beside the summary row."""

    cached: bool = False
    usage: dict[str, int] | None = None
    cost_usd: float = 0.0
    error: str = ""
    request_id: str = ""
    seconds: float = 0.0
    model: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cached": self.cached, "cost_usd": self.cost_usd}
        if self.model:
            out["model"] = self.model
        if self.usage is not None:
            out["usage"] = self.usage
        if self.error:
            out["error"] = self.error
        if self.request_id:
            out["request_id"] = self.request_id
        if self.seconds:
            out["seconds"] = round(self.seconds, 3)
        return out


def _call_info(record: CallRecord | None, error: str = "") -> CallInfo:
    if record is None:
        return CallInfo(error=error)
    usage = None
    if record.usage is not None:
        u = record.usage
        usage = {
            "input_tokens": u.input_uncached,
            "cache_read_input_tokens": u.cache_read,
            "cache_creation_input_tokens": u.cache_write_5m + u.cache_write_1h,
            "output_tokens": u.output,
        }
    return CallInfo(
        cached=record.cached,
        usage=usage,
        cost_usd=float(record.cost_usd),
        error=record.error or error,
        request_id=record.request_id,
        seconds=record.seconds,
        model=record.model,
    )


class MeteredSummarizer:
    """Delegates to ``inner``; ``infos[i]`` describes the i-th call (summary id ``i``)."""

    def __init__(self, inner: Summarizer, *, budget_usd: Decimal | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.budget = budget_usd
        self.infos: list[CallInfo] = []
        self.spent = Decimal(0)
        self.refused = 0

    @property
    def model(self) -> str:
        return str(getattr(self.inner, "model", ""))

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        calls: list[CallRecord] | None = getattr(self.inner, "calls", None)
        before = len(calls) if calls is not None else 0
        if self.budget is not None and self.spent >= self.budget and not self._cached(request):
            self.refused += 1
            reason = (
                f"budget: ${self.spent:.4f} spent of the ${self.budget:.2f} run budget; "
                "no further paid summary calls"
            )
            self.infos.append(CallInfo(error=reason))
            raise SummarizerError(reason)
        try:
            response = self.inner.summarize(request)
        except SummarizerError as exc:
            self.infos.append(self._after(calls, before, str(exc)))
            raise
        self.infos.append(self._after(calls, before, response.error))
        return response

    def _cached(self, request: SummaryRequest) -> bool:
        cache = getattr(self.inner, "cache", None)
        key = getattr(self.inner, "key", None)
        return bool(cache is not None and key is not None and cache.get(key(request)))

    def _after(self, calls: list[CallRecord] | None, before: int, error: str) -> CallInfo:
        record = calls[before] if calls is not None and len(calls) > before else None
        if record is not None and not record.cached:
            self.spent += record.cost_usd
        return _call_info(record, error)

    def totals(self) -> dict[str, Any]:
        usage = {"input_tokens": 0, "cache_read_input_tokens": 0,
                 "cache_creation_input_tokens": 0, "output_tokens": 0}  # fmt: skip
        for info in self.infos:
            if info.usage and not info.cached:
                for k in usage:
                    usage[k] += info.usage.get(k, 0)
        return {
            "calls": len(self.infos),
            "paid_calls": sum(1 for i in self.infos if i.usage is not None and not i.cached),
            "cache_hits": sum(1 for i in self.infos if i.cached),
            "errors": sum(1 for i in self.infos if i.error),
            "refused_by_budget": self.refused,
            "usage": usage,
            "cost_usd": float(self.spent),
        }


def make_anthropic(*, model: str | None = None) -> AnthropicSummarizer:
    """Claude with the database cache; key and base URL from the environment (the SDK's)."""
    return AnthropicSummarizer(model=model or default_model(), cache=DBSummaryCache())


def make_llm(
    provider: str, model: str, *, api: str = "chat", stream: bool = False, cached: bool = True
) -> ProviderSummarizer:
    """The model summariser ``provider`` names (one of ``PROVIDERS``), with the database
    cache (``cached=False``: none, to read its endpoint and price only). Key and base URL
    come from the environment (each SDK's own variables)."""
    cache = DBSummaryCache() if cached else None
    if provider == "openai":
        if api not in openai_summarizer.APIS:
            raise ValueError(f"unknown OpenAI API {api!r} (known: chat, responses)")
        return OpenAISummarizer(model=model, api=api, stream=stream, cache=cache)
    if provider == "anthropic":
        if cached:
            return make_anthropic(model=model)
        return AnthropicSummarizer(model=model or default_model())
    raise ValueError(f"unknown model summariser {provider!r} (known: {', '.join(PROVIDERS)})")


def make_counter(*, model: str | None = None) -> AnthropicCounter:
    rate = float(getattr(settings, "CTXLAB_COUNT_TOKENS_PER_SECOND", 5.0))
    return AnthropicCounter(
        model=model or default_model(), store=DBCountStore(), per_second=rate, burst=rate
    )
