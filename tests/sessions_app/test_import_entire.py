"""`import_transcripts REPO`: each session on an Entire checkpoints branch imported once,
with its checkpoints and the commits that name them."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from entire_branch import build_repo, git

from sessions_app.models import Transcript, Upload

pytestmark = pytest.mark.django_db


def _import(*args: str) -> list[dict[str, Any]]:
    out = io.StringIO()
    call_command("import_transcripts", *args, "--json", stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_repository_imports_each_session_once_with_its_commits(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    expected = build_repo(repo)
    lines = _import(str(repo))
    by_session = {line["entire"]["session"]: line for line in lines}
    assert sorted(by_session) == ["mis", "seg", "snap"]
    for session_id, line in by_session.items():
        assert line["error"] is None, line
        assert line["format"] == "claude-code"
        upload = Upload.objects.get(pk=line["upload"])
        assert bytes(upload.data) == expected[session_id]  # every byte, rebuilt once
    snap = by_session["snap"]["entire"]
    assert [c["id"] for c in snap["checkpoints"]] == ["aa00000000a1", "aa00000000a2"]
    assert snap["checkpoints"][1]["commit"] == git(repo, "rev-parse", "main")
    assert snap["checkpoints"][0]["commit"] == ""
    assert "Gemini CLI" in by_session["mis"]["entire"]["note"]
    # The 87-line session split over two checkpoints is one conversation, not two.
    seg = Transcript.objects.get(pk=by_session["seg"]["transcripts"][0])
    whole = _import_file(tmp_path, expected["seg"])
    assert seg.message_count == whole.message_count > 0


def _import_file(tmp_path: Path, data: bytes) -> Transcript:
    path = tmp_path / "whole" / "session.jsonl"
    path.parent.mkdir()
    path.write_bytes(data + b"\n")  # other bytes: not a duplicate of the rebuilt upload
    (line,) = _import(str(path))
    return Transcript.objects.get(pk=line["transcripts"][0])


def test_the_text_report_names_sessions_checkpoints_and_links(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    build_repo(repo)
    out = io.StringIO()
    call_command("import_transcripts", str(repo), stdout=out)
    text = out.getvalue()
    assert text.count("Entire session ") == 3
    assert "2 checkpoint(s), 1 linked to a commit" in text
    assert "aa/00000000a2/0/full.jsonl" in text
