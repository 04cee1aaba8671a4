"""Request times the tests used to assert, measured here with their targets (a test on a
shared, loaded machine checks what keeps them cheap: queries, columns, counts).

In a throwaway test database, through Django's test client (no server, no network):

* the run form and its transcript search with 20,000 conversations (target 1,000 ms each;
  ``tests/replay_app/runs/test_run_form_budget.py`` checks they list a few in few queries);
* each large admin change list at 100,000 rows (target 2,000 ms each;
  ``tests/web/test_admin_scale.py`` checks the capped count and the columns read);
* the compare-probes page, its JSON twin and its polled section while a shared scoring is
  at work (target 5,000 ms for the three; ``tests/judge_app/test_judge_shared_background.py``
  checks they read rows only).

Each is timed after one warm-up request. Result lines (ms, then the target):
``request_run_form_ms_20k=<form> <search> target=1000``,
``request_admin_changelist_ms_max_100k=<ms> <url> target=2000``,
``request_shared_probes_pending_ms=<ms> target=5000``, ``request_times_ok=<all met>``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, TextIO

from ._db import in_test_db

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "corpus"
ROLLOUT = (
    CORPUS / "codex-rollout"
    / "agentcmd-rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl"
)  # fmt: skip
SHARED_STRATEGIES = ("cowagent", "claude_code", "codex", "langchain_trim")
CONVERSATIONS = 20_000
TARGET_RUN_FORM_MS = 1000.0
TARGET_ADMIN_MS = 2000.0
TARGET_SHARED_PENDING_MS = 5000.0


def _ms(client: Any, *urls: str) -> float:
    """Milliseconds for GETs of ``urls`` one after the other (each must answer 200)."""
    start = time.perf_counter()
    for url in urls:
        response = client.get(url)
        if response.status_code != 200:
            raise RuntimeError(f"GET {url} -> {response.status_code}")
    return (time.perf_counter() - start) * 1000


def _run_form(client: Any, user: Any, out: TextIO) -> tuple[float, float]:
    from ._rows import many_transcripts

    many_transcripts(user, CONVERSATIONS)
    _ms(client, "/runs/new/")  # warm templates
    form = _ms(client, "/runs/new/")
    search = _ms(client, "/runs/new/transcripts/?transcript_q=number+99999")
    out.write(f"  run form, {CONVERSATIONS:,} conversations: {form:.0f} ms, "
              f"search {search:.0f} ms (target {TARGET_RUN_FORM_MS:.0f} ms)\n")  # fmt: skip
    return form, search


def _admin(client: Any, user: Any, out: TextIO) -> tuple[float, str]:
    from ._rows import ADMIN_URLS, ROWS, fill_admin_tables

    fill_admin_tables(user)
    _ms(client, "/admin/")  # warm the admin's templates and URL resolving
    times = {url: _ms(client, url) for url in ADMIN_URLS}
    for url, ms in times.items():
        out.write(f"  admin {url} at {ROWS:,} rows: {ms:.0f} ms "
                  f"(target {TARGET_ADMIN_MS:.0f} ms)\n")  # fmt: skip
    worst = max(times, key=lambda u: times[u])
    return times[worst], worst


def _shared_pending(client: Any, user: Any, out: TextIO) -> float:
    from datetime import UTC, datetime

    from judge_app import shared
    from judge_app.models import SharedScoring
    from replay_app.runs.executor import run_execute
    from replay_app.runs.services import RunSpec, run_create
    from sessions_app.services import upload_import

    upload = upload_import(owner=user, name=ROLLOUT.name, data=ROLLOUT.read_bytes()).upload
    transcript = None if upload is None else upload.transcripts.first()
    if transcript is None:
        raise RuntimeError("the rollout did not import")
    runs = []
    for strategy in SHARED_STRATEGIES:
        run = run_create(owner=user, transcript=transcript,
                         spec=RunSpec(strategy=strategy, window=20_000), enqueue=False)  # fmt: skip
        runs.append(run_execute(run=run))
    SharedScoring.objects.create(runs=shared.runs_key([r.pk for r in runs]),
                                 status="running", done_runs=1, total_runs=len(runs),
                                 requested_at=datetime.now(UTC))  # fmt: skip
    ids = ",".join(str(r.pk) for r in runs)
    base = f"/compare/probes/?runs={ids}"
    urls = (f"{base}&format=json", base, f"{base}&fragment=shared")
    _ms(client, *urls)  # warm
    ms = _ms(client, *urls)
    out.write(f"  compare probes while scoring is at work (page, JSON, poll): {ms:.0f} ms "
              f"(target {TARGET_SHARED_PENDING_MS:.0f} ms)\n")  # fmt: skip
    return ms


def _measure(out: TextIO) -> list[dict[str, Any]]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.create_superuser(username="bench", password="bench-pass-1")
    client = Client()
    client.force_login(user)
    form, search = _run_form(client, user, out)
    admin_ms, admin_url = _admin(client, user, out)
    shared_ms = _shared_pending(client, user, out)
    ok = (
        max(form, search) <= TARGET_RUN_FORM_MS
        and admin_ms <= TARGET_ADMIN_MS
        and shared_ms <= TARGET_SHARED_PENDING_MS
    )
    return [
        {
            "section": "request_times",
            "name": "run_form",
            "ms": round(form),
            "search_ms": round(search),
        },
        {"section": "request_times", "name": "admin_changelist_max", "ms": round(admin_ms)},
        {"section": "request_times", "name": "shared_probes_pending", "ms": round(shared_ms)},
        {
            "line": f"request_run_form_ms_20k={form:.0f} {search:.0f} target={TARGET_RUN_FORM_MS:.0f}"
        },
        {
            "line": f"request_admin_changelist_ms_max_100k={admin_ms:.0f} {admin_url} "
            f"target={TARGET_ADMIN_MS:.0f}"
        },  # fmt: skip
        {
            "line": f"request_shared_probes_pending_ms={shared_ms:.0f} "
            f"target={TARGET_SHARED_PENDING_MS:.0f}"
        },  # fmt: skip
        {"line": f"request_times_ok={ok}"},
    ]


def run(out: TextIO) -> list[dict[str, Any]]:
    out.write("request_times: the run form at 20,000 conversations, admin change lists at "
              "100,000 rows, compare probes while scoring (throwaway test database)\n")  # fmt: skip
    out.flush()
    return in_test_db(_measure, out)
