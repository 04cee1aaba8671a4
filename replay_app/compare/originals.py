"""The original agent's own compactions beside a replay's: what the run page's table, the
compare page's "the original" row and both JSON twins read.

Built from the rows a finished run stored (``metrics["original_compactions"]``,
``ctxlab.engine.summarize.recorded.agreement_rows``), never by replaying in a request. The words
(kind of compaction, relation) come from the catalogue; the relation is derived from the
stored steps, so runs stored before a word changed say it the current way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ctxlab.engine.core.catalogue import original_kind_label, relation_label
from ctxlab.engine.summarize.recorded import in_file, steps_apart
from replay_app.models import Run


@dataclass(frozen=True, slots=True)
class OriginalRow:
    """One compaction the transcript's agent made, next to the replay's nearest one."""

    kind_key: str  # catalogue.ORIGINAL_KINDS (or the importer's kind for older rows)
    kind_label: str
    trigger: str
    instructions: str  # the focus text of a manual /compact (transcript text: escaped)
    cleared: int | None  # microcompact: tool results cleared
    tokens_saved: int | None
    agent_version: str
    original_step: int | None
    original_tokens: int | None
    replay_step: int | None
    replay_tokens: int | None
    replay_kind: str
    rules_version: str
    rules_reason: str
    decided_by: str  # the original's act settled a count the transcript leaves open
    relation_key: str  # catalogue.RELATIONS
    relation: str

    @property
    def step_difference(self) -> int | None:
        return steps_apart(self.original_step, self.replay_step)

    @property
    def tokens_difference(self) -> int | None:
        if self.original_tokens is None or self.replay_tokens is None:
            return None
        return self.replay_tokens - self.original_tokens

    @property
    def agree(self) -> bool:
        return self.relation_key == "same_step"

    @property
    def in_file(self) -> bool:
        return in_file(self.original_step)

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "step_difference": self.step_difference,
            "tokens_difference": self.tokens_difference,
            "agree": self.agree,
        }


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def relation_key(original_step: int | None, replay_step: int | None) -> str:
    if original_step is None:
        return "after_last_step"
    if replay_step is None:
        return "not_reproduced"
    diff = replay_step - original_step
    return "same_step" if diff == 0 else "earlier" if diff < 0 else "later"


def original_row(stored: Mapping[str, Any]) -> OriginalRow:
    """A stored agreement row (any age: keys added later default to empty)."""
    original_step, replay_step = _int(stored.get("original_step")), _int(stored.get("replay_step"))
    key = relation_key(original_step, replay_step)
    kind_key = str(stored.get("kind_key") or stored.get("original_kind") or "")
    return OriginalRow(
        kind_key=kind_key,
        kind_label=original_kind_label(kind_key),
        trigger=str(stored.get("trigger") or ""),
        instructions=str(stored.get("instructions") or ""),
        cleared=_int(stored.get("cleared")),
        tokens_saved=_int(stored.get("tokens_saved")),
        agent_version=str(stored.get("agent_version") or ""),
        original_step=original_step,
        original_tokens=_int(stored.get("original_tokens")),
        replay_step=replay_step,
        replay_tokens=_int(stored.get("replay_tokens")),
        replay_kind=str(stored.get("replay_kind") or ""),
        rules_version=str(stored.get("rules_version") or ""),
        rules_reason=str(stored.get("rules_reason") or ""),
        decided_by=str(stored.get("decided_by") or ""),
        relation_key=key,
        relation=relation_label(
            key,
            None if original_step is None or replay_step is None else replay_step - original_step,
        ),
    )


def run_rows(run: Run) -> list[OriginalRow]:
    """The run's original compactions beside its own ([] when the transcript has none or
    the run is not done)."""
    stored = (run.metrics or {}).get("original_compactions") or []
    return [original_row(row) for row in stored if isinstance(row, Mapping)]


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    """A run-like row of the compare page's table: "the original" or one run."""

    key: str  # "original" or the run's id
    label: str
    compactions: int | None  # the original's in the transcript; a run's own (all kinds)
    steps: tuple[int | None, ...]  # per original compaction: its step / the run's paired step
    same_step: int | None  # None on the original's row
    within_1: int | None
    not_reproduced: int | None
    # per original compaction: what settled the run's paired compaction when the
    # transcript left the count open (``OriginalRow.decided_by``; "" its own count)
    decided_by: tuple[str, ...] = ()

    @property
    def is_original(self) -> bool:
        return self.key == "original"

    @property
    def cells(self) -> list[tuple[int, int | None, str]]:
        """(compaction number from 1, step, decided_by) of each original compaction."""
        settled = self.decided_by or ("",) * len(self.steps)
        return [
            (k, step, why) for k, (step, why) in enumerate(zip(self.steps, settled, strict=True), 1)
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "steps": list(self.steps),
            "decided_by": list(self.decided_by),
            "is_original": self.is_original,
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    """The original's compactions against every run's: one row for the original (steps
    and count from the transcript, as the runs stored them), then one per run."""

    originals: tuple[OriginalRow, ...]  # the first run's rows: the transcript's compactions
    rows: tuple[ComparisonRow, ...]

    @property
    def settled(self) -> list[tuple[ComparisonRow, int, str]]:
        """(run row, compaction number, decided_by) of each paired compaction the
        original's act settled: the notes under the table."""
        return [(row, k, why) for row in self.rows for k, _, why in row.cells if why]

    def as_json(self) -> dict[str, Any] | None:
        if not self.rows:
            return None
        return {
            "compactions": [row.as_dict() for row in self.originals],
            "original": next(r.as_dict() for r in self.rows if r.is_original),
            "runs": {r.key: r.as_dict() for r in self.rows if not r.is_original},
        }


def comparison(runs: Sequence[Run]) -> Comparison:
    """Empty (no rows) when no run stored the original's compactions."""
    per_run = [(run, run_rows(run)) for run in runs]
    originals = next((rows for _, rows in per_run if rows), [])
    if not originals:
        return Comparison((), ())
    table = [
        ComparisonRow(
            key="original",
            label="the original",
            compactions=len(originals),
            steps=tuple(r.original_step for r in originals),
            same_step=None,
            within_1=None,
            not_reproduced=None,
        )
    ]
    for run, rows in per_run:
        count = (run.metrics or {}).get("compaction_count")
        table.append(
            ComparisonRow(
                key=str(run.pk),
                label=f"run {run.pk} · {run.label}",
                compactions=count if isinstance(count, int) else None,
                steps=tuple(r.replay_step for r in rows),
                same_step=sum(r.agree for r in rows) if rows else None,
                within_1=(
                    sum(d is not None and abs(d) <= 1 for d in (r.step_difference for r in rows))
                    if rows
                    else None
                ),
                not_reproduced=(
                    sum(r.relation_key == "not_reproduced" for r in rows) if rows else None
                ),
                decided_by=tuple(r.decided_by for r in rows),
            )
        )
    return Comparison(tuple(originals), tuple(table))
