"""Forms: a strategy's parameters (generated from its Param specs, validated by the engine),
config import, and the "start runs" form."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from ctxlab.engine.budget import window_params
from ctxlab.engine.params import Param, validate
from ctxlab.engine.strategies import LIBRARY, STRATEGIES, get_strategy_class
from ctxlab.engine.strategies.custom import check_stages
from ctxlab.ownership import owned
from sessions_app.models import Transcript

from . import llm
from .models import StrategyConfig
from .services import SUMMARIZERS
from .transcript_picker import TranscriptPicker, window_hint

SUMMARIZER_LABELS = {
    "offline": "offline (no model)",
    "recorded": "recorded (the transcript's own summaries, else offline)",
    "anthropic": "Claude (Anthropic API)",
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
        super().__init__(*args, initial=initial, **kwargs)
        for spec in self.specs:
            self.fields[spec.name] = _field(spec)

    def param_fields(self) -> list[forms.BoundField]:
        return [self[spec.name] for spec in self.specs]

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
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


class RunCreateForm(forms.Form):
    transcript = forms.ModelChoiceField(
        queryset=Transcript.objects.none(), widget=TranscriptPicker()
    )
    window = forms.IntegerField(
        required=False,
        min_value=1,
        label="Model context window (tokens)",
        help_text="One budget for every chosen strategy: sets each one's own window "
        "parameter(s). Empty: each keeps its own.",
    )
    presets = forms.MultipleChoiceField(
        choices=preset_choices, widget=forms.CheckboxSelectMultiple, required=False
    )
    configs = forms.ModelMultipleChoiceField(
        queryset=StrategyConfig.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Saved configurations",
    )
    summarizer = forms.ChoiceField(
        choices=[(s, SUMMARIZER_LABELS.get(s, s)) for s in SUMMARIZERS],
        initial="offline",
        help_text="offline: deterministic extractive summaries, no model calls. "
        "recorded: the original agent's own compaction summaries from the transcript (Claude "
        "Code, Codex), the nearest one to each compaction; offline where none is left. "
        "Claude: the strategy's exact prompt sent to the model below (costs money; summaries "
        "are cached, so replaying again never pays twice).",
    )
    # Issue 7: Claude model, budget cap, exact counts (replay_app.costs / llm).
    model = forms.ChoiceField(choices=(), required=False, label="Claude model")
    budget_usd = forms.DecimalField(
        required=False, min_value=0, decimal_places=2, label="Budget per run (USD)"
    )
    exact_counts = forms.BooleanField(
        required=False,
        label="Exact Anthropic counts",
        help_text="Also count every request with Anthropic's count_tokens endpoint "
        "(cached, rate-limited; needs the API key).",
    )
    name = forms.CharField(max_length=200, required=False, label="Comparison name")

    def __init__(self, *args: Any, owner: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owner = owner
        self.fields["transcript"].queryset = owned(Transcript.objects, owner)
        self.fields["transcript"].widget.owner = owner
        self.fields["configs"].queryset = owned(StrategyConfig.objects, owner)
        self.fields["model"].choices = [(m, llm.model_label(m)) for m in llm.summary_models()]
        self.fields["model"].initial = llm.default_model()
        cap = llm.budget_default()
        self.fields["budget_usd"].initial = cap
        self.fields["budget_usd"].max_value = cap
        self.fields["budget_usd"].help_text = (
            f"Runs whose estimated summary cost is above this are not started "
            f"(at most ${cap:.2f}, the server's CTXLAB_RUN_BUDGET_USD)."
        )
        self.key_available = llm.key_available()

    def clean_budget_usd(self) -> Any:
        value = self.cleaned_data.get("budget_usd")
        cap = llm.budget_default()
        if value is not None and value > cap:
            raise forms.ValidationError(f"At most ${cap:.2f} per run (CTXLAB_RUN_BUDGET_USD).")
        return value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not cleaned.get("presets") and not cleaned.get("configs"):
            raise forms.ValidationError("Choose at least one preset or saved configuration.")
        self.check_key(cleaned)
        self.check_window(
            cleaned, [*cleaned["presets"], *[c.strategy for c in cleaned.get("configs") or ()]]
        )
        return cleaned

    def check_window(self, cleaned: dict[str, Any], strategies: list[str]) -> None:
        """The window must suit every chosen strategy's window parameter (its range)."""
        window = cleaned.get("window")
        if window is None:
            return
        for strategy in dict.fromkeys(strategies):
            try:
                window_params(strategy, window)
            except ValueError as exc:
                self.add_error("window", str(exc))
                return

    def window_hint(self) -> dict[str, Any] | None:
        return window_hint(self.owner, self["transcript"].value())

    def check_key(self, cleaned: dict[str, Any]) -> None:
        """Claude or exact counts need the API key (also used by the sweep form)."""
        wants_key = cleaned.get("summarizer") == "anthropic" or cleaned.get("exact_counts")
        if wants_key and not self.key_available:
            field = "summarizer" if cleaned.get("summarizer") == "anthropic" else "exact_counts"
            self.add_error(field, llm.NO_KEY_MESSAGE)

    def llm_options(self) -> Any:
        from .services import LLMOptions

        data = self.cleaned_data
        return LLMOptions(
            model=data.get("model") or llm.default_model(),
            budget_usd=data.get("budget_usd"),
            exact_counts=bool(data.get("exact_counts")),
        )
