"""Shared pytest fixtures for the Django side of ctxlab.

Celery tasks run eagerly (in the caller's thread) unless a test asks for
``celery_worker_embedded``, which runs them on a real in-process worker, through whatever
broker is configured (memory:// by default, Redis in the distributed CI leg).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
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


@pytest.fixture(autouse=True)
def _websockets_closed_in_their_test() -> Iterator[None]:
    """A test that connects a websocket disconnects it (tests/waiting.py's Communicator):
    a consumer left running keeps a channel-layer receive alive until the event loop
    closes, where on the Redis layer a run once hung instead of failing."""
    yield
    from waiting import Communicator

    left = Communicator.open_sockets()
    assert not left, f"websockets left open by this test (disconnect them): {left}"


@pytest.fixture(scope="session")
def _embedded_worker_session(django_db_setup: Any, django_db_blocker: Any) -> Iterator[Any]:
    # One worker for the whole session: starting one costs ~0.1 s, stopping and restarting
    # a WorkController in the same process is not something Celery promises to support.
    from ctxlab.serving.embedded import start_embedded_worker, stop_embedded_worker

    # Threads only: tests patch code in this process; tests of the process pool start it.
    with django_db_blocker.unblock():
        worker = start_embedded_worker(processes=0)
    yield worker
    stop_embedded_worker()


@pytest.fixture
def celery_worker_embedded(_embedded_worker_session: Any, transactional_db: None) -> Iterator[Any]:
    """A real Celery worker (threads) running in this process; tasks leave the test thread.

    Needs a transactional DB because the worker writes results from its own connection.
    """
    from ctxlab.celery import app

    app.conf.task_always_eager = False
    yield _embedded_worker_session
    _wait_until_worker_idle(app)


def _wait_until_worker_idle(app: Any) -> None:
    """A test may end while the worker still works for it: a run is done before its analysis
    (``runs.executor._execute``), and a task may still sit in the broker's queue. The database
    flush that follows would then race the worker's writes (on PostgreSQL a TRUNCATE against a
    row lock is a deadlock; seen in CI), and the next test would meet its leftovers."""
    from celery.worker import state
    from waiting import wait_until

    def queued() -> int:
        with app.connection_for_read() as conn:
            # not passive: Redis has no key for an empty queue, so a passive declare fails
            declared = conn.default_channel.queue_declare(queue=app.conf.task_default_queue)
            return int(declared.message_count)

    wait_until(
        lambda: not state.active_requests and not state.reserved_requests and not queued(),
        "the embedded worker to finish this test's tasks",
        seen=lambda: (len(state.active_requests), len(state.reserved_requests), queued()),
    )


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


# ---------------------------------------------------------------------------------------------
# The `slow` marker: what `make test-fast` leaves out (`make test` runs everything). Chosen
# with `pytest --durations=80` on the 2-core machine: corpus-wide checks, perf goldens, fuzzing,
# subprocess/server start-ups, listed here by module (or module::test) with the reason; every
# other test function measured at 0.5 s or more is listed in tests/slow_tests.txt. A test may
# also carry @pytest.mark.slow itself.
SLOW_MODULES = frozenset(
    {
        "test_abandoned_requests.py",  # real server, cut connections
        "test_admin_scale.py",  # 100k-row change lists
        "test_anthropic_edits_linear.py",  # incremental view vs rebuild on replays
        "test_bounded_server.py",  # starts and signals real server processes
        "test_engine_main.py",  # the CLI in subprocesses, per preset
        "test_fact_memo.py",  # corpus-wide fact extraction twice
        "test_foundation_settings.py",  # settings in fresh interpreters
        "test_fuzz_a.py",
        "test_fuzz_b.py",
        "test_langchain_trim_linear.py",
        "test_login_throttle_shared.py",  # parallel processes
        "test_perf_golden.py",
        "test_perf_golden_baseagent.py",
        "test_perf_golden_counts.py",
        "test_qwen_fast.py",  # every corpus text and code point
        "test_run_process_pool.py",  # starts child processes, kills one mid-run
        "test_secrets_prefilter.py",  # prefilter vs exhaustive scan, corpus-wide
        "test_share_wheel.py",  # builds and installs the wheel
        "test_streamed_import.py",  # streamed vs whole-file parse, corpus-wide
        "test_synth_realistic.py",
    }
)
SLOW_TESTS = frozenset(
    {
        "test_budget.py::test_every_seed_compacts_at_half_the_peak_on_claude_code_sessions",
        "test_calibration_reuse.py::test_points_match_a_fresh_count_on_the_corpus",
        "test_catalogue.py::test_library_emits_only_catalogued_kinds_in_their_own_spelling",
        "test_catalogue.py::test_library_findings_are_catalogued",
        "test_cli.py::test_import_transcripts_whole_corpus",
        "test_codec.py::test_conversation_round_trip_through_json",
        "test_costs_views.py::test_costs_form_run_with_claude_stores_usage_cost_and_ledger",
        "test_extract.py::test_no_escape_artefacts_in_the_corpus",
        "test_huge_content.py::test_30mib_result_page_and_json_twin",
        "test_import_streamed_rows.py::test_import_holds_a_batch_not_the_file",
        "test_load_demo.py::test_load_demo_is_idempotent_and_has_a_long_session",
        "test_posture.py::test_redis_broker_redelivers_within_minutes",
        "test_replay_worker.py::test_ten_uploads_and_five_comparisons_at_once",
        "test_run_form_budget.py::test_form_with_many_conversations_stays_small",
        "test_secrets_everywhere.py::test_no_page_or_export_shows_a_secret",
        "test_synth.py::test_bench_conversation_holds_millions_of_tokens",
        "test_synth.py::test_long_demo_conversation_meets_target",
        "test_views.py::test_transcript_list_groups_many_conversations",
    }
)


MEASURED_SLOW = frozenset(
    line.strip()
    for line in (Path(__file__).parent / "slow_tests.txt").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        name = item.path.name
        test = getattr(item, "originalname", item.name)
        if (
            name in SLOW_MODULES
            or f"{name}::{test}" in SLOW_TESTS
            or item.nodeid.split("[", 1)[0] in MEASURED_SLOW
            or item.get_closest_marker("browser")
            or item.get_closest_marker("db_backend")
        ):
            item.add_marker(pytest.mark.slow)
