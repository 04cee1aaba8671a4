"""Named actions on prompt versions: start from a strategy's real prompt, save an edited
version, replay a version beside the original prompt (a comparison group of two runs), and
export it (keyword-only, ``<entity>_<verb>``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.db import transaction
from django.db.models import Max

from ctxlab.engine.native_config import NativeConfig
from ctxlab.engine.native_config.prompts import prompt_export
from ctxlab.engine.summarize import prompt_edit
from ctxlab.web.ownership import owned
from prompts_app.models import PromptVersion
from replay_app.configs import services as config_services
from replay_app.costs import llm as llm_mod
from replay_app.costs.run_budget import LLMOptions
from replay_app.models import Run, RunGroup, StrategyConfig
from replay_app.runs import services as run_services
from sessions_app.models import Transcript
from suites_app import services as suite_services
from suites_app.models import Suite

MAX_TEXT = 200_000  # characters of a prompt, rules or instructions
LLM_KEY = "prompt_version"  # Run.llm: the version a run replayed
EDIT_KEY = "prompt_edit"  # Run.llm: the lab's request edit (prompt_edit.PromptEdit)


def replay_summarizers() -> tuple[str, ...]:
    """The summarisers a prompt can be replayed with: every one the runs take but the
    transcript's own recorded summaries (a prompt changes nothing for those)."""
    return tuple(s for s in run_services.SUMMARIZERS if s != "recorded")


def version_start(*, owner: Any, strategy: str) -> PromptVersion:
    """Version 1 of ``strategy``'s prompt for ``owner``: its real prompt, unchanged (the
    existing one when there is one)."""
    tgt = prompt_edit.target(strategy)
    first = owned(PromptVersion.objects, owner).filter(strategy=strategy, number=1).first()
    if first is not None:
        return first
    return _create(owner=owner, strategy=strategy, text=tgt.default_text(), name="original")


def version_save(
    *,
    owner: Any,
    parent: PromptVersion,
    text: str,
    rules: str = "",
    instructions: str = "",
    name: str = "",
) -> PromptVersion:
    """A new version after ``parent`` (the editor never changes a saved version)."""
    for label, value in (("prompt", text), ("rules", rules), ("instructions", instructions)):
        if len(value) > MAX_TEXT:
            raise ValueError(f"the {label} is longer than {MAX_TEXT:,} characters")
    if not text.strip():
        raise ValueError("the prompt is empty")
    if instructions.strip() and prompt_edit.target(parent.strategy).native_mode != "append":
        raise ValueError(f"{parent.strategy} takes no custom instructions: edit the prompt")
    return _create(
        owner=owner,
        strategy=parent.strategy,
        text=text.replace("\r\n", "\n"),
        rules="\n".join(prompt_edit.clean_rules(rules)),
        instructions=instructions.replace("\r\n", "\n").strip(),
        name=name.strip()[:100],
        parent=parent,
    )


def _create(**fields: Any) -> PromptVersion:
    with transaction.atomic():
        mine = PromptVersion.objects.select_for_update().filter(
            owner=fields["owner"], strategy=fields["strategy"]
        )
        number = (mine.aggregate(n=Max("number"))["n"] or 0) + 1
        return PromptVersion.objects.create(number=number, **fields)


def version_resolved(version: PromptVersion) -> prompt_edit.Resolved:
    return prompt_edit.resolve(
        version.strategy, version.text, version.rules.splitlines(), version.instructions
    )


def version_export(version: PromptVersion) -> NativeConfig:
    return prompt_export(
        version.strategy, version.text, version.rules.splitlines(), version.instructions
    )


def version_runs(version: PromptVersion) -> list[Run]:
    """The owner's runs of this version, newest first."""
    return list(
        owned(Run.objects, version.owner)
        .filter(**{f"llm__{LLM_KEY}": version.pk})
        .select_related("transcript")
        .order_by("-pk")
    )


def _tag(run: Run, version: PromptVersion) -> None:
    """The run replays ``version``: its id, and the lab's edit when it has one."""
    resolved = version_resolved(version)
    extra: dict[str, Any] = {LLM_KEY: version.pk}
    if resolved.edit is not None:
        extra[EDIT_KEY] = resolved.edit.as_json()
    run.llm = {**(run.llm or {}), **extra}
    run.save(update_fields=["llm"])


