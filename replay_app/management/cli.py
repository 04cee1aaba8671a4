"""``manage.py replay ... --save``: a stored run through the same service path as the web,
executed synchronously in this process."""

from __future__ import annotations

from collections.abc import Sequence

from ctxlab.engine.core.params import parse_assignments
from replay_app.costs import run_budget
from replay_app.models import Run, RunGroup, StrategyConfig
from replay_app.runs import executor, services
from replay_app.runs.progress import ChannelProgress
from replay_app.sweeps import sweep
from sessions_app.models import Transcript


def save_run(
    *,
    transcript_id: str,
    strategy: str | None,
    config_name: str | None,
    assignments: Sequence[str],
    summarizer: str = "offline",
    model: str | None = None,
    api: str = "chat",
    stream: bool = False,
    window: int | None = None,
) -> Run:
    """Create and execute a run; ValueError says what is wrong (bad id, name, params)."""
    transcript = _transcript(transcript_id)
    params = parse_assignments(list(assignments))
    if config_name:
        spec = services.RunSpec(
            config=_config(transcript, config_name), params=params, window=window
        )
    elif strategy:
        spec = services.RunSpec(strategy=strategy, params=params, window=window)
    else:
        raise ValueError("give --strategy PRESET or --config NAME")
    run = services.run_create(
        owner=transcript.owner,
        transcript=transcript,
        spec=spec,
        summarizer=summarizer,
        enqueue=False,
        llm=run_budget.LLMOptions(model=model or "", api=api, stream=stream),
    )
    return executor.run_execute(run=run, on_progress=ChannelProgress())


def _transcript(transcript_id: str) -> Transcript:
    try:
        return Transcript.objects.get(pk=int(transcript_id))
    except (Transcript.DoesNotExist, ValueError):
        raise ValueError(f"no transcript with id {transcript_id!r}") from None


def _config(transcript: Transcript, name: str) -> StrategyConfig:
    config = StrategyConfig.objects.filter(owner=transcript.owner, name=name).first()
    if config is None:
        names = ", ".join(
            StrategyConfig.objects.filter(owner=transcript.owner).values_list("name", flat=True)
        )
        raise ValueError(
            f"{transcript.owner} has no configuration named {name!r} (known: {names or 'none'})"
        )
    return config


def save_sweep(
    *,
    transcript_id: str,
    strategy: str | None,
    config_name: str | None,
    sweep_text: str,
    assignments: Sequence[str] = (),
    summarizer: str = "offline",
    model: str | None = None,
    api: str = "chat",
    stream: bool = False,
    window: int | None = None,
) -> tuple[RunGroup, list[Run]]:
    """``--sweep key=v1,v2`` (or ``key=start:stop:step``): a sweep group created as the web
    creates it, its runs executed here one after another."""
    transcript = _transcript(transcript_id)
    extra = parse_assignments(list(assignments))
    if config_name:
        config = _config(transcript, config_name)
        base = sweep.Base(strategy=config.strategy, config=config, extra=extra, window=window)
    elif strategy:
        base = sweep.Base(strategy=strategy, extra=extra, window=window)
    else:
        raise ValueError("give --strategy PRESET or --config NAME")
    key, sep, raw = sweep_text.partition("=")
    if not sep:
        raise ValueError(
            f"--sweep expects key=v1,v2,... or key=start:stop:step, got {sweep_text!r}"
        )
    spec = sweep.param_spec(base.strategy, key.strip())
    values = sweep.check_values(
        strategy=base.strategy, base=base.overrides, spec=spec, values=sweep.parse_text(spec, raw)
    )
    group = services.group_create(
        owner=transcript.owner,
        transcript=transcript,
        specs=sweep.specs(base, spec.name, values),
        summarizer=summarizer,
        name=sweep.default_name(base, spec.name),
        enqueue=False,
        llm=run_budget.LLMOptions(model=model or "", api=api, stream=stream),
    )
    runs = [
        executor.run_execute(run=run, on_progress=ChannelProgress())
        for run in group.runs.order_by("pk")
    ]
    return group, runs


def describe_sweep(group: RunGroup, runs: Sequence[Run]) -> str:
    found = sweep.detect(list(runs))
    lines = [f"sweep group {group.pk}: {group.get_absolute_url()}"]
    if found is None:
        return "\n".join(lines + [describe(run) for run in runs])
    columns = found.columns[:5]
    lines.append("  ".join([f"{found.key:>24}", "run", *[c.key for c in columns], "status"]))
    for row in found.rows:
        cells = ["-" if v is None else str(v) for v in row.values[:5]]
        lines.append("  ".join([f"{sweep.fmt_value(row.value):>24}", str(row.run.pk), *cells,
                                row.run.status]))  # fmt: skip
    return "\n".join(lines)


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
