"""Import keeps the conversation (issue 12) and says what it bent (issue 15), through the
real import service, the upload page, the transcript page, their JSON twins and the CLI."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from sessions_app import services
from sessions_app.models import Transcript
from tests.engine.importers.claude_shapes import branch_trap_session, rewind_session

pytestmark = pytest.mark.django_db


def test_branch_trap_upload_keeps_the_main_thread_and_says_what_was_set_aside(
    alice: Any, alice_client: Client
) -> None:
    duplicate_keys = b'[{"role": "user", "content": "a", "content": "b"}]'
    files = [
        SimpleUploadedFile("trap.jsonl", branch_trap_session()),
        SimpleUploadedFile("dup.json", duplicate_keys),
    ]
    response = alice_client.post(
        reverse("upload-create"), {"files": files, "format": ""}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert html.count("5 lines set aside (first at line 336)") == 1  # said once, plainly
    assert "the model never saw them" in html
    assert "<strong>duplicate JSON key</strong>" in html  # other warnings by catalogue label
    main = Transcript.objects.get(owner=alice, parent=None, upload__name="trap.jsonl")
    assert (main.message_count, main.title) == (224, "Refactor the parser to stream lines")
    agent = Transcript.objects.get(owner=alice, parent=main)
    assert agent.title == "Find every caller of parse()"

    listing = alice_client.get(reverse("transcript-list") + "?format=json").json()
    (upload,) = [u for u in listing["uploads"] if u["name"] == "trap.jsonl"]
    (warning,) = upload["warnings"]
    assert (warning["code"], warning["count"], warning["label"]) == (
        "side-lines-set-aside",
        5,
        "side lines set aside",
    )
    assert upload["set_aside"][0].startswith("5 lines set aside")
    page = alice_client.get(reverse("upload-detail", args=[upload["id"]])).content.decode()
    assert "5 lines set aside" in page


def test_rewound_branch_is_listed_as_an_alternate_with_its_size(
    alice: Any, alice_client: Client
) -> None:
    outcome = services.upload_import(owner=alice, name="rewind.jsonl", data=rewind_session())
    assert outcome.ok and [c.messages for c in outcome.conversations] == [2, 1]
    assert outcome.set_aside == [
        "1 line moved to an alternate conversation (first at line 2): lines of a rewound "
        "or edited branch: imported as their own conversation, listed as an alternate of "
        "the thread they fork from."
    ]
    main = Transcript.objects.get(owner=alice, position=0)
    alternate = Transcript.objects.get(owner=alice, position=1)
    assert alternate.parent == main

    page = alice_client.get(main.get_absolute_url()).content.decode()
    assert 'id="alternates"' in page and alternate.get_absolute_url() in page
    assert "1 message, forks after line 1" in page
    twin = alice_client.get(main.get_absolute_url() + "?format=json").json()["transcript"]
    assert twin["alternates"] == [
        {
            "id": alternate.pk,
            "title": alternate.title,
            "messages": 1,
            "forks_after_line": 1,
            "url": alternate.get_absolute_url(),
        }
    ]
    assert twin["forks_after_line"] is None
    alt_page = alice_client.get(alternate.get_absolute_url()).content.decode()
    assert 'id="alternate-of"' in alt_page and main.get_absolute_url() in alt_page
    alt_twin = alice_client.get(alternate.get_absolute_url() + "?format=json").json()
    assert alt_twin["transcript"]["forks_after_line"] == 1


def _cli(*args: str) -> tuple[str, str, int]:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        call_command("import_transcripts", *args, stdout=out, stderr=err)
    except CommandError as exc:
        code = exc.returncode
    return out.getvalue(), err.getvalue(), code


def test_cli_says_what_was_set_aside(alice: Any, tmp_path: Path) -> None:
    path = tmp_path / "trap.jsonl"
    path.write_bytes(branch_trap_session())
    out, _, code = _cli(str(path), "--user", "alice")
    assert code == 0
    assert "5 lines set aside (first at line 336)" in out
    assert "warning x5: side lines set aside:" in out
    out, _, _ = _cli(str(path), "--user", "alice", "--json")  # a duplicate now: same report
    line = json.loads(out)
    assert line["duplicate"] and line["set_aside"][0].startswith("5 lines set aside")
    assert line["warnings"][0]["meaning"].startswith("local-command, meta or empty lines")


def test_cli_huge_integer_is_a_located_error_without_traceback(
    alice: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "huge.jsonl"
    head = b'{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","n":'
    path.write_bytes(head + b"1" * 5000 + b"}\n")
    out, err, code = _cli(str(path), "--user", "alice")
    assert code == 1
    assert "line 1" in out and f"byte {len(head)}" in out and "5,000 digits" in out
    assert "Traceback" not in out + err + caplog.text
    assert not Transcript.objects.exists()


def test_nul_characters_are_stored_safely_and_the_original_bytes_kept(alice: Any) -> None:
    data = json.dumps(
        [
            {"role": "user", "content": "before\u0000after"},
            {"role": "assistant", "content": "ok", "name": "bot\u0000"},
        ]
    ).encode()
    outcome = services.upload_import(owner=alice, name="nul.json", data=data)
    assert outcome.ok and outcome.upload is not None
    (warning,) = outcome.to_json()["warnings"]
    assert (warning["code"], warning["count"], warning["label"]) == (
        "nul-character",
        2,
        "NUL character",
    )
    transcript = Transcript.objects.get(owner=alice)
    stored = [m.blocks for m in transcript.messages.order_by("index")]
    assert "\x00" not in json.dumps(stored, ensure_ascii=False)
    assert stored[0][0]["text"] == "before\u2400after"
    assert bytes(type(outcome.upload).objects.get(pk=outcome.upload.pk).data) == data
