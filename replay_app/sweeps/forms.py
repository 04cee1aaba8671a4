"""The "sweep one parameter" form: the run form's transcript and summariser fields, plus a
base (preset or saved configuration), one numeric parameter of it and its values."""

from __future__ import annotations

import dataclasses
from typing import Any

from django import forms

from ctxlab.engine.core.params import Param
from ctxlab.engine.strategies import LIBRARY, PRESETS, get_strategy_class
from ctxlab.web.ownership import owned
from replay_app.configs import services as config_services
from replay_app.configs.forms import param_help, preset_choices
from replay_app.models import StrategyConfig
from replay_app.runs.forms import RunCreateForm, declared
from replay_app.sweeps import sweep

VALUES_HELP = (
    f"{sweep.MIN_VALUES} to {sweep.MAX_VALUES} values: a comma-separated list "
    "(e.g. 0.6, 0.7, 0.8) or start, stop and step (stop included)."
)


def preferred_param(specs: list[Param]) -> str:
    """A sensible first choice: a threshold/ratio knob if the strategy has one."""
    for spec in specs:
        if "threshold" in spec.name or "ratio" in spec.name:
            return spec.name
    return specs[0].name if specs else ""


class SweepForm(RunCreateForm):
    base = forms.ChoiceField(label="Strategy", help_text="A preset or one of your configurations.")
    param = forms.CharField(label="Parameter", widget=forms.Select())
    values = forms.CharField(required=False, label="Values", help_text=VALUES_HELP)
    start = forms.CharField(required=False, label="start")
    stop = forms.CharField(required=False, label="stop")
    step = forms.CharField(required=False, label="step")

    field_order = ["transcript", "base", "param", "values", "start", "stop", "step"]

    def __init__(self, *args: Any, owner: Any, **kwargs: Any) -> None:
        super().__init__(*args, owner=owner, **kwargs)
        del self.fields["presets"], self.fields["configs"]  # a sweep varies one base
        self.user_configs = {c.pk: c for c in owned(StrategyConfig.objects, owner)}
        configs = [
            (f"config:{pk}", f"{c.name} ({c.strategy})") for pk, c in self.user_configs.items()
        ]
        presets = [(f"preset:{name}", label) for name, label in preset_choices()]
        declared(self, "base", forms.ChoiceField).choices = [("Presets", presets)] + (
            [("Saved configurations", configs)] if configs else []
        )
        self.current_base = self.base_of(self._raw("base")) or sweep.Base(strategy=PRESETS[0])
        specs = sweep.sweepable_params(self.current_base.strategy)
        self.fields["param"].widget.choices = [(p.name, p.name) for p in specs]
        if not self.is_bound and self._raw("param") not in [p.name for p in specs]:
            self.initial["param"] = preferred_param(specs)  # e.g. after choosing another base
        self.current_spec = next((p for p in specs if p.name == self._raw("param")), None)

    def _raw(self, name: str) -> str:
        source = self.data if self.is_bound else self.initial
        return str(source.get(name) or "")

    def base_of(self, value: str) -> sweep.Base | None:
        kind, _, name = value.partition(":")
        if kind == "preset" and name in LIBRARY:
            return sweep.Base(strategy=name)
        if kind == "config" and name.isdigit() and int(name) in self.user_configs:
            config = self.user_configs[int(name)]
            return sweep.Base(strategy=config.strategy, config=config)
        return None

    def param_help(self) -> str:
        if self.current_spec is None:
            return ""
        params = config_services.params_validate(
            strategy=self.current_base.strategy, params=self.current_base.overrides
        )
        own = get_strategy_class(self.current_base.strategy).WINDOW
        name = self.current_spec.name
        base_value = (
            params.get(own)
            if name == sweep.WINDOW_KEY and name not in params
            else (params.get(name))
        )
        return f"{param_help(self.current_spec)} In {self.current_base.label}: {base_value}."

    def clean(self) -> dict[str, Any]:
        cleaned = forms.Form.clean(self) or {}  # not RunCreateForm's "choose a preset" check
        self.check_key(cleaned)
        base = self.base_of(cleaned.get("base") or "")
        if base is None:
            return cleaned
        if cleaned.get("window") is not None:  # the comparison's window, when not swept
            self.check_window(cleaned, [base.strategy])
            base = dataclasses.replace(base, window=cleaned.get("window"))
        try:
            spec = sweep.param_spec(base.strategy, cleaned.get("param") or "")
        except sweep.SweepError as exc:
            self.add_error("param", str(exc))
            return cleaned
        field, values = self._values(spec, cleaned)
        if values is None:
            return cleaned
        try:
            values = sweep.check_values(
                strategy=base.strategy, base=base.overrides, spec=spec, values=values
            )
        except ValueError as exc:
            self.add_error(field, str(exc))
            return cleaned
        cleaned.update(sweep_base=base, sweep_key=spec.name, sweep_values=values)
        return cleaned

    def _values(self, spec: Param, cleaned: dict[str, Any]) -> tuple[str, list[Any] | None]:
        """(field the errors go beside, parsed values or None after an error)."""
        listed = (cleaned.get("values") or "").strip()
        bounds = [(cleaned.get(k) or "").strip() for k in ("start", "stop", "step")]
        try:
            if listed and any(bounds):
                raise ValueError("Give either a list of values or start/stop/step, not both.")
            if listed:
                return "values", sweep.parse_list(spec, listed)
            if all(bounds):
                return "step", sweep.parse_range(spec, *bounds)
            if any(bounds):
                raise ValueError(f"{spec.name}: start, stop and step are all needed for a range.")
            raise ValueError(f"{spec.name}: give the values to try. {VALUES_HELP}")
        except ValueError as exc:
            self.add_error("step" if any(bounds) and not listed else "values", str(exc))
            return "values", None
