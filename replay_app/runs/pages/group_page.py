"""A comparison group's page (``/runs/groups/<id>/``): one object that its template (live
progress, results table, the sweep section) and its JSON twin both read."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.urls import reverse

from replay_app.compare import overview
from replay_app.models import Run, RunGroup
from replay_app.runs import analysis_state, progress
from replay_app.runs.pages.run_page import METRICS, run_json
from replay_app.sweeps.section import SweepSection

MAX_COMPARE = 6  # the compare page takes 2-6 runs


class GroupPage:
    def __init__(self, group: RunGroup) -> None:
        self.group = group
        self.runs: list[Run] = list(group.runs.select_related("config").order_by("pk"))

    @cached_property
    def sweep(self) -> SweepSection | None:
        return SweepSection.of(self.group, self.runs)

    @property
    def finished(self) -> bool:
        return all(not r.is_active for r in self.runs)

    @cached_property
    def analysing(self) -> bool:
        """A finished run whose worker is still analysing it (``analysis_state``): its
        ledger figures are not there yet, so the table waits (and asks again)."""
        return any(analysis_state.pending(r) for r in self.runs)

    @property
    def compare_url(self) -> str:
        """Up to 6 runs compare directly; a larger group opens the picker with its first 6
        ticked."""
        if len(self.runs) <= MAX_COMPARE:
            return f"{reverse('run-compare')}?runs={','.join(str(r.pk) for r in self.runs)}"
        return f"{reverse('run-compare')}?group={self.group.pk}"

    def context(self) -> dict[str, Any]:
        runs = self.runs
        return {
            "group": self.group,
            "runs": runs,
            "states": [progress.run_state(r, latest=[]) for r in runs],
            "finished": self.finished,
            "analysing": self.finished and self.analysing,
            "metric_rows": [
                (key, label, hint, [r.metrics.get(key) for r in runs])
                for key, label, hint in METRICS
            ],
            "compare_ids": ",".join(str(r.pk) for r in runs),
            "compare_url": self.compare_url,
            "windows": sorted({r.window for r in runs if r.window}),
            "sweep_section": self.sweep,
        }

    def csv(self) -> str:
        """The results as the compare page's CSV (``overview.runs_metrics_csv``: one column
        list, its rows and values, the best rule in its header notes), one column per run
        (any number of runs, where the compare page takes at most 6)."""
        return overview.runs_metrics_csv(self.runs)

    def csv_filename(self) -> str:
        return f"comparison-{self.group.pk}.csv"

    def as_json(self) -> dict[str, Any]:
        group = self.group
        return {
            "id": group.pk,
            "name": group.name,
            "transcript": {"id": group.transcript_id, "title": str(group.transcript)},
            "created_at": group.created_at.isoformat(),
            "runs": [run_json(r) for r in self.runs],
            "analysing": self.finished and self.analysing,  # the results table waits
            "sweep": self.sweep.as_json() if self.sweep else None,
        }
