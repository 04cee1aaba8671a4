"""OpenCode sessions where OpenCode keeps them, read as ``opencode export`` JSON.

Two places, both under OpenCode's data folder (``~/.local/share/opencode/``):

- ``storage/`` (releases before the SQLite database, and what it migrates from):
  ``session/<projectID>/<sessionID>.json`` (the session's info),
  ``message/<sessionID>/<messageID>.json`` (a message's info) and
  ``part/<messageID>/<partID>.json`` (one part). As OpenCode's own migration
  (``packages/opencode/src/storage/json-migration.ts``) does, ids come from the file
  names; messages are ordered by ``time.created`` then id, parts by id.
- ``opencode.db`` (current releases), opened read-only with the stdlib ``sqlite3``: tables
  ``session`` (columns), ``message`` and ``part`` (``id``, ``session_id`` /
  ``message_id``, ``time_created``, ``data`` = the JSON object without its ids;
  ``packages/opencode/src/session/session.sql.ts``). Messages by ``time_created, id``,
  parts by ``id``, as ``MessageV2`` hydrates them.

Each session becomes the bytes ``opencode export <sessionID>`` would print
(``{"info", "messages": [{"info", "parts"}]}``, two-space indented), so the file
importer (``importers.opencode``) reads all three the same way.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .found import Found, Loaded

FORMAT = "opencode"
DB_NAME = "opencode.db"
STORAGE = "storage"


@dataclass(frozen=True, slots=True)
class OpenCodeSession:
    """One session found in a storage folder or database; ``read`` builds its export."""

    session_id: str
    title: str
    directory: str
    updated: int  # ms since the epoch, as OpenCode stores it
    where: str  # "storage" or "database"
    read: Callable[[], bytes]

    @property
    def name(self) -> str:
        """The upload name, as ``opencode export`` output would be saved."""
        return f"{self.session_id}.json"

    @property
    def format_hint(self) -> str:
        return FORMAT


def export_bytes(info: dict[str, Any], messages: list[dict[str, Any]]) -> bytes:
    """``JSON.stringify({info, messages}, null, 2)`` and a newline, as ``opencode export``."""
    document = {"info": info, "messages": messages}
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


class Source:
    """A place holding OpenCode sessions (``open_source``); ``sessions`` lists those with
    at least one message."""

    def sessions(self) -> list[OpenCodeSession]:
        raise NotImplementedError


def found(source: Source, root: str) -> list[Found]:
    """The store's sessions for the import, each read as its ``opencode export`` JSON."""
    return [
        Found(session.name, f"{root}:{session.name}", lambda s=session: _load(s))  # type: ignore[misc]
        for session in source.sessions()
    ]


def _load(session: OpenCodeSession) -> Loaded:
    facts = {
        "kind": "opencode",
        "session": session.session_id,
        "where": session.where,
        "directory": session.directory,
    }
    summary = (
        f"OpenCode session {session.session_id} from its {session.where} "
        f"({session.directory or 'no directory'})"
    )
    return Loaded(session.read(), FORMAT, facts, summary)


def open_source(path: Path) -> Source | None:
    """OpenCode's sessions at ``path``: its data folder (``storage/`` and/or
    ``opencode.db``), a ``storage`` folder itself, or an ``opencode.db`` file; None when
    ``path`` is none of them."""
    if path.is_file():
        return Database(path) if _is_opencode_db(path) else None
    if not path.is_dir():
        return None
    found: list[Source] = []
    database = path / DB_NAME
    if database.is_file() and _is_opencode_db(database):
        found.append(Database(database))
    for storage in (path / STORAGE, path):
        if _is_storage(storage):
            found.append(Storage(storage))
            break
    if not found:
        return None
    return found[0] if len(found) == 1 else Both(found)


def _is_storage(path: Path) -> bool:
    session = path / "session"
    return (
        session.is_dir()
        and (path / "message").is_dir()
        and any(p.suffix == ".json" for p in session.glob("*/*.json"))
    )


