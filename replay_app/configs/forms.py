"""Forms of strategy configurations: a strategy's parameters (generated from its Param
specs, validated by the engine) and config import."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from ctxlab.engine.core.params import Param, validate
from ctxlab.engine.strategies import LIBRARY, STRATEGIES, get_strategy_class
from ctxlab.engine.strategies.custom import check_stages
from replay_app.models import StrategyConfig

SUMMARIZER_LABELS = {
    "offline": "offline (no model)",
    "recorded": "recorded (the transcript's own summaries, else offline)",
    "anthropic": "Claude (Anthropic API)",
    "openai": "OpenAI-compatible endpoint (OpenAI, a router, vLLM, Ollama, llama.cpp, LM Studio)",
}


def param_help(spec: Param) -> str:
    parts = [spec.help.rstrip(".") + "."]
    parts.append(f"Range: {spec.describe_range()}.")
    parts.append(f"Default: {_show(spec.default)}.")
    if spec.origin:
        parts.append(f"Original: {spec.origin}.")
    return " ".join(parts)


def _show(value: Any) -> str:
    if value is None:
        return "null"  # a JSON parameter's "not set" (langchain_summarization's trigger)
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _initial(spec: Param, value: Any) -> str:
    """A JSON parameter's value as JSON (a bare string default such as langchain_trim's
    start_on "human" must come back as "\"human\"", or it would not parse)."""
    if spec.type == "json":
        return json.dumps(value, ensure_ascii=False)
    return _show(value)


def _field(spec: Param) -> forms.Field:
    common: dict[str, Any] = {"label": spec.name, "help_text": param_help(spec), "required": False}
    if spec.type == "bool":
        return forms.BooleanField(**common)
    if spec.choices:
        choices = [(_show(c), _show(c)) for c in spec.choices]
        # Not a ChoiceField: the engine's validation (and its message) decides.
        return forms.CharField(widget=forms.Select(choices=choices), **common)
    if spec.type in ("int", "float"):
        attrs: dict[str, Any] = {"step": "1" if spec.type == "int" else "any"}
        if spec.min is not None:
            attrs["min"] = f"{spec.min:g}"
        if spec.max is not None:
            attrs["max"] = f"{spec.max:g}"
        return forms.CharField(widget=forms.NumberInput(attrs=attrs), **common)
    return forms.CharField(**common)


class StrategyConfigForm(forms.Form):
    """Name + one field per parameter of ``strategy``. Values are checked by the engine's
    ``params.validate`` so the messages are the engine's, shown beside each field."""

    name = forms.CharField(max_length=100)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)

    def __init__(
        self,
        *args: Any,
        strategy: str,
        owner: Any,
        instance: StrategyConfig | None = None,
        **kwargs: Any,
    ) -> None:
        self.strategy = strategy
        self.owner = owner
        self.instance = instance
        self.specs = get_strategy_class(strategy).PARAMS
        current = dict(instance.params) if instance else {}
        initial = kwargs.pop("initial", None) or {}
        if instance is not None:
            initial.setdefault("name", instance.name)
            initial.setdefault("description", instance.description)
        for spec in self.specs:
            value = current.get(spec.name, spec.default)
            initial.setdefault(spec.name, value if spec.type == "bool" else _initial(spec, value))
        kwargs["initial"] = initial
        super().__init__(*args, **kwargs)
        for spec in self.specs:
            self.fields[spec.name] = _field(spec)

    def param_fields(self) -> list[forms.BoundField]:
        return [self[spec.name] for spec in self.specs]

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"].strip()
        clash = StrategyConfig.objects.filter(owner=self.owner, name=name)
        if self.instance is not None:
            clash = clash.exclude(pk=self.instance.pk)
        if clash.exists():
            raise forms.ValidationError(f"You already have a configuration named {name!r}.")
        return name

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        params: dict[str, Any] = {}
        for spec in self.specs:
            raw = cleaned.get(spec.name)
            if spec.type == "str" and not spec.choices and raw is None:
                raw = ""  # an empty text is a value (claude_code's custom_instructions)
            empty = raw is None or str(raw).strip() == ""
            if spec.type not in ("bool", "str") and empty:
                self.add_error(
                    spec.name, f"{spec.name} is required (default {_show(spec.default)})"
                )
                continue
            try:
                params[spec.name] = validate(self.specs, {spec.name: raw}, strategy=self.strategy)[
                    spec.name
                ]
            except ValueError as exc:
                self.add_error(spec.name, str(exc))
        self._check_stages(params)
        cleaned["params"] = params
        return cleaned

    def _check_stages(self, params: dict[str, Any]) -> None:
        """The custom strategy's stage list is checked by the engine beyond its JSON type
        (stage names, options, ranges); the message goes beside the field."""
        if self.strategy != "custom" or "stages" not in params:
            return
        try:
            check_stages(params["stages"])
        except ValueError as exc:
            self.add_error("stages", str(exc))


class ImportConfigForm(forms.Form):
    file = forms.FileField(required=False, help_text="A configuration exported from ctxlab.")
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6}), required=False, label="or paste JSON"
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        upload = cleaned.get("file")
        data = upload.read() if upload else (cleaned.get("text") or "").strip()
        if not data:
            raise forms.ValidationError("Choose a file or paste the JSON.")
        cleaned["data"] = data
        return cleaned


def preset_choices() -> list[tuple[str, str]]:
    return [(name, f"{STRATEGIES[name].label} ({name})") for name in LIBRARY if name in STRATEGIES]
