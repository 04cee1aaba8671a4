"""Named actions on strategy configurations (keyword-only, ``<entity>_<verb>``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ctxlab.engine.core.params import validate
from ctxlab.engine.native_config import NATIVE_SHAPES, NativeConfig, native_config
from ctxlab.engine.strategies import STRATEGIES, get_strategy_class
from replay_app.models import (
    StrategyConfig,
)

EXPORT_FORMAT = "ctxlab.strategy-config/1"

# ---------------------------------------------------------------------------------------
# Strategy configurations
# ---------------------------------------------------------------------------------------


def params_validate(*, strategy: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Complete, typed params for ``strategy``; ValueError names the bad one."""
    cls = get_strategy_class(strategy)
    return validate(cls.PARAMS, params, strategy=strategy)


def params_changed(*, strategy: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Only the params that differ from the strategy's defaults (what a config stores)."""
    full = params_validate(strategy=strategy, params=params)
    defaults = {p.name: p.default for p in get_strategy_class(strategy).PARAMS}
    return {k: v for k, v in full.items() if defaults.get(k) != v}


def config_create(
    *,
    owner: Any,
    name: str,
    strategy: str,
    params: Mapping[str, Any] | None = None,
    description: str = "",
) -> StrategyConfig:
    changed = params_changed(strategy=strategy, params=params or {})
    return StrategyConfig.objects.create(
        owner=owner,
        name=name.strip(),
        strategy=strategy,
        params=changed,
        description=description,
    )


def config_update(
    *,
    config: StrategyConfig,
    name: str | None = None,
    params: Mapping[str, Any] | None = None,
    description: str | None = None,
) -> StrategyConfig:
    if name is not None:
        config.name = name.strip()
    if params is not None:
        config.params = params_changed(strategy=config.strategy, params=params)
    if description is not None:
        config.description = description
    config.save()
    return config


def config_full_params(config: StrategyConfig) -> dict[str, Any]:
    return params_validate(strategy=config.strategy, params=config.params)


def config_export(config: StrategyConfig) -> dict[str, Any]:
    """The portable JSON form (``config_import`` reads it back)."""
    return {
        "format": EXPORT_FORMAT,
        "name": config.name,
        "strategy": config.strategy,
        "description": config.description,
        "params": config_full_params(config),
    }


def config_import(*, owner: Any, data: Any, name: str | None = None) -> StrategyConfig:
    """Create a config from exported JSON (dict or text). ValueError says what is wrong."""
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object with strategy and params")
    strategy = data.get("strategy")
    if not isinstance(strategy, str) or strategy not in STRATEGIES:
        known = ", ".join(STRATEGIES)
        raise ValueError(f"unknown or missing strategy {strategy!r} (known: {known})")
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ValueError('"params" must be an object')
    final_name = (name or data.get("name") or strategy).strip()
    final_name = _unique_config_name(owner, final_name)
    return config_create(
        owner=owner,
        name=final_name,
        strategy=strategy,
        params=params,
        description=str(data.get("description") or ""),
    )


def _unique_config_name(owner: Any, name: str) -> str:
    existing = set(
        StrategyConfig.objects.filter(owner=owner, name__startswith=name).values_list(
            "name", flat=True
        )
    )
    if name not in existing:
        return name
    n = 2
    while f"{name} ({n})" in existing:
        n += 1
    return f"{name} ({n})"


def config_native(config: StrategyConfig) -> NativeConfig:
    return native_config(config.strategy, config.params)


# ---------------------------------------------------------------------------------------
# Adopting a winner: a run's (or a suite configuration's) strategy and parameters
# ---------------------------------------------------------------------------------------


def config_adopt(
    *, owner: Any, strategy: str, params: Mapping[str, Any], name: str, description: str
) -> StrategyConfig:
    """A saved configuration with exactly the winner's parameters (a run stores them
    complete, window included), under ``name`` made unique among the owner's."""
    return config_create(
        owner=owner,
        name=_unique_config_name(owner, name.strip()[:90] or strategy),
        strategy=strategy,
        params=params,
        description=description,
    )


def has_native(strategy: str) -> bool:
    """Whether ``strategy``'s original agent has a config file ctxlab can write."""
    return strategy in NATIVE_SHAPES
