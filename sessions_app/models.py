"""Imported transcripts: an Upload (the file, bytes kept) → Transcripts → Messages.

Rows are written once by ``services.upload_import`` and read by the pages and by replays
through ``Transcript.to_conversation()``. Message blocks are stored through the engine codec,
already masked for secrets, as JSON text that keeps a tool input's key order on every
backend (``json_text.py``); the original bytes stay untouched in ``Upload.data`` so a
later importer fix can re-parse them (``services.upload_reparse``).

Why the bytes live in a BinaryField and not a FileField: the upload, its transcripts and
its messages are written in ONE transaction, so a failed import leaves nothing behind, not
even a stray file on disk, and a deleted upload takes its bytes with it. Files are capped
by ``CTXLAB_MAX_UPLOAD_BYTES``; list queries ``defer("data")`` so the blob is read only for
download and re-parse.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models.functions import Cast
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.urls import reverse

from ctxlab.engine.core import codec
from ctxlab.engine.core.heap import existing_heap_frozen
from ctxlab.engine.core.model import Conversation, Role, SourcePos, Usage
from ctxlab.engine.core.model import Message as EngineMessage

from .json_text import JSONTextField

_ROLES = {role.value: role for role in Role}


class Upload(models.Model):
    """One file as the user gave it."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="uploads"
    )
    name = models.CharField(max_length=255)
    format = models.CharField(max_length=40)
    forced_format = models.CharField(max_length=40, blank=True)  # "" = auto-detected
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    # the original bytes, never modified; a session that grew: its bytes now (a file: the
    # kept ones and what it gained)
    data = models.BinaryField()
    # Where it was read from on this machine ("" = uploaded through the page): a file's path
    # (grown, it is appended to: ``services.refresh_upload``) or where a place's session was
    # found (``sources.Found.where``: ``services.refresh_place``).
    source_path = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    importer_version = models.CharField(max_length=40)
    warnings = models.JSONField(default=list)  # codec.warning_to_dict items
    # Totals over the upload's transcripts, kept for sorting the list without joins.
    conversation_count = models.PositiveIntegerField(default=0)
    message_count = models.PositiveIntegerField(default=0)
    tool_call_count = models.PositiveIntegerField(default=0)
    tool_result_count = models.PositiveIntegerField(default=0)
    reference_tokens = models.PositiveBigIntegerField(default=0)
    reported_peak_context = models.PositiveBigIntegerField(null=True, blank=True)
    secret_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "sha256"], name="upload_unique_content")
        ]
        indexes = [models.Index(fields=["owner", "-created_at"])]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("upload-detail", args=[self.pk])

    @property
    def warning_total(self) -> int:
        return sum(int(w.get("count", 1)) for w in self.warnings)


