"""Issue 15, "Faults and posture": same-site next=, login throttling, security headers on
static files, friendly 404/500 with DEBUG off, and a clear answer (page, JSON, /healthz)
when the database cannot be written."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client, override_settings
from waiting import WAIT_SECONDS

from replay_app.runs import services
from replay_app.runs.services import RunSpec
from sessions_app import services as session_services

pytestmark = pytest.mark.django_db

SMALL = b'[{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]'


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


# --- next= ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    ["https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)",
     "http://testserver@evil.example/"],
)  # fmt: skip
def test_next_only_same_site_paths(auth_client: Client, user: Any, target: str) -> None:
    outcome = session_services.upload_import(owner=user, name="s.json", data=SMALL)
    assert outcome.upload is not None
    transcript = outcome.upload.transcripts.get()
    run = services.run_create(
        owner=user, transcript=transcript, spec=RunSpec(strategy="qwenpaw"), enqueue=False
    )
    for action in ("cancel", "retry"):
        response = auth_client.post(f"/runs/{run.pk}/{action}/", {"next": target})
        assert response.status_code == 302
        assert response["Location"] == run.get_absolute_url(), (action, target)
    response = auth_client.post(f"/runs/{run.pk}/cancel/", {"next": "/runs/?page=2"})
    assert response["Location"] == "/runs/?page=2"


# --- login throttle ---------------------------------------------------------------------


def _login(client: Client, username: str, password: str, address: str = "10.0.0.1") -> Any:
    return client.post(
        "/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address
    )


@override_settings(CTXLAB_LOGIN_FAILURES_PER_ACCOUNT=3, CTXLAB_LOGIN_FAILURES_PER_ADDRESS=5)
def test_login_throttled_per_account(user: Any) -> None:
    client = Client()
    for _ in range(3):
        assert _login(client, "alice", "wrong").status_code == 200
    refused = _login(client, "ALICE", "alice-pass-123", address="10.0.0.2")
    assert refused.status_code == 429
    assert "Too many failed logins" in refused.content.decode()
    assert "_auth_user_id" not in client.session  # the right password did not get in
    # another account from another address is not affected
    assert _login(Client(), "bob", "wrong", address="10.0.0.3").status_code == 200


@override_settings(CTXLAB_LOGIN_FAILURES_PER_ACCOUNT=50, CTXLAB_LOGIN_FAILURES_PER_ADDRESS=4)
def test_login_throttled_per_address(user: Any, other_user: Any) -> None:
    client = Client()
    for name in ("u1", "u2", "u3", "u4"):
        _login(client, name, "wrong")
    assert _login(client, "bob", "bob-pass-123").status_code == 429
    assert _login(client, "bob", "bob-pass-123", address="10.9.9.9").status_code == 302


@override_settings(CTXLAB_LOGIN_FAILURES_PER_ACCOUNT=3)
def test_login_success_clears_the_account_count(user: Any) -> None:
    client = Client()
    for _ in range(2):
        _login(client, "alice", "wrong")
    assert _login(client, "alice", "alice-pass-123").status_code == 302
    for _ in range(2):
        assert _login(Client(), "alice", "wrong").status_code == 200


# --- static files -----------------------------------------------------------------------


def test_static_files_carry_the_page_security_headers(auth_client: Client) -> None:
    page = auth_client.get("/")
    static = auth_client.get("/static/css/ctxlab.css")
    assert static.status_code == 200
    for header in (
        "Content-Security-Policy",
        "Permissions-Policy",
        "X-Frame-Options",
        "X-Content-Type-Options",
        "Referrer-Policy",
        "Cross-Origin-Opener-Policy",
    ):
        assert static.headers.get(header) == page.headers.get(header), header
        assert static.headers.get(header), header


def test_pages_and_their_htmx_fragments_are_cached_apart(auth_client: Client) -> None:
    """A view answers htmx with a fragment at the page's own URL: without ``Vary`` the
    browser's back button showed a cached fragment as the whole page."""
    page = auth_client.get("/transcripts/")
    fragment = auth_client.get("/transcripts/", headers={"HX-Request": "true",
                                                         "HX-Target": "upload-table"})  # fmt: skip
    assert b"<html" in page.content and b"<html" not in fragment.content
    for response in (page, fragment):
        vary = {v.strip().lower() for v in response.headers.get("Vary", "").split(",")}
        assert {"hx-request", "hx-target"} <= vary, response.headers.get("Vary")


# --- DEBUG off --------------------------------------------------------------------------


@override_settings(DEBUG=False, ROOT_URLCONF="posture_urls")
def test_friendly_404_and_500_without_debug(auth_client: Client) -> None:
    missing = auth_client.get("/no/such/page/")
    assert missing.status_code == 404 and "Not found" in missing.content.decode()
    auth_client.raise_request_exception = False
    failed = auth_client.get("/boom/")
    body = failed.content.decode()
    assert failed.status_code == 500 and "Something went wrong" in body
    assert "secret internals" not in body and "Traceback" not in body


# --- read-only database -----------------------------------------------------------------


@pytest.fixture
def read_only_db() -> Iterator[None]:
    if connection.vendor != "sqlite":
        pytest.skip("simulated with SQLite's query_only pragma")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA query_only = ON")
    yield
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA query_only = OFF")


def test_healthz_reports_the_database_writable() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "writable"}


def test_read_only_database_clear_errors(auth_client: Client, read_only_db: None) -> None:
    health = Client().get("/healthz")
    assert health.status_code == 503
    assert health.json()["database"] == "not writable"
    assert health.json()["problem"] == "read-only"
    auth_client.raise_request_exception = False
    upload = {"files": _file()}
    page = auth_client.post("/transcripts/upload/", upload)
    assert page.status_code == 503
    assert "database is read-only" in page.content.decode()
    assert "Traceback" not in page.content.decode()
    twin = auth_client.post("/transcripts/upload/?format=json", {"files": _file()})
    assert twin.status_code == 503 and twin.json()["storage"] == "read-only"


def _file() -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("s.json", SMALL, content_type="application/json")


def test_storage_problem_names_disk_full() -> None:
    import errno

    from django.db import OperationalError

    from ctxlab.web.storage_errors import storage_problem

    assert storage_problem(OperationalError("database or disk is full")) == "full"
    assert storage_problem(OSError(errno.ENOSPC, "No space left on device")) == "full"
    assert storage_problem(OperationalError("attempt to write a readonly database")) == "read-only"
    assert storage_problem(OperationalError("no such table: x")) is None


# --- broker -----------------------------------------------------------------------------


def test_redis_broker_redelivers_within_minutes() -> None:
    import json
    import os
    import subprocess
    import sys

    from django.conf import settings

    code = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        "print(json.dumps([s.CELERY_BROKER_TRANSPORT_OPTIONS, s.CELERY_TASK_ACKS_LATE, "
        "s.CELERY_TASK_REJECT_ON_WORKER_LOST]))"
    )
    env = {**os.environ, "CELERY_BROKER_URL": "redis://127.0.0.1:6390/0"}
    env["DJANGO_SETTINGS_MODULE"] = "ctxlab.settings"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=settings.BASE_DIR, env=env,
        capture_output=True, text=True, timeout=WAIT_SECONDS, check=True,
    ).stdout  # fmt: skip
    options, acks_late, reject_lost = json.loads(out.strip().splitlines()[-1])
    assert acks_late is True and reject_lost is True
    assert 60 <= options["visibility_timeout"] <= 900  # minutes, not Redis' hour
