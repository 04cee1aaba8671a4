"""Every summariser by name: ``offline``, ``failing`` and ``recorded`` (the pages and the
CLI add ``anthropic``, which needs the database)."""

from __future__ import annotations

from ..core.summary_request import Summarizer
from .offline import FailingSummarizer, OfflineSummarizer
from .recorded import RecordedSummarizer

SUMMARIZERS: dict[str, type] = {
    "offline": OfflineSummarizer,
    "failing": FailingSummarizer,
    "recorded": RecordedSummarizer,
}


def get_summarizer(name: str) -> Summarizer:
    """A summariser by name (``offline``, ``failing``); later helpers add ``anthropic``."""
    if name not in SUMMARIZERS:
        raise ValueError(f"unknown summarizer {name!r} (known: {', '.join(sorted(SUMMARIZERS))})")
    summarizer: Summarizer = SUMMARIZERS[name]()
    return summarizer
