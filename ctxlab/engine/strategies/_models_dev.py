"""models.dev's model limits, as OpenCode takes them: ``Provider`` gives each model the
``limit`` (context, input, output) of ``providers/<providerID>/models/<modelID>.toml``.

OpenCode reads models.dev's published ``api.json`` (refreshed hourly), so a session ran at the
limits models.dev gave on its day, not at today's: ``history`` in
``data/models_dev/limits.json`` keeps each model's earlier limits with the time models.dev's
main line set them (see NOTICE.md there).
"""

from __future__ import annotations

import json
from bisect import bisect_right
from functools import cache
from pathlib import Path
from typing import Any

LIMITS_FILE = Path(__file__).resolve().parents[1] / "data" / "models_dev" / "limits.json"


@cache
def _data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(LIMITS_FILE.read_text("utf-8"))
    return data


def model_limits(provider: str, model: str, at: float | None = None) -> tuple[int, int, int] | None:
    """``(context, input, output)`` of ``model`` at ``provider`` (0 = not given), as models.dev
    gave them at Unix time ``at`` (seconds; None: the vendored commit's), or None where
    models.dev does not list it (a custom provider or model keeps its configured limits, which
    a transcript does not show). Before a model's first recorded change its first limits hold."""
    data = _data()
    rows = data.get("history", {}).get(provider, {}).get(model) if at is not None else None
    if rows:
        k = bisect_right([row[0] for row in rows], at)
        row = rows[max(k - 1, 0)]
        return (row[1], row[2], row[3])
    found = data["limits"].get(provider, {}).get(model)
    return (found[0], found[1], found[2]) if found else None
