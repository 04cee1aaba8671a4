"""Parameter sweeps: one strategy replayed with ONE numeric parameter set to 2-12 values.

A sweep is an ordinary comparison group (``services.group_create``); nothing marks it in
the database. ``detect`` recognises one from its runs: same strategy and summariser, and
complete params that differ in exactly one key whose values are all numbers. So a sweep
started from the CLI, the web or by hand looks the same on the group page.

Values come from a comma-separated list or start/stop/step; each is checked by the
engine's own ``params.validate`` (through ``services.params_validate``), so errors name the
parameter and its allowed range exactly as the strategy form does.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from ctxlab.engine.budget import window_param_names as budget_names
from ctxlab.engine.budget import window_params
from ctxlab.engine.core.catalogue import Better, metric, metric_best_flags
from ctxlab.engine.core.params import Param, parse_value
from ctxlab.engine.strategies import get_strategy_class
from replay_app.configs import services as config_services
from replay_app.display import vocabulary
from replay_app.models import Run, RunStatus, StrategyConfig
from replay_app.runs import analysis_state, services

WINDOW_KEY = "window"  # the comparison's model window (ctxlab.engine.budget)
WINDOW_ORIGIN = "(window from the comparison)"
MIN_VALUES = 2
MAX_VALUES = 12
MAX_COMPARE = 6  # /compare/ takes 2-6 runs
NUMERIC_TYPES = ("int", "float")


class SweepError(ValueError):
    """Bad sweep input; the message names the parameter and what to fix."""


# --- which parameters sweep ---------------------------------------------------------------


def numeric_params(strategy: str) -> list[Param]:
    return [p for p in get_strategy_class(strategy).PARAMS if p.type in NUMERIC_TYPES]


def sweepable_params(strategy: str) -> list[Param]:
    """The comparison's model window first, then the strategy's own numeric parameters."""
    own = numeric_params(strategy)
    if any(p.name == WINDOW_KEY for p in own):
        return own
    return [window_spec(strategy), *own]


def window_spec(strategy: str) -> Param:
    """The comparison's model window as a sweepable parameter of ``strategy``: its range is
    the strategy's own window parameter's (which it sets, with the ones that follow it)."""
    cls = get_strategy_class(strategy)
    own = next(p for p in cls.PARAMS if p.name == cls.WINDOW)
    follows = ", ".join(budget_names(strategy)[1:])
    return Param(
        WINDOW_KEY,
        own.default,
        f"Model context window: sets {cls.WINDOW}" + (f" (and {follows})" if follows else ""),
        "int",
        min=max(own.min or 1, 1),
        max=own.max,
        origin=f"{cls.WINDOW} (window from the comparison)",
    )


def param_spec(strategy: str, name: str) -> Param:
    """The Param ``name`` of ``strategy`` if it is numeric; SweepError otherwise. ``window``
    is the comparison's model window (unless the strategy has a parameter of that name)."""
    specs = {p.name: p for p in get_strategy_class(strategy).PARAMS}
    if name == WINDOW_KEY and name not in specs:
        return window_spec(strategy)
    spec = specs.get(name)
    if spec is None:
        known = ", ".join(p.name for p in numeric_params(strategy)) or "none"
        raise SweepError(f"{strategy} has no parameter {name!r} (numeric ones: {known})")
    if spec.type not in NUMERIC_TYPES:
        raise SweepError(
            f"{name} is a {spec.type} parameter: only int and float parameters can be swept"
        )
    return spec


# --- values -------------------------------------------------------------------------------


def parse_list(spec: Param, raw: str) -> list[Any]:
    """``"0.6, 0.7,0.8"`` -> typed values (each parsed as the strategy form parses it)."""
    parts = [part.strip() for part in raw.replace(";", ",").split(",") if part.strip()]
    return [parse_value(spec, part) for part in parts]


def parse_range(spec: Param, start: str, stop: str, step: str) -> list[Any]:
    """start, start+step, ... up to stop inclusive. Decimal arithmetic, so 0.6..0.9 by 0.1
    gives 0.7 and 0.9, not 0.7000000000000001 and a missing end point."""
    bounds = []
    for label, raw in (("start", start), ("stop", stop), ("step", step)):
        parse_value(spec, raw)  # the engine's message: "name='x' is not a valid float (...)"
        try:
            bounds.append(Decimal(raw.strip()))
        except InvalidOperation:
            raise SweepError(f"{spec.name}: {label} {raw!r} is not a number") from None
    first, last, delta = bounds
    if not delta.is_finite() or delta == 0 or (last - first) * delta < 0:
        raise SweepError(
            f"{spec.name}: step {step.strip()} never gets from {start.strip()} to {stop.strip()}"
        )
    count = int((last - first) / delta) + 1
    if count > MAX_VALUES:
        raise SweepError(
            f"{spec.name}: {start.strip()}..{stop.strip()} by {step.strip()} makes {count} "
            f"values; at most {MAX_VALUES}"
        )
    return [_typed(spec, first + i * delta) for i in range(count)]


