"""A run's probe page whose probe set is outdated (the run finished before the probe
generator last changed) in chromium, the set made by the server's real Celery worker: a
task at work shows a pending note through two polls; taken as lost, the next poll queues
it again and the page reloads by itself with the run's probes. No console error."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for_polls
from waiting import wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge_app"))  # shared test data
from judge_testdata import COWAGENT, QWENPAW, finished_run, import_session  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)


def test_outdated_probe_set_pending_then_filled_by_the_worker(
    page: Any, asgi_worker_server: Any, login: Any, screenshot: Any
) -> None:
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from judge_app import services, shared_jobs
    from judge_app.models import ProbeSet, SharedScoring

    login(base_url=asgi_worker_server.url)
    user = get_user_model().objects.get(username="alice")
    run = finished_run(user, import_session(user), "qwenpaw", QWENPAW)
    made = ProbeSet.objects.get(run=run)
    probes = made.probes.count()
    assert probes > 0
    ProbeSet.objects.filter(run=run).update(generator=services.GENERATOR - 1)
    key = shared_jobs.OWN_PREFIX + str(run.pk)
    SharedScoring.objects.create(runs=key, status="running", total_runs=1,
                                 requested_at=timezone.now())  # fmt: skip
    page.goto(f"{asgi_worker_server.url}/runs/{run.pk}/probes/")
    page.locator("#own-probes-pending[data-pending=true] [data-testid=own-pending]").wait_for()
    assert page.locator("[data-testid=offline-score]").count() == 0
    wait_for_polls(page, "fragment=pending")  # two polls: still pending, nothing queued
    assert page.locator("#own-probes-pending[data-pending=true]").count() == 1
    assert SharedScoring.objects.get(runs=key).status == "running"
    screenshot("pending")
    SharedScoring.objects.filter(runs=key).update(
        requested_at=timezone.now() - timedelta(minutes=20)
    )
    page.locator("[data-testid=offline-score]").wait_for()  # reloaded
    assert page.locator("#own-probes-pending").count() == 0
    # the task marks its row done just after storing the set the page shows
    row = wait_until(lambda: SharedScoring.objects.filter(runs=key, status="done").first(),
                     "the task's row marked done")  # fmt: skip
    assert row.done_runs == 1
    assert ProbeSet.objects.get(run=run).generator == services.GENERATOR
    assert ProbeSet.objects.get(run=run).probes.count() == probes
    screenshot("filled")
    assert page.errors == []  # type: ignore[attr-defined]


def test_compare_page_row_making_then_reloaded_when_the_worker_made_it(
    page: Any, asgi_worker_server: Any, login: Any, screenshot: Any
) -> None:
    """Two runs on the compare-probes page, one with an outdated set: its row says
    'making…' while the shared task is at work; taken as lost, the next poll queues it to
    the real worker, which makes the set first, and the page reloads with both rows."""
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from judge_app import services, shared_jobs
    from judge_app.models import ProbeSet, SharedScoring

    login(base_url=asgi_worker_server.url)
    user = get_user_model().objects.get(username="alice")
    transcript = import_session(user)
    runs = [finished_run(user, transcript, "qwenpaw", QWENPAW),
            finished_run(user, transcript, "cowagent", COWAGENT)]  # fmt: skip
    ProbeSet.objects.filter(run=runs[1]).update(generator=services.GENERATOR - 1)
    key = shared_jobs.runs_key([r.pk for r in runs])
    SharedScoring.objects.create(runs=key, status="running", total_runs=2,
                                 requested_at=timezone.now())  # fmt: skip
    page.goto(f"{asgi_worker_server.url}/compare/probes/?runs={runs[0].pk},{runs[1].pk}")
    making = page.locator(f"tr[data-probe-row='{runs[1].pk}'] [data-testid=own-row-pending]")
    assert making.count() == 1
    assert page.locator("#probe-compare [data-testid=own-pending]").count() == 1
    assert page.locator("#probe-shared[data-pending=true]").count() == 1
    screenshot("making")
    SharedScoring.objects.filter(runs=key).update(
        requested_at=timezone.now() - timedelta(minutes=20)
    )
    page.locator("#probe-shared [data-testid=shared-table]").wait_for()
    page.wait_for_load_state()
    assert page.locator("[data-testid=own-row-pending]").count() == 0
    assert page.locator("#probe-compare [data-testid=own-pending]").count() == 0
    assert services.current_set(runs[1]) is not None
    screenshot("reloaded")
    assert page.errors == []  # type: ignore[attr-defined]
