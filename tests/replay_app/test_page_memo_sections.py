"""Finished runs' derived page data: shared files that outlive the process
(``memo.DiskMemo``, what ``manage.py serve`` and its page processes enable) and page
sections rendered once (``{% memo_runs %}``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.template import Context, Template

from replay_app import memo
from replay_app.models import RunStatus

FINISHED = datetime(2026, 3, 1, tzinfo=UTC)


def _run(pk: int, *, status: str = RunStatus.DONE, finished: datetime = FINISHED) -> Any:
    return SimpleNamespace(pk=pk, status=status, finished_at=finished, created_at=FINISHED)


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[memo.DiskMemo]:
    memo.MEMO.clear()
    memo.DISK = memo.DiskMemo(tmp_path / "memo", 64 * 1024 * 1024)
    try:
        yield memo.DISK
    finally:
        memo.DISK = None
        memo.MEMO.clear()


@pytest.mark.usefixtures("disk")
def test_a_value_built_once_is_read_back_by_a_fresh_process() -> None:
    built: list[int] = []

    def build() -> dict[str, Any]:
        built.append(1)
        return {"curve": list(range(1000)), "html": "<p>é</p>"}

    first = memo.cached(_run(7), "curve", build)
    memo.MEMO.clear()  # what a restart or another page process starts with
    again = memo.cached(_run(7), "curve", build)
    assert again == first and len(built) == 1
    # a retried run (another finish time) or another run is built afresh
    memo.cached(_run(7, finished=datetime(2026, 3, 2, tzinfo=UTC)), "curve", build)
    memo.cached(_run(8), "curve", build)
    assert len(built) == 3
    # unfinished runs are never stored
    memo.cached(_run(9, status=RunStatus.RUNNING), "curve", build)
    memo.cached(_run(9, status=RunStatus.RUNNING), "curve", build)
    assert len(built) == 5


def test_files_past_the_budget_go_oldest_first(tmp_path: Path) -> None:
    store = memo.DiskMemo(tmp_path / "memo", 64 * 1024)
    for k in range(40):
        store.set(f"k{k}", "x" * 4000, 4049)
    store.trim()
    kept = [k for k in range(40) if store.get(f"k{k}")[0] is not None]
    total = sum(p.stat().st_size for p in (tmp_path / "memo").iterdir())
    assert total <= 64 * 1024 and kept and kept[-1] == 39 and 0 not in kept
    assert store.get("k39") == ("x" * 4000, 4049)  # the value with its in-memory weight
    store.set("lock", threading.Lock(), 1)  # not picklable: skipped, nothing raised
    assert store.get("lock") == (None, 0)


def test_enable_disk_keeps_only_this_code_versions_directory(tmp_path: Path, settings: Any) -> None:
    settings.CTXLAB_MEMO_DIR = str(tmp_path / "memo")
    old = tmp_path / "memo" / "an-older-version"
    old.mkdir(parents=True)
    (old / "x.pickle").write_bytes(b"stale")
    try:
        memo.enable_disk()
        assert memo.DISK is not None
        assert memo.DISK.directory == tmp_path / "memo" / memo.code_version()
        assert not old.exists()
    finally:
        memo.DISK = None


@pytest.mark.usefixtures("disk")
def test_memo_runs_renders_a_finished_runs_section_once() -> None:
    calls: list[int] = []

    def heavy() -> str:
        calls.append(1)
        return f"<b>{len(calls)}</b>"

    page = Template(
        '{% load page_memo %}<h1>{{ user }}</h1>{% memo_runs runs "t" query %}'
        "<p>{{ heavy }} & {{ text }}</p>{% endmemo_runs %}"
    )

    def render(runs: list[Any], query: str, user: str) -> str:
        context = {"runs": runs, "heavy": heavy, "text": "<i>", "query": query, "user": user}
        return page.render(Context(context))

    runs = [_run(1), _run(2)]
    first = render(runs, "a=1", "ann")
    assert first == "<h1>ann</h1><p>&lt;b&gt;1&lt;/b&gt; & &lt;i&gt;</p>"
    assert render(runs, "a=1", "bob") == first.replace("ann", "bob")  # outside: per request
    assert len(calls) == 1
    render(runs, "a=2", "ann")  # another query: another section
    assert len(calls) == 2
    memo.MEMO.clear()
    assert render(runs, "a=2", "ann").endswith("&lt;b&gt;2&lt;/b&gt; & &lt;i&gt;</p>")
    assert len(calls) == 2  # read from the shared files
    unfinished = [_run(1), _run(3, status=RunStatus.RUNNING)]
    render(unfinished, "a=1", "ann")
    render(unfinished, "a=1", "ann")
    assert len(calls) == 4
