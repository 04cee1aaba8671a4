"""Writing one parsed file's transcripts and messages as its messages come.

The importers hand a file out as a stream (``importers.stream``): each conversation's
messages one at a time, then its other fields. Messages are masked, counted and written
in batches, so a million-message file never sits in memory as a million engine objects,
rows and token counts at once. Everything runs inside the caller's transaction: a parse
error on the last line rolls back what was already written.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, models
from django.db.models import Field

from ctxlab.engine.budget import RequestPeak, tools_reference_tokens
from ctxlab.engine.core import codec
from ctxlab.engine.core.model import BlockKind, Conversation
from ctxlab.engine.core.model import Message as EngineMessage
from ctxlab.engine.importers._stream import ConversationStream, StreamedFile
from ctxlab.engine.strategies import _copaw_stored as copaw_stored
from ctxlab.engine.strategies import stored_counts
from ctxlab.engine.tokens.cl100k import (
    MEDIA_TOKENS,
    PER_MESSAGE_OVERHEAD,
    block_text,
    reference_counter,
)
from ctxlab.serving.abandon import raise_if_abandoned

from . import facts, json_text, secrets_glue
from .json_text import JSONTextField
from .models import Message, MessageFacts, Transcript, Upload, message_fields

MESSAGE_BATCH = 2000
# A batch is also cut at this many characters of message text: 2,000 rows of big tool
# results would otherwise hold a whole file's text again (and SQLite's copy of it).
MESSAGE_BATCH_CHARS = 4 * 1024 * 1024
PREVIEW_CHARS = 200


def store_stream(
    upload: Upload, streamed: StreamedFile, *, existing: dict[int, Transcript]
) -> list[Transcript]:
    """Write every conversation of ``streamed`` for ``upload`` (inside the caller's
    transaction); ``existing``: transcripts kept by position on a re-parse (runs point at
    them), the others are deleted. Sets the upload's totals and masked warnings."""
    transcripts: list[Transcript] = []
    writer = _MessageWriter()
    for position, stream in enumerate(streamed.conversations):
        transcript = existing.pop(position, None)
        if transcript is None:
            transcript = Transcript(owner_id=upload.owner_id, upload=upload, position=position)
            transcript.save()
        else:
            transcript.messages.all().delete()
            transcript.fact_chunks.all().delete()
        written = writer.write(transcript, stream.messages)
        _finish_transcript(transcript, stream, written, format=streamed.format)
        transcripts.append(transcript)
    for stale in existing.values():
        stale.delete()
    _finish_upload(upload, streamed, transcripts)
    return transcripts


class Diverged(Exception):
    """The file, read again, no longer starts with the messages stored from it."""


def append_stream(
    upload: Upload, streamed: StreamedFile, *, existing: dict[int, Transcript]
) -> list[Transcript]:
    """Store what a grown file adds: ``streamed`` is the whole file read again. Each
    stored conversation's messages are compared with the file's (masked, as stored): the
    ones that are still the same are kept with their counts and facts; from the first
    that is not (an agent's message completed by a later line, a tool result attached),
    or from the start of its facts chunk, the rest is masked, counted and written again.
    The totals, compactions, metadata, secrets and revision are set anew. Raises
    ``Diverged`` (the caller's transaction then rolls back) when a stored conversation is
    no longer in the file."""
    transcripts: list[Transcript] = []
    writer = _MessageWriter()
    for position, stream in enumerate(streamed.conversations):
        transcript = existing.pop(position, None)
        if transcript is None:
            transcript = Transcript(owner_id=upload.owner_id, upload=upload, position=position)
            transcript.save()
            written = writer.write(transcript, stream.messages)
        else:
            written = _Written(first_file=transcript.source_file)
            rest = _keep_stored(transcript, list(stream.messages), written)
            written = writer.write(transcript, iter(rest), written=written)
        _finish_transcript(transcript, stream, written, format=streamed.format)
        transcripts.append(transcript)
    if existing:
        raise Diverged(f"{len(existing)} stored conversation(s) are no longer in the file")
    _finish_upload(upload, streamed, transcripts)
    return transcripts


