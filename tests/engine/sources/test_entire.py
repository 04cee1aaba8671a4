"""Entire checkpoints branches: sessions grouped across checkpoints and rebuilt once, read
from a git repository (no checkout), a ZIP of the branch's tree or an extracted folder."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from entire_branch import build_repo, build_tree

from ctxlab.engine import importers
from ctxlab.engine.sources import entire


def _by_id(tree: entire.Tree) -> dict[str, entire.EntireSession]:
    return {s.session_id: s for s in entire.sessions(tree)}


def test_snapshots_replace_and_segments_join(tmp_path: Path) -> None:
    expected = build_tree(tmp_path)
    found = _by_id(entire.FolderTree(tmp_path))
    assert sorted(found) == ["mis", "seg", "snap"]
    for session_id, data in expected.items():
        assert found[session_id].read() == data, session_id
    assert [c.checkpoint_id for c in found["snap"].checkpoints] == ["aa00000000a1", "aa00000000a2"]
    assert found["snap"].name == "snap.jsonl"  # named by its session, as agents name theirs
    assert found["snap"].checkpoints[1].transcript_start == 90


def test_the_bytes_decide_the_format_the_agent_is_a_hint(tmp_path: Path) -> None:
    build_tree(tmp_path)
    found = _by_id(entire.FolderTree(tmp_path))
    fmt, note = entire.format_of(found["mis"], found["mis"].read())
    assert fmt == "claude-code"
    assert "'Gemini CLI'" in note and "Claude Code" in note
    assert entire.format_of(found["snap"], found["snap"].read()) == ("claude-code", "")
    # No agent named (older metadata): detection alone.
    assert entire.format_of(found["seg"], found["seg"].read()) == ("claude-code", "")


def test_a_git_repository_is_read_without_checkout_and_commits_linked(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    expected = build_repo(repo)
    assert not (repo / "aa").exists()  # the branch is not checked out
    tree = entire.open_tree(repo)
    assert isinstance(tree, entire.GitTree)
    found = _by_id(tree)
    assert {k: v.read() for k, v in found.items()} == expected
    assert tree.commits() == {
        "aa00000000a2": entire._git(repo, "rev-parse", "main").decode().strip()
    }


def test_a_zip_of_the_branch_and_a_folder_are_recognised(tmp_path: Path) -> None:
    folder = tmp_path / "extracted"
    expected = build_tree(folder)
    archive = tmp_path / "checkpoints.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for file in folder.rglob("*"):
            if file.is_file():
                out.write(file, "checkpoints-v1/" + file.relative_to(folder).as_posix())
    for path in (archive, folder):
        tree = entire.open_tree(path)
        assert tree is not None
        assert {k: v.read() for k, v in _by_id(tree).items()} == expected


@pytest.mark.parametrize("kind", ["plain folder", "repo without the branch", "other zip"])
def test_places_without_checkpoints_are_not_taken(tmp_path: Path, kind: str) -> None:
    if kind == "plain folder":
        (tmp_path / "a.jsonl").write_text("{}\n")
        path = tmp_path
    elif kind == "repo without the branch":
        path = tmp_path / "repo"
        path.mkdir()
        entire._git(path, "init", "-q")
    else:
        path = tmp_path / "x.zip"
        with zipfile.ZipFile(path, "w") as out:
            out.writestr("session.jsonl", "{}\n")
    assert entire.open_tree(path) is None


def test_a_backfill_written_newest_first_keeps_the_most_complete_copy() -> None:
    # Entire's backfill wrote a session's checkpoints within seconds, the longest first.
    parts = [b"a\nb\nc\nd\n", b"a\nb\nc\n", b"a\nb\n"]
    assert entire.join_segments(parts) == b"a\nb\nc\nd\n"


def test_join_segments_keeps_every_byte() -> None:
    assert entire.join_segments([b"a\nb\n", b"a\nb\nc\n"]) == b"a\nb\nc\n"
    assert entire.join_segments([b"a\nb", b"c\n"]) == b"a\nb\nc\n"
    # The same first line but redacted differently later: the newer snapshot wins.
    assert entire.join_segments([b"a\nSECRET\n", b"a\nREDACTED\nd\n"]) == b"a\nREDACTED\nd\n"


def test_a_repository_s_blobs_are_read_by_one_git_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = build_repo(tmp_path / "repo")
    import subprocess

    started: list[list[str]] = []
    popen, run = subprocess.Popen, subprocess.run

    def counting_popen(args: list[str], *a: object, **k: object) -> object:
        started.append(list(args))
        return popen(args, *a, **k)  # type: ignore[call-overload]

    def counting_run(args: list[str], *a: object, **k: object) -> object:
        started.append(list(args))
        return run(args, *a, **k)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "Popen", counting_popen)
    monkeypatch.setattr(subprocess, "run", counting_run)
    tree = entire.GitTree.open(tmp_path / "repo")
    assert tree is not None
    found = _by_id(tree)
    for session_id, data in expected.items():
        assert found[session_id].read() == data, session_id
    reads = len([p for p in tree.paths() if p.endswith(("metadata.json", "full.jsonl"))])
    cat_files = [args for args in started if "cat-file" in args]
    assert reads > 5 and len(cat_files) == 1  # before: one git process per blob read
    assert "--batch" in cat_files[0]
    tree.close()
    assert found["snap"].read() == expected["snap"]  # read again after close: a new one
    assert len([args for args in started if "cat-file" in args]) == 2
    tree.close()


def test_the_format_is_told_from_a_bounded_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_tree(tmp_path)
    found = _by_id(entire.FolderTree(tmp_path))
    data = found["snap"].read() * 8  # a big transcript
    assert len(data) > importers.HEAD_BYTES
    seen: list[int] = []
    detect_head = importers.detect_head

    def recording(head: bytes, name: str = "", *, whole: bool) -> str | None:
        seen.append(len(head))
        return detect_head(head, name, whole=whole)

    monkeypatch.setattr(entire, "detect_head", recording)
    assert entire.format_of(found["snap"], data) == ("claude-code", "")
    assert seen == [importers.HEAD_BYTES]
