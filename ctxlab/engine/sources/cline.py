"""Cline and Roo Code tasks where the editor keeps them: ``<VS Code user dir>/globalStorage/
<extension>/tasks/<task id>/`` holding ``api_conversation_history.json``,
``ui_messages.json`` and ``task_metadata.json`` (Cline: ``saoudrizwan.claude-dev``; Roo
Code: ``rooveterinaryinc.roo-cline``; the user dir is ``~/.config/Code/User`` on Linux,
``~/Library/Application Support/Code/User`` on macOS, and the same under VS Code's
variants: Insiders, VSCodium, Cursor, Windsurf, a remote server's ``data/User``).

``found(path)`` finds every task folder at or under ``path`` (a task folder, a ``tasks``
folder, the extension's storage or any folder above); each is one session whose bytes are
the three files' JSON joined into one bundle (``importers/cline.py``), what the upload
keeps.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..core.model import TranscriptError
from .found import Found, Loaded

FORMAT = "cline"
HISTORY = "api_conversation_history.json"
FILES = (HISTORY, "ui_messages.json", "task_metadata.json")
# extension folder name (lower case) -> agent
EXTENSIONS = {"saoudrizwan.claude-dev": "cline", "rooveterinaryinc.roo-cline": "roo"}


def is_task_folder(path: Path) -> bool:
    return path.is_dir() and (path / HISTORY).is_file()


def agent_of(folder: Path) -> str:
    """``cline`` or ``roo`` from the extension folder above the task ("" when unknown)."""
    for parent in folder.parents:
        agent = EXTENSIONS.get(parent.name.lower())
        if agent:
            return agent
    return ""


def tasks(path: Path) -> list[Path]:
    """Every task folder at or under ``path`` (dotted folders included: a remote server's
    ``.vscode-server``), sorted by path."""
    if not path.is_dir():
        return []
    if is_task_folder(path):
        return [path]
    found: list[Path] = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        if HISTORY in files and Path(root) != path:
            found.append(Path(root))
            dirs.clear()
    return found


def bundle(folder: Path) -> bytes:
    """The task's files as one JSON object (each file's JSON as it is; a missing
    ``ui_messages.json`` or ``task_metadata.json`` is left out)."""
    document: dict[str, Any] = {
        "cline_task": {
            "id": folder.name,
            "agent": agent_of(folder),
            "files": [name for name in FILES if (folder / name).is_file()],
        }
    }
    for name in FILES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            document[name.removesuffix(".json")] = json.loads(path.read_bytes())
        except (OSError, ValueError) as exc:
            raise TranscriptError(
                f"not readable JSON: {exc}", file=str(path), expected=f"the task's {name}"
            ) from exc
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()


def found(path: Path) -> list[Found]:
    """Each task folder at or under ``path``, as one session."""
    return [_found(folder) for folder in tasks(path)]


def _found(folder: Path) -> Found:
    return Found(f"{folder.name}.cline-task.json", str(folder), lambda: _load(folder), folder)


def _load(folder: Path) -> Loaded:
    agent = agent_of(folder) or "cline"
    label = "Roo Code" if agent == "roo" else "Cline"
    facts = {"kind": agent, "task": folder.name}
    return Loaded(bundle(folder), FORMAT, facts, f"{label} task {folder.name}")