_COMPARED = ("role", "blocks", "source_line", "source_record", "timestamp", "model",
             "source_id", "name", "has_usage", "usage_input_uncached", "usage_cache_read",
             "usage_cache_write_5m", "usage_cache_write_1h", "usage_output",
             "usage_reasoning", "usage_convention", "flags", "source_file")  # fmt: skip


def _keep_stored(
    transcript: Transcript, messages: list[EngineMessage], written: _Written
) -> list[EngineMessage]:
    """Keep the transcript's stored rows that are still ``messages``' first ones (added
    to ``written`` from their stored counts: nothing is counted again), delete the others
    and their facts; returns the messages to write after the kept ones."""
    masked, _ = secrets_glue.mask_conversation(
        Conversation(id="", title="", messages=tuple(messages[: transcript.message_count]))
    )
    rows = Message.objects.filter(transcript=transcript).order_by("index")
    keep = 0
    tokens: list[int] = []
    for row in rows.values_list(*_COMPARED, "reference_tokens").iterator(chunk_size=2000):
        if keep >= len(masked.messages):
            break
        fields = message_fields(masked.messages[keep], default_file=transcript.source_file)
        if tuple(fields[name] for name in _COMPARED) != row[:-1]:
            break
        tokens.append(row[-1])
        keep += 1
    # Facts are stored by chunks: one the first changed message is in is extracted again.
    chunks = MessageFacts.objects.filter(transcript=transcript)
    for start, count in chunks.values_list("start", "count"):
        if start < keep < start + count:
            keep = start
    chunks.filter(start__gte=keep).delete()
    rows.filter(index__gte=keep).delete()
    for finding in transcript.secrets:
        message = finding.get("message")
        if message is not None and message < keep:  # the conversation's own: found again
            written.findings.append(finding)
    for message, count in zip(messages[:keep], tokens, strict=False):
        written.tool_calls += len(message.tool_uses)
        written.tool_results += len(message.tool_results)
        written.files[message.source.file] += 1
        written.request_peak.add(message.role.value, count)
        written.tokens += count
        if message.usage is not None:
            peak = message.usage.context_tokens
            if written.reported_peak is None or peak > written.reported_peak:
                written.reported_peak = peak
    written.count = keep
    written.system_tokens = (transcript.system_tokens or 0) if keep else 0
    return messages[keep:]


def _finish_upload(upload: Upload, streamed: StreamedFile, transcripts: list[Transcript]) -> None:
    _link_parents(transcripts)
    # Warnings may quote the file (a bad tool argument, a line): masked like the rest.
    upload.warnings = [
        secrets_glue.mask_strings(codec.warning_to_dict(w)) for w in streamed.finish()
    ]
    upload.conversation_count = len(transcripts)
    upload.message_count = sum(t.message_count for t in transcripts)
    upload.tool_call_count = sum(t.tool_call_count for t in transcripts)
    upload.tool_result_count = sum(t.tool_result_count for t in transcripts)
    upload.reference_tokens = sum(t.reference_tokens for t in transcripts)
    peaks = [t.reported_peak_context for t in transcripts if t.reported_peak_context is not None]
    upload.reported_peak_context = max(peaks) if peaks else None
    upload.secret_count = sum(t.secret_count for t in transcripts)
    # Never the kept bytes again (a 20 MB blob rewritten for a few counters).
    upload.save(update_fields=_UPLOAD_FIELDS_BUT_DATA)


_UPLOAD_FIELDS_BUT_DATA = [
    f.name for f in Upload._meta.concrete_fields if not f.primary_key and f.name != "data"
]


@dataclass(slots=True)
class _Written:
    """What one conversation's written messages add up to."""

    count: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    tokens: int = 0
    reported_peak: int | None = None
    system_tokens: int = 0  # message 0's count when it is the system prompt
    request_peak: RequestPeak = field(default_factory=RequestPeak)  # the messages' peak
    files: Counter[str] = field(default_factory=Counter)
    first_file: str | None = None  # rows store their file as NULL when it is this one
    findings: list[dict[str, Any]] = field(default_factory=list)
    tool_names: dict[str, str] = field(default_factory=dict)  # CoPaw's: tool id -> name


