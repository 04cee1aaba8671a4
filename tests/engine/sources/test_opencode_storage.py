"""OpenCode's storage folder and opencode.db read as ``opencode export`` JSON: the same
conversation as the real export they were built from (tests/opencode_store.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from opencode_store import SAMPLES, export, write_database, write_storage

from ctxlab.engine import importers
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.sources import entire, opencode

DATA = Path(__file__).parents[2] / "data"


def _from_export(path: Path) -> Conversation:
    """The export itself, named as a session read from a store is (``<sessionID>.json``)."""
    name = f"{export(path)['info']['id']}.json"
    return importers.parse(path.read_bytes(), name=name).conversations[0]


def _same(a: Conversation, b: Conversation) -> None:
    assert a.id == b.id and a.title == b.title
    assert a.messages == b.messages
    assert a.compactions == b.compactions


def _read_all(source: opencode.Source | None) -> dict[str, Conversation]:
    assert source is not None
    found = {}
    for session in source.sessions():
        data = session.read()
        assert importers.detect(data, session.name) == "opencode"
        found[session.session_id] = importers.parse(data, name=session.name).conversations[0]
    return found


def test_a_storage_folder_reads_as_its_exports(tmp_path: Path) -> None:
    storage = write_storage(tmp_path / "opencode", [export(p) for p in SAMPLES])
    for root in (tmp_path / "opencode", storage):  # the data folder, or storage/ itself
        source = opencode.open_source(root)
        assert isinstance(source, opencode.Storage)
        found = _read_all(source)
        assert len(found) == 2
        for path in SAMPLES:
            _same(found[export(path)["info"]["id"]], _from_export(path))


def test_the_database_reads_as_its_exports_and_is_not_written(tmp_path: Path) -> None:
    db = write_database(tmp_path / "opencode" / "opencode.db", [export(p) for p in SAMPLES])
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    for root in (db, db.parent):  # the file, or the data folder holding it
        source = opencode.open_source(root)
        assert isinstance(source, opencode.Database)
        sessions = source.sessions()
        assert {s.where for s in sessions} == {"database"}
        found = _read_all(source)
        for path in SAMPLES:
            _same(found[export(path)["info"]["id"]], _from_export(path))
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert not list(db.parent.glob("*-wal"))


def test_a_data_folder_with_both_lists_each_session_once(tmp_path: Path) -> None:
    root = tmp_path / "opencode"
    write_database(root / "opencode.db", [export(SAMPLES[0])])
    write_storage(root, [export(p) for p in SAMPLES])  # the storage it was migrated from
    source = opencode.open_source(root)
    assert source is not None
    sessions = source.sessions()
    assert sorted(s.session_id for s in sessions) == sorted(
        export(p)["info"]["id"] for p in SAMPLES
    )
    where = {s.session_id: s.where for s in sessions}
    assert where[export(SAMPLES[0])["info"]["id"]] == "database"
    assert where[export(SAMPLES[1])["info"]["id"]] == "storage"


def test_a_session_never_used_is_not_listed(tmp_path: Path) -> None:
    """OpenCode creates a session before its first prompt: one left empty is no transcript
    (importing it would only fail)."""
    empty = {**export(SAMPLES[0]), "messages": []}
    empty["info"] = {**empty["info"], "id": "ses_empty"}
    exports = [export(SAMPLES[0]), empty]
    for source in (
        opencode.open_source(write_storage(tmp_path / "a", exports)),
        opencode.open_source(write_database(tmp_path / "b" / "opencode.db", exports)),
    ):
        assert source is not None
        assert [s.session_id for s in source.sessions()] == [export(SAMPLES[0])["info"]["id"]]


def test_other_places_are_not_opencode(tmp_path: Path) -> None:
    assert opencode.open_source(tmp_path) is None
    assert opencode.open_source(DATA / "pi") is None
    assert opencode.open_source(DATA / "opencode" / "nimble-pixel.json") is None
    other = tmp_path / "other.db"
    other.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    assert opencode.open_source(other) is None


def test_an_entire_checkpoint_of_an_opencode_session_is_opencode(tmp_path: Path) -> None:
    """Entire commits an OpenCode session as its export JSON in ``full.jsonl``."""
    folder = tmp_path / "ab" / "cdef012345" / "0"
    folder.mkdir(parents=True)
    (folder / "full.jsonl").write_bytes(SAMPLES[1].read_bytes())
    meta = {"session_id": "oc-1", "agent": "OpenCode", "created_at": "2026-02-16T00:00:00Z"}
    (folder / "metadata.json").write_text(json.dumps(meta))
    (session,) = entire.sessions(entire.FolderTree(tmp_path))
    assert session.format_hint == "opencode"
    assert entire.format_of(session, session.read()) == ("opencode", "")
    read = importers.parse(session.read(), name=session.name).conversations[0]
    _same(read, importers.parse(SAMPLES[1].read_bytes(), name=session.name).conversations[0])
    assert len(read.compactions) == 1