def _sides(owner: Any, version: PromptVersion, baseline: PromptVersion | None) -> list[Any]:
    base = baseline or version_start(owner=owner, strategy=version.strategy)
    if base.strategy != version.strategy:
        raise ValueError("a version is compared with a version of the same strategy")
    return [base] if base.pk == version.pk else [base, version]


def _llm(summarizer: str, llm: LLMOptions | None) -> LLMOptions | None:
    if llm is not None and not llm.model and summarizer == "anthropic":
        return replace(llm, model=llm_mod.default_model())
    return llm


def version_suite(
    *,
    owner: Any,
    version: PromptVersion,
    transcripts: list[Transcript],
    summarizer: str = "offline",
    baseline: PromptVersion | None = None,
    window: int | None = None,
    llm: LLMOptions | None = None,
    name: str = "",
) -> Suite:
    """A suite: the baseline and ``version`` (two configurations) over ``transcripts``; each
    run carries its version as a replay from the version page does (a lab edit included)."""
    if summarizer not in replay_summarizers():
        raise ValueError(f"unknown summarizer {summarizer!r}")
    sides = _sides(owner, version, baseline)
    configs = [
        {
            "strategy": side.strategy,
            "params": version_resolved(side).params,
            "label": f"{side.strategy} prompt v{side.number}",
            "window": window,
        }
        for side in sides
    ]
    label = name.strip() or f"{version.strategy} prompt v{sides[0].number} vs v{version.number}"
    with transaction.atomic():
        suite = suite_services.suite_create(
            owner=owner, name=label[:200], transcripts=transcripts, configs=configs,
            summarizer=summarizer, enqueue=False, llm=_llm(summarizer, llm),
        )  # fmt: skip
        for item in suite.items.select_related("run"):
            if item.run is not None:
                _tag(item.run, sides[item.config_index])
        transaction.on_commit(lambda: suite_services.suite_enqueue(suite))
    return suite


def version_replay(
    *,
    owner: Any,
    version: PromptVersion,
    transcript: Transcript,
    summarizer: str = "offline",
    baseline: PromptVersion | None = None,
    params: dict[str, Any] | None = None,
    window: int | None = None,
    llm: LLMOptions | None = None,
) -> RunGroup:
    """A comparison of two runs on ``transcript``: ``baseline`` (version 1, the real prompt,
    when not given) and ``version``; each run's params carry the version's native setting
    and its ``llm`` the version and the lab's edit."""
    if summarizer not in replay_summarizers():
        raise ValueError(f"unknown summarizer {summarizer!r}")
    sides = _sides(owner, version, baseline)
    llm = _llm(summarizer, llm)
    with transaction.atomic():
        group = RunGroup.objects.create(
            owner=owner,
            transcript=transcript,
            name=f"{version.strategy} prompt v{sides[0].number} vs v{version.number}"[:200],
        )
        for side in sides:
            spec = run_services.RunSpec(
                strategy=side.strategy,
                params={**(params or {}), **version_resolved(side).params},
                label=f"{side.strategy} prompt v{side.number}",
                window=window,
            )
            run = run_services.run_create(
                owner=owner, transcript=transcript, spec=spec, summarizer=summarizer,
                group=group, enqueue=False, llm=llm,
            )  # fmt: skip
            _tag(run, side)
            run_services.run_enqueue(run)
    return group


def version_adopt(*, owner: Any, version: PromptVersion) -> StrategyConfig:
    """A strategy configuration with the version's native setting (for suites and the run
    form). A lab-only edit cannot be saved so: refused."""
    resolved = version_resolved(version)
    if not resolved.params:
        raise ValueError(
            f"{version.strategy} v{version.number} has no setting of the agent's own to save"
        )
    described = f"From the prompt editor: {version}."
    if not resolved.expressible:
        described += " Only the agent's own setting is saved; the edited prompt text is not."
    return config_services.config_adopt(
        owner=owner,
        strategy=version.strategy,
        params=resolved.params,
        name=f"{version.strategy} prompt v{version.number}",
        description=described,
    )
