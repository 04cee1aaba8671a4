"""The Claude plumbing judge_app shares with replay_app (cache, budget cap, key check).

replay_app's modules are being regrouped by purpose; this is the one place that knows
where its ``llm`` module lives.
"""

from __future__ import annotations

try:
    from replay_app.costs import llm
except ImportError:  # the layout before replay_app was grouped by purpose
    from replay_app import llm  # type: ignore[attr-defined,no-redef,unused-ignore]

__all__ = ["llm"]
