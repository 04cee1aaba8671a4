"""A suite's configurations: saved ones, presets at one window, or a grid of up to 3
parameters over one base (a preset or a saved configuration), each a list or a range.

Every configuration becomes a plain dict stored on the suite (``Suite.configs``) so a run
can be rebuilt from it at any time: ``{"label", "strategy", "config_id", "params",
"window", "grid"}``. ``window`` is the model context window (``ctxlab.engine.budget``);
``params`` are explicit values on top of it (they win, as on the run form). Every
combination is validated by the engine's own ``params.validate`` before anything is
stored, so errors name the parameter and its range as the strategy form does.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ctxlab.engine.budget import window_params
from ctxlab.engine.core.params import Param, parse_value, validate
from ctxlab.engine.strategies import LIBRARY, STRATEGIES, get_strategy_class

WINDOW_KEY = "window"
MAX_GRID_PARAMS = 3
MAX_VALUES = 12  # per grid parameter
MAX_CONFIGS = 48  # configurations per suite
MAX_RUNS = 2400  # transcripts × configurations (100 × 20 fits, with room)
NUMERIC = ("int", "float")


class SuiteInputError(ValueError):
    """Bad suite input; the message says what to fix."""


@dataclass(frozen=True, slots=True)
class Base:
    """What a grid varies (or one preset/saved configuration as it is)."""

    strategy: str
    config_id: int | None = None
    config_name: str = ""
    saved: Mapping[str, Any] | None = None  # the saved configuration's changed params

    @property
    def label(self) -> str:
        return self.config_name or self.strategy


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}" if math.isfinite(value) else repr(value)
    return str(value)


def check_strategy(name: str) -> str:
    if name not in STRATEGIES:
        raise SuiteInputError(f"unknown strategy {name!r} (known: {', '.join(LIBRARY)})")
    return name


def grid_param(strategy: str, key: str) -> Param:
    """The numeric (or bool/choice) parameter ``key`` of ``strategy``; ``window`` is the model
    window unless the strategy has a parameter of that name."""
    specs = {p.name: p for p in get_strategy_class(strategy).PARAMS}
    if key in specs:
        return specs[key]
    if key == WINDOW_KEY:
        cls = get_strategy_class(strategy)
        own = specs.get(cls.WINDOW)
        return Param(
            WINDOW_KEY,
            own.default if own else 128000,
            "model context window",
            "int",
            min=max((own.min or 1) if own else 1, 1),
            max=own.max if own else None,
        )
    known = ", ".join([WINDOW_KEY, *sorted(specs)])
    raise SuiteInputError(f"unknown parameter {key!r} for strategy {strategy!r} (known: {known})")


def parse_values(spec: Param, raw: str) -> list[Any]:
    """``v1,v2,...`` or ``start:stop:step`` (inclusive, Decimal steps) -> typed values."""
    text = raw.strip()
    if not text:
        raise SuiteInputError(f"{spec.name}: give at least one value")
    bounds = text.split(":")
    if len(bounds) == 3:
        values = _range(spec, *bounds)
    elif len(bounds) == 1:
        try:
            values = [parse_value(spec, part) for part in text.split(",") if part.strip()]
        except ValueError as exc:
            raise SuiteInputError(str(exc)) from None
    else:
        raise SuiteInputError(f"{spec.name}: give v1,v2,... or start:stop:step (got {raw!r})")
    if not values:
        raise SuiteInputError(f"{spec.name}: give at least one value")
    if len(values) > MAX_VALUES:
        raise SuiteInputError(f"{spec.name}: {len(values)} values; at most {MAX_VALUES}")
    if len(set(map(fmt, values))) != len(values):
        raise SuiteInputError(f"{spec.name}: values repeat")
    return values


def _range(spec: Param, start: str, stop: str, step: str) -> list[Any]:
    if spec.type not in NUMERIC:
        raise SuiteInputError(f"{spec.name}: a range needs a numeric parameter")
    try:
        first, last, delta = (Decimal(b.strip()) for b in (start, stop, step))
    except InvalidOperation:
        raise SuiteInputError(f"{spec.name}: start:stop:step must be numbers") from None
    if not delta.is_finite() or delta == 0 or (last - first) * delta < 0:
        raise SuiteInputError(f"{spec.name}: step {step} never gets from {start} to {stop}")
    count = int((last - first) / delta) + 1
    if count > MAX_VALUES:
        raise SuiteInputError(
            f"{spec.name}: {start}..{stop} by {step} makes {count} values; at most {MAX_VALUES}"
        )
    values = [first + i * delta for i in range(count)]
    if spec.type == "int":
        if any(v != v.to_integral_value() for v in values):
            raise SuiteInputError(f"{spec.name}: is an int; the range gives fractions")
        return [int(v) for v in values]
    return [float(v) for v in values]


def make_config(
    base: Base, *, window: int | None, grid: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One validated configuration dict (SuiteInputError names what is wrong)."""
    grid = dict(grid or {})
    own = {p.name for p in get_strategy_class(base.strategy).PARAMS}
    if WINDOW_KEY in grid and WINDOW_KEY not in own:
        window = int(grid[WINDOW_KEY])
    explicit = {k: v for k, v in grid.items() if k != WINDOW_KEY or k in own}
    try:
        merged = {**dict(base.saved or {}), **window_params(base.strategy, window, explicit)}
        validate(get_strategy_class(base.strategy).PARAMS, merged, strategy=base.strategy)
    except ValueError as exc:
        raise SuiteInputError(f"{base.label}: {exc}") from None
    label = " ".join([base.label, *(f"{k}={fmt(v)}" for k, v in grid.items())])
    if window is not None and WINDOW_KEY not in grid:
        label += f" @{window}"
    return {
        "label": label[:100],
        "strategy": base.strategy,
        "config_id": base.config_id,
        "params": explicit,
        "window": window,
        "grid": grid,
    }