def _is_opencode_db(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            if file.read(16) != b"SQLite format 3\x00":
                return False
        with closing(_connect(path)) as db:
            names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except (OSError, sqlite3.Error):
        return False
    return {"session", "message", "part"} <= names


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def _json_file(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class Storage(Source):
    """The JSON files of ``storage/``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def sessions(self) -> list[OpenCodeSession]:
        found = []
        for file in sorted((self.root / "session").glob("*/*.json")):
            info = _json_file(file)
            if info is None or not any((self.root / "message" / file.stem).glob("*.json")):
                continue  # unreadable, or a session opened and never used: no transcript
            session_id = file.stem
            info = {**info, "id": session_id}
            info.setdefault("projectID", file.parent.name)
            time = _dict(info.get("time"))
            found.append(
                OpenCodeSession(
                    session_id=session_id,
                    title=str(info.get("title") or ""),
                    directory=str(info.get("directory") or ""),
                    updated=_int(time.get("updated")) or _int(time.get("created")),
                    where="storage",
                    read=self._reader(info),
                )
            )
        return found

    def _reader(self, info: dict[str, Any]) -> Callable[[], bytes]:
        def read() -> bytes:
            return export_bytes(info, list(self._messages(str(info["id"]))))

        return read

    def _messages(self, session_id: str) -> Iterator[dict[str, Any]]:
        rows = []
        for file in (self.root / "message" / session_id).glob("*.json"):
            data = _json_file(file)
            if data is None:
                continue
            info = {**data, "id": file.stem, "sessionID": session_id}
            time = _dict(info.get("time"))
            rows.append((_int(time.get("created")), file.stem, info))
        for _, message_id, info in sorted(rows, key=lambda r: (r[0], r[1])):
            parts = []
            for file in sorted((self.root / "part" / message_id).glob("*.json")):
                part = _json_file(file)
                if part is not None:
                    parts.append(
                        {**part, "id": file.stem, "sessionID": session_id, "messageID": message_id}
                    )
            yield {"info": info, "parts": parts}


class Database(Source):
    """``opencode.db``, read-only."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def sessions(self) -> list[OpenCodeSession]:
        with closing(_connect(self.path)) as db:
            cursor = db.execute(  # a session opened and never used is no transcript
                "SELECT * FROM session WHERE EXISTS (SELECT 1 FROM message "
                "WHERE message.session_id = session.id) ORDER BY time_created, id"
            )
            names = [d[0] for d in cursor.description]
            rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
        found = []
        for row in rows:
            info = _session_info(row, set(names))
            found.append(
                OpenCodeSession(
                    session_id=str(row["id"]),
                    title=str(info.get("title") or ""),
                    directory=str(info.get("directory") or ""),
                    updated=_int(info["time"].get("updated")),
                    where="database",
                    read=self._reader(info),
                )
            )
        return found

    def _reader(self, info: dict[str, Any]) -> Callable[[], bytes]:
        def read() -> bytes:
            session_id = str(info["id"])
            with closing(_connect(self.path)) as db:
                messages = db.execute(
                    "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id",
                    (session_id,),
                ).fetchall()
                parts = db.execute(
                    "SELECT id, message_id, data FROM part WHERE session_id = ? "
                    "ORDER BY message_id, id",
                    (session_id,),
                ).fetchall()
            by_message: dict[str, list[dict[str, Any]]] = {}
            for part_id, message_id, data in parts:
                part: dict[str, Any] = {**_object(data), "id": part_id}
                part.update(sessionID=session_id, messageID=message_id)
                by_message.setdefault(message_id, []).append(part)
            out = []
            for message_id, data in messages:
                head: dict[str, Any] = {**_object(data), "id": message_id}
                head["sessionID"] = session_id
                out.append({"info": head, "parts": by_message.get(message_id, [])})
            return export_bytes(info, out)

        return read


def _object(data: Any) -> dict[str, Any]:
    try:
        value = json.loads(data) if isinstance(data, str | bytes) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _session_info(row: dict[str, Any], columns: set[str]) -> dict[str, Any]:
    """The session's info as ``Session.fromRow`` builds it (the fields the export shows)."""
    info: dict[str, Any] = {
        "id": row["id"],
        "slug": row.get("slug") or "",
        "projectID": row.get("project_id") or "",
        "directory": row.get("directory") or "",
    }
    if row.get("parent_id"):
        info["parentID"] = row["parent_id"]
    info["title"] = row.get("title") or ""
    info["version"] = row.get("version") or ""
    time = {"created": _int(row.get("time_created")), "updated": _int(row.get("time_updated"))}
    if "time_compacting" in columns and row.get("time_compacting"):
        time["compacting"] = _int(row["time_compacting"])
    info["time"] = time
    return info


class Both(Source):
    """A data folder with a database and the storage it was migrated from: each session
    once, the database's copy first (OpenCode reads the database once it has one)."""

    def __init__(self, sources: list[Source]) -> None:
        self.sources = sources

    def sessions(self) -> list[OpenCodeSession]:
        seen: set[str] = set()
        found = []
        for source in self.sources:
            for session in source.sessions():
                if session.session_id not in seen:
                    seen.add(session.session_id)
                    found.append(session)
        return found
