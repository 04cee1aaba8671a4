"""A step view's events: a finished run's are grouped by step once (memo), an unfinished
run's are read at each view; both give what the stored events say."""

from __future__ import annotations

from typing import Any

import pytest
from inspect_helpers import make_run

from ctxlab.engine.core.records import event_brief
from replay_app import memo
from replay_app.models import Run, RunEvent, RunStatus
from replay_app.steps import at_step

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]


def _stored(run: Run) -> dict[int, list[dict[str, Any]]]:
    """Each step's briefs, from one query per step (what a step view used to run)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for step in sorted(set(RunEvent.objects.filter(run=run).values_list("step", flat=True))):
        rows = RunEvent.objects.filter(run=run, step=step).order_by("seq")
        out[step] = [
            event_brief(e.seq, e.step, e.kind, e.tokens_before, e.tokens_after, len(e.messages))
            for e in rows
        ]
    return out


@pytest.mark.parametrize("preset", ["cowagent", "qwenpaw"])
def test_grouped_events_are_the_stored_events_of_each_step(
    user: Any, transcript: Any, preset: str
) -> None:
    run = make_run(user, transcript, preset)
    expected = _stored(run)
    assert expected, f"{preset} compacted nothing on the test transcript"
    for step in range(run.steps_total):
        assert at_step.events_at(run, step) == expected.get(step, []), step
        assert at_step.step_view(run, step).events_here == expected.get(step, [])
    assert memo.MEMO.get(memo._cache_key(run, "events-by-step") or "") is not None
    # An unfinished run is read at each view (nothing kept while it changes).
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, finished_at=None)
    running = Run.objects.get(pk=run.pk)
    memo.MEMO.clear()
    step = next(iter(expected))
    assert at_step.events_at(running, step) == expected[step]
    assert not memo.MEMO.items


def _versions_resolving_every_change(run: Run, step: int, start: int, end: int) -> dict[int, Any]:
    """A page's modified versions as the step view used to find them: every change of
    each event resolved, then the page's picked (the reference for the narrowed read)."""
    from replay_app.runs import textstore
    from replay_app.steps.fatelog import fate_log

    fates = fate_log(run).fates_at(step, range(start, end))
    seqs = {seq for fate, seq in fates.values() if fate.value in at_step.MODIFIED}
    stored = list(RunEvent.objects.filter(run=run, seq__in=seqs).values_list("seq", "changes"))
    resolved = textstore.resolve_changes(run.transcript_id, [c for _, c in stored])
    versions = {}
    for (seq, _), changes in zip(stored, resolved, strict=True):
        for change in changes:
            i = int(change["index"])
            if i in fates and fates[i][1] == seq:
                versions[i] = change
    return versions


def test_a_pages_modified_versions_are_those_of_its_own_messages(
    user: Any, transcript: Any
) -> None:
    run = make_run(user, transcript, "qwenpaw")
    checked = 0
    for step in range(0, run.steps_total, 3):
        view = at_step.step_view(run, step, page=1, per_page=10**6)
        start, end = 0, view.count
        expected = _versions_resolving_every_change(run, step, start, end)
        for row in view.messages:
            change = expected.get(row.index, {})
            assert row.reason == change.get("reason", "")
            assert row.offload_path == change.get("offload_path", "")
            assert bool(row.modified_preview) == bool(change.get("message"))
            checked += bool(change)
    assert checked, "qwenpaw modified no message on the test transcript"
