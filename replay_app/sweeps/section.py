"""A group's sweep section: one object for the table the group page shows, the fragment
``/runs/groups/<id>/sweep/`` polls, and that URL's JSON and CSV twins."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.urls import reverse

from replay_app.models import Run, RunGroup
from replay_app.runs import analysis_state
from replay_app.sweeps import sweep, sweep_chart

POLL_SECONDS = 2


def settled(runs: list[Run]) -> int:
    """Runs no longer queued, running or analysed (``analysis_state.settled``: the ledger's
    cost comes with the analysis): the fragment changes when this does."""
    return sum(1 for run in runs if analysis_state.settled(run))


class SweepSection:
    def __init__(self, group: RunGroup, runs: list[Run], found: sweep.Sweep) -> None:
        self.group, self.runs, self.sweep = group, runs, found
        self.settled = settled(runs)
        self.poll_seconds = POLL_SECONDS
        self.url = reverse("run-group-sweep", args=[group.pk])
        self.compare_ids = found.compare_ids()
        self.compare_link = ",".join(map(str, self.compare_ids))

    @classmethod
    def of(cls, group: RunGroup, runs: list[Run]) -> SweepSection | None:
        """The section when the group's runs vary one parameter, else None."""
        found = sweep.detect(runs)
        return None if found is None else cls(group, runs, found)

    @cached_property
    def chart(self) -> str:
        return (
            sweep_chart.chart_html(self.sweep, group_id=self.group.pk)
            if self.sweep.done_count
            else ""
        )

    def context(self) -> dict[str, Any]:
        """What ``sweeps/_sweep.html#sweep-section`` reads."""
        return {
            "group": self.group,
            "sweep": self.sweep,
            "settled": self.settled,
            "poll_seconds": self.poll_seconds,
            "url": self.url,
            "compare_ids": self.compare_ids,
            "compare_link": self.compare_link,
            "chart": self.chart,
        }

    def as_json(self) -> dict[str, Any]:
        return sweep.as_json(self.sweep)

    def as_csv(self) -> str:
        return sweep.as_csv(self.sweep)