def _finish_transcript(
    transcript: Transcript, stream: ConversationStream, written: _Written, *, format: str
) -> None:
    conversation = stream.finish()
    masked, extras = secrets_glue.mask_conversation(conversation)  # messages=(): the rest
    findings = written.findings + extras
    common = written.files.most_common(1)[0][0] if written.files else ""
    if written.first_file is not None and common != written.first_file:
        _rebase_source_files(transcript, stored_as_null=written.first_file, common=common)
    values = {
        "conversation_id": masked.id,
        "title": masked.title,
        "format": format,
        "parent_conversation_id": masked.parent_id,
        "model": masked.model,
        "usage_convention": masked.usage_convention,
        "source_file": common,
        "message_count": written.count,
        "tool_call_count": written.tool_calls,
        "tool_result_count": written.tool_results,
        "reference_tokens": written.tokens,
        "reported_peak_context": written.reported_peak,
        "system_tokens": written.system_tokens,
        "tools_tokens": tools_reference_tokens(masked.tools),
        "messages_peak": written.request_peak.value,
        "tools": [codec.tool_to_dict(t) for t in masked.tools],
        "compactions": [codec.compaction_to_dict(c) for c in masked.compactions],
        "metadata": codec.metadata_to_list(masked.metadata),
        "secret_count": len(findings),
        "secrets": findings,
        "parent": None,
        "revision": uuid.uuid4().hex,  # the messages change: cached decodings go stale
    }
    for key, value in values.items():
        setattr(transcript, key, value)
    transcript.save()


def _rebase_source_files(transcript: Transcript, *, stored_as_null: str, common: str) -> None:
    """Rows keep their source file only when it is not the transcript's most common one;
    streamed rows were written against the first message's file, known before the rest."""
    rows = Message.objects.filter(transcript=transcript)
    rows.filter(source_file__isnull=True).update(source_file=stored_as_null)
    rows.filter(source_file=common).update(source_file=None)


def _link_parents(transcripts: list[Transcript]) -> None:
    by_id = {t.conversation_id: t for t in transcripts if t.conversation_id}
    linked = []
    for transcript in transcripts:
        parent = by_id.get(transcript.parent_conversation_id or "")
        if parent is not None and parent is not transcript:
            transcript.parent = parent
            linked.append(transcript)
    if linked:
        Transcript.objects.bulk_update(linked, ["parent"])


class _MessageWriter:
    """Masks, counts and inserts messages a batch at a time with one prepared INSERT run
    by ``executemany`` (``bulk_create`` spent ~0.2 ms per row preparing 23 fields, and
    with DEBUG on formatted each multi-megabyte statement for the query log)."""

    def __init__(self) -> None:
        self.columns = [f for f in Message._meta.concrete_fields if not f.primary_key]
        self.sql = "INSERT INTO {} ({}) VALUES ({})".format(
            connection.ops.quote_name(Message._meta.db_table),
            ", ".join(connection.ops.quote_name(_column(f)) for f in self.columns),
            ", ".join(["%s"] * len(self.columns)),
        )
        # JSON columns get their database form here (executemany skips the fields' own
        # preparation): jsonb values through the adapter, text-backed ones as their text.
        to_json = _json_adapter()
        self.adapters: list[tuple[int, Callable[[Any], Any], Any]] = []
        for c, f in enumerate(self.columns):
            if isinstance(f, JSONTextField):
                self.adapters.append((c, json_text.dumps, json_text.dumps([])))
            elif isinstance(f, models.JSONField):
                self.adapters.append((c, to_json, to_json([])))

    def write(
        self,
        transcript: Transcript,
        messages: Iterator[EngineMessage],
        *,
        written: _Written | None = None,
    ) -> _Written:
        """Write ``messages`` after the ``written.count`` already stored (none by default)."""
        written = _Written() if written is None else written
        for batch in _batches(messages):
            raise_if_abandoned()  # the uploader went away: roll back instead of finishing
            self._write_batch(transcript, batch, written)
        return written

    def _write_batch(
        self, transcript: Transcript, batch: list[EngineMessage], written: _Written
    ) -> None:
        masked, findings = secrets_glue.mask_conversation(
            Conversation(id="", title="", messages=tuple(batch))
        )
        offset = written.count
        where: dict[int, list[list[Any]]] = {}
        for found in findings:
            where.setdefault(found["message"], []).append([found["block"], found["kind"]])
            written.findings.append({**found, "message": found["message"] + offset})
        # every replay's reference counts and the strategies' own estimates
        counted = stored_counts.counted(masked.messages)
        tokens = counted["reference_tokens"]
        # read by CoPaw's replays (the calls of earlier batches name their results)
        qwen = copaw_stored.message_entries(masked.messages, written.tool_names)
        if written.first_file is None and batch:
            written.first_file = batch[0].source.file
        rows = []
        for i, message in enumerate(masked.messages):
            values = {
                "transcript_id": transcript.pk,
                "index": offset + i,
                "preview": preview_of(message),
                **{column: values[i] for column, values in counted.items()},
                "secrets": where.get(i, []),
                "qwen_counts": qwen[i] if qwen is not None else None,
                **message_fields(message, default_file=written.first_file or ""),
            }
            row = [values[f.attname] for f in self.columns]
            for c, adapt, empty in self.adapters:
                if row[c] is not None:  # None: SQL NULL
                    row[c] = empty if row[c] == [] else adapt(row[c])
            rows.append(row)
            written.tool_calls += len(message.tool_uses)
            written.tool_results += len(message.tool_results)
            written.files[message.source.file] += 1
            written.request_peak.add(message.role.value, tokens[i])
            if offset + i == 0 and message.role.value == "system":
                written.system_tokens = tokens[i]
            if message.usage is not None:
                peak = message.usage.context_tokens
                if written.reported_peak is None or peak > written.reported_peak:
                    written.reported_peak = peak
        written.count += len(batch)
        written.tokens += sum(tokens)
        _bulk_messages(self.sql, rows)
        # extracted once here, read by every run's retention and survival analysis
        facts.store_chunk(transcript.pk, offset, masked.messages)


