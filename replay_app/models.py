"""Models (filled in by later issues)."""

from __future__ import annotations