class Transcript(models.Model):
    """One conversation of an upload (a file may hold hundreds)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="transcripts"
    )
    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="transcripts")
    position = models.PositiveIntegerField()  # order within the file
    # Strings taken from transcripts are TextFields: no length limit to trip over on Postgres.
    conversation_id = models.TextField(blank=True)
    title = models.TextField(blank=True)
    format = models.CharField(max_length=40)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    parent_conversation_id = models.TextField(null=True, blank=True)
    model = models.TextField(blank=True)
    usage_convention = models.TextField(blank=True)
    source_file = models.TextField(blank=True)  # the messages' most common source file
    message_count = models.PositiveIntegerField(default=0)
    tool_call_count = models.PositiveIntegerField(default=0)
    tool_result_count = models.PositiveIntegerField(default=0)
    reference_tokens = models.PositiveBigIntegerField(default=0)
    reported_peak_context = models.PositiveBigIntegerField(null=True, blank=True)
    # What every request carries and the largest request's messages, in cl100k, counted at
    # import (``ctxlab.engine.budget.SentSize``; NULL: imported before, counted when read)
    system_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    tools_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    messages_peak = models.PositiveBigIntegerField(null=True, blank=True)
    # codec.tool_to_dict items; as text: a parameter schema keeps its key order (json_text)
    tools = JSONTextField(default=list)
    compactions = models.JSONField(default=list)  # codec.compaction_to_dict items
    metadata = models.JSONField(default=list)  # [[key, value], ...]
    secret_count = models.PositiveIntegerField(default=0)
    secrets = models.JSONField(default=list)  # [{"message", "block", "kind"}, ...]
    # A fresh random token each time the messages are (re)written: the key of the decoded
    # conversation cache ("" = never cached).
    revision = models.CharField(max_length=32, blank=True, default="")

    class Meta:
        ordering = ["upload", "position"]
        constraints = [
            models.UniqueConstraint(fields=["upload", "position"], name="transcript_position")
        ]

    def __str__(self) -> str:
        return self.title or self.conversation_id or f"transcript {self.pk}"

    def get_absolute_url(self) -> str:
        return reverse("transcript-detail", args=[self.pk])

    @property
    def display_title(self) -> str:
        return str(self)

    def to_conversation(self) -> Conversation:
        """The engine value (masked blocks): one query over the messages, or the cache.

        Decoded conversations are immutable, so one process keeps the last few it built
        (keyed by id and revision, which every rewrite of the messages changes).
        """
        key = (self.pk, self.revision)
        if self.revision:
            cached = _CONVERSATIONS.get(key)
            if cached is not None:
                return cached
        conversation = self._decode()
        if self.revision:
            _CONVERSATIONS.put(key, conversation)
        return conversation

    def head_conversation(self) -> Conversation:
        """What every request of this transcript carries: its system prompt (message 0,
        when it is one) and its tool definitions; no other message is read."""
        return self._decode(self.messages.filter(index=0, role=Role.SYSTEM.value))

    def _decode(self, only: models.QuerySet[Message] | None = None) -> Conversation:
        # Blocks and flags come back as JSON text (no per-row field converter): the
        # blocks of all messages are decoded by ONE json.loads over a joined array.
        rows = list(
            (self.messages.all() if only is None else only)
            .order_by("index")
            .annotate(_blocks=Cast("blocks", models.TextField()))
            .annotate(_flags=Cast("flags", models.TextField()))
            .values_list(*_RAW_COLUMNS)
        )
        # Building a conversation makes millions of containers and no cycle: with the
        # collector on, its full collections (each traversing the whole heap) made the
        # decode grow 2.25x for 2x messages and took 40% of it (core.heap says how).
        with existing_heap_frozen():
            return self._decoded(rows)

    def _decoded(self, rows: list[tuple[Any, ...]]) -> Conversation:
        blocks = json.loads("[" + ",".join(row[1] for row in rows) + "]") if rows else []
        flags: dict[str, frozenset[str]] = {}
        messages = []
        for row, message_blocks in zip(rows, blocks, strict=True):
            flag_text = row[-1]
            row_flags = flags.get(flag_text)
            if row_flags is None:
                row_flags = flags[flag_text] = frozenset(json.loads(flag_text))
            messages.append(
                message_from_row((row[0], message_blocks, *row[2:-1], row_flags), self.source_file)
            )
        return Conversation(
            id=self.conversation_id,
            title=self.title,
            messages=tuple(messages),
            tools=tuple(codec.tool_from_dict(t) for t in self.tools),
            parent_id=self.parent_conversation_id,
            compactions=tuple(codec.compaction_from_dict(c) for c in self.compactions),
            model=self.model,
            metadata=codec.metadata_from_list(self.metadata),
            usage_convention=self.usage_convention,
        )


class _ConversationCache:
    """A small LRU of decoded conversations, bounded by entries and by total messages."""

    def __init__(self, *, entries: int, messages: int) -> None:
        self.entries = entries
        self.messages = messages
        self._items: OrderedDict[tuple[int, str], Conversation] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[int, str]) -> Conversation | None:
        with self._lock:
            conversation = self._items.get(key)
            if conversation is not None:
                self._items.move_to_end(key)
            return conversation

    def put(self, key: tuple[int, str], conversation: Conversation) -> None:
        if len(conversation.messages) > self.messages:
            return
        with self._lock:
            self._items[key] = conversation
            self._items.move_to_end(key)
            total = sum(len(c.messages) for c in self._items.values())
            while len(self._items) > self.entries or total > self.messages:
                _, dropped = self._items.popitem(last=False)
                total -= len(dropped.messages)

    def forget(self, transcript_id: int) -> None:
        with self._lock:
            for key in [k for k in self._items if k[0] == transcript_id]:
                del self._items[key]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_CONVERSATIONS = _ConversationCache(entries=4, messages=60_000)


class Message(models.Model):
    """One message, its blocks as codec JSON; token count computed once at import."""

    transcript = models.ForeignKey(Transcript, on_delete=models.CASCADE, related_name="messages")
    index = models.PositiveIntegerField()
    role = models.CharField(max_length=16)
    # codec JSON as text: a tool input's keys keep the agent's order on every backend
    # (jsonb would sort them: sessions_app/json_text.py)
    blocks = JSONTextField(default=list)
    preview = models.CharField(max_length=200, blank=True)
    reference_tokens = models.PositiveIntegerField(default=0)
    source_file = models.TextField(null=True, blank=True)  # None = transcript.source_file
    source_line = models.PositiveIntegerField(null=True, blank=True)
    source_record = models.PositiveIntegerField(null=True, blank=True)
    timestamp = models.TextField(null=True, blank=True)  # as in the source
    model = models.TextField(blank=True)
    source_id = models.TextField(blank=True)
    name = models.TextField(blank=True)
    has_usage = models.BooleanField(default=False)
    usage_input_uncached = models.PositiveBigIntegerField(default=0)
    usage_cache_read = models.PositiveBigIntegerField(default=0)
    usage_cache_write_5m = models.PositiveBigIntegerField(default=0)
    usage_cache_write_1h = models.PositiveBigIntegerField(default=0)
    usage_output = models.PositiveBigIntegerField(default=0)
    usage_reasoning = models.PositiveBigIntegerField(default=0)
    usage_convention = models.TextField(blank=True)
    flags = models.JSONField(default=list)  # sorted engine flags
    secrets = models.JSONField(default=list)  # [[block index, kind], ...] masked here
    # CoPaw's Qwen2.5 counts of the message (its own and its summariser text's; a list of
    # its texts' counts when imported before), computed at import (None: imported before,
    # or no exact tokenizer): ctxlab/engine/strategies/_copaw_stored.py
    qwen_counts = models.JSONField(null=True, blank=True, default=None)
    # running cl100k counts of its long texts (None: none, or imported before): a copy of
    # one is counted from them (ctxlab/engine/tokens/reference_stored.py)
    reference_tables = models.JSONField(null=True, blank=True, default=None)
    # Aider's count of the message (cl100k of its JSON, ``Model.token_count``), computed at
    # import (None: imported before): ctxlab.engine.strategies.aider.stored_counts
    aider_tokens = models.PositiveIntegerField(null=True, blank=True, default=None)
    # CowAgent's estimate of the message, computed at import (None: imported before):
    # ctxlab.engine.strategies._cowagent_rules.stored_counts
    cowagent_tokens = models.PositiveIntegerField(null=True, blank=True, default=None)
    # QwenPaw's estimate of the message (default divisor), computed at import (None:
    # imported before): ctxlab.engine.strategies.qwenpaw.stored_counts
    qwenpaw_tokens = models.PositiveIntegerField(null=True, blank=True, default=None)
    # QwenPaw's UTF-8 size of the message formatted for its summariser (borrowed tool names
    # left out), computed at import (None: imported before):
    # ctxlab.engine.strategies.qwenpaw.stored_formatted
    qwenpaw_formatted = models.PositiveIntegerField(null=True, blank=True, default=None)

    class Meta:
        ordering = ["transcript", "index"]
        constraints = [
            models.UniqueConstraint(fields=["transcript", "index"], name="message_index")
        ]

    def __str__(self) -> str:
        return f"#{self.index} {self.role}"

    @property
    def usage(self) -> Usage | None:
        if not self.has_usage:
            return None
        return Usage(
            input_uncached=self.usage_input_uncached,
            cache_read=self.usage_cache_read,
            cache_write_5m=self.usage_cache_write_5m,
            cache_write_1h=self.usage_cache_write_1h,
            output=self.usage_output,
            reasoning=self.usage_reasoning,
            convention=self.usage_convention,
        )


class MessageFacts(models.Model):
    """The facts (``ctxlab.engine.evaluate.extract.message_facts``) of ``count`` consecutive messages
    of a transcript from ``start``, extracted once at import (``ctxlab.engine.evaluate.factstore``
    bytes) so that every run's retention and survival analysis reads them instead of
    scanning the messages again. Rows of another ``extractor`` version are ignored (and
    replaced when a run extracts them again: ``sessions_app.facts``)."""

    transcript = models.ForeignKey(Transcript, on_delete=models.CASCADE, related_name="fact_chunks")
    start = models.PositiveIntegerField()
    count = models.PositiveIntegerField()
    extractor = models.PositiveSmallIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["transcript", "start"], name="message_facts_start")
        ]


# The columns to_conversation() reads, in the order message_from_row() expects.
MESSAGE_COLUMNS = (
    "role",
    "blocks",
    "source_file",
    "source_line",
    "source_record",
    "timestamp",
    "model",
    "has_usage",
    "usage_input_uncached",
    "usage_cache_read",
    "usage_cache_write_5m",
    "usage_cache_write_1h",
    "usage_output",
    "usage_reasoning",
    "usage_convention",
    "source_id",
    "name",
    "flags",
)


# The same, with blocks and flags as JSON text (Transcript._decode).
_RAW_COLUMNS = ("role", "_blocks", *MESSAGE_COLUMNS[2:-1], "_flags")


# post_save only: a post_delete receiver would make every cascade delete fetch its rows.
@receiver(post_save, sender="sessions_app.Message")
def _message_changed(sender: Any, instance: Message, **kwargs: Any) -> None:
    """A message edited one by one (admin, shell) must not be hidden by the cache (nor by
    the facts extracted from it before)."""
    _CONVERSATIONS.forget(instance.transcript_id)
    MessageFacts.objects.filter(transcript_id=instance.transcript_id).delete()


def message_from_row(row: tuple[Any, ...], default_file: str) -> EngineMessage:
    (
        role,
        blocks,
        source_file,
        line,
        record,
        timestamp,
        model,
        has_usage,
        uncached,
        cache_read,
        write_5m,
        write_1h,
        output,
        reasoning,
        convention,
        source_id,
        name,
        flags,
    ) = row
    usage = (
        Usage(uncached, cache_read, write_5m, write_1h, output, reasoning, convention)
        if has_usage
        else None
    )
    return EngineMessage(
        role=_ROLES[role],
        blocks=codec.blocks_from_list(blocks),
        source=SourcePos(
            file=default_file if source_file is None else source_file, line=line, record=record
        ),
        timestamp=timestamp,
        model=model,
        usage=usage,
        id=source_id,
        name=name,
        flags=frozenset(flags),
    )


def message_fields(message: EngineMessage, *, default_file: str) -> dict[str, Any]:
    """The column values of one engine message (without transcript/index/derived fields)."""
    usage = message.usage or Usage()
    return {
        "role": message.role.value,
        "blocks": codec.blocks_to_list(message.blocks),
        "source_file": None if message.source.file == default_file else message.source.file,
        "source_line": message.source.line,
        "source_record": message.source.record,
        "timestamp": message.timestamp,
        "model": message.model,
        "source_id": message.id,
        "name": message.name,
        "has_usage": message.usage is not None,
        "usage_input_uncached": usage.input_uncached,
        "usage_cache_read": usage.cache_read,
        "usage_cache_write_5m": usage.cache_write_5m,
        "usage_cache_write_1h": usage.cache_write_1h,
        "usage_output": usage.output,
        "usage_reasoning": usage.reasoning,
        "usage_convention": usage.convention,
        "flags": sorted(message.flags),
    }
