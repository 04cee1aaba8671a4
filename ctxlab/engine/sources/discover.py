"""Where each agent keeps its sessions in a user's home, and what is there now.

``discover(home)`` looks in every place below (nothing else is read: no file is opened,
only listed) and returns, per agent, the sessions found there, newest first. Paths, as the
agents write them (sources: ``docs/import-formats.md`` and the modules of this package):

- Claude Code: ``~/.claude/projects/<slug>/<session>.jsonl`` (sub-agents'
  ``agent-<id>.jsonl`` beside them);
- Codex CLI: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` and
  ``archived_sessions/`` (``$CODEX_HOME`` defaults to ``~/.codex``; only that default is
  looked at here);
- Gemini CLI: ``~/.gemini/tmp/<project hash>/chats/session-*.json`` / ``.jsonl``;
- pi: ``~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl``;
- GitHub Copilot CLI: ``~/.copilot/session-state/<session id>/events.jsonl``;
- OpenCode: ``~/.local/share/opencode/`` (``storage/`` or ``opencode.db``: ``opencode.py``);
- OpenHands V1: ``~/.openhands/conversations/<id>/events/`` (``openhands.py``);
- Cline / Roo Code: ``<editor user dir>/globalStorage/<extension>/tasks/<id>/``
  (``cline.py``) for VS Code, Insiders, VSCodium, Cursor and Windsurf on Linux
  (``~/.config/<editor>/User``) and macOS (``~/Library/Application Support/<editor>/User``),
  and a remote server's ``~/.vscode-server/data/User``.

A session is either a file (imported as a file, its path kept: imported again when it has
grown, only what it gained is added) or a session of a place (``Found``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import cline, opencode, openhands
from .found import Found


@dataclass(frozen=True, slots=True)
class Session:
    where: str  # what the user finds on disk
    size: int  # bytes on disk (a folder: its files)
    modified: float  # newest modification time, seconds since the epoch
    path: Path | None = None  # a file imported as a file
    found: Found | None = None  # a session of a place (OpenCode, OpenHands, Cline/Roo)


@dataclass(slots=True)
class Agent:
    """One agent's sessions in this home, newest first."""

    key: str
    label: str
    roots: list[Path]  # the places looked at that exist
    sessions: list[Session] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(s.size for s in self.sessions)

    @property
    def newest(self) -> float | None:
        return max((s.modified for s in self.sessions), default=None)


EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")


def discover(home: Path) -> list[Agent]:
    """Every agent whose session folder exists under ``home`` (in the order of the list
    above), with the sessions found there newest first."""
    agents = []
    for key, label, roots, collect in _PLACES:
        existing = [home / r for r in roots(home) if (home / r).is_dir()]
        if not existing:
            continue
        sessions: list[Session] = []
        for root in existing:
            sessions.extend(collect(root))
        sessions.sort(key=lambda s: (-s.modified, s.where))
        agents.append(Agent(key, label, existing, sessions))
    return agents


def _files(pattern: Callable[[Path], bool]) -> Callable[[Path], Iterator[Session]]:
    def collect(root: Path) -> Iterator[Session]:
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(files):
                path = Path(folder) / name
                if pattern(path):
                    try:
                        stat = path.stat()
                    except OSError:
                        continue
                    yield Session(str(path), stat.st_size, stat.st_mtime, path=path)

    return collect


def folder_stat(folder: Path | None) -> tuple[int, float]:
    """Bytes and newest modification time of a file, or of the files under a folder."""
    if folder is None or not folder.exists():
        return 0, 0.0
    if folder.is_file():
        stat = folder.stat()
        return stat.st_size, stat.st_mtime
    size, newest = 0, 0.0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                stat = (Path(root) / name).stat()
            except OSError:
                continue
            size += stat.st_size
            newest = max(newest, stat.st_mtime)
    return size, newest


def _places(find: Callable[[Path], list[Found]]) -> Callable[[Path], Iterator[Session]]:
    def collect(root: Path) -> Iterator[Session]:
        for item in find(root):
            size, modified = folder_stat(item.covers or Path(item.where))
            yield Session(item.where, size, modified, found=item)

    return collect


def _opencode(root: Path) -> list[Found]:
    store = opencode.open_source(root)
    return [] if store is None else opencode.found(store, str(root))


def _editor_dirs(home: Path) -> list[str]:
    users = [f".config/{e}/User" for e in EDITORS]
    users += [f"Library/Application Support/{e}/User" for e in EDITORS]
    users += [".vscode-server/data/User", ".vscode-remote/data/User"]
    return [f"{u}/globalStorage/{ext}/tasks" for u in users for ext in cline.EXTENSIONS]


def _suffix(*suffixes: str, name: str = "", prefix: str = "") -> Callable[[Path], bool]:
    return lambda p: (
        p.name.endswith(suffixes)
        and (not name or p.name == name)
        and p.name.startswith(prefix)
        and not any(part.startswith(".") for part in p.parts[-2:])
    )


_PLACES: list[
    tuple[str, str, Callable[[Path], list[str]], Callable[[Path], Iterator[Session]]]
] = [
    ("claude-code", "Claude Code", lambda h: [".claude/projects"], _files(_suffix(".jsonl"))),
    ("codex", "Codex CLI", lambda h: [".codex/sessions", ".codex/archived_sessions"],
     _files(_suffix(".jsonl", prefix="rollout-"))),
    ("gemini-cli", "Gemini CLI", lambda h: [".gemini/tmp"],
     _files(lambda p: p.parent.name == "chats" and p.name.startswith("session-")
            and p.name.endswith((".json", ".jsonl")))),
    ("pi", "pi", lambda h: [".pi/agent/sessions"], _files(_suffix(".jsonl"))),
    ("copilot-cli", "GitHub Copilot CLI", lambda h: [".copilot/session-state"],
     _files(_suffix(".jsonl", name="events.jsonl"))),
    ("opencode", "OpenCode", lambda h: [".local/share/opencode"], _places(_opencode)),
    ("openhands", "OpenHands", lambda h: [".openhands/conversations"],
     _places(openhands.found)),
    ("cline", "Cline / Roo Code", _editor_dirs, _places(cline.found)),
]  # fmt: skip
