"""Web-process memory benchmark: does a server's RSS stay bounded over many page views?

A real ``manage.py serve`` (as ``make run`` serves: RSS summed over it and its page
and worker processes) on a throwaway data directory
holding ``RUNS`` stored runs, two over each ``MESSAGES``-message transcript
(``synth_realistic``, a different seed each, so no two share most texts). Then ``VIEWS``
page views cycle over the runs: the run page, a step page, the comparison of the run with
the other run of its transcript, and the transcript page. RSS (``/proc/<pid>/status``) after the first pass
over every run (``warm``: each page type built once per run) and after every pass; growth
after the warm pass is what a day of use would keep adding.

Result lines: ``web_rss_warm_mb=…``, ``web_rss_after_views_mb=…``,
``web_rss_growth_after_warm_mb=…`` (target < ``TARGET_GROWTH_MB``), ``web_memory_ok=…``.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, TextIO

from .uploads import ROOT, _env, _rss_kb, login, start_server

# The figure: 200 views over 20 runs of 20,000 messages (storing them takes about
# an hour on a busy 2-core machine); smaller sizes through the environment for a quick look.
RUNS = int(os.environ.get("CTXLAB_BENCH_WEB_RUNS", 20))
MESSAGES = int(os.environ.get("CTXLAB_BENCH_WEB_MESSAGES", 20_000))
VIEWS = int(os.environ.get("CTXLAB_BENCH_WEB_VIEWS", 200))
TARGET_GROWTH_MB = 100.0
CORPUS = ROOT / "tests" / "data" / "corpus"

# Runs in its own process against the server's database before the server starts.
PRESETS = ("qwenpaw", "cowagent")  # two runs per transcript: the compare page needs two
_PREPARE = textwrap.dedent(
    """
    import os, sys, json
    PRESETS = sys.argv[4].split(",")
    import django
    django.setup()
    from django.contrib.auth import get_user_model
    from ctxlab.engine.synth import realistic as synth_realistic
    from replay_app.runs import executor, services
    from sessions_app import services as session_services
    runs, messages, corpus = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    user = get_user_model().objects.get(username=os.environ["CTXLAB_USER"])
    made = []
    for seed in range(runs // 2):
        conversation = synth_realistic.realistic_bench_conversation(
            corpus, messages=messages, seed=seed)
        outcome = session_services.conversation_import(
            owner=user, name=f"web-memory-{seed}.json", conversations=(conversation,),
            source_format="synthetic")
        transcript = outcome.upload.transcripts.get()
        for preset in PRESETS:
            run = services.run_create(owner=user, transcript=transcript,
                                      spec=services.RunSpec(strategy=preset), enqueue=False)
            run = executor.run_execute(run=run)
            assert run.status == "done", run.error
            made.append({"run": run.pk, "transcript": transcript.pk, "steps": run.steps_done})
    print(json.dumps(made))
    """
)


def prepare(data: Path, tmp: Path, *, runs: int, messages: int) -> list[dict[str, int]]:
    """Migrate, make the local account, store ``runs`` runs; their ids and step counts."""
    import json

    env = _env(data, tmp, 200 * 1024 * 1024)
    manage = [sys.executable, str(ROOT / "manage.py")]
    for command in (["migrate", "--noinput", "-v", "0"], ["ensure_local_user"]):
        subprocess.run([*manage, *command], env=env, check=True, capture_output=True)
    env["DJANGO_SETTINGS_MODULE"] = "ctxlab.settings"
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", _PREPARE, str(runs), str(messages), str(CORPUS), ",".join(PRESETS)],
        env=env, cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"storing the runs failed:\n{done.stderr[-3000:]}")
    made: list[dict[str, int]] = json.loads(done.stdout.strip().splitlines()[-1])
    return made


def page_urls(made: list[dict[str, int]], index: int) -> list[str]:
    """The four pages viewed for run ``index`` (compared with its transcript's other run)."""
    item, other = made[index], made[index ^ 1]
    step = max(0, item["steps"] // 2)
    return [
        f"/runs/{item['run']}/",
        f"/runs/{item['run']}/steps/{step}/",
        f"/compare/?runs={item['run']},{other['run']}",
        f"/transcripts/{item['transcript']}/",
    ]


def tree_rss_kb(pid: int) -> int:
    """RSS of the server and its child processes (the page processes that answer GETs,
    the embedded worker's pool)."""
    total = _rss_kb(pid)
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            children = task.read_text().split()
        except OSError:
            continue
        total += sum(tree_rss_kb(int(child)) for child in children)
    return total


def _get(port: int, url: str, cookie: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request("GET", url, headers={"Cookie": cookie})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def view_pages(
    port: int, pid: int, made: list[dict[str, int]], *, views: int, out: TextIO | None = None
) -> dict[str, Any]:
    """``views`` page views cycling over the runs; RSS (MB) after each pass over them."""
    cookie = login(port)
    start_mb = tree_rss_kb(pid) / 1024
    after_pass: list[float] = []
    statuses: dict[int, int] = {}
    done = 0
    while done < views:
        for index in range(len(made)):
            for url in page_urls(made, index):
                if done >= views:
                    break
                status = _get(port, url, cookie)
                statuses[status] = statuses.get(status, 0) + 1
                done += 1
        after_pass.append(tree_rss_kb(pid) / 1024)
        if out is not None:
            out.write(f"  {done:4d} views: RSS {after_pass[-1]:.0f} MB\n")
            out.flush()
    return {"start_mb": start_mb, "after_pass_mb": after_pass, "statuses": statuses}


def run(out: TextIO) -> list[dict[str, Any]]:
    out.write(
        f"web memory: a real server, {VIEWS} page views over {RUNS} stored runs of "
        f"{MESSAGES:,}-message transcripts\n"
    )
    out.flush()
    with tempfile.TemporaryDirectory(prefix="ctxlab-web-memory-") as base:
        data, tmp = Path(base) / "data", Path(base) / "tmp"
        data.mkdir()
        tmp.mkdir()
        started = time.perf_counter()
        made = prepare(data, tmp, runs=RUNS, messages=MESSAGES)
        out.write(f"  stored {len(made)} runs in {time.perf_counter() - started:.0f} s\n")
        out.flush()
        server, port = start_server(data, tmp)
        try:
            seen = view_pages(port, server.pid, made, views=VIEWS, out=out)
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
    passes = seen["after_pass_mb"]
    warm, last = passes[0], passes[-1]
    growth = last - warm
    ok = growth < TARGET_GROWTH_MB and set(seen["statuses"]) == {200}
    out.write(
        f"  start {seen['start_mb']:.0f} MB, after the warm pass {warm:.0f} MB, after "
        f"{VIEWS} views {last:.0f} MB: growth {growth:+.0f} MB (target < "
        f"{TARGET_GROWTH_MB:.0f}); statuses {seen['statuses']}{': ok' if ok else ': FAIL'}\n"
    )
    return [
        {"section": "web_memory", "start_mb": round(seen["start_mb"]), "warm_mb": round(warm),
         "after_views_mb": round(last), "growth_mb": round(growth), "ok": ok},
        {"line": f"web_rss_warm_mb={warm:.0f}"},
        {"line": f"web_rss_after_views_mb={last:.0f}"},
        {"line": f"web_rss_growth_after_warm_mb={growth:.0f}"},
        {"line": f"web_memory_ok={ok}"},
    ]  # fmt: skip
