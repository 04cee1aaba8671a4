"""Issue 15: admin change lists of Transcript, Message, RunStep, RunEvent, RunSummary and
RunOffload open in under 2 s at 100,000 rows: no full count, no big columns in the list
query, a bounded number of queries (no query per row)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from replay_app.models import RunEvent, RunOffload, RunStep, RunSummary
from replay_app.runs.services import RunSpec, run_create
from sessions_app import services as session_services
from sessions_app.models import Message, Transcript

pytestmark = pytest.mark.django_db

ROWS = 100_000
BIG = "x" * 20_000  # a big column value: must not be read by the list query


def _fill(model: Any, values: dict[str, str]) -> None:
    """ROWS rows of ``model`` in one INSERT … SELECT over a generated series (the ORM would
    take minutes); ``values`` maps columns to SQL expressions of the row number ``i``."""
    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in values)
    exprs = ", ".join(values.values())
    sql = (
        f"INSERT INTO {table} ({columns}) "
        f"WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {ROWS - 1}) "
        f"SELECT {exprs} FROM n"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)


def _json(text: str) -> str:
    literal = "'" + text.replace("'", "''") + "'"
    return literal if connection.vendor == "sqlite" else f"CAST({literal} AS jsonb)"


@pytest.fixture
def filled(staff_user: Any) -> dict[str, Any]:
    data = b'[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]'
    upload = session_services.upload_import(owner=staff_user, name="a.json", data=data).upload
    assert upload is not None
    transcript = upload.transcripts.get()
    run = run_create(
        owner=staff_user, transcript=transcript, spec=RunSpec(strategy="qwenpaw"), enqueue=False
    )
    common_transcript = {
        f.column: _default_sql(f) for f in Transcript._meta.concrete_fields if not f.primary_key
    }
    _fill(
        Transcript,
        {
            **common_transcript,
            "owner_id": str(staff_user.pk),
            "upload_id": str(upload.pk),
            "position": "i + 1",
            "title": "'t' || i",
            "parent_id": "NULL",
        },
    )
    _fill(
        Message,
        {
            **{
                f.column: _default_sql(f)
                for f in Message._meta.concrete_fields
                if not f.primary_key
            },
            "transcript_id": str(transcript.pk),
            "index": "i + 2",
            "role": "'user'",
        },
    )
    run_id = str(run.pk)
    _fill(RunStep, {
        **{f.column: _default_sql(f) for f in RunStep._meta.concrete_fields if not f.primary_key},
        "run_id": run_id, "index": "i", "source_index": "i",
        "tokens_strategy": "1", "tokens_reference": "1",
    })  # fmt: skip
    _fill(RunEvent, {
        **{f.column: _default_sql(f) for f in RunEvent._meta.concrete_fields if not f.primary_key},
        "run_id": run_id, "seq": "i", "step": "i", "kind": "'drop'",
    })  # fmt: skip
    _fill(RunSummary, {
        **{f.column: _default_sql(f) for f in RunSummary._meta.concrete_fields
           if not f.primary_key},
        "run_id": run_id, "seq": "i", "step": "i",
    })  # fmt: skip
    _fill(
        RunOffload,
        {"run_id": run_id, "path": "'/f/' || i", "text": "'small'", "text_parts": "'[]'"},
    )
    # The newest rows (the first page: newest first) carry a big value in their big column.
    for model, column in BIG_COLUMNS.items():
        ids = list(model.objects.order_by("-pk").values_list("pk", flat=True)[:100])
        field = model._meta.get_field(column)
        value: Any = BIG if field.get_internal_type() == "TextField" else [BIG]
        model.objects.filter(pk__in=ids).update(**{column: value})
    return {"run": run}


def _default_sql(field: Any) -> str:
    """A SQL literal for a column's default (NULL when it has none and may be null)."""
    from django.db.models import NOT_PROVIDED

    if field.is_relation:
        return "NULL"
    default = field.default
    if default is NOT_PROVIDED:
        if field.null:
            return "NULL"
        internal = field.get_internal_type()
        if internal in ("TextField", "CharField"):
            return "''"
        if internal == "BooleanField":
            return "FALSE" if connection.vendor != "sqlite" else "0"
        if internal == "DateTimeField":
            return "CURRENT_TIMESTAMP"
        return "0"
    value = default() if callable(default) else default
    if field.get_internal_type() == "JSONField":
        import json

        return _json(json.dumps(value))
    if isinstance(value, bool):
        return ("TRUE" if value else "FALSE") if connection.vendor != "sqlite" else str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return "NULL"
    if hasattr(value, "isoformat"):
        return "CURRENT_TIMESTAMP"
    return "'" + str(value).replace("'", "''") + "'"


BIG_COLUMNS: dict[Any, str] = {
    Transcript: "tools",
    Message: "blocks",
    RunStep: "context",
    RunEvent: "detail",
    RunSummary: "input",
    RunOffload: "text",
}
URLS = {
    "/admin/sessions_app/transcript/": "tools",
    "/admin/sessions_app/message/": "blocks",
    "/admin/replay_app/runstep/": "context",
    "/admin/replay_app/runevent/": "detail",
    "/admin/replay_app/runsummary/": "input",
    "/admin/replay_app/runoffload/": "text",
}


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
