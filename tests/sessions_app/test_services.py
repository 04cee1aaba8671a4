from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import TranscriptError
from ctxlab.engine.tokens.cl100k import message_reference_tokens
from sessions_app import import_store, services
from sessions_app.models import Message, Transcript, Upload

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
TAU_TASK = CORPUS / "openai-chat" / "taubench-gpt-4o-airline-task2-messages.json"

pytestmark = pytest.mark.django_db


def test_upload_import_stores_upload_transcript_and_messages(alice: Any, small_chat: bytes) -> None:
    outcome = services.upload_import(owner=alice, name="chat.json", data=small_chat)

    assert outcome.ok and not outcome.duplicate
    upload = Upload.objects.get()
    assert bytes(upload.data) == small_chat
    assert upload.size == len(small_chat) and len(upload.sha256) == 64
    transcript = Transcript.objects.get()
    assert (transcript.message_count, transcript.tool_call_count, transcript.tool_result_count) == (
        5,
        1,
        1,
    )
    assert list(transcript.messages.values_list("index", flat=True)) == [0, 1, 2, 3, 4]
    assert outcome.to_json()["conversations"][0]["messages"] == 5


def test_upload_import_round_trips_to_the_parsed_conversation(alice: Any) -> None:
    data = TAU_TASK.read_bytes()
    parsed = importers.parse(data, name=TAU_TASK.name)

    services.upload_import(owner=alice, name=TAU_TASK.name, data=data)

    assert Transcript.objects.get().to_conversation() == parsed.conversations[0]


def test_upload_import_counts_reference_tokens_like_the_engine(alice: Any) -> None:
    data = TAU_TASK.read_bytes()
    conversation = importers.parse(data, name=TAU_TASK.name).conversations[0]

    services.upload_import(owner=alice, name=TAU_TASK.name, data=data)

    stored = list(Message.objects.order_by("index").values_list("reference_tokens", flat=True))
    assert stored == [message_reference_tokens(m) for m in conversation.messages]
    assert Transcript.objects.get().reference_tokens == sum(stored)


def test_upload_import_same_content_is_a_duplicate(alice: Any, small_chat: bytes) -> None:
    first = services.upload_import(owner=alice, name="a.json", data=small_chat)
    again = services.upload_import(owner=alice, name="b.json", data=small_chat)

    assert again.duplicate and again.upload is not None and first.upload is not None
    assert again.upload.pk == first.upload.pk
    assert Upload.objects.count() == 1 and Message.objects.count() == 5


def test_upload_import_same_content_other_owner_is_stored(
    alice: Any, bob: Any, small_chat: bytes
) -> None:
    services.upload_import(owner=alice, name="a.json", data=small_chat)
    outcome = services.upload_import(owner=bob, name="a.json", data=small_chat)

    assert not outcome.duplicate
    assert Upload.objects.count() == 2


BAD_FILES = {
    "truncated-json": (b'[{"role": "user", "content": "hi"}, {"role": "assist', None),
    "forced-wrong-format": (TAU_TASK.read_bytes(), "claude-code"),
    "binary": (bytes(range(256)) * 40, None),
    "empty": (b"", None),
    "latin-1": ('[{"role": "user", "content": "caf\xe9"}]'.encode("latin-1"), None),
    "enormous-line": (b'{"type": "user", "message": {"content": "' + b"x" * 3_000_000, None),
}


@pytest.mark.parametrize(("data", "forced"), BAD_FILES.values(), ids=BAD_FILES.keys())
def test_upload_import_bad_file_stores_nothing(alice: Any, data: bytes, forced: str | None) -> None:
    outcome = services.upload_import(owner=alice, name="bad.json", data=data, format=forced)

    assert isinstance(outcome.error, TranscriptError)
    assert outcome.error.file == "bad.json"
    assert str(outcome.error).startswith("bad.json")
    assert outcome.to_json()["error"]
    assert Upload.objects.count() == 0 and Transcript.objects.count() == 0
    assert Message.objects.count() == 0


