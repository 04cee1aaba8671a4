"""The prompt editor's pages: one page-data object each, for the template and its JSON twin
(``?format=json``). Prompt texts are shown as they are saved (templates auto-escape); the
summaries and transcript titles pass through secret masking, as every page showing them."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.urls import reverse

from ctxlab.engine.privacy.secrets import mask
from ctxlab.engine.summarize import prompt_edit
from ctxlab.web.ownership import owned
from judge_app.models import ProbeSet
from prompts_app import services
from prompts_app.models import PromptVersion
from replay_app.compare.summary_diff import SummaryDiffPage
from replay_app.models import Run, RunSummary
from replay_app.runs.survival import run_survival
from sessions_app.models import Transcript

TRANSCRIPT_CHOICES = 200  # newest transcripts offered by the replay form


def version_json(v: PromptVersion) -> dict[str, Any]:
    return {
        "id": v.pk,
        "strategy": v.strategy,
        "number": v.number,
        "name": v.name,
        "text": v.text,
        "rules": v.rules.splitlines(),
        "instructions": v.instructions,
        "parent": v.parent_id,
        "created_at": v.created_at.isoformat(),
        "url": v.get_absolute_url(),
    }


def run_numbers(run: Run) -> dict[str, Any]:
    """What the editor shows of one replay: survival by category, probes, cost."""
    metrics = run.metrics or {}
    survival = run_survival(run) if run.status == "done" else None
    probes = ProbeSet.objects.filter(run=run).values_list("offline", flat=True).first()
    categories = (survival or {}).get("categories", {})
    return {
        "run": run.pk,
        "label": run.label,
        "status": run.status,
        "summarizer": run.summarizer,
        "url": run.get_absolute_url(),
        "compactions": metrics.get("compactions"),  # by kind
        "compactions_total": _total(metrics.get("compactions")),
        "survival": (survival or {}).get("survival"),
        "categories": {k: c for k, c in categories.items() if c.get("at_risk")},
        "probe_score": (probes or {}).get("score"),
        "summary_input_tokens": metrics.get("summary_input_tokens"),
        "summary_output_tokens": metrics.get("summary_output_tokens"),
        "cost_usd": metrics.get("llm_cost_usd"),
    }


def _total(value: Any) -> int | None:
    if isinstance(value, dict):
        return sum(int(v) for v in value.values() if isinstance(v, int | float))
    return int(value) if isinstance(value, int | float) else None


@dataclass
class PromptListPage:
    user: Any

    @cached_property
    def versions(self) -> list[PromptVersion]:
        return list(owned(PromptVersion.objects, self.user).order_by("strategy", "-number"))

    def targets(self) -> list[dict[str, Any]]:
        return [
            {"strategy": t.strategy, "label": t.label, "native": t.native, "where": t.where}
            for t in prompt_edit.TARGETS.values()
        ]

    def as_json(self) -> dict[str, Any]:
        return {
            "targets": self.targets(),
            "versions": [version_json(v) for v in self.versions],
        }

    def context(self) -> dict[str, Any]:
        return {"targets": self.targets(), "versions": self.versions}


@dataclass
class VersionPage:
    version: PromptVersion
    error: str = ""

    @cached_property
    def resolved(self) -> prompt_edit.Resolved:
        return services.version_resolved(self.version)

    @cached_property
    def siblings(self) -> list[PromptVersion]:
        return list(
            owned(PromptVersion.objects, self.version.owner)
            .filter(strategy=self.version.strategy)
            .order_by("-number")
        )

    @cached_property
    def replays(self) -> list[dict[str, Any]]:
        """Each replay of this version with the runs of its comparison group beside it."""
        out = []
        for run in services.version_runs(self.version)[:20]:
            group = (
                list(Run.objects.filter(group_id=run.group_id).order_by("pk"))
                if run.group_id
                else [run]
            )
            ids = ",".join(str(r.pk) for r in group)
            out.append(
                {
                    "transcript": mask(run.transcript.title or f"transcript {run.transcript_id}"),
                    "summarizer": run.summarizer,
                    "compare_url": f"{reverse('run-compare')}?runs={ids}" if len(group) > 1 else "",
                    "runs": [run_numbers(r) for r in group],
                }
            )
        return out

    def transcripts(self) -> list[Transcript]:
        return list(
            owned(Transcript.objects, self.version.owner).order_by("-pk")[:TRANSCRIPT_CHOICES]
        )

    def _common(self) -> dict[str, Any]:
        tgt = prompt_edit.target(self.version.strategy)
        return {
            "target": {"label": tgt.label, "native": tgt.native, "where": tgt.where,
                       "mode": tgt.native_mode},
            "params": self.resolved.params,
            "lab_edit": self.resolved.edit.as_json() if self.resolved.edit else None,
            "expressible": self.resolved.expressible,
            "notes": list(self.resolved.notes),
            "original": tgt.default_text(),
            "summarizers": list(services.replay_summarizers()),
        }  # fmt: skip

    def as_json(self) -> dict[str, Any]:
        return {
            "version": version_json(self.version),
            **self._common(),
            "versions": [version_json(v) for v in self.siblings],
            "replays": self.replays,
            "export_url": reverse("prompt-export", args=[self.version.pk]),
            "error": self.error,
        }

    def context(self) -> dict[str, Any]:
        return {
            "version": self.version,
            **self._common(),
            "versions": self.siblings,
            "replays": self.replays,
            "transcripts": self.transcripts(),
            "error": self.error,
        }


def prompt_diff(a: str, b: str) -> list[dict[str, str]]:
    """Line by line: ``{"op": "same" | "removed" | "added", "text": line}`` (texts raw;
    the template escapes them)."""
    out: list[dict[str, str]] = []
    left, right = a.splitlines(), b.splitlines()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, left, right).get_opcodes():
        if op == "equal":
            out += [{"op": "same", "text": line} for line in left[i1:i2]]
            continue
        out += [{"op": "removed", "text": line} for line in left[i1:i2]]
        out += [{"op": "added", "text": line} for line in right[j1:j2]]
    return out


def _first_summary(run: Run) -> RunSummary | None:
    return RunSummary.objects.filter(run=run).exclude(output="").order_by("seq").first()


@dataclass
class DiffPage:
    """Two versions: the diff of their prompts beside the diff of their summaries (the
    first summary of each one's latest finished run on a transcript both replayed)."""

    a: PromptVersion
    b: PromptVersion

    @cached_property
    def rules(self) -> list[dict[str, str]]:
        return prompt_diff(self.a.rules, self.b.rules)

    @cached_property
    def instructions(self) -> list[dict[str, str]]:
        return prompt_diff(self.a.instructions, self.b.instructions)

    @cached_property
    def lines(self) -> list[dict[str, str]]:
        return prompt_diff(self.a.text, self.b.text)

    @cached_property
    def runs(self) -> tuple[Run, Run] | None:
        done_a = [r for r in services.version_runs(self.a) if r.status == "done"]
        done_b = [r for r in services.version_runs(self.b) if r.status == "done"]
        for rb in done_b:  # newest first: the latest pair on one transcript
            for ra in done_a:
                if ra.transcript_id == rb.transcript_id and ra.summarizer == rb.summarizer:
                    return ra, rb
        return None

    @cached_property
    def summaries(self) -> SummaryDiffPage | None:
        if self.runs is None:
            return None
        ra, rb = self.runs
        sa, sb = _first_summary(ra), _first_summary(rb)
        if sa is None or sb is None:
            return None
        return SummaryDiffPage(ra, sa, rb, sb)

    def _numbers(self) -> list[dict[str, Any]]:
        return [run_numbers(r) for r in self.runs] if self.runs else []

    def as_json(self) -> dict[str, Any]:
        return {
            "a": version_json(self.a),
            "b": version_json(self.b),
            "prompt_diff": self.lines,
            "rules_diff": self.rules,
            "instructions_diff": self.instructions,
            "runs": self._numbers(),
            "summary_diff": self.summaries.as_json() if self.summaries else None,
        }

    def context(self) -> dict[str, Any]:
        summaries = self.summaries.context() if self.summaries else None
        return {
            "a": self.a,
            "b": self.b,
            "lines": self.lines,
            "rules": self.rules,
            "instructions": self.instructions,
            "changed": any(
                row["op"] != "same" for row in self.lines + self.rules + self.instructions
            ),
            "runs": self._numbers(),
            "summaries": summaries,
        }
