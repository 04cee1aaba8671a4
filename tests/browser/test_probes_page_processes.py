"""Issue 31, item 1: under ``manage.py serve`` with page processes (``make run``), the
compare-probes page's shared section fills in by itself. Its GET is answered by a page
process, which queues ``score_shared_probes``; with the ``memory://`` broker only the
front's embedded worker can run it, so the task must leave the page process through the
front (``ctxlab.serving.task_relay``). Before, the section stayed "0 of 2 runs scored" for ever."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from waiting import wait_until

from ctxlab.benchmarks import web_memory
from ctxlab.benchmarks.uploads import PASSWORD, USER, start_server

pytestmark = pytest.mark.slow


def _listening_sockets(pid: int) -> list[Path]:
    """The sockets of the server's page processes that listen already."""
    found: list[str] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += (task / "children").read_text().split()
        except OSError:
            continue
    sockets = []
    for child in found:
        try:
            args = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"ctxlab.serving.page_pool" in args:
            sockets += [Path(a.decode()) for a in args if a.endswith(b".sock")]
    return [s for s in sockets if s.exists()]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    base = tmp_path_factory.mktemp("probes-pages")
    data, tmp = base / "data", base / "tmp"
    data.mkdir()
    tmp.mkdir()
    made = web_memory.prepare(data, tmp, runs=2, messages=300)  # qwenpaw + cowagent, one transcript
    previous = os.environ.get("CTXLAB_PAGE_PROCESSES")
    os.environ["CTXLAB_PAGE_PROCESSES"] = "2"
    try:
        process, port = start_server(data, tmp)
    finally:
        if previous is None:
            del os.environ["CTXLAB_PAGE_PROCESSES"]
        else:
            os.environ["CTXLAB_PAGE_PROCESSES"] = previous
    try:
        yield SimpleNamespace(pid=process.pid, url=f"http://127.0.0.1:{port}", made=made)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def test_shared_probes_fill_in_under_serve_with_page_processes(
    page: Any, served: SimpleNamespace, screenshot: Any
) -> None:
    page.goto(f"{served.url}/accounts/login/")
    page.fill("input[name=username]", USER)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("nav.site-nav")
    # GETs go to the page processes once they listen (the front answers until then).
    wait_until(
        lambda: len(_listening_sockets(served.pid)) == 2, "2 page processes listening",
        seen=lambda: _listening_sockets(served.pid), interval=0.2,
    )  # fmt: skip
    ids = ",".join(str(m["run"]) for m in served.made)
    with page.expect_response(lambda r: "/compare/probes/" in r.url):
        page.goto(f"{served.url}/compare/probes/?runs={ids}")
    section = page.locator("#probe-shared")
    section.wait_for()
    # Pending first (nothing stored yet), then the polls swap the scores in.
    page.wait_for_selector("#probe-shared:not([data-pending]) [data-testid=shared-answered]")
    answered = section.locator("[data-testid=shared-answered]").all_inner_texts()
    assert len(answered) == 2
    questions = int(section.locator("[data-testid=shared-questions]").inner_text())
    assert questions > 0 and all(text.endswith(f"/ {questions}") for text in answered)
    assert "fills in by itself" not in section.inner_text()
    screenshot("shared-probes-page-processes")
    assert page.errors == []  # type: ignore[attr-defined]
