"""The custom strategy's stage builder: an ordered stage list edited through form posts.

The ``stages`` textarea (JSON) is the source of truth. The builder renders one fieldset
per stage (its options as ``stage-<i>-<option>`` inputs) plus add / remove / move buttons
named ``builder``. Every post (htmx to the builder endpoint, or the whole form without
JavaScript) is turned back into one stage list:

1. the textarea is parsed;
2. if it still equals ``builder_base`` (the JSON the inputs were rendered from), the
   option inputs are laid over it; a hand-edited textarea wins over the inputs;
3. the ``builder`` action is applied (``add``, ``remove:<i>``, ``up:<i>``, ``down:<i>``).

Values are checked by the engine (``custom.check_stages``); its message is shown beside
the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxlab.engine.strategies.custom import STAGES, check_stages

FIELD = "stages"
BASE = "builder_base"
ACTION = "builder"
ADD_KIND = "builder_kind"


@dataclass
class OptionInput:
    name: str
    input_name: str
    value: Any
    help: str
    numeric: bool
    minimum: int | float
    maximum: int | float | None = None
    step: str = "1"  # "any" for a fractional option
    choices: tuple[str, ...] = ()


@dataclass
class StageRow:
    index: int
    kind: str
    help: str
    options: list[OptionInput]
    first: bool
    last: bool


@dataclass
class Builder:
    """What the builder renders: the JSON text, its stages (when it parses) and the
    engine's complaint, if any."""

    text: str
    stages: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    parsed: bool = True

    @property
    def rows(self) -> list[StageRow]:
        # Indexes are the list's own (unknown stages get no row; the error names them).
        return [
            _row(i, stage, len(self.stages)) for i, stage in enumerate(self.stages) if _known(stage)
        ]

    @property
    def kinds(self) -> list[tuple[str, str]]:
        return [(name, spec.help) for name, spec in STAGES.items()]


def dump(stages: list[dict[str, Any]]) -> str:
    """One stage per line: readable in the textarea, still plain JSON."""
    if not stages:
        return "[]"
    lines = ",\n".join("  " + json.dumps(s, ensure_ascii=False) for s in stages)
    return f"[\n{lines}\n]"


def from_text(text: str) -> Builder:
    """The builder for a stored or posted JSON text (no inputs, no action)."""
    stages, error = _parse(text)
    if stages is None:
        return Builder(text=text, error=error, parsed=False)
    return _checked(stages, text=dump(stages))


def from_post(data: Mapping[str, Any], *, act: bool = True) -> Builder:
    """The builder after one post: textarea, inputs laid over it, then the action."""
    text = str(data.get(FIELD, ""))
    stages, error = _parse(text)
    if stages is None:
        return Builder(text=text, error=error, parsed=False)
    if _normalised(text) == _normalised(str(data.get(BASE, ""))):
        stages = _overlay(stages, data)
    if act:
        stages = _apply(stages, str(data.get(ACTION, "")), str(data.get(ADD_KIND, "")))
    return _checked(stages, text=dump(stages))


def _parse(text: str) -> tuple[list[dict[str, Any]] | None, str]:
    try:
        value = json.loads(text or "[]")
    except json.JSONDecodeError as exc:
        return None, f"stages: not valid JSON ({exc.msg}, line {exc.lineno})"
    if not isinstance(value, list):
        return None, "stages: expected a JSON list of stages"
    return [dict(s) if isinstance(s, dict) else s for s in value], ""


def _normalised(text: str) -> str:
    try:
        return json.dumps(json.loads(text or "[]"), sort_keys=True)
    except json.JSONDecodeError:
        return text


def _checked(stages: list[dict[str, Any]], *, text: str) -> Builder:
    try:
        check_stages(stages)
    except ValueError as exc:
        return Builder(text=text, stages=stages, error=str(exc))
    return Builder(text=text, stages=stages)


def _overlay(stages: list[dict[str, Any]], data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The option inputs' values over their stages (numbers parsed where they parse)."""
    out = []
    for i, stage in enumerate(stages):
        if not _known(stage):
            out.append(stage)
            continue
        spec = STAGES[stage["stage"]]
        stage = dict(stage)
        for name, option in spec.options.items():
            raw = data.get(f"stage-{i}-{name}")
            if raw is None:
                continue
            if isinstance(option.default, float):
                stage[name] = _as_number(raw)
            elif isinstance(option.default, int):
                stage[name] = _as_int(raw)
            else:
                stage[name] = str(raw)
        out.append(stage)
    return out


def _known(stage: Any) -> bool:
    """A stage the builder can show (the engine's message covers the others)."""
    return (
        isinstance(stage, dict) and isinstance(stage.get("stage"), str) and stage["stage"] in STAGES
    )


def _as_int(raw: Any) -> Any:
    try:
        return int(str(raw).strip())
    except ValueError:
        return str(raw)  # the engine names the option and the bad value


def _as_number(raw: Any) -> Any:
    try:
        value = float(str(raw).strip())
    except ValueError:
        return str(raw)  # the engine names the option and the bad value
    return int(value) if value.is_integer() and "." not in str(raw) else value


def _apply(stages: list[dict[str, Any]], action: str, kind: str) -> list[dict[str, Any]]:
    stages = list(stages)
    verb, _, at = action.partition(":")
    if verb == "add" and kind in STAGES:
        stages.append({"stage": kind, **{k: o.default for k, o in STAGES[kind].options.items()}})
        return stages
    if not at.isdigit() or int(at) >= len(stages):
        return stages
    i = int(at)
    if verb == "remove":
        del stages[i]
    elif verb == "up" and i > 0:
        stages[i - 1], stages[i] = stages[i], stages[i - 1]
    elif verb == "down" and i + 1 < len(stages):
        stages[i + 1], stages[i] = stages[i], stages[i + 1]
    return stages


def _row(index: int, stage: dict[str, Any], count: int) -> StageRow:
    spec = STAGES[stage["stage"]]
    options = [
        OptionInput(
            name=name,
            input_name=f"stage-{index}-{name}",
            value=stage.get(name, option.default),
            help=option.help,
            numeric=isinstance(option.default, int | float),
            minimum=option.minimum,
            maximum=option.maximum,
            step="any" if isinstance(option.default, float) else "1",
            choices=option.choices,
        )
        for name, option in spec.options.items()
    ]
    return StageRow(index, stage["stage"], spec.help, options, index == 0, index == count - 1)
