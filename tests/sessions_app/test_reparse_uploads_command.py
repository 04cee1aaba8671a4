"""``manage.py reparse_uploads``: re-parse stored uploads in bulk (all, or selected by id,
user, format, importer version), idempotent, with progress lines and clear errors. Rows
made to read as PostgreSQL's jsonb returned them before migration 0006 (every object's
keys sorted) come back in the agent's order. On real corpus files; runs against
PostgreSQL too (``DATABASE_URL``)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app import services
from sessions_app.models import Message, Transcript, Upload
from tests.sessions_app.test_blocks_key_order import _jsonb_order

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
SESSION = CORPUS / "claude-code" / "agentcmd-full-session-four.jsonl"  # Edit inputs: not sorted
REQUEST = CORPUS / "anthropic-messages" / "claude-trace-req34-request.json"  # tool schemas


def _upload(owner: Any, path: Path) -> Upload:
    outcome = services.upload_import(owner=owner, name=path.name, data=path.read_bytes())
    assert outcome.ok, outcome.error
    assert outcome.upload is not None
    return outcome.upload


def _state(upload: Upload) -> list[Any]:
    """Every stored row of an upload, as order-sensitive text, with its ids."""
    out: list[Any] = []
    for t in Transcript.objects.filter(upload=upload).order_by("position"):
        out.append((t.pk, json.dumps(t.tools)))
        rows = Message.objects.filter(transcript=t).order_by("index")
        out += [(m.index, m.role, json.dumps(m.blocks)) for m in rows]
    return out


def _sort_like_jsonb(upload: Upload) -> int:
    """Rewrite the upload's rows as jsonb returned them; the rows that changed."""
    changed = 0
    for t in Transcript.objects.filter(upload=upload):
        if json.dumps(_jsonb_order(t.tools)) != json.dumps(t.tools):
            Transcript.objects.filter(pk=t.pk).update(tools=_jsonb_order(t.tools))
            changed += 1
        for m in Message.objects.filter(transcript=t):
            if json.dumps(_jsonb_order(m.blocks)) != json.dumps(m.blocks):
                Message.objects.filter(pk=m.pk).update(blocks=_jsonb_order(m.blocks))
                changed += 1
    return changed


def _run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("reparse_uploads", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_all_uploads_come_back_in_the_agents_order_and_a_rerun_changes_nothing(
    alice: Any,
) -> None:
    uploads = [_upload(alice, SESSION), _upload(alice, REQUEST)]
    imported = [_state(u) for u in uploads]
    assert all(_sort_like_jsonb(u) >= 1 for u in uploads)
    assert [_state(u) for u in uploads] != imported  # what pre-0006 PostgreSQL rows read as
    out, err = _run("--all")
    assert [_state(u) for u in uploads] == imported  # transcript ids kept, key order back
    lines = out.splitlines()
    assert lines[0].startswith(f"[1/2] upload {uploads[0].pk} '{SESSION.name}': 1 conversation,")
    assert lines[1].startswith(f"[2/2] upload {uploads[1].pk} ")
    assert lines[-1].startswith("Re-parsed 2 of 2 uploads in ") and err == ""
    again, _ = _run("--all")  # idempotent
    assert [_state(u) for u in uploads] == imported
    assert again.splitlines()[-1].startswith("Re-parsed 2 of 2 uploads")


def test_selected_ids_only_and_unknown_ids_refused_before_anything(
    alice: Any, django_user_model: Any
) -> None:
    first, second = _upload(alice, SESSION), _upload(alice, REQUEST)
    _sort_like_jsonb(first)
    _sort_like_jsonb(second)
    sorted_second = _state(second)
    with pytest.raises(CommandError, match=r"No upload with id 999999\."):
        _run(str(first.pk), "999999")
    with pytest.raises(CommandError, match="Give upload ids, or --all"):
        _run()
    with pytest.raises(CommandError, match="not both"):
        _run("--all", str(first.pk))
    out, _ = _run(str(first.pk))
    assert out.count("] upload ") == 1 and f"upload {first.pk} " in out
    assert _state(second) == sorted_second  # not selected: untouched
    django_user_model.objects.create_user(username="bob", password="pw-bob-12345")
    assert _run("--all", "--user", "bob")[0] == "No upload to re-parse.\n"
    with pytest.raises(CommandError, match="no user named 'carol'"):
        _run("--all", "--user", "carol")
    dry, _ = _run("--all", "--format", second.format, "--dry-run")
    assert f"upload {second.pk} " in dry and f"upload {first.pk} " not in dry
    assert dry.splitlines()[-1] == "1 upload would be re-parsed."
    assert _state(second) == sorted_second  # a dry run changes nothing


def test_a_failing_upload_is_said_the_others_go_on_and_the_exit_is_an_error(
    alice: Any,
) -> None:
    good, bad = _upload(alice, SESSION), _upload(alice, REQUEST)
    before_good, before_bad = _state(good), _state(bad)
    Upload.objects.filter(pk=bad.pk).update(data=b"{ not json")
    _sort_like_jsonb(good)
    with pytest.raises(CommandError, match=rf"1 upload failed to re-parse \(ids {bad.pk}\)"):
        out, err = StringIO(), StringIO()
        try:
            call_command("reparse_uploads", "--all", stdout=out, stderr=err)
        finally:
            assert f"upload {bad.pk} '{REQUEST.name}': FAILED, nothing changed:" in err.getvalue()
            assert "Re-parsed 1 of 2 uploads" in out.getvalue()
    assert _state(bad) == before_bad  # its rows as they were
    assert _state(good) == before_good  # re-parsed all the same


def test_stale_selects_uploads_of_another_importer_version(alice: Any) -> None:
    old, current = _upload(alice, SESSION), _upload(alice, REQUEST)
    Upload.objects.filter(pk=old.pk).update(importer_version="0-old")
    out, _ = _run("--all", "--stale")
    assert f"upload {old.pk} " in out and f"upload {current.pk} " not in out
    assert Upload.objects.get(pk=old.pk).importer_version == services.importer_version()
    assert _run("--all", "--stale")[0] == "No upload to re-parse.\n"  # nothing left


@pytest.mark.django_db(transaction=True)
def test_rows_through_the_old_schema_and_back_are_restored(alice: Any) -> None:
    """Rows taken back to migration 0005 (jsonb on PostgreSQL: keys sorted) and forward
    again read as pre-0006 rows did; the command restores the agent's order. On SQLite
    the old column kept the order: the command changes nothing there (idempotent)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    upload = _upload(alice, SESSION)
    imported = _state(upload)
    executor = MigrationExecutor(connection)
    executor.migrate([("sessions_app", "0005_message_reference_tables")])
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    through = _state(upload)
    if connection.vendor == "postgresql":
        assert through != imported  # jsonb sorted the keys
    else:
        assert through == imported
    out, _ = _run(str(upload.pk))
    assert _state(upload) == imported and "Re-parsed 1 of 1 upload " in out
