"""The moment a suite finishes: the progress counts the runs' own status, the results read
each item's summary row, recorded by the suite task just after its run commits ``done``.
A results fetch or a progress push in that gap must not leave the page with a done run
and no numbers."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from suite_testdata import import_chat

from replay_app.models import Run, RunStatus
from suites_app import configs, replay_glue, results, services
from suites_app.items import item_execute
from suites_app.models import Suite, SuiteItem
from suites_app.progress import SuiteProgress

pytestmark = pytest.mark.django_db


def _suite(user: Any) -> Suite:
    transcript = import_chat(user, seed=4, turns=12, size=3000)
    return services.suite_create(
        owner=user, name="finish", transcripts=[transcript],
        configs=configs.preset_configs(["qwenpaw", "codex"], window=None), enqueue=False,
    )  # fmt: skip


def _run_without_recording(item: SuiteItem) -> None:
    """What a worker has done when its run is committed and its task has not recorded it."""
    assert item.run is not None
    run = replay_glue.execute_run(item.run, live=False)
    assert run.status == RunStatus.DONE
    item.refresh_from_db()
    assert item.status != RunStatus.DONE and not item.summary


def _stats(suite: Suite) -> dict[int, dict[str, Any]]:
    page = results.build(suite)
    return {c.index: {k: s.as_dict() for k, s in c.stats.items()} for c in page.configs}


def test_results_show_a_done_run_whose_item_is_not_recorded_yet(user: Any) -> None:
    suite = _suite(user)
    first, second = suite.items.order_by("config_index")
    item_execute(second.pk)
    _run_without_recording(first)

    page = results.build(suite)
    assert page.progress["finished"] and page.progress["done"] == 2
    by_index = {c.index: c for c in page.configs}
    assert by_index[0].counts == {"done": 1}
    # The unrecorded run's numbers are there, as its recorded row will have them.
    early = _stats(suite)
    assert early[0]["steps"]["n"] == 1 and early[0].keys() >= {"peak_strategy", "steps"}
    item_execute(first.pk)
    first.refresh_from_db()
    assert first.status == RunStatus.DONE and first.summary
    assert _stats(suite) == early
    assert early[0]["steps"]["median"] == first.summary["steps"]


def test_a_suite_finishes_with_the_item_of_a_task_that_died_after_its_run_was_done(
    user: Any,
) -> None:
    # The first item's worker was killed after its run's done write landed: its task is
    # redelivered only after the broker's visibility timeout. The suite finishing meanwhile
    # (the second item) records it, so no finished suite keeps an item that says running.
    suite = _suite(user)
    first, second = suite.items.order_by("config_index")
    _run_without_recording(first)
    item_execute(second.pk)
    suite.refresh_from_db()
    first.refresh_from_db()
    assert suite.finished_at is not None
    assert first.status == RunStatus.DONE and first.summary["steps"] >= 1
    recorded = first.summary
    item_execute(first.pk)  # the redelivered task, later: the same row
    first.refresh_from_db()
    assert first.status == RunStatus.DONE and first.summary == recorded


def test_the_item_recorded_last_is_pushed_even_right_after_another_finished_the_suite(
    user: Any, monkeypatch: Any
) -> None:
    sent: list[Any] = []
    monkeypatch.setattr("suites_app.progress.send_suite_progress", sent.append)
    suite = _suite(user)
    first, second = suite.items.order_by("config_index")
    real_execute = replay_glue.execute_run

    def then_the_other_task(run: Any, *, live: bool = True) -> Any:
        # The first task's run has committed done; before that task records it, the
        # second task finishes: it marks the suite finished and pushes (the page fetches
        # its results now, without the first item's row).
        done = real_execute(run, live=live)
        if run.pk == first.run_id:
            item_execute(second.pk)
            assert [d["finished"] for d in sent] == [True]
        return done

    monkeypatch.setattr(replay_glue, "execute_run", then_the_other_task)
    SuiteProgress._last.clear()
    item_execute(first.pk)
    # The first task records its row a moment later, inside the throttle's interval: it
    # must push again so the page fetches the results once more, with that row.
    assert len(sent) == 2 and sent[-1]["finished"] and sent[-1]["done"] == 2


def test_results_fragment_says_what_progress_it_was_read_at(user: Any, client: Client) -> None:
    suite = _suite(user)
    client.force_login(user)
    first, second = suite.items.order_by("config_index")
    item_execute(first.pk)

    def fragment() -> str:
        response = client.get(f"/suites/{suite.pk}/?fragment=results")
        assert response.status_code == 200
        return response.content.decode()

    html = fragment()
    assert re.search(r'id="results"[^>]*data-finished="false" data-done="1" data-total="2"', html)
    assert "Partial results: 1 of 2 runs done so far" in html
    item_execute(second.pk)
    html = fragment()
    assert re.search(r'id="results"[^>]*data-finished="true" data-done="2" data-total="2"', html)
    assert "Partial results" not in html
    rows = re.findall(r'<tr data-config="\d+".*?</tr>', html, re.S)
    assert len(rows) == 2 and all('<td class="num">1</td>' in row for row in rows)  # Done


def test_pushed_progress_carries_the_actions_of_its_state(user: Any, client: Client) -> None:
    from suites_app.consumers import render_progress
    from suites_app.progress import suite_progress_data

    suite = _suite(user)
    first, second = suite.items.order_by("config_index")
    running = render_progress(suite_progress_data(suite))
    # A pushed copy has no request: the form posts over htmx with the page's CSRF header.
    assert (
        f'hx-post="/suites/{suite.pk}/cancel/"' in running and "csrfmiddlewaretoken" not in running
    )
    assert "suite-resume" not in running
    item_execute(first.pk)
    assert second.run_id is not None
    replay_glue.cancel_queued([second.run_id])
    stopped = render_progress(suite_progress_data(suite))
    assert 'data-finished="true"' in stopped and 'id="suite-cancel"' not in stopped
    assert f'hx-post="/suites/{suite.pk}/resume/"' in stopped
    # The page's own copy keeps a token field: the form works without htmx too.
    client.force_login(user)
    page = client.get(f"/suites/{suite.pk}/").content.decode()
    assert 'id="suite-resume"' in page and "csrfmiddlewaretoken" in page
    # Posted from the fragment: the whole page loads again, with the message.
    response = client.post(f"/suites/{suite.pk}/resume/", headers={"HX-Request": "true"})
    assert response.status_code == 200 and response["HX-Redirect"] == f"/suites/{suite.pk}/"
    again = Run.objects.get(pk=second.run_id)  # a new attempt (tests execute tasks eagerly)
    assert again.status == RunStatus.DONE and again.attempts == 2
    plain = client.post(f"/suites/{suite.pk}/cancel/")
    assert plain.status_code == 302 and plain["Location"] == f"/suites/{suite.pk}/"


def test_a_cancel_records_the_item_of_a_run_done_before_it_in_full(user: Any) -> None:
    # Cancelling brings each item's status to its run's: a run that committed done before
    # the cancel, its task not having recorded it yet, keeps its numbers (not "done" alone).
    suite = _suite(user)
    first, second = suite.items.order_by("config_index")
    _run_without_recording(first)
    services.suite_cancel(suite=suite)
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == RunStatus.DONE and first.summary["steps"] >= 1
    assert first.finished_at is not None
    assert second.status == RunStatus.CANCELLED and second.summary == {}
    suite.refresh_from_db()
    assert suite.finished_at is not None
    assert _stats(suite)[0]["steps"]["n"] == 1