def _column(field: Field[Any, Any] | None) -> str:
    """A concrete field's column name (the stubs allow None for fields without one)."""
    if field is None or field.column is None:
        raise TypeError(f"{field!r} has no database column")
    return field.column


def _bulk_messages(sql: str, rows: list[list[Any]]) -> None:
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


def _batches(messages: Iterator[EngineMessage]) -> Iterator[list[EngineMessage]]:
    batch: list[EngineMessage] = []
    chars = 0
    for message in messages:
        batch.append(message)
        chars += sum(len(block_text(b)) for b in message.blocks)
        if len(batch) >= MESSAGE_BATCH or chars >= MESSAGE_BATCH_CHARS:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def message_reference_tokens_many(
    messages: tuple[EngineMessage, ...] | list[EngineMessage],
) -> list[int]:
    """``tokens.message_reference_tokens`` for many messages in one batched tokenizer call.

    Equal, message by message, to the one-at-a-time function; distinct texts are encoded
    once (tool results repeat a lot).
    """
    slot: dict[str, int] = {}  # distinct text -> its place in the batch
    for message in messages:
        for block in message.blocks:
            if block.kind is not BlockKind.MEDIA and (text := block_text(block)):
                slot.setdefault(text, len(slot))
    counts = reference_counter().count_distinct(list(slot))
    totals = [PER_MESSAGE_OVERHEAD] * len(messages)
    for i, message in enumerate(messages):
        for block in message.blocks:
            if block.kind is BlockKind.MEDIA:
                totals[i] += MEDIA_TOKENS
            elif text := block_text(block):
                totals[i] += counts[slot[text]]
    return totals


def preview_of(message: EngineMessage) -> str:
    text = " ".join(message.text.split())
    if not text:
        names = [b.tool_name or b.kind.value for b in message.blocks]
        text = ", ".join(names)
    if len(text) > PREVIEW_CHARS:
        text = text[: PREVIEW_CHARS - 1] + "…"
    return text


def _json_adapter() -> Callable[[Any], Any]:
    """A JSON value as the database's JSONField stores it.

    SQLite keeps JSON as text: compact separators (smaller, faster to write and to read
    back); ASCII escapes as Django writes them, since a lone surrogate from an untrusted
    source would not encode as UTF-8. Other databases get the field's own adapter.
    """
    if connection.vendor == "sqlite":
        encoder = json.JSONEncoder(separators=(",", ":"))
        return encoder.encode
    field_ = Message._meta.get_field("flags")
    return lambda value: field_.get_db_prep_save(value, connection)
