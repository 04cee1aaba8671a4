"""Correctness of the fast import path (raw message insert, blob written once, native
conversations stored without re-parsing, batched decode, decoded-conversation cache).
No timings here: speed is measured by ``manage.py bench`` (section imports_service)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role, SourcePos, Usage
from ctxlab.engine.importers._stream import from_parsed
from ctxlab.engine.strategies import _copaw_stored as copaw_stored
from ctxlab.engine.strategies import _cowagent_rules as cowagent_rules
from ctxlab.engine.strategies import aider, qwenpaw
from ctxlab.engine.tokens import reference_stored
from sessions_app import secrets_glue, services
from sessions_app.models import (
    Message as MessageRow,
)
from sessions_app.models import (
    Transcript,
    Upload,
    _ConversationCache,
    message_fields,
)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
FILES = [
    CORPUS / "claude-code" / "agentcmd-full-session-two.jsonl",
    CORPUS
    / "codex-rollout"
    / "agentcmd-rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl",
    CORPUS / "openhands" / "trajs-basic.json",
]
OPENAI = "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90"

pytestmark = pytest.mark.django_db


def _row_values(row: MessageRow) -> dict[str, Any]:
    fields = [f.attname for f in MessageRow._meta.concrete_fields if not f.primary_key]
    return {name: getattr(row, name) for name in fields}


def _expected_rows(transcript: Transcript, conversation: Conversation) -> list[dict[str, Any]]:
    """What the ORM would have stored for each message (the pre-executemany path)."""
    where: dict[int, list[list[Any]]] = {}
    for found in transcript.secrets:
        where.setdefault(found["message"], []).append([found["block"], found["kind"]])
    tokens = services.message_reference_tokens_many(conversation.messages)
    qwen = copaw_stored.message_entries(conversation.messages)
    tables = reference_stored.stored_counts(conversation.messages)[1]
    aider_tokens = aider.stored_counts(conversation.messages)
    cowagent_tokens = cowagent_rules.stored_counts(conversation.messages)
    qwenpaw_tokens = qwenpaw.stored_counts(conversation.messages)
    qwenpaw_formatted = qwenpaw.stored_formatted(conversation.messages)
    return [
        {
            "transcript_id": transcript.pk,
            "index": index,
            "preview": services.preview_of(message),
            "reference_tokens": tokens[index],
            "secrets": where.get(index, []),
            "qwen_counts": qwen[index] if qwen is not None else None,
            "reference_tables": tables[index],
            "aider_tokens": aider_tokens[index],
            "cowagent_tokens": cowagent_tokens[index],
            "qwenpaw_tokens": qwenpaw_tokens[index],
            "qwenpaw_formatted": qwenpaw_formatted[index],
            **message_fields(message, default_file=transcript.source_file),
        }
        for index, message in enumerate(conversation.messages)
    ]


def _stored_rows(transcript: Transcript) -> list[dict[str, Any]]:
    return [_row_values(row) for row in transcript.messages.order_by("index")]


@pytest.mark.parametrize("path", FILES, ids=[p.parent.name for p in FILES])
def test_import_speed_rows_equal_what_the_orm_would_store(alice: Any, path: Path) -> None:
    data = path.read_bytes()
    parsed = importers.parse(data, name=path.name)

    outcome = services.upload_import(owner=alice, name=path.name, data=data)

    assert outcome.ok, outcome.error
    transcripts = list(Transcript.objects.filter(upload=outcome.upload).order_by("position"))
    assert len(transcripts) == len(parsed.conversations)
    for transcript, conversation in zip(transcripts, parsed.conversations, strict=True):
        masked, _ = secrets_glue.mask_conversation(conversation)
        assert _stored_rows(transcript) == _expected_rows(transcript, masked)
        assert transcript.to_conversation() == masked


def _secret_chat() -> bytes:
    return json.dumps(
        [
            {"role": "system", "content": "Be brief. caf\u00e9 \u65e5\u672c \U0001f600"},
            {"role": "user", "content": f"my key is {OPENAI} ok"},
            {"role": "assistant", "content": "noted"},
        ]
    ).encode()


def test_import_speed_secrets_and_unicode_survive(alice: Any) -> None:
    data = _secret_chat()
    parsed = importers.parse(data, name="chat.json").conversations[0]

    outcome = services.upload_import(owner=alice, name="chat.json", data=data)

    assert outcome.ok, outcome.error
    transcript = Transcript.objects.get()
    conversation = transcript.to_conversation()
    assert conversation.messages[0] == parsed.messages[0]  # non-ASCII kept as is
    text = conversation.messages[1].text
    assert OPENAI not in text and "…[masked openai_key]" in text
    row = transcript.messages.get(index=1)
    assert (row.secrets, transcript.secret_count) == ([[0, "openai_key"]], 1)
    assert [m.secrets for m in transcript.messages.exclude(index=1)] == [[], []]


def test_import_speed_upload_keeps_bytes_and_totals(alice: Any) -> None:
    data = _secret_chat()

    outcome = services.upload_import(owner=alice, name="chat.json", data=data)

    assert outcome.upload is not None
    upload = Upload.objects.get(pk=outcome.upload.pk)
    assert bytes(upload.data) == data and upload.size == len(data)
    assert (upload.message_count, upload.secret_count, upload.conversation_count) == (3, 1, 1)
    assert upload.reference_tokens == Transcript.objects.get().reference_tokens > 0


def test_import_speed_reparse_keeps_bytes(alice: Any) -> None:
    data = _secret_chat()
    outcome = services.upload_import(owner=alice, name="chat.json", data=data)
    assert outcome.upload is not None

    again = services.upload_reparse(upload=Upload.objects.defer("data").get())

    assert again.ok and bytes(Upload.objects.get().data) == data
    assert Upload.objects.get().message_count == 3


def _native_conversation() -> Conversation:
    call = Block(BlockKind.TOOL_USE, tool_id="t1", tool_name="Bash", tool_input={"cmd": "ls"})
    return Conversation(
        id="native-1",
        title="native",
        messages=(
            Message(Role.SYSTEM, (Block(BlockKind.TEXT, text="sys"),), source=SourcePos("a", 1)),
            Message(
                Role.ASSISTANT,
                (Block(BlockKind.TEXT, text=f"key {OPENAI}"), call),
                source=SourcePos("b", line=2),
                usage=Usage(input_uncached=10, output=3, convention="anthropic"),
                flags=frozenset({"demo"}),
                timestamp="2025-01-01T00:00:00Z",
            ),
            Message(
                Role.TOOL,
                (Block(BlockKind.TOOL_RESULT, tool_id="t1", text="a.py"),),
                source=SourcePos("a", record=3),
            ),
        ),
        model="m",
    )


def test_import_speed_conversation_import_equals_upload_of_its_bytes(alice: Any, bob: Any) -> None:
    native = services.conversation_import(
        owner=alice, name="n.json", conversations=(_native_conversation(),), source_format="x"
    )
    assert native.upload is not None
    data = bytes(Upload.objects.get(pk=native.upload.pk).data)

    parsed = services.upload_import(owner=bob, name="n.json", data=data)

    assert parsed.ok, parsed.error
    mine = Transcript.objects.get(owner=alice)
    theirs = Transcript.objects.get(owner=bob)
    assert mine.to_conversation() == theirs.to_conversation()
    strip = ("transcript_id",)
    rows = [{k: v for k, v in r.items() if k not in strip} for r in _stored_rows(mine)]
    assert rows == [{k: v for k, v in r.items() if k not in strip} for r in _stored_rows(theirs)]
    assert (mine.secrets, mine.reference_tokens) == (theirs.secrets, theirs.reference_tokens)


def test_import_speed_decoded_conversation_is_cached_per_revision(
    alice: Any, small_chat: bytes
) -> None:
    services.upload_import(owner=alice, name="chat.json", data=small_chat)
    transcript = Transcript.objects.get()

    first = transcript.to_conversation()

    assert transcript.revision and Transcript.objects.get().to_conversation() is first


def test_import_speed_reparse_changes_revision_and_content(
    alice: Any, small_chat: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = services.upload_import(owner=alice, name="chat.json", data=small_chat)
    assert outcome.upload is not None
    before = Transcript.objects.get()
    old = before.to_conversation()
    parsed = importers.parse(small_chat, name="chat.json")
    edited = Message(Role.USER, (Block(BlockKind.TEXT, text="edited"),))
    conversation = parsed.conversations[0]
    messages = (conversation.messages[0], edited, *conversation.messages[2:])
    changed = replace(parsed, conversations=(replace(conversation, messages=messages),))
    monkeypatch.setattr(
        services, "_open", lambda data, *, name, format, parsed=None: from_parsed(changed)
    )

    services.upload_reparse(upload=outcome.upload)

    after = Transcript.objects.get()
    assert after.pk == before.pk and after.revision != before.revision
    assert after.to_conversation().messages[1].text == "edited" != old.messages[1].text


def test_import_speed_message_saved_one_by_one_is_not_hidden_by_cache(
    alice: Any, small_chat: bytes
) -> None:
    services.upload_import(owner=alice, name="chat.json", data=small_chat)
    transcript = Transcript.objects.get()
    transcript.to_conversation()
    row = transcript.messages.get(index=1)
    row.blocks = [{"kind": "text", "text": "changed in the admin"}]

    row.save()

    assert Transcript.objects.get().to_conversation().messages[1].text == "changed in the admin"


def _conv(n: int, tag: str) -> Conversation:
    message = Message(Role.USER, (Block(BlockKind.TEXT, text=tag),))
    return Conversation(id=tag, title=tag, messages=(message,) * n)


@pytest.mark.parametrize(
    ("sizes", "kept"),
    [
        ([1, 1, 1], ["b", "c"]),  # over the entry bound: the least recent goes
        ([6, 6], ["b"]),  # over the message bound
        ([11, 1], ["b"]),  # bigger than the whole cache: never kept
    ],
    ids=["entries", "messages", "too-big"],
)
def test_import_speed_cache_is_bounded(sizes: list[int], kept: list[str]) -> None:
    cache = _ConversationCache(entries=2, messages=10)
    for i, size in enumerate(sizes):
        tag = "abc"[i]
        cache.put((i, tag), _conv(size, tag))

    present = [tag for i, tag in enumerate("abc"[: len(sizes)]) if cache.get((i, tag))]

    assert present == kept