def test_upload_import_truncated_json_names_line_and_offset(alice: Any) -> None:
    data = b'[\n{"role": "user", "content": "hi"},\n{"role": "assist'
    outcome = services.upload_import(owner=alice, name="cut.json", data=data)

    assert outcome.error is not None
    assert outcome.error.line == 3
    assert outcome.error.offset is not None and outcome.error.offset > 30


def test_upload_import_failure_mid_store_rolls_back(
    alice: Any, small_chat: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(import_store, "_bulk_messages", boom)
    with pytest.raises(RuntimeError):
        services.upload_import(owner=alice, name="chat.json", data=small_chat)

    assert Upload.objects.count() == 0 and Transcript.objects.count() == 0


def test_upload_import_over_size_limit_is_refused(
    alice: Any, small_chat: bytes, settings: Any
) -> None:
    settings.CTXLAB_MAX_UPLOAD_BYTES = 10
    outcome = services.upload_import(owner=alice, name="chat.json", data=small_chat)

    assert outcome.error is not None and "limit" in str(outcome.error)
    assert Upload.objects.count() == 0


def test_upload_import_importer_crash_becomes_an_error(
    alice: Any, small_chat: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*args: Any, **kwargs: Any) -> None:
        raise KeyError("role")

    monkeypatch.setattr(importers, "parse", crash)
    monkeypatch.setattr(importers, "stream", crash)  # a JSON array of messages streams
    outcome = services.upload_import(owner=alice, name="chat.json", data=small_chat)

    assert outcome.error is not None and "KeyError" in str(outcome.error)
    assert Upload.objects.count() == 0


def test_upload_import_many_conversations_are_grouped_under_one_upload(alice: Any) -> None:
    path = CORPUS / "openai-chat" / "taubench-gpt-4o-airline.json"
    outcome = services.upload_import(owner=alice, name=path.name, data=path.read_bytes())

    assert outcome.ok
    upload = Upload.objects.get()
    assert upload.conversation_count == 200 == len(outcome.conversations)
    assert upload.message_count == sum(t.message_count for t in upload.transcripts.all())
    assert list(upload.transcripts.values_list("position", flat=True)) == list(range(200))


def test_upload_import_links_sidechains_to_their_parent(alice: Any) -> None:
    path = CORPUS / "claude-code" / "ccviewer-fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    services.upload_import(owner=alice, name=path.name, data=path.read_bytes())

    children = Transcript.objects.filter(parent__isnull=False)
    assert children.exists()
    for child in children:
        assert child.parent is not None
        assert child.parent.conversation_id == child.parent_conversation_id
        assert child.to_conversation().parent_id == child.parent.conversation_id


def test_upload_reparse_keeps_transcript_ids(alice: Any, small_chat: bytes) -> None:
    outcome = services.upload_import(owner=alice, name="chat.json", data=small_chat)
    assert outcome.upload is not None
    before = list(Transcript.objects.values_list("pk", flat=True))

    again = services.upload_reparse(upload=outcome.upload)

    assert again.ok
    assert list(Transcript.objects.values_list("pk", flat=True)) == before
    assert Message.objects.count() == 5


def test_conversation_import_native_file_reparses(alice: Any) -> None:
    conversation = importers.parse(TAU_TASK.read_bytes(), name=TAU_TASK.name).conversations[0]
    outcome = services.conversation_import(
        owner=alice, name="x.ctxlab.json", conversations=[conversation], source_format="synthetic"
    )
    assert outcome.ok and outcome.upload is not None
    assert json.loads(bytes(Upload.objects.get().data))["ctxlab"] == services.NATIVE_VERSION

    assert services.upload_reparse(upload=outcome.upload).ok
    assert Transcript.objects.get().to_conversation() == conversation


def test_load_conversation_scoped_to_user(alice: Any, bob: Any, small_chat: bytes) -> None:
    services.upload_import(owner=alice, name="chat.json", data=small_chat)
    pk = Transcript.objects.get().pk

    assert len(services.load_conversation(pk, user=alice).messages) == 5
    assert len(services.load_conversation(pk).messages) == 5
    with pytest.raises(Transcript.DoesNotExist):
        services.load_conversation(pk, user=bob)