def grid_configs(
    base: Base, axes: Mapping[str, str], *, window: int | None = None
) -> list[dict[str, Any]]:
    """Every combination of the axes' values (first axis slowest), validated."""
    keys = [k.strip() for k in axes if k.strip()]
    if not keys:
        raise SuiteInputError("the grid is empty: give 1 to 3 parameters with values")
    if len(keys) > MAX_GRID_PARAMS:
        raise SuiteInputError(
            f"a grid varies at most {MAX_GRID_PARAMS} parameters (got {len(keys)})"
        )
    values = [parse_values(grid_param(base.strategy, k), axes[k]) for k in keys]
    total = math.prod(len(v) for v in values)
    if total > MAX_CONFIGS:
        raise SuiteInputError(
            f"the grid makes {total} configurations ({' × '.join(str(len(v)) for v in values)});"
            f" at most {MAX_CONFIGS}"
        )
    return [
        make_config(base, window=window, grid=dict(zip(keys, combo, strict=True)))
        for combo in itertools.product(*values)
    ]


def preset_configs(names: Sequence[str], *, window: int | None) -> list[dict[str, Any]]:
    return [make_config(Base(check_strategy(n)), window=window) for n in names]


def check_size(configs: Sequence[Mapping[str, Any]], transcripts: int, replicates: int = 1) -> None:
    """Refuse empty or oversized suites with a message saying which limit."""
    if not configs:
        raise SuiteInputError("choose at least one configuration (saved, preset or a grid)")
    if transcripts < 1:
        raise SuiteInputError("choose at least one transcript")
    if len(configs) > MAX_CONFIGS:
        raise SuiteInputError(f"{len(configs)} configurations; at most {MAX_CONFIGS}")
    labels = [c["label"] for c in configs]
    repeated = sorted({x for x in labels if labels.count(x) > 1})
    if repeated:
        raise SuiteInputError(f"configurations repeat: {', '.join(repeated)}")
    if transcripts * len(configs) * replicates > MAX_RUNS:
        times = f" × {replicates} replicates" if replicates > 1 else ""
        raise SuiteInputError(
            f"{transcripts} transcripts × {len(configs)} configurations{times} = "
            f"{transcripts * len(configs) * replicates} runs; at most {MAX_RUNS}"
        )
