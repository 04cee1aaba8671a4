"""Suites: creation (idempotent keys, validation), execution, retry, resume, cancel."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone
from suite_testdata import import_chat

from replay_app.models import Run, RunStatus
from suites_app import configs, services
from suites_app.configs import Base, SuiteInputError
from suites_app.items import item_execute
from suites_app.models import Suite, SuiteItem

pytestmark = pytest.mark.django_db


def _grid() -> list[dict[str, Any]]:
    return configs.grid_configs(
        Base("qwenpaw"),
        {"max_input_length": "6000,12000", "compact_threshold_ratio": "0.6:0.8:0.2"},
    )


def test_grid_makes_every_combination_with_labels() -> None:
    grid = _grid()
    assert [c["grid"] for c in grid] == [
        {"max_input_length": 6000, "compact_threshold_ratio": 0.6},
        {"max_input_length": 6000, "compact_threshold_ratio": 0.8},
        {"max_input_length": 12000, "compact_threshold_ratio": 0.6},
        {"max_input_length": 12000, "compact_threshold_ratio": 0.8},
    ]
    assert grid[1]["label"] == "qwenpaw max_input_length=6000 compact_threshold_ratio=0.8"


def test_window_axis_sets_the_model_window() -> None:
    grid = configs.grid_configs(Base("codex"), {"window": "16000,32000"})
    assert [c["window"] for c in grid] == [16000, 32000]
    assert all(c["params"] == {} for c in grid)


@pytest.mark.parametrize(
    ("axes", "message"),
    [
        ({}, "the grid is empty"),
        ({"max_input_length": ""}, "give at least one value"),
        ({"no_such_knob": "1,2"}, "unknown parameter 'no_such_knob'"),
        ({"max_input_length": "1000:100000:1000"}, "at most 12"),
        ({"a": "1", "b": "1", "c": "1", "d": "1"}, "at most 3 parameters"),
        ({"compact_threshold_ratio": "7,8"}, "compact_threshold_ratio"),
        (
            {
                "max_input_length": "6000:72000:6000",
                "compact_threshold_ratio": "0.5,0.6,0.7,0.8,0.9",
            },
            "60 configurations",
        ),
    ],
)
def test_bad_grids_are_refused_with_a_clear_message(axes: dict[str, str], message: str) -> None:
    with pytest.raises(SuiteInputError, match=message):
        configs.grid_configs(Base("qwenpaw"), axes)


def test_too_many_configurations_or_runs_refused(user: Any, monkeypatch: Any) -> None:
    transcripts = [import_chat(user, seed=s, turns=2) for s in (1, 2, 3)]
    many = [dict(c, label=f"c{i}") for i, c in enumerate(_grid() * 13)]
    with pytest.raises(SuiteInputError, match="52 configurations; at most 48"):
        services.suite_create(owner=user, name="x", transcripts=transcripts, configs=many)
    monkeypatch.setattr(configs, "MAX_RUNS", 10)
    with pytest.raises(SuiteInputError, match="3 transcripts × 4 configurations = 12 runs"):
        services.suite_create(owner=user, name="x", transcripts=transcripts, configs=_grid())
    with pytest.raises(SuiteInputError, match="at least one configuration"):
        services.suite_create(owner=user, name="x", transcripts=transcripts, configs=[])
    assert not Suite.objects.exists() and not Run.objects.exists()


def test_suite_runs_every_pair_once_and_stores_one_summary_row_each(user: Any) -> None:
    transcripts = [import_chat(user, seed=s) for s in (1, 2, 3)]
    suite = services.suite_create(
        owner=user, name="team", transcripts=transcripts, configs=_grid(), grid_keys=["a", "b"]
    )  # eager Celery: executed on commit... the test transaction never commits
    assert SuiteItem.objects.filter(suite=suite).count() == 12
    assert Run.objects.filter(owner=user).count() == 12
    services.suite_enqueue(suite)  # eager: every item executes here
    runs = Run.objects.filter(suite_item__suite=suite)
    assert set(runs.values_list("status", flat=True)) == {RunStatus.DONE}
    assert set(runs.values_list("attempts", flat=True)) == {1}
    item = suite.items.select_related("run").first()
    assert item is not None and item.run is not None
    assert item.status == "done"
    assert item.summary["steps"] == item.run.metrics["steps"] > 0
    assert item.summary["peak_reference"] == item.run.metrics["peak_reference"]
    suite.refresh_from_db()
    assert suite.finished_at is not None
    # Queued again (a second `suite run`, a redelivered task): nothing is redone.
    assert services.suite_enqueue(suite) == 0
    for it in suite.items.all():
        item_execute(it.pk)
    assert Run.objects.filter(owner=user).count() == 12
    assert set(runs.values_list("attempts", flat=True)) == {1}


def test_duplicate_pair_has_one_item(user: Any) -> None:
    transcript = import_chat(user, seed=1, turns=2)
    suite = services.suite_create(
        owner=user,
        name="dup",
        transcripts=[transcript, transcript],
        configs=configs.preset_configs(["qwenpaw"], window=None),
        enqueue=False,
    )
    assert suite.items.count() == 1


def test_other_users_transcripts_refused(user: Any, other_user: Any) -> None:
    theirs = import_chat(other_user, seed=1, turns=2)
    with pytest.raises(SuiteInputError, match="your own transcripts"):
        services.suite_create(
            owner=user, name="x", transcripts=[theirs],
            configs=configs.preset_configs(["qwenpaw"], window=None),
        )  # fmt: skip


def test_resume_redoes_only_lost_runs(user: Any, settings: Any) -> None:
    settings.CELERY_BROKER_URL = "memory://"  # the embedded worker restarted (make run)
    transcripts = [import_chat(user, seed=s, turns=4) for s in (1, 2)]
    suite = services.suite_create(
        owner=user, name="resume", transcripts=transcripts,
        configs=configs.preset_configs(["qwenpaw", "picoclaw"], window=8000), enqueue=False,
    )  # fmt: skip
    items = list(suite.items.select_related("run").order_by("pk"))
    item_execute(items[0].pk)  # finished before the "restart"
    done_run = Run.objects.get(pk=items[0].run_id)
    finished_at = done_run.finished_at
    # The server restarted mid-run (heartbeat seconds old: no other worker can hold it with
    # the in-memory broker) and the in-memory queue was lost.
    Run.objects.filter(pk=items[1].run_id).update(
        status=RunStatus.RUNNING, heartbeat_at=timezone.now()
    )
    Run.objects.filter(pk=items[2].run_id).update(
        status=RunStatus.FAILED,
        error="worker restarted before the run started (the in-memory queue was lost)",
    )
    Run.objects.filter(pk=items[3].run_id).update(status=RunStatus.FAILED, error="ValueError: x")
    queued = services.suites_resume_after_restart()
    assert queued == 2  # the dead one and the lost one; a real failure waits for the user
    statuses = dict(Run.objects.filter(owner=user).values_list("pk", "status"))
    assert statuses[items[1].run_id] == statuses[items[2].run_id] == RunStatus.DONE
    assert statuses[items[3].run_id] == RunStatus.FAILED
    done_run.refresh_from_db()
    assert (done_run.attempts, done_run.finished_at) == (1, finished_at)  # not redone
    assert services.suite_resume(suite=suite) == 1  # the user's resume retries the failure
    assert Run.objects.get(pk=items[3].run_id).status == RunStatus.DONE
    assert services.suite_resume(suite=suite) == 0  # all done: nothing queued, still finished
    suite.refresh_from_db()
    assert suite.finished_at is not None


def test_restart_with_a_persistent_broker_leaves_queued_runs_to_it(
    user: Any, settings: Any
) -> None:
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # never contacted: nothing queued
    transcript = import_chat(user, seed=1, turns=2)
    suite = services.suite_create(
        owner=user, name="redis", transcripts=[transcript],
        configs=configs.preset_configs(["qwenpaw", "picoclaw"], window=None), enqueue=False,
    )  # fmt: skip
    live = suite.items.order_by("pk").last()
    assert live is not None
    # Another worker executes this one (fresh heartbeat): a new worker leaves it alone.
    Run.objects.filter(pk=live.run_id).update(status=RunStatus.RUNNING, heartbeat_at=timezone.now())
    assert services.suites_resume_after_restart() == 0
    statuses = sorted(Run.objects.filter(suite_item__suite=suite).values_list("status", flat=True))
    assert statuses == [RunStatus.QUEUED, RunStatus.RUNNING]


def test_failed_run_is_retried_up_to_max_attempts(user: Any) -> None:
    transcript = import_chat(user, seed=1, turns=3)
    suite = services.suite_create(
        owner=user, name="retry", transcripts=[transcript],
        configs=configs.preset_configs(["qwenpaw"], window=None), enqueue=False, max_attempts=3,
    )  # fmt: skip
    item = suite.items.get()
    # The transcript vanishes from under the run's replay: each attempt fails the same way.
    Run.objects.filter(pk=item.run_id).update(strategy="no_such_strategy")
    assert item_execute(item.pk) == RunStatus.FAILED
    run = Run.objects.get(pk=item.run_id)
    assert run.attempts == 3 and "no_such_strategy" in run.error
    item.refresh_from_db()
    assert item.status == "failed" and item.summary == {}


def test_cancel_stops_queued_runs(user: Any) -> None:
    transcripts = [import_chat(user, seed=s, turns=2) for s in (1, 2)]
    suite = services.suite_create(
        owner=user, name="cancel", transcripts=transcripts,
        configs=configs.preset_configs(["qwenpaw"], window=None), enqueue=False,
    )  # fmt: skip
    assert services.suite_cancel(suite=suite) == 2
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.CANCELLED}
    suite.refresh_from_db()
    assert suite.finished_at is not None and suite.cancel_requested
