"""`import_transcripts PATH` on OpenCode's data folder, storage folder or opencode.db: each
session imported once as its ``opencode export`` JSON, with where it came from."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from opencode_store import SAMPLES, export, write_database, write_storage

from ctxlab.engine import importers
from sessions_app.models import Transcript, Upload

pytestmark = pytest.mark.django_db


def _import(*args: str) -> list[dict[str, Any]]:
    out = io.StringIO()
    call_command("import_transcripts", *args, "--json", stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _expected(path: Path) -> tuple[int, int, int]:
    (c,) = importers.parse(path.read_bytes(), name=path.name).conversations
    return len(c.messages), c.tool_call_count, len(c.compactions)


@pytest.mark.parametrize("store", ["storage", "database"])
def test_each_session_is_imported_once_with_every_message(tmp_path: Path, store: str) -> None:
    root = tmp_path / "opencode"
    exports = [export(p) for p in SAMPLES]
    if store == "storage":
        write_storage(root, exports)
    else:
        write_database(root / "opencode.db", exports)
    lines = _import(str(root))
    by_session = {line["source"]["session"]: line for line in lines}
    assert sorted(by_session) == sorted(d["info"]["id"] for d in exports)
    for path, doc in zip(SAMPLES, exports, strict=True):
        line = by_session[doc["info"]["id"]]
        assert line["error"] is None, line
        assert line["format"] == "opencode"
        source = line["source"]
        assert {k: source[k] for k in ("kind", "session", "where", "directory")} == {
            "kind": "opencode",
            "session": doc["info"]["id"],
            "where": store,
            "directory": "/Users/alex/repos/vfp/dark-factory",
        }
        assert source["summary"].startswith(f"OpenCode session {doc['info']['id']} from its")
        assert line["file"] == f"{root}:{doc['info']['id']}.json"
        transcript = Transcript.objects.get(pk=line["transcripts"][0])
        messages, calls, compactions = _expected(path)
        assert transcript.message_count == messages
        assert line["conversations"][0]["tool_calls"] == calls
        assert line["conversations"][0]["tool_results"] == calls
        assert len(transcript.to_conversation().compactions) == compactions
        upload = Upload.objects.get(pk=line["upload"])
        assert importers.detect(bytes(upload.data), upload.name) == "opencode"
    # Imported again: nothing new, each session a duplicate of its first import.
    again = _import(str(root))
    assert [line["duplicate"] for line in again] == [True, True]
    assert Upload.objects.count() == 2


def test_the_text_report_names_the_session_and_its_store(tmp_path: Path) -> None:
    db = write_database(tmp_path / "opencode.db", [export(SAMPLES[1])])
    out = io.StringIO()
    call_command("import_transcripts", str(db), stdout=out)
    text = out.getvalue()
    assert "imported " in text and ": opencode, 1 conversation(s)" in text
    assert "OpenCode session ses_39b7f9e89ffe7J0WzLzYrUt4eW from its database" in text
