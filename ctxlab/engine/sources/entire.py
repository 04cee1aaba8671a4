"""Sessions the Entire CLI keeps on a repository's ``entire/checkpoints/v1`` branch.

Each commit of an agent's work gets a checkpoint: ``<2hex>/<10hex>/`` with one folder per
session that took part (``<n>/metadata.json`` naming the agent, model and session id, and
``<n>/full.jsonl``, the agent's own transcript). A session that spans several commits is in
several checkpoints, and Entire has stored it two ways: newer versions keep the whole
transcript so far at each checkpoint (each one a prefix of the next), older ones only the
lines since the previous checkpoint. ``sessions`` groups a branch's checkpoints by session
and rebuilds each transcript once, keeping every byte: the last snapshot, or the segments
joined in order.

The branch is read where it lives: a git repository (no checkout: ``git ls-tree`` and
``git cat-file``), a ZIP of the branch's tree, or a folder it was extracted to.
"""

from __future__ import annotations

import json
import re
import subprocess
import weakref
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from ..core.model import TranscriptError
from ..importers import HEAD_BYTES, IMPORTERS, detect_head
from .found import Found, Loaded

BRANCH = "entire/checkpoints/v1"

# Entire's agent names -> our importer formats. Only a hint: early Entire versions labelled
# Claude Code transcripts "Agent" or even "Gemini CLI", so the bytes decide (``format_of``).
AGENT_FORMATS = {
    "Claude Code": "claude-code",
    "Codex": "codex-rollout",
    "Gemini CLI": "gemini-cli",
    "OpenCode": "opencode",  # full.jsonl holds the `opencode export` JSON, despite its name
    "pi": "pi-session",
}

# <2hex>/<10hex>/[<n>/]metadata.json, under any leading folder (a ZIP's top folder).
_SESSION_META = re.compile(r"(?:^|/)([0-9a-f]{2})/([0-9a-f]{10})/(?:(\d+)/)?metadata\.json$")


_CHECKPOINT_FOLDER = re.compile(r"(?:^|/)[0-9a-f]{2}/[0-9a-f]{10}/")


def in_checkpoint(path: str) -> bool:
    """Whether ``path`` (in a branch's tree) lies inside a checkpoint's folder."""
    return _CHECKPOINT_FOLDER.search(path) is not None


