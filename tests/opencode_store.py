"""OpenCode's own stores built from a real ``opencode export`` (tests/data/opencode): the
``storage/`` JSON files and the SQLite ``opencode.db``, laid out as OpenCode writes them
(``json-migration.ts``: ids in the file names; ``session.sql.ts``: ``data`` without ids)."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "opencode"
SAMPLES = (DATA / "nimble-pixel.json", DATA / "curious-sailor-compaction.json")


def export(path: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(path.read_bytes())
    return value


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False))


def write_storage(root: Path, exports: list[dict[str, Any]]) -> Path:
    """``root``/storage with each export's session, messages and parts (written newest
    first, so the reader has to order them itself). Returns the storage folder."""
    storage = root / "storage"
    for doc in exports:
        info = doc["info"]
        session_id = info["id"]
        _write(storage / "session" / info["projectID"] / f"{session_id}.json", info)
        for message in reversed(doc["messages"]):
            head = message["info"]
            _write(storage / "message" / session_id / f"{head['id']}.json", head)
            for part in reversed(message["parts"]):
                _write(storage / "part" / head["id"] / f"{part['id']}.json", part)
    return storage


_SCHEMA = """
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL);
CREATE TABLE session (
  id text PRIMARY KEY, project_id text NOT NULL, workspace_id text, parent_id text,
  slug text NOT NULL, directory text NOT NULL, path text, title text NOT NULL,
  version text NOT NULL, share_url text, summary_additions integer,
  summary_deletions integer, summary_files integer, summary_diffs text,
  cost real NOT NULL DEFAULT 0, tokens_input integer NOT NULL DEFAULT 0,
  revert text, permission text, time_created integer NOT NULL,
  time_updated integer NOT NULL, time_compacting integer, time_archived integer
);
CREATE TABLE message (
  id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL, data text NOT NULL
);
CREATE TABLE part (
  id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL
);
"""


def write_database(path: Path, exports: list[dict[str, Any]]) -> Path:
    """An ``opencode.db`` holding the exports (rows inserted newest first)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as db:
        db.executescript(_SCHEMA)
        for doc in exports:
            info = doc["info"]
            session_id = info["id"]
            time = info["time"]
            db.execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, title, "
                "version, time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (session_id, info["projectID"], info.get("parentID"), info["slug"],
                 info["directory"], info["title"], info["version"], time["created"],
                 time["updated"]),
            )  # fmt: skip
            for message in reversed(doc["messages"]):
                head = dict(message["info"])
                message_id = head.pop("id")
                head.pop("sessionID")
                created = head["time"]["created"]
                db.execute(
                    "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                    (message_id, session_id, created, created, json.dumps(head)),
                )
                for part in reversed(message["parts"]):
                    body = {k: v for k, v in part.items()
                            if k not in ("id", "sessionID", "messageID")}  # fmt: skip
                    db.execute(
                        "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                        (part["id"], message_id, session_id, created, created, json.dumps(body)),
                    )
        db.commit()
    return path
