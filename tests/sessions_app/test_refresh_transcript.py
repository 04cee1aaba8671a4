"""A session file that grows: what it gained is appended to the same transcript
(``services.refresh_transcript`` / ``import_path``), every byte kept, counts and caches
recomputed, and each growth announced to ``transcript-<pk>`` (``transcript.grown``)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.management import call_command

from ctxlab.engine.core import codec
from sessions_app import live, services
from sessions_app.models import Message, MessageFacts, Transcript, Upload

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"

pytestmark = pytest.mark.django_db

SESSION = CORPUS / "claude-code" / "ccviewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
CODEX = sorted((CORPUS / "codex-rollout").glob("*.jsonl"))[0]


def _rows(transcript: Transcript) -> list[tuple[Any, ...]]:
    return list(
        Message.objects.filter(transcript=transcript)
        .order_by("index")
        .values_list("index", "role", "blocks", "reference_tokens", "source_line", "source_file")
    )


def _transcript(outcome: services.ImportOutcome) -> Transcript:
    assert outcome.ok, outcome.error
    return Transcript.objects.get(pk=outcome.conversations[0].transcript_id or 0)


def _fresh(owner: Any, data: bytes, name: str) -> Transcript:
    return _transcript(services.upload_import(owner=owner, name=name, data=data))


@pytest.mark.parametrize("sample", [SESSION, CODEX], ids=["claude-code", "codex"])
def test_a_grown_file_is_appended_to_the_same_transcript(
    alice: Any, bob: Any, tmp_path: Path, sample: Path, django_capture_on_commit_callbacks: Any
) -> None:
    lines = sample.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    path = tmp_path / sample.name
    path.write_bytes(b"".join(lines[:half]))
    first, refreshed = services.import_path(owner=alice, path=path)
    assert first.ok and refreshed is None
    transcript = _transcript(first)
    before = transcript.message_count
    revision = transcript.revision

    # The agent appends the rest; its last line is still being written.
    whole = b"".join(lines)
    cut_at = len(whole) - len(lines[-1]) // 2
    path.write_bytes(whole[:cut_at])
    with django_capture_on_commit_callbacks(execute=True):
        outcome = services.refresh_transcript(transcript)
    transcript.refresh_from_db()
    complete = b"".join(lines[:-1])
    expected = _fresh(bob, complete, sample.name)  # the same bytes imported at once
    assert outcome.reason == ""
    assert outcome.transcript_id == transcript.pk
    assert outcome.new_messages == expected.message_count - before > 0
    assert outcome.messages == transcript.message_count == expected.message_count
    upload = Upload.objects.get(pk=transcript.upload_id)
    assert bytes(upload.data) == complete  # every complete byte, none of the cut line
    assert upload.size == len(complete)
    assert upload.message_count == expected.upload.message_count
    assert upload.conversation_count == expected.upload.conversation_count
    assert transcript.revision != revision
    for name in ("tool_call_count", "tool_result_count", "reference_tokens", "messages_peak",
                 "system_tokens", "reported_peak_context", "compactions", "source_file"):  # fmt: skip
        assert getattr(transcript, name) == getattr(expected, name), name
    assert [r[1:] for r in _rows(transcript)] == [r[1:] for r in _rows(expected)]
    assert transcript.to_conversation().messages == expected.to_conversation().messages
    chunks = MessageFacts.objects.filter(transcript=transcript).order_by("start")
    assert [c.start for c in chunks][0] == 0 and sum(c.count for c in chunks) == before + (
        outcome.new_messages
    )

    # The cut line completes: appended again, same transcript, the upload's bytes are the file's.
    path.write_bytes(whole)
    again, refreshed = services.import_path(owner=alice, path=path)
    assert again.upload is not None and again.upload.pk == upload.pk
    assert refreshed is not None
    assert Upload.objects.filter(owner=alice).count() == 1
    assert bytes(Upload.objects.get(pk=upload.pk).data) == whole
    full = _fresh(bob, whole, "whole-" + sample.name)
    transcript.refresh_from_db()
    assert transcript.message_count == full.message_count
    assert codec.blocks_to_list(transcript.to_conversation().messages[-1].blocks) == (
        codec.blocks_to_list(full.to_conversation().messages[-1].blocks)
    )


def test_growth_is_announced_to_the_transcript_group(
    alice: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    lines = CODEX.read_bytes().splitlines(keepends=True)
    path = tmp_path / CODEX.name
    path.write_bytes(b"".join(lines[:100]))
    outcome, _ = services.import_path(owner=alice, path=path)
    transcript = _transcript(outcome)
    layer = get_channel_layer()
    assert layer is not None
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(f"transcript-{transcript.pk}", channel)
    path.write_bytes(b"".join(lines[:200]))
    with django_capture_on_commit_callbacks(execute=True):
        grown = services.refresh_transcript(transcript)
    assert grown.new_messages > 0
    message = async_to_sync(layer.receive)(channel)
    assert message == {"type": "transcript.grown", "messages": grown.messages}
    assert message["messages"] == Transcript.objects.get(pk=transcript.pk).message_count
    assert live.transcript_group_name(transcript.pk) == f"transcript-{transcript.pk}"
    async_to_sync(layer.group_discard)(f"transcript-{transcript.pk}", channel)


def test_a_file_changed_before_its_end_is_not_appended(alice: Any, tmp_path: Path) -> None:
    lines = SESSION.read_bytes().splitlines(keepends=True)
    path = tmp_path / SESSION.name
    path.write_bytes(b"".join(lines[:100]))
    outcome, _ = services.import_path(owner=alice, path=path)
    transcript = _transcript(outcome)
    count, revision = transcript.message_count, transcript.revision
    path.write_bytes(b"".join(lines[1:200]))  # its first line is gone
    refreshed = services.refresh_transcript(transcript)
    assert refreshed.new_messages == 0 and "changed before its end" in refreshed.reason
    transcript.refresh_from_db()
    assert (transcript.message_count, transcript.revision) == (count, revision)
    unchanged = services.refresh_transcript(transcript)  # nothing new: nothing rewritten
    assert unchanged.new_messages == 0


def test_the_stale_original_survival_is_dropped(alice: Any, tmp_path: Path) -> None:
    from replay_app.models import OriginalSurvival

    lines = SESSION.read_bytes().splitlines(keepends=True)
    path = tmp_path / SESSION.name
    path.write_bytes(b"".join(lines[:100]))
    outcome, _ = services.import_path(owner=alice, path=path)
    transcript = _transcript(outcome)
    OriginalSurvival.objects.create(transcript=transcript, survival={"stale": True})
    path.write_bytes(b"".join(lines))
    assert services.refresh_transcript(transcript).new_messages > 0
    assert not OriginalSurvival.objects.filter(transcript=transcript).exists()


def test_watch_imports_a_new_file_and_appends_its_growth(alice: Any, tmp_path: Path) -> None:
    lines = CODEX.read_bytes().splitlines(keepends=True)
    path = tmp_path / CODEX.name
    path.write_bytes(b"".join(lines[:100]))
    out = io.StringIO()
    call_command("watch", str(tmp_path), "--user", "alice", "--polls", "1", stdout=out)
    assert "imported" in out.getvalue()
    transcript = Transcript.objects.get(owner=alice)
    path.write_bytes(b"".join(lines))
    out = io.StringIO()
    call_command("watch", str(tmp_path), "--user", "alice", "--polls", "1", stdout=out)
    assert f"grown {path}: transcript {transcript.pk}" in out.getvalue()
    assert Transcript.objects.get(owner=alice).pk == transcript.pk
    assert Upload.objects.filter(owner=alice).count() == 1


def test_watch_follows_a_task_folder_as_it_grows(alice: Any, tmp_path: Path) -> None:
    """A place under the watched folder (a Cline task) is one session, not three files."""
    task_source = (
        Path(__file__).resolve().parents[1]
        / "data/cline/saoudrizwan.claude-dev/tasks/1769053680585"
    )
    tasks = tmp_path / "tasks"
    task = tasks / task_source.name
    task.mkdir(parents=True)
    for file in task_source.iterdir():
        (task / file.name).write_bytes(file.read_bytes())
    history_file = task / "api_conversation_history.json"
    history = json.loads(history_file.read_bytes())
    history_file.write_text(json.dumps(history[:6]))
    out, err = io.StringIO(), io.StringIO()
    call_command("watch", str(tmp_path), "--user", "alice", "--polls", "1", stdout=out, stderr=err)
    assert err.getvalue() == ""  # ui_messages.json / task_metadata.json not tried as files
    (transcript,) = Transcript.objects.filter(owner=alice)
    assert transcript.message_count == 6 and transcript.format == "cline"
    history_file.write_text(json.dumps(history))
    out = io.StringIO()
    call_command("watch", str(tmp_path), "--user", "alice", "--polls", "1", stdout=out)
    assert f"imported {task}" in out.getvalue()
    (again,) = Transcript.objects.filter(owner=alice)
    assert again.pk == transcript.pk and again.message_count == len(history)
    assert Upload.objects.filter(owner=alice).count() == 1


def test_growing_into_bytes_already_stored_is_said_not_raised(alice: Any, tmp_path: Path) -> None:
    """Two copies of one session: the first copy has grown to the whole and been
    imported; the second grows to the same bytes (unique per owner): refused in words,
    nothing changed."""
    lines = CODEX.read_bytes().splitlines(keepends=True)
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    assert services.import_path(owner=alice, path=whole)[0].ok
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(b"".join(lines[:50]))
    first, _ = services.import_path(owner=alice, path=copy)
    transcript = _transcript(first)
    copy.write_bytes(b"".join(lines))
    outcome = services.refresh_transcript(transcript)
    assert outcome.new_messages == 0 and "already stored" in outcome.reason
    assert Transcript.objects.get(pk=transcript.pk).message_count == transcript.message_count
    again, refreshed = services.import_path(owner=alice, path=copy)  # no crash either
    assert again.duplicate and refreshed is None
