"""Queries compiled once (``ctxlab.serving.prepared``) and the session store and auth backend that
use them (``ctxlab.session_rows``): the same rows and the same checks as Django's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends.db import SessionStore as DjangoStore
from django.contrib.sessions.models import Session
from django.utils import timezone

from ctxlab import session_rows
from ctxlab.serving.prepared import Prepared

pytestmark = pytest.mark.django_db


def _sessions(key: str, now: datetime) -> Any:
    return Session.objects.filter(session_key=key, expire_date__gt=now).values_list(
        "session_key", "session_data", "expire_date"
    )


def test_prepared_rows_are_the_querysets_rows(user: Any, other_user: Any) -> None:
    stores = []
    for account, days in ((user, 1), (other_user, -1)):  # one live, one expired
        store = DjangoStore()
        store["_auth_user_id"] = str(account.pk)
        store.set_expiry(timedelta(days=days))
        store.save()
        stores.append(store.session_key)
    query = Prepared(
        _sessions,
        {"key": "k" * 32, "now": datetime(2001, 1, 1, tzinfo=UTC)},
        {"key": "q" * 32, "now": datetime(2002, 2, 2, tzinfo=UTC)},
    )
    now = timezone.now()
    for key in (*stores, "missing-key-000"):
        for when in (now, now - timedelta(days=3), now + timedelta(days=3)):
            assert query.rows(key=key, now=when) == list(_sessions(key, when))
    assert query.rows(key=stores[0], now=now)  # a live session is found...
    assert not query.rows(key=stores[1], now=now)  # ... an expired one is not
    expire = query.rows(key=stores[0], now=now)[0][2]
    assert isinstance(expire, datetime) and expire.tzinfo is not None  # converted


def test_an_argument_the_query_cannot_place_is_an_error() -> None:
    twice = Prepared(
        lambda key: Session.objects.filter(session_key=key, session_data=key).values_list("pk"),
        {"key": "a" * 32},
        {"key": "b" * 32},
    )
    with pytest.raises(ValueError, match="not one parameter"):
        twice.rows(key="c" * 32)
    unused = Prepared(lambda key: Session.objects.values_list("pk"), {"key": "a"}, {"key": "b"})
    with pytest.raises(ValueError, match="not one parameter"):
        unused.rows(key="c")


def test_session_store_and_backend_read_what_djangos_read(user: Any) -> None:
    store = DjangoStore()
    store.update({"_auth_user_id": str(user.pk), "n": [1, "é"]})
    store.save()
    assert (
        session_rows.SessionStore(store.session_key).load() == DjangoStore(store.session_key).load()
    )
    gone = session_rows.SessionStore("no-such-session-key-123")
    assert gone.load() == {} and gone.session_key is None
    fast = session_rows.RowBackend().get_user(str(user.pk))
    slow = ModelBackend().get_user(user.pk)
    fields = [f.attname for f in type(user)._meta.concrete_fields]
    assert [getattr(fast, f) for f in fields] == [getattr(slow, f) for f in fields]
    assert session_rows.RowBackend().get_user("not-a-number") is None
    assert session_rows.RowBackend().get_user(str(user.pk + 1000)) is None
    user.is_active = False
    user.save()
    assert session_rows.RowBackend().get_user(str(user.pk)) is None


def test_logins_still_end_as_they_did(client: Any, user: Any) -> None:
    client.force_login(user)
    assert client.get("/runs/").status_code == 200
    Session.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
    assert client.get("/runs/").status_code == 302  # expired: to the login page
    client.force_login(user)
    assert client.get("/runs/").status_code == 200
    user.set_password("a-new-password-9")  # another session's password change
    user.save()
    assert client.get("/runs/").status_code == 302  # the auth hash no longer matches


def test_an_integer_no_column_holds_matches_no_row(client: Any, user: Any) -> None:
    query = Prepared(
        lambda pk: Session.objects.filter(pk=pk).values_list("pk"), {"pk": "a" * 32}, {"pk": "b"}
    )
    assert query.rows(pk="c" * 32) == []
    client.force_login(user)
    huge = "9" * 30  # the URL's <int:pk> takes any digits; SQLite holds 64 bits
    for url in (f"/runs/{huge}/", f"/runs/{huge}/steps/0/", f"/compare/?runs=1,{huge}"):
        assert client.get(url).status_code == 404
