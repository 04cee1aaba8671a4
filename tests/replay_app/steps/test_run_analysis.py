"""The retention analysis computed by the worker at run end (RunAnalysis), and its use by
the run-lost and compare pages."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from inspect_helpers import make_run

from ctxlab.engine.strategies import PRESETS
from replay_app import memo
from replay_app.models import Run, RunAnalysis, RunStatus
from replay_app.runs import executor, services
from replay_app.runs import survival as run_survival
from replay_app.steps import lost_analysis
from sessions_app.models import Transcript
from tests.engine.builders import SMALL_WINDOWS as SMALL  # every preset compacts session_four

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

CSRF_TOKEN = re.compile(r'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]*')


def small_run(user: Any, transcript: Transcript, preset: str) -> Run:
    return make_run(user, transcript, preset, **SMALL[preset])


def analysis_of(run: Run) -> RunAnalysis:
    return RunAnalysis.objects.get(run=run)


def ids(runs: list[Run]) -> str:
    return ",".join(str(r.pk) for r in runs)


def page(client: Any, url: str) -> str:
    """The response body without its per-request CSRF token."""
    response = client.get(url)
    assert response.status_code == 200
    return CSRF_TOKEN.sub("", response.content.decode())


def without_links(data: dict[str, Any]) -> dict[str, Any]:
    """A page's analysis as stored: without the run id, the links and the compaction
    numbers the pages add (replay_app.lost_links)."""
    events = [
        {
            **{k: v for k, v in e.items() if k not in ("event_url", "compaction")},
            "lost": [{k: v for k, v in f.items() if k != "message_url"} for f in e["lost"]],
        }
        for e in data["events"]
    ]
    return {**{k: v for k, v in data.items() if k != "run"}, "events": events}


def forget_analyses(runs: list[Run]) -> None:
    """Back to the state of a run stored before RunAnalysis existed."""
    RunAnalysis.objects.filter(run__in=runs).delete()
    memo.MEMO.clear()


@pytest.mark.parametrize("preset", list(PRESETS))
def test_worker_analysis_equals_the_analysis_of_the_stored_rows(
    user: Any, session_four: Transcript, preset: str
) -> None:
    run = small_run(user, session_four, preset)
    assert run.events.exists(), f"{preset} compacts with a small window"
    stored = analysis_of(run)
    assert stored.attempts == run.attempts
    assert stored.retention["events"], f"{preset}'s compactions put facts at risk"
    assert stored.retention == lost_analysis._retention(run, None)


def test_pages_show_the_same_with_and_without_a_stored_analysis(
    client: Any, user: Any, session_four: Transcript
) -> None:
    runs = [small_run(user, session_four, p) for p in ("qwenpaw", "cowagent", "baseagent")]
    client.force_login(user)
    urls = [f"/compare/?runs={ids(runs)}", f"/compare/?runs={ids(runs)}&format=json"]
    urls += [f"/runs/{runs[0].pk}/lost/", f"/runs/{runs[0].pk}/lost/?format=json"]
    memo.MEMO.clear()
    from_stored = {url: page(client, url) for url in urls}
    forget_analyses(runs)
    computed = {url: page(client, url) for url in urls}
    assert computed == from_stored
    assert "Event #" in from_stored[urls[0]], "the compare page lists lost facts"


def test_older_run_gets_its_analysis_stored_on_first_view(
    client: Any, user: Any, session_four: Transcript
) -> None:
    run = small_run(user, session_four, "qwenpaw")
    expected = analysis_of(run).retention
    forget_analyses([run])
    client.force_login(user)
    data = client.get(f"/runs/{run.pk}/lost/?format=json").json()
    assert without_links(data) == expected
    assert analysis_of(run).retention == expected
    assert analysis_of(run).attempts == run.attempts


def test_compare_uses_stored_analyses_without_loading_the_transcript(
    django_assert_max_num_queries: Any, user: Any, session_four: Transcript
) -> None:
    from replay_app.compare import overview

    runs = [small_run(user, session_four, p) for p in ("qwenpaw", "copaw")]
    runs = overview.load_runs(user, ids(runs))
    memo.MEMO.clear()
    # one RunAnalysis read per run, and one read of the runs' event kinds for the
    # compaction numbers (runs.ordinals.compaction_ordinals_of)
    with django_assert_max_num_queries(len(runs) + 1):
        found = overview.retentions(runs)
    assert [without_links(f) for f in found] == [analysis_of(r).retention for r in runs]


def test_retried_run_never_shows_the_previous_attempts_analysis(
    user: Any, session_four: Transcript
) -> None:
    run = small_run(user, session_four, "qwenpaw")
    first = analysis_of(run)
    # A finished run that later counts as failed (the only way a run with an analysis can
    # be retried); its retry is a new attempt with its own rows.
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED)
    run = services.run_retry(run=Run.objects.get(pk=run.pk))
    assert run.attempts == first.attempts + 1
    assert lost_analysis.stored_retention(run) is None
    Run.objects.filter(pk=run.pk).update(status=RunStatus.DONE)  # not replayed yet: no rows
    run.refresh_from_db()
    assert lost_analysis.stored_retention(run) is None, "attempt 1's analysis is not attempt 2's"
    Run.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED)
    run = executor.run_execute(run=Run.objects.get(pk=run.pk))
    assert run.status == RunStatus.DONE
    assert analysis_of(run).attempts == run.attempts == 2
    assert lost_analysis.retention(run) == analysis_of(run).retention == first.retention


def test_analysis_is_not_stored_for_an_attempt_that_is_not_the_finished_one(
    user: Any, session_four: Transcript
) -> None:
    run = small_run(user, session_four, "cowagent")
    data = analysis_of(run).retention
    assert not lost_analysis.store_retention(run, run.attempts + 1, {"stale": True})
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    assert not lost_analysis.store_retention(run, run.attempts, {"stale": True})
    assert analysis_of(run).retention == data


def test_a_failing_analysis_never_fails_the_run(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    client: Any,
    user: Any,
    session_four: Transcript,
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("analysis bug")

    # Fault injection: no real input makes the analysis fail. The worker's one pass gives
    # retention and survival (replay_app.runs.survival.finished).
    monkeypatch.setattr(run_survival.survival, "analyse_replay", broken)
    with caplog.at_level(logging.ERROR, logger="replay_app.runs.survival"):
        run = small_run(user, session_four, "qwenpaw")
    assert run.status == RunStatus.DONE
    assert "survival analysis failed" in caplog.text
    assert not RunAnalysis.objects.filter(run=run).exists()
    monkeypatch.undo()
    client.force_login(user)
    data = client.get(f"/runs/{run.pk}/lost/?format=json").json()  # computed on demand
    assert data["events"]
    assert analysis_of(run).retention == without_links(data)


def test_display_order_restores_as_dict_key_order(user: Any, session_four: Transcript) -> None:
    run = small_run(user, session_four, "qwenpaw")
    data = analysis_of(run).retention

    def reversed_keys(value: Any) -> Any:  # what a store that reorders keys could return
        if isinstance(value, dict):
            return {k: reversed_keys(value[k]) for k in reversed(list(value))}
        if isinstance(value, list):
            return [reversed_keys(v) for v in value]
        return value

    def key_orders(value: Any) -> list[list[str]]:
        if isinstance(value, dict):
            return [list(value)] + [o for v in value.values() for o in key_orders(v)]
        if isinstance(value, list):
            return [o for v in value for o in key_orders(v)]
        return []

    # ``data`` came back from the database: PostgreSQL's jsonb has already reordered it.
    canonical = lost_analysis._retention(run, None)  # fresh from the rows, in as_dict order
    assert canonical == data
    restored = lost_analysis.in_display_order(reversed_keys(data))
    assert restored == canonical
    assert key_orders(restored) == key_orders(canonical)
    assert any(len(e["lost_by_kind"]) > 1 for e in data["events"]), "several kinds listed"


def test_an_analysis_stored_by_an_older_extractor_is_computed_again(
    client: Any, user: Any, session_four: Transcript
) -> None:
    """Stored analyses carry the extractor version; one from an older version (e.g. with
    nReport-style identifiers) is neither shown nor kept."""
    run = small_run(user, session_four, "qwenpaw")
    current = analysis_of(run).retention
    assert current["extractor"] == lost_analysis.EXTRACTOR_VERSION
    stale = {**current, "extractor": lost_analysis.EXTRACTOR_VERSION - 1, "retention": 0.123}
    RunAnalysis.objects.filter(run=run).update(retention=stale)
    memo.MEMO.clear()
    assert lost_analysis.stored_retention(run) is None
    client.force_login(user)
    data = client.get(f"/runs/{run.pk}/lost/?format=json").json()
    assert data["retention"] == current["retention"] != 0.123
    assert analysis_of(run).retention == current, "recomputed and stored again"
