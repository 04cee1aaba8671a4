"""Shared pytest fixtures for the Django side of ctxlab.

Celery tasks run eagerly (in the caller's thread) unless a test asks for
``celery_worker_embedded``, which runs them on a real in-process worker, through whatever
broker is configured (memory:// by default, Redis in the distributed CI leg).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(autouse=True, scope="session")
def _fast_password_hashing() -> Iterator[None]:
    # PBKDF2's deliberate slowness costs ~0.3 s per test user; tests don't need it.
    from django.test.utils import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(autouse=True)
def _celery_eager(request: pytest.FixtureRequest) -> Iterator[None]:
    """Run tasks eagerly by default, so no test depends on a worker by accident."""
    if "celery_worker_embedded" in request.fixturenames:
        yield
        return
    from ctxlab.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = previous


@pytest.fixture(scope="session")
def _embedded_worker_session(django_db_setup: Any, django_db_blocker: Any) -> Iterator[Any]:
    # One worker for the whole session: starting one costs ~0.1 s, stopping and restarting
    # a WorkController in the same process is not something Celery promises to support.
    from ctxlab.embedded import start_embedded_worker, stop_embedded_worker

    with django_db_blocker.unblock():
        worker = start_embedded_worker()
    yield worker
    stop_embedded_worker()


@pytest.fixture
def celery_worker_embedded(_embedded_worker_session: Any, transactional_db: None) -> Any:
    """A real Celery worker (threads) running in this process; tasks leave the test thread.

    Needs a transactional DB because the worker writes results from its own connection.
    """
    from ctxlab.celery import app

    app.conf.task_always_eager = False
    return _embedded_worker_session


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="alice", password="alice-pass-123")


@pytest.fixture
def other_user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="bob", password="bob-pass-123")


@pytest.fixture
def staff_user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_superuser(username="root", password="root-pass-123")


@pytest.fixture
def auth_client(client: Any, user: Any) -> Any:
    """The test client, logged in as ``user``."""
    client.force_login(user)
    return client
