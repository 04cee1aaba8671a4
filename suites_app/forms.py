"""The new-suite form: transcripts (by hand, by filter, by upload) × configurations (saved,
presets at one window, a grid of up to 3 parameters over one base).

``clean`` turns the fields into ``self.chosen_transcripts`` and ``self.configs`` through the same
functions the CLI uses (``suites_app.configs``), so both refuse the same input with the same
words.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Q, QuerySet

from ctxlab.engine.strategies import LIBRARY, PRESETS, get_strategy_class
from sessions_app import services as session_services
from sessions_app.models import Transcript

from . import configs
from .configs import Base, SuiteInputError
from .replay_glue import (
    MAX_REPLICATES,
    SUMMARIZERS,
    LLMOptions,
    StrategyConfig,
    TranscriptPicker,
    llm,
)

GRID_SLOTS = 3


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> Any:
        if isinstance(data, list | tuple):
            return [super(MultipleFileField, self).clean(d, initial) for d in data]
        return [super().clean(data, initial)] if data else []


def filter_transcripts(
    qs: QuerySet[Transcript],
    *,
    format: str = "",
    min_messages: int | None = None,
    max_messages: int | None = None,
    text: str = "",
) -> QuerySet[Transcript]:
    """Transcripts by format, size (messages) and a word of their title or file name (the
    'tag' a team gives its sessions in their names: ``bugfix``, ``repo-x``)."""
    if format:
        qs = qs.filter(format=format)
    if min_messages is not None:
        qs = qs.filter(message_count__gte=min_messages)
    if max_messages is not None:
        qs = qs.filter(message_count__lte=max_messages)
    if text:
        qs = qs.filter(
            Q(title__icontains=text)
            | Q(source_file__icontains=text)
            | Q(upload__name__icontains=text)
        )
    return qs


class SuiteForm(forms.Form):
    name = forms.CharField(max_length=200)
    transcripts = forms.ModelMultipleChoiceField(
        queryset=Transcript.objects.none(), required=False, widget=TranscriptPicker(multiple=True),
        help_text="chosen by hand",
    )  # fmt: skip
    filter_format = forms.ChoiceField(required=False, label="Format")
    filter_min_messages = forms.IntegerField(required=False, min_value=0, label="Min messages")
    filter_max_messages = forms.IntegerField(required=False, min_value=0, label="Max messages")
    filter_text = forms.CharField(
        required=False, max_length=100, label="Title or file name contains"
    )
    uploads = MultipleFileField(required=False, label="Upload transcripts")
    summarizer = forms.ChoiceField(choices=[(s, s) for s in SUMMARIZERS], initial="offline")
    # summarizer=openai: the model the OpenAI-compatible endpoint serves, and its API.
    openai_model = forms.CharField(required=False, max_length=100, label="OpenAI-compatible model")
    openai_api = forms.ChoiceField(
        choices=[("chat", "/v1/chat/completions"), ("responses", "/v1/responses")],
        initial="chat", required=False, label="API",
    )  # fmt: skip
    replicates = forms.IntegerField(
        min_value=1, max_value=MAX_REPLICATES, required=False, label="Replicates",
        widget=forms.NumberInput(attrs={"placeholder": "1"}),
        help_text="runs of each transcript × configuration with a model summariser (blank: "
        "1); the results show their spread and mark best only beyond it",
    )  # fmt: skip
    presets = forms.MultipleChoiceField(
        choices=[(s, s) for s in LIBRARY], required=False, widget=forms.CheckboxSelectMultiple
    )
    saved = forms.ModelMultipleChoiceField(
        queryset=StrategyConfig.objects.none(), required=False,
        widget=forms.CheckboxSelectMultiple, label="Saved configurations",
    )  # fmt: skip
    window = forms.IntegerField(required=False, min_value=1, label="Model context window")
    grid_base = forms.ChoiceField(required=False, label="Grid over")
    max_attempts = forms.IntegerField(min_value=1, max_value=5, initial=2)

    def __init__(self, *args: Any, owner: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owner = owner
        mine = Transcript.objects.filter(owner=owner).select_related("upload").order_by("-pk")
        # Checkboxes for the newest few and the checked ones, and a search box: a user
        # with thousands of conversations got every one of them as a checkbox (6 s).
        self.fields["transcripts"].queryset = mine  # type: ignore[attr-defined]
        self.fields["transcripts"].widget.owner = owner
        formats = sorted(set(mine.values_list("format", flat=True)))
        self.fields["filter_format"].choices = [("", "any"), *((f, f) for f in formats)]  # type: ignore[attr-defined]
        saved = StrategyConfig.objects.filter(owner=owner).order_by("name")
        self.fields["saved"].queryset = saved  # type: ignore[attr-defined]
        bases = [("", "no grid")] + [(f"preset:{p}", p) for p in LIBRARY]
        bases += [(f"config:{c.pk}", f"saved: {c.name}") for c in saved]
        self.fields["grid_base"].choices = bases  # type: ignore[attr-defined]
        for i in range(1, GRID_SLOTS + 1):
            self.fields[f"grid_key_{i}"] = forms.CharField(
                required=False, max_length=80, label=f"Parameter {i}",
                widget=forms.TextInput(attrs={"list": "grid-params", "autocomplete": "off"}),
            )  # fmt: skip
            self.fields[f"grid_values_{i}"] = forms.CharField(
                required=False, max_length=400, label=f"Values {i}",
                help_text="v1,v2,... or start:stop:step",
            )  # fmt: skip
        self.initial.setdefault("presets", list(PRESETS)[:0])
        self.chosen_transcripts: list[Transcript] = []
        self.configs: list[dict[str, Any]] = []
        self.grid_keys: list[str] = []
        self.source: dict[str, Any] = {}

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("summarizer") == "openai":
            if not (data.get("openai_model") or "").strip():
                self.add_error("openai_model", "Name the model the endpoint serves.")
            elif not llm.key_available("openai"):
                self.add_error("summarizer", llm.NO_OPENAI_KEY_MESSAGE)
        if (data.get("replicates") or 1) > 1 and data.get("summarizer") not in llm.PROVIDERS:
            self.add_error(
                "replicates", "Replicates need a model summariser: these summaries repeat exactly."
            )
        if self.errors:
            return data
        try:
            self.configs = self._configs(data)
            self.chosen_transcripts = self._transcripts(data)
            configs.check_size(
                self.configs, len(self.chosen_transcripts), data.get("replicates") or 1
            )
        except SuiteInputError as exc:
            raise forms.ValidationError(str(exc)) from None
        return data

    def clean_openai_model(self) -> str:
        return str(self.cleaned_data.get("openai_model") or "").strip()

    def llm_options(self) -> LLMOptions | None:
        """The model options of an OpenAI-compatible suite (None for the others)."""
        data = self.cleaned_data
        if data.get("summarizer") != "openai":
            return None
        return LLMOptions(
            model=(data.get("openai_model") or "").strip(), api=data.get("openai_api") or "chat"
        )

    def _configs(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        window = data.get("window")
        out = configs.preset_configs(data.get("presets") or [], window=window)
        for saved in data.get("saved") or []:
            out.append(configs.make_config(_base_of_config(saved), window=window))
        base_key = data.get("grid_base") or ""
        axes = {}
        for i in range(1, GRID_SLOTS + 1):
            key = (data.get(f"grid_key_{i}") or "").strip()
            values = (data.get(f"grid_values_{i}") or "").strip()
            if key or values:
                if not key:
                    raise SuiteInputError(f"grid row {i}: values {values!r} without a parameter")
                axes[key] = values
        if base_key or axes:
            if not base_key:
                raise SuiteInputError("choose what the grid varies (a preset or saved one)")
            base = self._base(base_key)
            out.extend(configs.grid_configs(base, axes, window=window))
            self.grid_keys = list(axes)
        return out

    def _base(self, key: str) -> Base:
        kind, _, value = key.partition(":")
        if kind == "config":
            config = StrategyConfig.objects.filter(owner=self.owner, pk=value).first()
            if config is None:
                raise SuiteInputError("that saved configuration is not yours or is gone")
            return _base_of_config(config)
        return Base(configs.check_strategy(value))

    def _transcripts(self, data: dict[str, Any]) -> list[Transcript]:
        chosen: dict[int, Transcript] = {t.pk: t for t in data.get("transcripts") or []}
        for t in chosen.values():
            if t.message_count == 0:  # replays to zero steps: a row of zeros in every median
                raise SuiteInputError(
                    f"“{t.display_title}” has no messages: there is nothing to replay"
                )
        source: dict[str, Any] = {"hand": sorted(chosen)}
        skipped = 0
        filters: dict[str, Any] = {
            "format": data.get("filter_format") or "",
            "min_messages": data.get("filter_min_messages"),
            "max_messages": data.get("filter_max_messages"),
            "text": (data.get("filter_text") or "").strip(),
        }
        if any(v not in ("", None) for v in filters.values()):
            mine = filter_transcripts(Transcript.objects.filter(owner=self.owner), **filters)
            skipped += mine.filter(message_count=0).count()
            found = list(mine.filter(message_count__gt=0)[: configs.MAX_RUNS])
            if not found:
                raise SuiteInputError(
                    "no transcript of yours with messages matches the filter"
                    if skipped
                    else "no transcript of yours matches the filter"
                )
            chosen.update((t.pk, t) for t in found)
            source["filter"] = filters
        uploaded = []
        for upload in data.get("uploads") or []:
            outcome = session_services.upload_import(
                owner=self.owner, name=upload.name, data=upload.read()
            )
            if outcome.error is not None or outcome.upload is None:
                raise SuiteInputError(f"{upload.name}: {outcome.error}")
            for t in outcome.upload.transcripts.all():
                if t.message_count == 0:
                    skipped += 1
                    continue
                chosen[t.pk] = t
                uploaded.append(t.pk)
        if uploaded:
            source["uploaded"] = uploaded
        if skipped:  # e.g. aider sessions opened and closed with no chat
            source["skipped_empty"] = skipped
        if not chosen and skipped:
            raise SuiteInputError("none of the chosen transcripts has messages")
        self.source = source
        return list(chosen.values())


def grid_param_names() -> list[str]:
    """Every parameter a grid can vary in some strategy (the form's suggestions)."""
    names = {configs.WINDOW_KEY}
    for strategy in LIBRARY:
        names.update(p.name for p in get_strategy_class(strategy).PARAMS)
    return sorted(names)


def _base_of_config(config: StrategyConfig) -> Base:
    return Base(config.strategy, config.pk, config.name, dict(config.params))
