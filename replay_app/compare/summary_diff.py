"""Two ticked summaries (``/compare/summaries/diff/?pick=RUN:SEQ&pick=RUN:SEQ``): word by
word as one text, and section by section (Goal beside Goal,
``display.summary_sections``). One ``SummaryDiffPage`` feeds the template and its
``?format=json`` twin. The texts are masked before anything is diffed or shown, as every
page showing a summary does."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from ctxlab.engine.privacy.secrets import mask
from replay_app.display.summary_sections import SummaryTexts
from replay_app.models import Run, RunSummary


@dataclass
class SummaryDiffPage:
    run_a: Run
    a: RunSummary
    run_b: Run
    b: RunSummary

    @cached_property
    def texts(self) -> SummaryTexts:
        return SummaryTexts(mask(self.a.output), mask(self.b.output))

    def _side(self, run: Run, summary: RunSummary) -> dict[str, Any]:
        return {"run": run.pk, "label": run.label, "seq": summary.seq, "step": summary.step}

    def as_json(self) -> dict[str, Any]:
        return {
            "left": {**self._side(self.run_a, self.a), "output": self.texts.left},
            "right": {**self._side(self.run_b, self.b), "output": self.texts.right},
            "sections": [pair.as_json() for pair in self.texts.sections],
        }

    def context(self) -> dict[str, Any]:
        sections = [
            {
                "heading": pair.heading,
                "left_heading": pair.left.heading if pair.left else None,
                "right_heading": pair.right.heading if pair.right else None,
                "left": mark_safe(pair.left_html),  # noqa: S308 - escaped inside
                "right": mark_safe(pair.right_html),  # noqa: S308 - escaped inside
                "same": pair.same,
            }
            for pair in self.texts.sections
        ]
        diff: SafeString = mark_safe(self.texts.whole_html)  # noqa: S308 - escaped inside
        return {
            "error": "",
            "a": self.a,
            "b": self.b,
            "run_a": self.run_a,
            "run_b": self.run_b,
            "diff": diff,
            "sections": sections,
            "sections_matched": sum(
                1 for s in sections if s["left_heading"] and s["right_heading"]
            ),
        }
