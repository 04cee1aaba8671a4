"""Rows for the bench's request timings and the tests that check the same requests' shape
(``tests/web/test_admin_scale.py``, ``tests/replay_app/runs/test_run_form_budget.py``): many
transcripts for the run form, 100,000 rows in each large admin table. Not a section itself."""

from __future__ import annotations

from typing import Any

from django.db import connection

ROWS = 100_000
BIG = "x" * 20_000  # a big column value: must not be read by the list query


def many_transcripts(owner: Any, count: int) -> Any:
    """``count`` transcripts of one upload, in a few bulk INSERTs (their messages are not
    stored: the run form lists transcripts, it never reads messages)."""
    from sessions_app.models import Transcript, Upload

    upload = Upload.objects.create(owner=owner, name="big-export.jsonl", format="openai-chat",
                                   size=1, sha256="0" * 64, data=b"", importer_version="t")  # fmt: skip
    Transcript.objects.bulk_create(
        [
            Transcript(
                owner=owner,
                upload=upload,
                position=i,
                title=f"conversation number {i}",
                format="openai-chat",
                message_count=i % 50,
            )  # fmt: skip
            for i in range(count)
        ],
        batch_size=5000,
    )
    return upload


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


def fill_admin_tables(staff_user: Any) -> Any:
    """ROWS rows in each large admin table (``big_columns()``), under one transcript and one
    run of ``staff_user``; the newest 100 rows of each carry ``BIG`` in their big column (the
    first page, newest first). Returns the run."""
    from replay_app.models import RunEvent, RunOffload, RunStep, RunSummary
    from replay_app.runs.services import RunSpec, run_create
    from sessions_app.models import Message, Transcript
    from sessions_app.services import upload_import

    data = b'[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]'
    upload = upload_import(owner=staff_user, name="a.json", data=data).upload
    assert upload is not None
    transcript = upload.transcripts.get()
    run = run_create(
        owner=staff_user, transcript=transcript, spec=RunSpec(strategy="qwenpaw"), enqueue=False
    )
    common_transcript = _defaults(Transcript)
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
            **_defaults(Message),
            "transcript_id": str(transcript.pk),
            "index": "i + 2",
            "role": "'user'",
        },
    )
    run_id = str(run.pk)
    _fill(RunStep, {
        **_defaults(RunStep),
        "run_id": run_id, "index": "i", "source_index": "i",
        "tokens_strategy": "1", "tokens_reference": "1",
    })  # fmt: skip
    _fill(RunEvent, {
        **_defaults(RunEvent),
        "run_id": run_id, "seq": "i", "step": "i", "kind": "'drop'",
    })  # fmt: skip
    _fill(RunSummary, {
        **_defaults(RunSummary),
        "run_id": run_id, "seq": "i", "step": "i",
    })  # fmt: skip
    _fill(
        RunOffload,
        {"run_id": run_id, "path": "'/f/' || i", "text": "'small'", "text_parts": "'[]'"},
    )
    # The newest rows (the first page: newest first) carry a big value in their big column.
    for model, column in big_columns().items():
        ids = list(model.objects.order_by("-pk").values_list("pk", flat=True)[:100])
        field = model._meta.get_field(column)
        value: Any = BIG if field.get_internal_type() == "TextField" else [BIG]
        model.objects.filter(pk__in=ids).update(**{column: value})
    return run


def _defaults(model: Any) -> dict[str, str]:
    """Every column of ``model`` but its key, with its default as SQL."""
    fields = model._meta.concrete_fields
    return {str(f.column): _default_sql(f) for f in fields if not f.primary_key}


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


def big_columns() -> dict[Any, str]:
    """Each large admin table's model and its big column."""
    from replay_app.models import RunEvent, RunOffload, RunStep, RunSummary
    from sessions_app.models import Message, Transcript

    return {
        Transcript: "tools",
        Message: "blocks",
        RunStep: "context",
        RunEvent: "detail",
        RunSummary: "input",
        RunOffload: "text",
    }


ADMIN_URLS = {
    "/admin/sessions_app/transcript/": "tools",
    "/admin/sessions_app/message/": "blocks",
    "/admin/replay_app/runstep/": "context",
    "/admin/replay_app/runevent/": "detail",
    "/admin/replay_app/runsummary/": "input",
    "/admin/replay_app/runoffload/": "text",
}
