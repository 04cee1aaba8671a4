"""`import_transcripts REPO`: each session on an Entire checkpoints branch imported once,
with its checkpoints and the commits that name them."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from entire_branch import build_repo, build_tree, git

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
    by_session = {line["source"]["session"]: line for line in lines}
    assert sorted(by_session) == ["mis", "seg", "snap"]
    for session_id, line in by_session.items():
        assert line["error"] is None, line
        assert line["format"] == "claude-code"
        upload = Upload.objects.get(pk=line["upload"])
        assert bytes(upload.data) == expected[session_id]  # every byte, rebuilt once
    snap = by_session["snap"]["source"]
    assert [c["id"] for c in snap["checkpoints"]] == ["aa00000000a1", "aa00000000a2"]
    assert snap["checkpoints"][1]["commit"] == git(repo, "rev-parse", "main")
    assert snap["checkpoints"][0]["commit"] == ""
    assert "Gemini CLI" in by_session["mis"]["source"]["note"]
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
    assert "repo:snap.jsonl" in text


def test_a_zip_of_the_branch_uploaded_on_the_page_imports_each_session(
    tmp_path: Path, alice_client: Any
) -> None:
    folder = tmp_path / "tree"
    expected = build_tree(folder)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for file in folder.rglob("*"):
            if file.is_file():
                archive.write(file, file.relative_to(folder).as_posix())
    upload = SimpleUploadedFile("checkpoints.zip", buffer.getvalue())
    response = alice_client.post(
        reverse("upload-create") + "?format=json", {"files": [upload], "format": ""}
    )
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert sorted(r["source"]["session"] for r in results) == ["mis", "seg", "snap"]
    for result in results:
        assert (
            bytes(Upload.objects.get(pk=result["upload"]).data)
            == expected[result["source"]["session"]]
        )
    page = alice_client.post(
        reverse("upload-create"),
        {"files": [SimpleUploadedFile("checkpoints.zip", buffer.getvalue())], "format": ""},
        HTTP_HX_REQUEST="true",
    )
    text = page.content.decode()
    assert text.count("Entire session") == 3 and "already imported" in text
    assert "&#x27;Gemini CLI&#x27;" in text  # the mislabelled agent's note, escaped


def test_a_zip_without_checkpoints_is_still_refused_with_a_reason(alice_client: Any) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "hello")
    upload = SimpleUploadedFile("notes.zip", buffer.getvalue())
    response = alice_client.post(
        reverse("upload-create") + "?format=json", {"files": [upload], "format": ""}
    )
    (result,) = response.json()["results"]
    assert "ZIP" in result["error"]
