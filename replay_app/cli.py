"""``manage.py replay ... --save``: a stored run through the same service path as the web,
executed synchronously in this process."""

from __future__ import annotations

from collections.abc import Sequence

from ctxlab.engine.params import parse_assignments
from sessions_app.models import Transcript

from . import services
from .models import Run, StrategyConfig
from .progress import ChannelProgress


def save_run(
    *,
    transcript_id: str,
    strategy: str | None,
    config_name: str | None,
    assignments: Sequence[str],
    summarizer: str = "offline",
    model: str | None = None,
) -> Run:
    """Create and execute a run; ValueError says what is wrong (bad id, name, params)."""
    try:
        transcript = Transcript.objects.get(pk=int(transcript_id))
    except (Transcript.DoesNotExist, ValueError):
        raise ValueError(f"no transcript with id {transcript_id!r}") from None
    params = parse_assignments(list(assignments))
    if config_name:
        config = StrategyConfig.objects.filter(owner=transcript.owner, name=config_name).first()
        if config is None:
            names = ", ".join(
                StrategyConfig.objects.filter(owner=transcript.owner).values_list("name", flat=True)
            )
            raise ValueError(
                f"{transcript.owner} has no configuration named {config_name!r} "
                f"(known: {names or 'none'})"
            )
        spec = services.RunSpec(config=config, params=params)
    elif strategy:
        spec = services.RunSpec(strategy=strategy, params=params)
    else:
        raise ValueError("give --strategy PRESET or --config NAME")
    run = services.run_create(
        owner=transcript.owner,
        transcript=transcript,
        spec=spec,
        summarizer=summarizer,
        enqueue=False,
        llm=services.LLMOptions(model=model or ""),
    )
    return services.run_execute(run=run, on_progress=ChannelProgress())


def describe(run: Run) -> str:
    lines = [f"run {run.pk} {run.status}: {run.get_absolute_url()}"]
    if run.error:
        lines.append(f"error: {run.error}")
    m = run.metrics
    if m:
        lines.append(
            f"steps {m.get('steps')} · peak {m.get('peak_strategy')} (estimator) / "
            f"{m.get('peak_reference')} (cl100k) · compactions {m.get('compaction_count')} · "
            f"Σ input {m.get('input_tokens_total')}"
        )
    return "\n".join(lines)
