"""Login failure counts are shared by every server process (issue 15): two real processes
on the same database add up their failures, and parallel failures are all counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client, override_settings
from waiting import WAIT_SECONDS

from ctxlab.models import LoginFailure

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]

# One server process: N failed logins for an account, then the right password; prints the
# status codes (Django's test client, the same view and middleware as a served request).
PROCESS = textwrap.dedent(
    """
    import json, os, sys
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ctxlab.settings")
    import django
    django.setup()
    from django.db import connections
    connections["default"].settings_dict["NAME"] = sys.argv[1]  # the test database
    from django.test import Client
    from django.test.utils import setup_test_environment
    setup_test_environment()
    failures, password = int(sys.argv[2]), sys.argv[3]
    codes = []
    for _ in range(failures):
        codes.append(Client().post("/accounts/login/",
                     {"username": "alice", "password": "wrong"},
                     REMOTE_ADDR="10.1.1.1").status_code)
    if password:
        codes.append(Client().post("/accounts/login/",
                     {"username": "alice", "password": password},
                     REMOTE_ADDR="10.2.2.2").status_code)
    print(json.dumps(codes))
    """
)


def _start(failures: int, password: str = "", **limits: int) -> subprocess.Popen[str]:
    env = {**os.environ, **{k: str(v) for k, v in limits.items()}}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.Popen(
        [sys.executable, "-c", PROCESS, str(connection.settings_dict["NAME"]), str(failures),
         password],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _codes(process: subprocess.Popen[str]) -> list[int]:
    out, err = process.communicate(timeout=WAIT_SECONDS)
    assert process.returncode == 0, err[-3000:]
    codes: list[int] = json.loads(out.strip().splitlines()[-1])
    return codes


def test_two_processes_share_one_account_count(user: Any) -> None:
    limits = {"CTXLAB_LOGIN_FAILURES_PER_ACCOUNT": 5, "CTXLAB_LOGIN_FAILURES_PER_ADDRESS": 100}
    first = _codes(_start(3, **limits))
    assert first == [200, 200, 200]
    # The second process failed only twice itself: refused because the first one's count
    # is seen too (the right password does not get in).
    second = _codes(_start(2, "alice-pass-123", **limits))
    assert second == [200, 200, 429]
    # ... and so does this process.
    with override_settings(CTXLAB_LOGIN_FAILURES_PER_ACCOUNT=5):
        response = Client().post(
            "/accounts/login/", {"username": "alice", "password": "alice-pass-123"},
            REMOTE_ADDR="10.3.3.3",
        )  # fmt: skip
    assert response.status_code == 429
    # Every 429 says when to come back (whole seconds, within the throttle window).
    assert 1 <= int(response["Retry-After"]) <= settings.CTXLAB_LOGIN_WINDOW_SECONDS


def test_parallel_failures_are_all_counted(user: Any) -> None:
    limits = {"CTXLAB_LOGIN_FAILURES_PER_ACCOUNT": 1000, "CTXLAB_LOGIN_FAILURES_PER_ADDRESS": 1000}
    processes = [_start(15, **limits) for _ in range(2)]
    for process in processes:
        assert _codes(process) == [200] * 15
    counts = dict(LoginFailure.objects.values_list("key", "count"))
    # one row for the account, one for the address, each with all 30 failures
    assert sorted(counts.values()) == [30, 30]
