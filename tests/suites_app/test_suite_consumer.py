"""ws/suites/<id>/: catch-up on connect, the throttled pushes, owner only."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from suite_testdata import import_chat
from waiting import Communicator

from ctxlab.asgi import application
from suites_app import configs, services
from suites_app.items import item_execute
from suites_app.progress import SuiteProgress

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _suite(user: Any) -> Any:
    ts = [import_chat(user, seed=s, turns=2) for s in (1, 2)]
    return services.suite_create(
        owner=user, name="ws", transcripts=ts,
        configs=configs.preset_configs(["qwenpaw"], window=None), enqueue=False,
    )  # fmt: skip


def _ws(path: str, user: Any | None) -> Communicator:
    from django.test import Client

    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")]
    if user is not None:
        client = Client()
        client.force_login(user)
        headers.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
    return Communicator(application, path, headers=headers)


@pytest.mark.anyio
async def test_owner_gets_catch_up_then_live_progress(user: Any) -> None:
    suite = await database_sync_to_async(_suite)(user)
    comm = await database_sync_to_async(_ws)(f"/ws/suites/{suite.pk}/", user)
    assert (await comm.connect())[0]
    html = await comm.receive_from()
    assert f'id="suite-{suite.pk}-progress"' in html and 'hx-swap-oob="true"' in html
    assert 'data-done="0"' in html and 'data-total="2"' in html
    item = await database_sync_to_async(lambda: suite.items.first())()
    SuiteProgress._last.clear()  # a pk reused from an earlier test must not throttle this
    # One item executes (eager): its completion is pushed to the open page.
    await database_sync_to_async(item_execute)(item.pk)
    html = await comm.receive_from()
    assert 'data-done="1"' in html and 'data-finished="false"' in html
    await comm.disconnect()


@pytest.mark.anyio
async def test_other_user_and_anonymous_are_refused(user: Any, other_user: Any) -> None:
    suite = await database_sync_to_async(_suite)(user)
    for who, code in ((other_user, 4404), (None, 4401)):
        comm = await database_sync_to_async(_ws)(f"/ws/suites/{suite.pk}/", who)
        connected, close_code = await comm.connect()
        assert not connected and close_code == code


def test_pushes_are_throttled(user: Any, monkeypatch: Any) -> None:
    sent: list[Any] = []
    monkeypatch.setattr("suites_app.progress.send_suite_progress", sent.append)
    suite = _suite(user)
    SuiteProgress._last.clear()
    results = [SuiteProgress.push(suite) for _ in range(5)]
    assert results == [True, False, False, False, False]
    assert SuiteProgress.push(suite, force=True)  # the final state always goes out
    assert len(sent) == 2 and sent[-1]["total"] == 2
