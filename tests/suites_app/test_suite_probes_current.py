"""A suite shows only current probe scores: a run whose probe set is outdated (it finished
before the probe generator last changed) is left out of the probe figures, the page says
the scores are being brought up to date and a Celery task (never the request) remakes the
set; once it has, the run's score is back."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from suite_testdata import import_chat

from judge_app import services as judge_services
from judge_app.models import ProbeSet, SharedScoring
from suites_app import configs, services
from suites_app.configs import Base
from suites_app.models import Suite

pytestmark = pytest.mark.django_db


@pytest.fixture
def probed_suite(user: Any) -> Suite:
    transcripts = [import_chat(user, seed=s, turns=10, size=3000) for s in (1, 2, 3)]
    grid = configs.grid_configs(Base("qwenpaw"), {"max_input_length": "6000"})
    suite = services.suite_create(
        owner=user, name="probes", transcripts=transcripts, configs=grid,
        grid_keys=["max_input_length"], enqueue=False,
    )  # fmt: skip
    services.suite_enqueue(suite)  # eager Celery: runs here
    suite.refresh_from_db()
    return suite


def _probe_stat(client: Client, suite: Suite) -> tuple[dict[str, Any] | None, Any]:
    data = client.get(f"/suites/{suite.pk}/?format=json").json()
    return data["configurations"][0]["stats"].get("probe_score"), data["probes_pending"]


def test_outdated_probe_scores_are_left_out_until_a_task_remakes_them(
    probed_suite: Suite, client: Client, monkeypatch: Any
) -> None:
    from django.utils import timezone

    client.force_login(probed_suite.owner)
    runs = [i.run for i in probed_suite.items.select_related("run")]
    scored = [r for r in runs if (judge_services.current_set(r).offline or {}).get("score")]
    assert scored, "this suite's runs give probes"
    fresh, pending = _probe_stat(client, probed_suite)
    assert fresh is not None and fresh["n"] == len(scored) and pending is None
    stale = scored[0]
    ProbeSet.objects.filter(run=stale).update(
        generator=judge_services.GENERATOR - 1, offline={"score": 0.0123, "by_kind": {}}
    )
    key = f"suite:{probed_suite.pk}"
    SharedScoring.objects.create(
        runs=key, status="running", total_runs=1, requested_at=timezone.now()
    )  # a task is at work: the page queues no other one and makes nothing itself
    monkeypatch.setattr(
        judge_services, "generate", lambda *a, **k: pytest.fail("made in the request")
    )
    stat, pending = _probe_stat(client, probed_suite)
    assert pending is not None and pending["status"] == "running"
    assert (stat["n"] if stat else 0) == len(scored) - 1  # the outdated score is not shown
    assert not stat or stat["min"] != 0.0123
    html = client.get(f"/suites/{probed_suite.pk}/").content.decode()
    assert 'data-testid="probes-refreshing"' in html and "brought up to date" in html
    assert "0 of 1 run " in html or "0 of 1 run<" in html  # one plural rule: "1 run"
    monkeypatch.undo()

    SharedScoring.objects.filter(runs=key).update(status="done")  # finished, yet outdated
    stat, pending = _probe_stat(client, probed_suite)  # so queued again (eager: done here)
    assert pending is None and stat == fresh
    assert ProbeSet.objects.get(run=stale).generator == judge_services.GENERATOR
    assert SharedScoring.objects.get(runs=key).done_runs == 1
    html = client.get(f"/suites/{probed_suite.pk}/").content.decode()
    assert "probes-refreshing" not in html
