"""A finished run's memo key (``memo._cache_key``) names the run by id, creation and
finish time; its times are written once per run instance (``memo._times``) and written
again when the instance is given other times (a re-run finishes again, a refresh)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from replay_app import memo
from replay_app.models import Run, RunStatus

BORN = datetime(2026, 12, 1, 8, 0, 0, 123456, tzinfo=UTC)
DONE = BORN + timedelta(minutes=3, microseconds=7)


def _run(**fields: object) -> Run:
    values: dict[str, object] = {"id": 7, "status": RunStatus.DONE, "created_at": BORN}
    return Run(**{**values, "finished_at": DONE, **fields})


def test_the_key_names_the_run_and_its_times() -> None:
    key = memo._cache_key(_run(), "fatelog")
    assert key == f"fatelog:7:{BORN.timestamp()}:{DONE.timestamp()}"
    assert memo._cache_key(_run(), "fatelog") == key  # the same run read again
    assert memo._cache_key(_run(id=8), "fatelog") != key
    assert memo._cache_key(_run(status=RunStatus.RUNNING), "fatelog") is None
    assert memo._cache_key(_run(finished_at=None), "fatelog") is None


def test_an_instance_given_other_times_gets_another_key() -> None:
    run = _run()
    first = memo._cache_key(run, "page")
    assert memo._cache_key(run, "page") == first and memo.keeps(run)
    run.finished_at = DONE + timedelta(seconds=1)  # finished again (a re-run)
    again = memo._cache_key(run, "page")
    assert again != first and again == f"page:7:{BORN.timestamp()}:{run.finished_at.timestamp()}"
    run.created_at = BORN + timedelta(days=1)  # another database's run with this id
    assert memo._cache_key(run, "page") not in (first, again)
    run.status = RunStatus.QUEUED  # retried: nothing kept until it finishes
    assert memo._cache_key(run, "page") is None and not memo.keeps(run)