def parse_text(spec: Param, raw: str) -> list[Any]:
    """The CLI's form: ``v1,v2,v3`` or ``start:stop:step``."""
    bounds = raw.split(":")
    if len(bounds) == 3:
        return parse_range(spec, *bounds)
    if len(bounds) != 1:
        raise SweepError(f"{spec.name}: give v1,v2,... or start:stop:step (got {raw!r})")
    return parse_list(spec, raw)


def _typed(spec: Param, value: Decimal) -> Any:
    if spec.type == "int":
        if value != value.to_integral_value():
            raise SweepError(f"{spec.name}={value} is not a valid int ({spec.describe_range()})")
        return int(value)
    return float(value)


def check_values(
    *, strategy: str, base: Mapping[str, Any], spec: Param, values: Sequence[Any]
) -> list[Any]:
    """Each value validated by the engine in the context of the base params; 2-12 distinct."""
    if not MIN_VALUES <= len(values) <= MAX_VALUES:
        raise SweepError(
            f"{spec.name}: give {MIN_VALUES} to {MAX_VALUES} values (got {len(values)})"
        )
    checked = []
    for value in values:
        if spec.name == WINDOW_KEY and spec.origin.endswith(WINDOW_ORIGIN):
            window = _check_window(spec, value)
            config_services.params_validate(
                strategy=strategy, params=window_params(strategy, window, base)
            )
            checked.append(window)
            continue
        params = config_services.params_validate(
            strategy=strategy, params={**base, spec.name: value}
        )
        checked.append(params[spec.name])
    repeated = sorted({v for v in checked if checked.count(v) > 1})
    if repeated:
        raise SweepError(f"{spec.name}: values repeat ({', '.join(map(fmt_value, repeated))})")
    return checked