class Tree(Protocol):
    """A checkpoints branch's files: their paths, and each one's bytes on demand."""

    def paths(self) -> Iterable[str]: ...

    def read(self, path: str) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One session's part in one checkpoint (one commit of the agent's work)."""

    checkpoint_id: str
    folder: str  # the session's folder in the tree, e.g. "03/0f3d39319d/1"
    created_at: str
    agent: str
    model: str
    branch: str  # the code branch the commit was made on
    transcript_start: int | None  # checkpoint_transcript_start: first line of this turn
    has_transcript: bool


@dataclass(frozen=True, slots=True)
class EntireSession:
    """One agent session rebuilt from the checkpoints it appears in (oldest first)."""

    session_id: str
    agent: str
    checkpoints: tuple[Checkpoint, ...]
    read: Callable[[], bytes]  # the whole transcript, read when asked (sessions are big)

    @property
    def name(self) -> str:
        """The upload name: the session id, as agents name their own session files (a
        checkpoint's folder when the metadata names no session)."""
        if "/" in self.session_id:
            return f"{self.session_id}/full.jsonl"
        return f"{self.session_id}.jsonl"

    @property
    def format_hint(self) -> str | None:
        return AGENT_FORMATS.get(self.agent)


def sessions(tree: Tree) -> list[EntireSession]:
    """Every session on the branch with at least one transcript, oldest first."""
    paths = set(tree.paths())
    metas = [(path, m) for path in sorted(paths) if (m := _SESSION_META.search(path))]
    # A checkpoint folder with numbered session folders: its own metadata.json sums them up.
    with_sessions = {path[: m.start(3)] for path, m in metas if m.group(3) is not None}
    groups: dict[str, list[Checkpoint]] = {}
    for path, match in metas:
        if match.group(3) is None and path.removesuffix("metadata.json") in with_sessions:
            continue
        meta = _metadata(tree.read(path)) or {}  # unreadable: the transcript still counts
        folder = path.rsplit("/", 1)[0]
        checkpoint = Checkpoint(
            checkpoint_id=str(meta.get("checkpoint_id") or match.group(1) + match.group(2)),
            folder=folder,
            created_at=str(meta.get("created_at") or ""),
            agent=str(meta.get("agent") or ""),
            model=str(meta.get("model") or ""),
            branch=str(meta.get("branch") or ""),
            transcript_start=_int_or_none(meta.get("checkpoint_transcript_start")),
            has_transcript=f"{folder}/full.jsonl" in paths,
        )
        session_id = str(meta.get("session_id") or folder)
        groups.setdefault(session_id, []).append(checkpoint)
    found = []
    for session_id, checkpoints in groups.items():
        ordered = tuple(sorted(checkpoints, key=lambda c: (c.created_at, c.folder)))
        if not any(c.has_transcript for c in ordered):
            continue
        agents = [c.agent for c in ordered if c.agent]
        found.append(
            EntireSession(
                session_id=session_id,
                agent=agents[-1] if agents else "",
                checkpoints=ordered,
                read=_reader(tree, ordered),
            )
        )
    return sorted(found, key=lambda s: (s.checkpoints[0].created_at, s.session_id))


def _metadata(data: bytes) -> dict[str, object] | None:
    try:
        meta = json.loads(data)
    except ValueError:
        return None
    return meta if isinstance(meta, dict) else None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _reader(tree: Tree, checkpoints: tuple[Checkpoint, ...]) -> Callable[[], bytes]:
    def read() -> bytes:
        return join_segments(
            tree.read(f"{c.folder}/full.jsonl") for c in checkpoints if c.has_transcript
        )

    return read


def join_segments(parts: Iterable[bytes]) -> bytes:
    """One transcript from a session's checkpoint files, oldest first. Files that begin as
    the first one begins (the same first line) are copies of the whole transcript at some
    point: the longest is kept (Entire re-redacts, so copies can differ by a few bytes, and
    a backfill writes them newest first, so the last written is not the most complete).
    Any other file carries on from them: older Entire versions stored only the lines since
    the previous checkpoint, and those are joined in order."""
    parts = list(parts)
    if not parts:
        return b""
    head = _first_line(parts[0])
    whole = max((p for p in parts if _first_line(p) == head), key=len)
    for part in parts:
        if _first_line(part) != head:
            whole += part if whole.endswith(b"\n") else b"\n" + part
    return whole


def _first_line(data: bytes) -> bytes:
    return data.split(b"\n", 1)[0]


def format_of(session: EntireSession, data: bytes) -> tuple[str | None, str]:
    """The importer for a session's transcript, and a note when the metadata's agent and the
    bytes disagree. The bytes decide; the agent is the fallback when they cannot tell."""
    hint = session.format_hint
    try:  # the head says as much as the whole (``detect_head``), without scanning it
        found = detect_head(data[:HEAD_BYTES], session.name, whole=len(data) <= HEAD_BYTES)
    except TranscriptError:
        return hint, ""  # the importer (or detection again) says what is wrong with it
    if found is None:
        return hint, ""
    if hint and found != hint:
        label = IMPORTERS[found].LABEL
        return found, f"metadata.json names {session.agent!r}, but this is a {label}: read as one"
    return found, ""


def found(tree: Tree, root: str) -> list[Found]:
    """The branch's sessions for the import, with their checkpoints and the commits that
    name them (a git repository's code branches: ``Entire-Checkpoint:`` trailers)."""
    commits = tree.commits() if isinstance(tree, GitTree) else {}
    return [
        Found(session.name, f"{root}:{session.name}", lambda s=session: _load(s, commits))  # type: ignore[misc]
        for session in sessions(tree)
    ]


def _load(session: EntireSession, commits: dict[str, str]) -> Loaded:
    data = session.read()
    fmt, note = format_of(session, data)
    checkpoints = [
        {
            "id": c.checkpoint_id,
            "created_at": c.created_at,
            "folder": c.folder,
            "branch": c.branch,
            "commit": commits.get(c.checkpoint_id, ""),
        }
        for c in session.checkpoints
    ]
    linked = sum(1 for c in checkpoints if c["commit"])
    facts = {
        "kind": "entire",
        "session": session.session_id,
        "agent": session.agent,
        "checkpoints": checkpoints,
        "linked": linked,
    }
    summary = (
        f"Entire session {session.session_id} ({session.agent or 'agent not named'}): "
        f"{len(checkpoints)} checkpoint(s), {linked} linked to a commit"
    )
    return Loaded(data, fmt, facts, summary, note)


# Where the branch lives


def open_tree(path: Path) -> Tree | None:
    """The checkpoints branch at ``path`` (a git repository that has it, a ZIP of its tree
    or a folder it was extracted to), or None when ``path`` holds none."""
    if path.is_dir():
        if _is_git_repository(path):
            return GitTree.open(path)
        folder = FolderTree(path)
        return folder if _looks_like_checkpoints(folder.paths()) else None
    if path.suffix.lower() == ".zip":
        return open_zip(path)
    return None


def _looks_like_checkpoints(paths: Iterable[str]) -> bool:
    return any(_SESSION_META.search(p) for p in paths)


def _is_git_repository(path: Path) -> bool:
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


def _git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    result = subprocess.run(
        ["git", "-C", str(repo), *args], input=data, capture_output=True, check=False
    )
    if result.returncode != 0:
        raise OSError(
            f"git {args[0]} failed in {repo}: {result.stderr.decode(errors='replace').strip()}"
        )
    return result.stdout


class _CatFile:
    """One ``git cat-file --batch`` process for every blob a tree reads (started on the
    first read, ended by ``close`` or when the tree is collected), not a process per blob:
    a branch of a thousand checkpoints is a thousand metadata files."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._process: subprocess.Popen[bytes] | None = None

    def read(self, sha: str) -> bytes:
        process = self._process
        if process is None or process.poll() is not None:
            process = self._process = subprocess.Popen(
                ["git", "-C", str(self.repo), "cat-file", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            weakref.finalize(self, _stop, process)
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(sha.encode() + b"\n")
        process.stdin.flush()
        header = process.stdout.readline().split()
        if len(header) != 3 or header[1] != b"blob":
            raise OSError(f"git cat-file could not read blob {sha} in {self.repo}")
        size = int(header[2])
        data = process.stdout.read(size)
        process.stdout.read(1)  # the newline after each object
        if len(data) != size:
            raise OSError(f"git cat-file ended inside blob {sha} in {self.repo}")
        return data

    def close(self) -> None:
        if self._process is not None:
            _stop(self._process)
            self._process = None


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        if process.stdin is not None:
            process.stdin.close()  # cat-file ends at the end of its input
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()


class FolderTree:
    def __init__(self, root: Path) -> None:
        self.root = root

    def paths(self) -> Iterator[str]:
        for file in self.root.rglob("*"):
            if file.is_file():
                yield file.relative_to(self.root).as_posix()

    def read(self, path: str) -> bytes:
        return (self.root / path).read_bytes()


class ZipTree:
    """The branch's tree in a ZIP archive (a path, or an open file such as an upload)."""

    def __init__(self, source: Path | BinaryIO) -> None:
        self._zip = zipfile.ZipFile(source)
        self._names = [n for n in self._zip.namelist() if not n.endswith("/")]

    def paths(self) -> list[str]:
        return self._names

    def read(self, path: str) -> bytes:
        return self._zip.read(path)


def open_zip(source: Path | BinaryIO) -> ZipTree | None:
    """A ZIP holding checkpoints as a tree, or None (not a ZIP, or no checkpoints in it)."""
    try:
        archive = ZipTree(source)
    except (zipfile.BadZipFile, OSError):
        return None
    return archive if _looks_like_checkpoints(archive.paths()) else None


class GitTree:
    """The branch in a git repository, read from its objects (no checkout)."""

    def __init__(self, repo: Path, ref: str, blobs: dict[str, str]) -> None:
        self.repo, self.ref, self._blobs = repo, ref, blobs
        self._cat = _CatFile(repo)

    @classmethod
    def open(cls, repo: Path) -> GitTree | None:
        ref = branch_ref(repo)
        if ref is None:
            return None
        listing = _git(repo, "ls-tree", "-r", "-z", ref)
        blobs = {}
        for entry in listing.split(b"\0"):
            if not entry:
                continue
            head, _, path = entry.partition(b"\t")
            _mode, kind, sha = head.split()
            if kind == b"blob":
                blobs[path.decode()] = sha.decode()
        return cls(repo, ref, blobs)

    def paths(self) -> list[str]:
        return list(self._blobs)

    def read(self, path: str) -> bytes:
        return self._cat.read(self._blobs[path])

    def close(self) -> None:
        self._cat.close()

    def commits(self) -> dict[str, str]:
        """Checkpoint id -> the code commit that names it (``Entire-Checkpoint:`` trailer)."""
        log = _git(
            self.repo,
            "log",
            "--all",
            "--format=%H%x00%(trailers:key=Entire-Checkpoint,valueonly,separator=%x2C)%x1e",
        )
        found: dict[str, str] = {}
        for record in log.decode(errors="replace").split("\x1e"):
            sha, _, ids = record.strip().partition("\0")
            for checkpoint_id in filter(None, (i.strip() for i in ids.split(","))):
                found.setdefault(checkpoint_id, sha)
        return found


def branch_ref(repo: Path) -> str | None:
    """The checkpoints branch in ``repo``: local first, else a remote-tracking copy."""
    refs = _git(repo, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes")
    names = refs.decode().split()
    for name in names:
        if name == f"refs/heads/{BRANCH}":
            return name
    remote = [n for n in names if n.startswith("refs/remotes/") and n.endswith(f"/{BRANCH}")]
    return remote[0] if remote else None
