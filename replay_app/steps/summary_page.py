"""The summary page: one summary next to the exact input it was made from. One
``SummaryPage`` feeds both the template and the ``?format=json`` twin, so they cannot
disagree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay_app.models import Run, RunSummary
from replay_app.runs import analysis_state, textstore
from replay_app.runs.ordinals import compaction_ordinals


@dataclass
class SummaryPage:
    run: Run
    summary: RunSummary
    compaction: int | None = None  # the K of the event that wrote it (``runs.ordinals``)
    # Its input not stored yet: an in-process run stores them after done (``executor``).
    input_pending: bool = False

    @property
    def input_missing(self) -> bool:
        """No input and none coming: the worker stopped between done and storing them."""
        return not self.summary.input and not self.input_pending

    def as_json(self) -> dict[str, Any]:
        summary = self.summary
        return {
            "run": self.run.pk,
            "seq": summary.seq,
            "step": summary.step,
            "compaction": self.compaction,
            "input": summary.input,
            "input_pending": self.input_pending,
            "input_missing": self.input_missing,
            "output": summary.output,
            "input_tokens": summary.input_tokens,
            "output_tokens": summary.output_tokens,
            "usage_estimated": summary.usage_estimated,
            "error": summary.error,
            "messages": summary.messages,
        }

    def context(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "summary": self.summary,
            "compaction": self.compaction,
            "input_pending": self.input_pending,
            "input_missing": self.input_missing,
        }


def summary_page(run: Run, seq: int) -> SummaryPage:
    """The page of the run's summary ``seq``; LookupError when the run has none."""
    summary = RunSummary.objects.filter(run=run, seq=seq).first()
    if summary is None:
        raise LookupError("no such summary")
    summary.input = textstore.summary_input(summary)  # stored by reference: read back once
    pending = not summary.input and (run.is_active or analysis_state.pending(run))
    event = run.events.filter(summary_seq=seq).order_by("seq").values_list("seq", flat=True)
    first = event.first()
    compaction = None if first is None else compaction_ordinals(run).get(first)
    return SummaryPage(run=run, summary=summary, compaction=compaction, input_pending=pending)
