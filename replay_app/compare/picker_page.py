"""The compare picker (``/compare/`` without runs): the user's runs grouped by transcript.
One ``PickerPage`` feeds both the template and the ``?format=json`` twin, so they cannot
disagree."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ctxlab.web.ownership import owned
from replay_app.compare import overview
from replay_app.models import Run


@dataclass
class PickerPage:
    # One entry per transcript: {"transcript", "runs", "groups", "group_links"}.
    picker: list[dict[str, Any]]
    ticked: list[int] = field(default_factory=list)
    error: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "transcripts": [
                {
                    "transcript": e["transcript"].pk,
                    "title": e["transcript"].display_title,
                    "runs": [{"id": r.pk, "label": r.label, "status": r.status} for r in e["runs"]],
                }
                for e in self.picker
            ]
        }

    def context(self) -> dict[str, Any]:
        context: dict[str, Any] = {"picker": self.picker, "ticked": self.ticked}
        if self.error:
            context["error"] = self.error
        return context


# The picker lists the user's newest runs, this many (a suite alone makes hundreds).
PICKER_RUNS = 500


def picker_page(user: Any, group: str = "") -> PickerPage:
    """The user's newest ``PICKER_RUNS`` runs by transcript, the transcript with the newest
    run first; ``group`` (the group page's link) ticks that group's first runs and puts its
    transcript first."""
    ticked: list[int] = []
    if group.isdigit():
        ticked = list(
            owned(Run.objects, user)
            .filter(group_id=int(group))
            .order_by("pk")
            .values_list("pk", flat=True)[: overview.MAX_RUNS]
        )
    runs = (
        owned(Run.objects, user)
        .select_related("transcript", "group")
        .order_by("-id")
        .only(
            "id",
            "label",
            "strategy",
            "status",
            "transcript_id",
            "transcript__title",
            "transcript__conversation_id",
            "group_id",
            "group__name",
            "created_at",
        )[:PICKER_RUNS]
    )
    groups: dict[int, dict[str, Any]] = {}
    for run in runs:
        entry = groups.setdefault(
            run.transcript_id, {"transcript": run.transcript, "runs": [], "groups": {}}
        )
        entry["runs"].append(run)
        if run.group_id:
            entry["groups"].setdefault(run.group_id, []).append(run.pk)
    for entry in groups.values():
        entry["group_links"] = [
            (gid, ",".join(map(str, ids[: overview.MAX_RUNS])))
            for gid, ids in entry["groups"].items()
            if len(ids) >= overview.MIN_RUNS
        ]
    picked = list(groups.values())
    if ticked:
        first = next((t for t, e in groups.items() if any(r.pk in ticked for r in e["runs"])), None)
        picked.sort(key=lambda e: e["transcript"].pk != first)
    return PickerPage(picker=picked, ticked=ticked)
