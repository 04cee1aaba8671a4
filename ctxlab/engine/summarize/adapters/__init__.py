"""Adapters from the engine's seams (``Summarizer``, ``TokenCounter``) to real providers.

They import their SDK lazily so the engine stays importable without it.
"""

from __future__ import annotations
