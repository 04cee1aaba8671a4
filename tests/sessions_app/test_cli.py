from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from ctxlab.engine import importers
from sessions_app.management.commands.import_transcripts import iter_files
from sessions_app.models import Transcript, Upload

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
# Every transcript folder of the corpus (the top level holds only NOTICE/README/MANIFEST).
CORPUS_FOLDERS = sorted(str(p) for p in CORPUS.iterdir() if p.is_dir())


def run_json(*args: str) -> tuple[list[dict[str, Any]], int]:
    out = io.StringIO()
    code = 0
    try:
        call_command("import_transcripts", *args, "--json", stdout=out)
    except CommandError as exc:
        code = exc.returncode
    return [json.loads(line) for line in out.getvalue().splitlines()], code


def test_iter_files_recurses_and_skips_dotfiles(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "a" / "x.json").write_text("[]")
    (tmp_path / "a" / ".hidden.json").write_text("[]")
    (tmp_path / ".git" / "y.json").write_text("[]")
    (tmp_path / "z.json").write_text("[]")
    assert [p.relative_to(tmp_path).as_posix() for p in iter_files([str(tmp_path)])] == [
        "z.json",
        "a/x.json",
    ]


def test_import_transcripts_whole_corpus(user: Any) -> None:
    lines, code = run_json(*CORPUS_FOLDERS, "--user", user.username)

    files = list(iter_files(CORPUS_FOLDERS))
    assert [line["file"] for line in lines] == [str(p) for p in files]
    assert [(line["file"], line["error"]) for line in lines if line["error"]] == []
    assert code == 0
    # Totals agree with the engine's own parse of each file.
    expected_conversations = expected_messages = 0
    for path in files:
        parsed = importers.parse(path.read_bytes(), name=path.name)
        expected_conversations += len(parsed.conversations)
        expected_messages += sum(len(c.messages) for c in parsed.conversations)
    got_conversations = sum(len(line["conversations"]) for line in lines)
    got_messages = sum(c["messages"] for line in lines for c in line["conversations"])
    assert (got_conversations, got_messages) == (expected_conversations, expected_messages)
    # Identical files in the corpus are stored once (sha256), the rest once each.
    assert Upload.objects.count() == len({p.read_bytes() for p in files})
    assert Transcript.objects.filter(owner=user).count() <= expected_conversations


def test_import_transcripts_line_shape(user: Any) -> None:
    path = CORPUS / "openai-chat" / "taubench-gpt-4o-airline-task2-messages.json"
    lines, code = run_json(str(path), "--user", user.username)

    assert code == 0
    (line,) = lines
    assert {"file", "format", "conversations", "warnings", "error"} <= set(line)
    assert line["format"] == "openai-chat" and line["error"] is None
    (conversation,) = line["conversations"]
    assert set(conversation) == {
        "id", "transcript", "title", "messages", "tool_calls", "tool_results"
    }  # fmt: skip
    assert conversation["messages"] == 62
    # The stored id is the one a script passes on to ``replay --transcript ID``.
    stored = Transcript.objects.get(pk=conversation["transcript"])
    assert stored.upload_id == line["upload"] and stored.message_count == 62
    assert line["transcripts"] == [stored.pk]


def test_import_transcripts_failure_exit_code_and_located_error(user: Any, tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text('[{"role": "user", "content": "hi"}]')
    bad = tmp_path / "bad.json"
    bad.write_text('[\n{"role": "user",\n "content": "hi"')

    lines, code = run_json(str(good), str(bad), "--user", user.username)

    assert code == 1
    by_file = {Path(line["file"]).name: line for line in lines}
    assert by_file["good.json"]["error"] is None
    assert "bad.json" in by_file["bad.json"]["error"] and "line 3" in by_file["bad.json"]["error"]
    assert Upload.objects.get().name == "good.json"


def test_import_transcripts_forced_format(user: Any) -> None:
    path = CORPUS / "openai-chat" / "taubench-gpt-4o-airline-task2-messages.json"
    lines, code = run_json(str(path), "--format", "claude-code", "--user", user.username)
    assert code == 1 and lines[0]["error"]
    assert Upload.objects.count() == 0


def test_import_transcripts_unknown_user() -> None:
    with pytest.raises(CommandError, match="no user named"):
        call_command("import_transcripts", str(CORPUS), "--user", "nobody", stdout=io.StringIO())


def test_import_transcripts_creates_local_account_on_fresh_db(django_user_model: Any) -> None:
    path = CORPUS / "openai-chat" / "taubench-gpt-4o-airline-task2-messages.json"
    lines, code = run_json(str(path))
    assert code == 0
    assert Upload.objects.get().owner.username == "ctxlab"


def test_import_transcripts_plain_output(user: Any) -> None:
    out = io.StringIO()
    path = CORPUS / "openai-chat" / "taubench-gpt-4o-airline-task2-messages.json"
    call_command("import_transcripts", str(path), "--user", user.username, stdout=out)
    call_command("import_transcripts", str(path), "--user", user.username, stdout=out)
    text = out.getvalue()
    assert "imported" in text and "duplicate" in text and "62 messages" in text
    # Both lines name the one stored transcript (the duplicate points at the first import).
    transcript = Transcript.objects.get(owner=user)
    assert text.count(f"transcript id(s) {transcript.pk}\n") == 2
