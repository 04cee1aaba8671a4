"""A git repository holding an Entire checkpoints branch, built from the vendored real
checkpoints in tests/data/agreement (entireio/cli, MIT; see its README)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

AGREEMENT = Path(__file__).resolve().parent / "data" / "agreement" / "entireio-cli"
SNAPSHOT = AGREEMENT / "76" / "62d755ef9f" / "2"  # Claude Code 2.1.14, 160 lines
SEGMENTED = AGREEMENT / "4b" / "7d5121b42a" / "0"  # Claude Code 2.1.14, 87 lines
MISLABELLED = AGREEMENT / "ca" / "fca7ea73ac" / "0"  # Claude Code 2.1.5, labelled Gemini CLI here

_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **_ENV},
    )
    return result.stdout.strip()


def _checkpoint(
    root: Path, checkpoint: str, session: str, meta: dict[str, object], data: bytes
) -> None:
    folder = root / checkpoint[:2] / checkpoint[2:] / session
    folder.mkdir(parents=True)
    (folder / "metadata.json").write_text(json.dumps({"checkpoint_id": checkpoint, **meta}))
    (folder / "full.jsonl").write_bytes(data)
    (root / checkpoint[:2] / checkpoint[2:] / "metadata.json").write_text(
        json.dumps({"checkpoint_id": checkpoint, "sessions": [{"transcript": f"/{session}"}]})
    )


def build_tree(root: Path) -> dict[str, bytes]:
    """Checkpoint folders under ``root``: three sessions over five checkpoints. Returns each
    session id's whole transcript, as the branch should rebuild it."""
    snapshot = (SNAPSHOT / "full.jsonl").read_bytes()
    lines = snapshot.splitlines(keepends=True)
    first = b"".join(lines[:90])
    segmented = (SEGMENTED / "full.jsonl").read_bytes()
    seg_lines = segmented.splitlines(keepends=True)
    # Newer Entire: each checkpoint holds the whole transcript so far.
    _checkpoint(
        root,
        "aa00000000a1",
        "0",
        {"session_id": "snap", "agent": "Claude Code", "created_at": "2026-01-01T10:00:00Z"},
        first,
    )
    _checkpoint(
        root,
        "aa00000000a2",
        "0",
        {
            "session_id": "snap",
            "agent": "Claude Code",
            "created_at": "2026-01-01T11:00:00Z",
            "checkpoint_transcript_start": 90,
        },
        snapshot,
    )
    # Older Entire: each checkpoint holds only the lines since the previous one.
    _checkpoint(
        root,
        "bb00000000b1",
        "0",
        {"session_id": "seg", "created_at": "2026-01-02T10:00:00Z"},
        b"".join(seg_lines[:40]),
    )
    _checkpoint(
        root,
        "bb00000000b2",
        "1",
        {"session_id": "seg", "created_at": "2026-01-02T11:00:00Z"},
        b"".join(seg_lines[40:]),
    )
    # An early Entire labelled a Claude Code transcript "Gemini CLI".
    _checkpoint(
        root,
        "cc00000000c1",
        "0",
        {"session_id": "mis", "agent": "Gemini CLI", "created_at": "2026-01-03T10:00:00Z"},
        (MISLABELLED / "full.jsonl").read_bytes(),
    )
    return {"snap": snapshot, "seg": segmented, "mis": (MISLABELLED / "full.jsonl").read_bytes()}


def build_repo(repo: Path) -> dict[str, bytes]:
    """A repository with a code branch whose commit names checkpoint aa00000000a2, and the
    checkpoints on ``entire/checkpoints/v1`` (never checked out)."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "code.txt").write_text("work\n")
    git(repo, "add", "code.txt")
    git(repo, "commit", "-q", "-m", "Some work\n\nEntire-Checkpoint: aa00000000a2")
    tree = repo.parent / f"{repo.name}-tree"
    expected = build_tree(tree)
    git(repo, "checkout", "-q", "--orphan", "entire/checkpoints/v1")
    git(repo, "rm", "-rq", "--cached", ".")
    (repo / "code.txt").unlink()
    for item in tree.iterdir():
        shutil.move(str(item), repo / item.name)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Checkpoints")
    git(repo, "checkout", "-q", "main")
    return expected
