"""models.dev's model limits, as OpenCode takes them: ``Provider`` gives each model the
``limit`` (context, input, output) of ``providers/<providerID>/models/<modelID>.toml``.

``data/models_dev/limits.json`` keeps only those numbers (see NOTICE.md there).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

LIMITS_FILE = Path(__file__).resolve().parents[1] / "data" / "models_dev" / "limits.json"


@cache
def _table() -> dict[str, dict[str, list[int]]]:
    data: dict[str, dict[str, list[int]]] = json.loads(LIMITS_FILE.read_text("utf-8"))["limits"]
    return data


def model_limits(provider: str, model: str) -> tuple[int, int, int] | None:
    """``(context, input, output)`` of ``model`` at ``provider`` (0 = not given), or None
    where models.dev does not list it (a custom provider or model keeps its configured
    limits, which a transcript does not show)."""
    found = _table().get(provider, {}).get(model)
    return (found[0], found[1], found[2]) if found else None