def _check_window(spec: Param, value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SweepError(f"window={value!r} is not a number of tokens")
    if value < (spec.min or 1) or (spec.max is not None and value > spec.max):
        raise SweepError(f"window={value} is out of range ({spec.describe_range()})")
    return value


def fmt_value(value: Any) -> str:
    """A value as it appears in a run label: ``0.7`` not ``0.7000``, ``5`` not ``5.0``."""
    if isinstance(value, float):
        return f"{value:g}" if math.isfinite(value) and abs(value) < 1e15 else repr(value)
    return str(value)


# --- creating a sweep ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Base:
    """What a sweep varies: a preset or a saved configuration."""

    strategy: str
    config: StrategyConfig | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # e.g. the CLI's --set values
    window: int | None = None  # the comparison's model window (when not swept)

    @property
    def label(self) -> str:
        return self.config.name if self.config is not None else self.strategy

    @property
    def overrides(self) -> dict[str, Any]:
        """The params the runs share besides the swept one (a config's changes + extra)."""
        saved = dict(self.config.params) if self.config is not None else {}
        return {**saved, **self.extra}


def run_label(key: str, value: Any) -> str:
    return f"{key}={fmt_value(value)}"


def specs(base: Base, key: str, values: Sequence[Any]) -> list[services.RunSpec]:
    """One RunSpec per value: the base's config/preset with only ``key`` changed."""
    swept_window = key == WINDOW_KEY and key not in {p.name for p in numeric_params(base.strategy)}
    return [
        services.RunSpec(
            strategy=base.strategy if base.config is None else "",
            config=base.config,
            params=dict(base.extra) if swept_window else {**base.extra, key: value},
            label=run_label(key, value),
            window=value if swept_window else base.window,
        )
        for value in values
    ]


def default_name(base: Base, key: str) -> str:
    return f"sweep {key} · {base.label}"


# --- recognising a sweep ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    label: str
    hint: str
    better: Better = "lower"
    unit: str = ""
    best_rule: str = ""

    @classmethod
    def of(cls, key: str) -> Column:
        """A column from the engine's metric catalogue (label, meaning, direction, rule)."""
        row = metric(key)
        return cls(key, row.label, row.meaning, row.better, row.unit, row.best_rule)


# Metrics that move with a parameter; firing rate and thrash shown beside the token
# metrics, whose "best" a pathologically busy run cannot win (catalogue.best_flags).
COLUMNS: tuple[Column, ...] = tuple(Column.of(key) for key in vocabulary.SWEEP_KEYS)
COST_COLUMNS: tuple[Column, ...] = tuple(Column.of(key) for key in vocabulary.SWEEP_COST_KEYS)


def metric_value(run: Run, key: str) -> Any:
    metrics = run.metrics or {}
    if key == "findings_total":
        findings = metrics.get("findings")
        return sum(findings.values()) if isinstance(findings, dict) else None
    return metrics.get(key)


@dataclass(slots=True)
class Row:
    value: Any
    run: Run
    values: list[Any]
    best: list[bool] = field(default_factory=list)

    @property
    def cells(self) -> list[tuple[Any, bool]]:
        return list(zip(self.values, self.best, strict=True))

    @property
    def done(self) -> bool:
        return self.run.status == RunStatus.DONE


@dataclass(slots=True)
class Sweep:
    key: str
    strategy: str
    spec: Param | None
    columns: list[Column]
    rows: list[Row]

    @property
    def finished(self) -> bool:
        return all(analysis_state.settled(row.run) for row in self.rows)

    @property
    def done_count(self) -> int:
        return sum(1 for row in self.rows if row.done)

    def compare_ids(self) -> list[int]:
        """Up to six finished runs spread evenly over the values (both ends included)."""
        done = [row.run.pk for row in self.rows if row.done]
        if len(done) <= MAX_COMPARE:
            return done
        picks = {round(i * (len(done) - 1) / (MAX_COMPARE - 1)) for i in range(MAX_COMPARE)}
        return [done[i] for i in sorted(picks)]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def swept_key(runs: Sequence[Run]) -> str | None:
    """The one params key the runs differ in, if they form a sweep; else None."""
    if len(runs) < MIN_VALUES:
        return None
    first = runs[0]
    same = all(
        r.strategy == first.strategy
        and r.summarizer == first.summarizer
        and set(r.params) == set(first.params)
        for r in runs
    )
    if not same:
        return None
    differing = [k for k in first.params if any(r.params[k] != first.params[k] for r in runs)]
    if len(differing) != 1:
        return None
    key = differing[0]
    return key if all(_is_number(r.params[key]) for r in runs) else None


def swept_window(runs: Sequence[Run]) -> bool:
    """The runs differ only in the comparison's model window (its own parameter and the
    ones that follow it): a window sweep."""
    if len(runs) < MIN_VALUES or any(r.window is None for r in runs):
        return False
    first = runs[0]
    if any(r.strategy != first.strategy or r.summarizer != first.summarizer for r in runs):
        return False
    if len({r.window for r in runs}) != len(runs) or any(set(r.params) != set(first.params)
                                                         for r in runs):  # fmt: skip
        return False
    allowed = set(budget_names(first.strategy))
    return all(k in allowed for k in first.params if any(r.params[k] != first.params[k]
                                                          for r in runs))  # fmt: skip


def detect(runs: Sequence[Run]) -> Sweep | None:
    """The sweep these runs form (rows by value, best per column), or None."""
    key = swept_key(runs)
    if key is None and swept_window(runs):
        key = WINDOW_KEY
    if key is None:
        return None

    def value(run: Run) -> Any:
        return run.window if key == WINDOW_KEY and run.window is not None else run.params[key]

    ordered = sorted(runs, key=lambda r: (value(r), r.pk))
    columns = list(COLUMNS)
    columns += [c for c in COST_COLUMNS if any(metric_value(r, c.key) for r in runs)]
    rows = [Row(value(r), r, [metric_value(r, c.key) for c in columns]) for r in ordered]
    _mark_best(rows, columns)
    strategy = runs[0].strategy
    spec = next((p for p in get_strategy_class(strategy).PARAMS if p.name == key), None)
    if spec is None and key == WINDOW_KEY:
        spec = window_spec(strategy)
    return Sweep(key=key, strategy=strategy, spec=spec, columns=columns, rows=rows)


def _mark_best(rows: Sequence[Row], columns: Sequence[Column]) -> None:
    """Like the compare page: the best value per column stands out, unless all are equal;
    on token metrics a run that compacts at nearly every step is not eligible."""
    for row in rows:
        row.best = [False] * len(columns)
    runs = [row.run.metrics or {} for row in rows]
    for i, column in enumerate(columns):
        flags = metric_best_flags(column.key, [row.values[i] for row in rows], runs)
        for row, flag in zip(rows, flags, strict=True):
            row.best[i] = flag


# --- exports ------------------------------------------------------------------------------


def as_json(sweep: Sweep) -> dict[str, Any]:
    return {
        "key": sweep.key,
        "strategy": sweep.strategy,
        "param": sweep.spec.as_dict() if sweep.spec else None,
        "finished": sweep.finished,
        "columns": [
            {
                "key": c.key,
                "label": c.label,
                "unit": c.unit,
                "better": c.better,
                "help": c.hint,
                "best_rule": c.best_rule,
            }
            for c in sweep.columns
        ],
        "rows": [
            {
                "value": row.value,
                "run": row.run.pk,
                "url": row.run.get_absolute_url(),
                "label": row.run.label,
                "status": row.run.status,
                "metrics": {c.key: v for c, v in zip(sweep.columns, row.values, strict=True)},
                "best": [c.key for c, b in zip(sweep.columns, row.best, strict=True) if b],
            }
            for row in sweep.rows
        ],
        "compare": sweep.compare_ids(),
    }


def as_csv(sweep: Sweep) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([sweep.key, "run", "label", "status", *[c.key for c in sweep.columns]])
    for row in sweep.rows:
        cells = ["" if v is None else v for v in row.values]
        label = _csv_text(row.run.label)
        writer.writerow([row.value, row.run.pk, label, row.run.status, *cells])
    return out.getvalue()


def _csv_text(text: str) -> str:
    """Labels are user text: a leading = + - @ would be a formula in a spreadsheet."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text
