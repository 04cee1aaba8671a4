"""Issue 15: admin change lists of Transcript, Message, RunStep, RunEvent, RunSummary and
RunOffload stay cheap at 100,000 rows: no full count, no big columns in the list query, a
bounded number of queries (no query per row). Their time is ``manage.py bench --only
request_times`` (target 2 s each), which fills the tables with the same rows."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from ctxlab.benchmarks._rows import ADMIN_URLS as URLS
from ctxlab.benchmarks._rows import BIG, fill_admin_tables

pytestmark = pytest.mark.django_db


@pytest.fixture
def filled(staff_user: Any) -> dict[str, Any]:
    return {"run": fill_admin_tables(staff_user)}


def test_change_lists_bounded_at_100k_rows(client: Client, staff_user: Any, filled: Any) -> None:
    """What keeps a change list cheap at 100k rows (how long it takes is for ``manage.py
    bench``): few queries, counts capped by a LIMIT, pages without their big column."""
    client.force_login(staff_user)
    client.get("/admin/")  # warm the admin's templates and URL resolving
    for url, big_column in URLS.items():
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        assert response.status_code == 200, url
        assert len(queries) < 20, [q["sql"][:120] for q in queries]
        for query in queries:
            sql = query["sql"].upper()
            if "COUNT(" in sql:
                assert "LIMIT" in sql, f"{url}: a full count: {sql[:200]}"
            if " LIMIT 100" in sql:  # the page of rows: without its big column
                assert f'."{big_column.upper()}"' not in sql, f"{url} selects {big_column}"
        html = response.content.decode()
        assert BIG[:1000] not in html and "result_list" in html, url
        assert "10,001" in html or "10001" in html, url  # the capped count, not 100,000
