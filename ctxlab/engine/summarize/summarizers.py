"""Every summariser by name: ``offline``, ``failing``, ``recorded`` and ``openai`` (any
OpenAI-compatible endpoint, with ``model``; the pages and ``manage.py replay`` add
``anthropic`` and their database cache)."""

from __future__ import annotations

from typing import Any

from ..core.summary_request import Summarizer
from .adapters.llm_common import MemorySummaryCache
from .adapters.openai_summarizer import OpenAISummarizer
from .offline import FailingSummarizer, OfflineSummarizer
from .recorded import RecordedSummarizer

SUMMARIZERS: dict[str, type] = {
    "offline": OfflineSummarizer,
    "failing": FailingSummarizer,
    "recorded": RecordedSummarizer,
    "openai": OpenAISummarizer,
}
NEEDS_MODEL = frozenset({"openai"})


def get_summarizer(name: str, *, model: str | None = None, **options: Any) -> Summarizer:
    """A summariser by name; ``openai`` needs ``model`` (``options``: ``api``, ``stream``,
    ``base_url``, ``cache``: a process-local cache unless one is given)."""
    if name not in SUMMARIZERS:
        raise ValueError(f"unknown summarizer {name!r} (known: {', '.join(sorted(SUMMARIZERS))})")
    if name in NEEDS_MODEL:
        if not model:
            raise ValueError(f"--summarizer {name} needs --model NAME")
        options.setdefault("cache", MemorySummaryCache())
        return OpenAISummarizer(model=model, **options)
    summarizer: Summarizer = SUMMARIZERS[name]()
    return summarizer
