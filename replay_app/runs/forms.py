"""The "start runs" form: a transcript, presets and configurations, one window, a summariser."""

from __future__ import annotations

from typing import Any, TypeVar

from django import forms

from ctxlab.engine.budget import window_params
from ctxlab.engine.core.spread import MAX_REPLICATES
from ctxlab.web.ownership import owned
from replay_app.configs.forms import SUMMARIZER_LABELS, preset_choices
from replay_app.costs import llm
from replay_app.models import StrategyConfig
from replay_app.runs.services import SUMMARIZERS
from replay_app.runs.transcript_picker import TranscriptPicker, window_hint
from sessions_app.models import Transcript

F = TypeVar("F", bound=forms.Field)


def declared(form: forms.BaseForm, name: str, kind: type[F]) -> F:
    """The form's own copy of a declared field, as the type it was declared with."""
    field = form.fields[name]
    assert isinstance(field, kind)
    return field


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
        "are cached, so replaying again never pays twice). OpenAI-compatible: the same, sent "
        "to the server's OPENAI_BASE_URL endpoint with the model named below (a local "
        "endpoint costs nothing).",
    )
    # Claude runs: model, budget cap, exact counts (replay_app.costs / llm).
    model = forms.ChoiceField(choices=(), required=False, label="Claude model")
    # OpenAI-compatible runs: the model name the endpoint serves, and which API to call.
    openai_model = forms.CharField(
        max_length=100, required=False, label="OpenAI-compatible model",
        help_text="The name the endpoint serves (gpt-4o-mini, qwen3:8b, ...).",
    )  # fmt: skip
    openai_api = forms.ChoiceField(
        choices=[("chat", "/v1/chat/completions"), ("responses", "/v1/responses")],
        initial="chat", required=False, label="OpenAI-compatible API",
    )  # fmt: skip
    replicates = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_REPLICATES, initial=1,
        label="Replicates (model summarisers)",
        help_text="Runs of each configuration: a model does not summarise the same way twice; "
        "the compare page shows their spread and marks best only a lead larger than it.",
    )  # fmt: skip
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
        transcript = declared(self, "transcript", forms.ModelChoiceField)
        transcript.queryset = owned(Transcript.objects, owner)
        transcript.widget.owner = owner
        declared(self, "configs", forms.ModelMultipleChoiceField).queryset = owned(
            StrategyConfig.objects, owner
        )
        declared(self, "model", forms.ChoiceField).choices = [
            (m, llm.model_label(m)) for m in llm.summary_models()
        ]
        self.fields["model"].initial = llm.default_model()
        cap = llm.budget_default()
        self.fields["budget_usd"].initial = cap
        # The stubs type max_value as int; a DecimalField holds (and compares) a Decimal.
        declared(self, "budget_usd", forms.DecimalField).max_value = cap  # type: ignore[assignment]
        self.fields["budget_usd"].help_text = (
            f"Runs whose estimated summary cost is above this are not started "
            f"(at most ${cap:.2f}, the server's CTXLAB_RUN_BUDGET_USD)."
        )
        self.key_available = llm.key_available()
        self.openai_key_available = llm.key_available("openai")
        self.openai_endpoint = llm.endpoint_label()

    def clean_transcript(self) -> Any:
        """A conversation with no messages (an aider session that was opened and closed)
        replays to zero steps and pages of zeros: refused, saying why (also the sweep's)."""
        transcript = self.cleaned_data.get("transcript")
        if transcript is not None and transcript.message_count == 0:
            raise forms.ValidationError(
                f"“{transcript.display_title}” has no messages: there is nothing to replay. "
                "Choose a conversation with messages."
            )
        return transcript

    def clean_openai_model(self) -> str:
        return str(self.cleaned_data.get("openai_model") or "").strip()

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
        return window_hint(self.owner, self["transcript"].value(), self["window"].value())

    def check_key(self, cleaned: dict[str, Any]) -> None:
        """Claude or exact counts need the API key, an OpenAI-compatible run a model name and
        a key unless its endpoint is local (also used by the sweep form)."""
        if cleaned.get("summarizer") == "openai":
            if not (cleaned.get("openai_model") or "").strip():
                self.add_error("openai_model", "Name the model the endpoint serves.")
            elif not self.openai_key_available:
                self.add_error("summarizer", llm.NO_OPENAI_KEY_MESSAGE)
        wants_key = cleaned.get("summarizer") == "anthropic" or cleaned.get("exact_counts")
        if wants_key and not self.key_available:
            field = "summarizer" if cleaned.get("summarizer") == "anthropic" else "exact_counts"
            self.add_error(field, llm.NO_KEY_MESSAGE)

    def llm_options(self) -> Any:
        from replay_app.costs.run_budget import LLMOptions

        data = self.cleaned_data
        if data.get("summarizer") == "openai":
            return LLMOptions(
                model=(data.get("openai_model") or "").strip(),
                budget_usd=data.get("budget_usd"),
                exact_counts=bool(data.get("exact_counts")),
                api=data.get("openai_api") or "chat",
                replicates=data.get("replicates") or 1,
            )
        return LLMOptions(
            model=data.get("model") or llm.default_model(),
            budget_usd=data.get("budget_usd"),
            exact_counts=bool(data.get("exact_counts")),
            replicates=data.get("replicates") or 1,
        )
