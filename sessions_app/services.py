"""Writes for imported transcripts: parse with the engine, mask secrets, count tokens, store.

``upload_import`` is the one path every import takes (web page, CLI, demo loader, tests):
one transaction per file, so a file that fails stores nothing at all.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, models, transaction
from django.db.models import Field

from ctxlab.engine import codec, import_warnings, importers
from ctxlab.engine.model import (
    BlockKind,
    Conversation,
    ParsedFile,
    TranscriptError,
)
from ctxlab.engine.model import (
    Message as EngineMessage,
)
from ctxlab.engine.tokens import MEDIA_TOKENS, PER_MESSAGE_OVERHEAD, block_text, reference_counter

from . import secrets_glue
from .models import Message, Transcript, Upload, message_fields

log = logging.getLogger(__name__)

MESSAGE_BATCH = 2000
# A batch is also cut at this many characters of row text: 2,000 rows of big tool
# results would otherwise hold a whole file's text again (and SQLite's copy of it).
MESSAGE_BATCH_CHARS = 4 * 1024 * 1024
PREVIEW_CHARS = 200
DEFAULT_MAX_UPLOAD_BYTES = 200 * 1024 * 1024
# ctxlab's own lossless file: codec JSON of a ParsedFile (the synthetic demo is stored so).
NATIVE_FORMAT = "ctxlab"
NATIVE_VERSION = "parsed-file/1"
NATIVE_MARK = b'{"ctxlab":'


def importer_version() -> str:
    """Recorded on each upload so a later importer fix can tell which uploads to re-parse."""
    return str(getattr(importers, "VERSION", "1"))


def max_upload_bytes() -> int:
    return int(getattr(settings, "CTXLAB_MAX_UPLOAD_BYTES", DEFAULT_MAX_UPLOAD_BYTES))


def oversize_error(*, name: str, size: int) -> TranscriptError:
    limit = max_upload_bytes()
    return TranscriptError(
        f"the file is {size:,} bytes, over the {limit:,}-byte upload limit",
        file=name,
        expected=f"a file of at most {limit:,} bytes (CTXLAB_MAX_UPLOAD_BYTES)",
    )


# Outcome


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    id: str
    title: str
    messages: int
    tool_calls: int
    tool_results: int
    transcript_id: int | None = None


@dataclass(frozen=True, slots=True)
class ImportOutcome:
    """What happened to one file: stored, recognised as a duplicate, or refused with why."""

    name: str
    size: int
    format: str = ""
    upload: Upload | None = None
    duplicate: bool = False
    error: TranscriptError | None = None
    conversations: tuple[ConversationSummary, ...] = ()
    warnings: tuple[dict[str, Any], ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def described_warnings(self) -> list[dict[str, Any]]:
        return describe_warnings(self.warnings)

    @property
    def set_aside(self) -> list[str]:
        return set_aside_sentences(self.warnings)

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``--json`` line (and the upload page's JSON twin)."""
        return {
            "file": self.name,
            "format": self.format or None,
            "conversations": [
                {
                    "id": c.id,
                    # The stored id, for ``replay --transcript ID`` and /transcripts/ID/.
                    "transcript": c.transcript_id,
                    "title": c.title,
                    "messages": c.messages,
                    "tool_calls": c.tool_calls,
                    "tool_results": c.tool_results,
                }
                for c in self.conversations
            ],
            "warnings": self.described_warnings,
            "set_aside": self.set_aside,
            "error": None if self.error is None else str(self.error),
            "duplicate": self.duplicate,
            "upload": None if self.upload is None else self.upload.pk,
            "transcripts": [c.transcript_id for c in self.conversations],
            "size": self.size,
        }


def describe_warnings(warnings: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored warnings with their catalogue label and one-line meaning (when coded)."""
    described = []
    for warning in warnings:
        entry = import_warnings.describe(str(warning.get("code", "")))
        item = dict(warning)
        if entry is not None:
            item.update(label=entry.label, meaning=entry.meaning)
            # Already said in plain words by set_aside_sentences (pages show it once).
            item["set_aside"] = entry.code in (*_LEFT_OUT, *_MOVED)
        described.append(item)
    return described


# Warnings that mean lines of the file are not in any imported conversation, or were
# moved out of the main one: said in plain words on the upload result and by the CLI.
_LEFT_OUT = ("side-lines-set-aside", "parent-cycle")
_MOVED = ("alternate-branch",)


def set_aside_sentences(warnings: Iterable[dict[str, Any]]) -> list[str]:
    sentences = []
    for warning in warnings:
        code, count = warning.get("code", ""), int(warning.get("count", 1))
        entry = import_warnings.describe(str(code))
        if entry is None or code not in (*_LEFT_OUT, *_MOVED):
            continue
        lines = f"{count:,} line{'s' if count != 1 else ''}"
        verb = "set aside" if code in _LEFT_OUT else "moved to an alternate conversation"
        where = f" (first at {warning['where']})" if warning.get("where") else ""
        sentences.append(f"{lines} {verb}{where}: {entry.meaning}.")
    return sentences


# Import


def upload_import(
    *, owner: Any, name: str, data: bytes, format: str | None = None
) -> ImportOutcome:
    """Parse ``data`` and store it for ``owner``; never raises for bad input."""
    return _import(owner=owner, name=name, data=data, format=format)


def _import(
    *,
    owner: Any,
    name: str,
    data: bytes,
    format: str | None,
    parsed: ParsedFile | None = None,
) -> ImportOutcome:
    """``upload_import``; ``parsed`` (when given) is what parsing ``data`` yields."""
    name = name[:255]
    size = len(data)
    if size > max_upload_bytes():
        return ImportOutcome(name=name, size=size, error=oversize_error(name=name, size=size))
    sha256 = hashlib.sha256(data).hexdigest()
    existing = _existing_upload(owner=owner, sha256=sha256)
    if existing is not None:
        return _duplicate_outcome(existing, name=name)
    if parsed is None:
        try:
            parsed = _parse(data, name=name, format=format)
        except TranscriptError as exc:
            return ImportOutcome(name=name, size=size, format=format or "", error=exc)
    prepared = _prepare(parsed)
    try:
        with transaction.atomic():
            upload = Upload.objects.create(
                owner=owner,
                name=name,
                format=parsed.format,
                forced_format=format or "",
                size=size,
                sha256=sha256,
                data=b"",
                importer_version=importer_version(),
            )
            _write_data(upload, data)
            _store(upload, prepared, existing={})
    except IntegrityError:
        # The same content was stored concurrently (unique owner+sha256): report that one.
        existing = _existing_upload(owner=owner, sha256=sha256)
        if existing is None:
            raise
        return _duplicate_outcome(existing, name=name)
    return _stored_outcome(upload, prepared)


def upload_reparse(*, upload: Upload) -> ImportOutcome:
    """Re-parse the kept bytes with the current importers, replacing the stored messages.

    Transcripts keep their ids where the file still yields a conversation at the same
    position (runs point at them); extra old ones are deleted. On error nothing changes.
    """
    data = bytes(Upload.objects.values_list("data", flat=True).get(pk=upload.pk))
    try:
        parsed = _parse(data, name=upload.name, format=upload.forced_format or None)
    except TranscriptError as exc:
        return ImportOutcome(name=upload.name, size=upload.size, upload=upload, error=exc)
    prepared = _prepare(parsed)
    with transaction.atomic():
        existing = {t.position: t for t in upload.transcripts.all()}
        upload.format = parsed.format
        upload.importer_version = importer_version()
        _store(upload, prepared, existing=existing)
    return _stored_outcome(upload, prepared)


def upload_delete(*, upload: Upload) -> None:
    upload.delete()


def conversation_import(
    *, owner: Any, name: str, conversations: Sequence[Conversation], source_format: str
) -> ImportOutcome:
    """Store conversations built in Python (the synthetic demo) as a ctxlab-native file.

    The kept bytes are the codec JSON of the conversations, so re-parse and download work
    as for any other upload. The conversations themselves are stored, not the bytes parsed
    back: the codec round-trip is lossless, and decoding 20,000 messages again costs ~1 s.
    """
    parsed = ParsedFile(format=source_format, conversations=tuple(conversations))
    document = {"ctxlab": NATIVE_VERSION, **codec.parsed_file_to_dict(parsed)}
    data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    return _import(owner=owner, name=name, data=data, format=NATIVE_FORMAT, parsed=parsed)


def _parse_native(data: bytes, *, name: str) -> ParsedFile:
    try:
        document = json.loads(data)
        if not isinstance(document, dict) or document.get("ctxlab") != NATIVE_VERSION:
            raise ValueError(f"not a {NATIVE_VERSION} document")
        return codec.parsed_file_from_dict(document)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise TranscriptError(
            f"unreadable ctxlab file: {exc}", file=name, expected=f"a {NATIVE_VERSION} document"
        ) from None


def _parse(data: bytes, *, name: str, format: str | None) -> ParsedFile:
    if format == NATIVE_FORMAT or (format is None and data[:16].startswith(NATIVE_MARK)):
        return _parse_native(data, name=name)
    try:
        return importers.parse(data, name=name, format=format)
    except TranscriptError:
        raise
    except Exception as exc:  # an importer bug must not become a 500 for a whole batch
        log.exception("importer crashed on %s", name)
        raise TranscriptError(
            f"the importer failed unexpectedly ({type(exc).__name__}: {exc})", file=name
        ) from exc


def _existing_upload(*, owner: Any, sha256: str) -> Upload | None:
    return Upload.objects.defer("data").filter(owner=owner, sha256=sha256).first()


# Preparing rows (outside the transaction: parsing, masking and counting are the slow part)


@dataclass(frozen=True, slots=True)
class _Prepared:
    format: str
    conversations: tuple[Conversation, ...]  # masked
    findings: tuple[list[dict[str, Any]], ...]  # per conversation
    tokens: tuple[list[int], ...]  # per conversation, per message
    warnings: tuple[dict[str, Any], ...]


def _prepare(parsed: ParsedFile) -> _Prepared:
    masked, findings = [], []
    for conversation in parsed.conversations:
        clean, found = secrets_glue.mask_conversation(conversation)
        masked.append(clean)
        findings.append(found)
    counts = message_reference_tokens_many([m for c in masked for m in c.messages])
    tokens, start = [], 0
    for conversation in masked:
        end = start + len(conversation.messages)
        tokens.append(counts[start:end])
        start = end
    return _Prepared(
        format=parsed.format,
        conversations=tuple(masked),
        findings=tuple(findings),
        tokens=tuple(tokens),
        # Warnings may quote the file (a bad tool argument, a line): masked like the rest.
        warnings=tuple(
            secrets_glue.mask_strings(codec.warning_to_dict(w)) for w in parsed.warnings
        ),
    )


def message_reference_tokens_many(messages: Sequence[EngineMessage]) -> list[int]:
    """``tokens.message_reference_tokens`` for many messages in one batched tokenizer call.

    Equal, message by message, to the one-at-a-time function; distinct texts are encoded
    once (tool results repeat a lot). Two passes over the messages rather than a list of
    (message, text) pairs and text-to-count maps: for a million messages those cost ~200 MB.
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


def _common_file(conversation: Conversation) -> str:
    files = Counter(m.source.file for m in conversation.messages)
    return files.most_common(1)[0][0] if files else ""


def _reported_peak(conversation: Conversation) -> int | None:
    peaks = [m.usage.context_tokens for m in conversation.messages if m.usage is not None]
    return max(peaks) if peaks else None


def _store(upload: Upload, prepared: _Prepared, *, existing: dict[int, Transcript]) -> None:
    """Write transcripts and messages for ``upload`` (inside the caller's transaction)."""
    transcripts: list[Transcript] = []
    for position, conversation in enumerate(prepared.conversations):
        findings = prepared.findings[position]
        tokens = prepared.tokens[position]
        values = {
            "owner_id": upload.owner_id,
            "upload": upload,
            "position": position,
            "conversation_id": conversation.id,
            "title": conversation.title,
            "format": prepared.format,
            "parent_conversation_id": conversation.parent_id,
            "model": conversation.model,
            "usage_convention": conversation.usage_convention,
            "source_file": _common_file(conversation),
            "message_count": len(conversation.messages),
            "tool_call_count": conversation.tool_call_count,
            "tool_result_count": conversation.tool_result_count,
            "reference_tokens": sum(tokens),
            "reported_peak_context": _reported_peak(conversation),
            "tools": [codec.tool_to_dict(t) for t in conversation.tools],
            "compactions": [codec.compaction_to_dict(c) for c in conversation.compactions],
            "metadata": codec.metadata_to_list(conversation.metadata),
            "secret_count": len(findings),
            "secrets": findings,
            "parent": None,
            "revision": uuid.uuid4().hex,  # the messages change: cached decodings go stale
        }
        old = existing.pop(position, None)
        if old is None:
            transcripts.append(Transcript(**values))
        else:
            for key, value in values.items():
                setattr(old, key, value)
            old.save()
            old.messages.all().delete()
            transcripts.append(old)
    for stale in existing.values():
        stale.delete()
    new = [t for t in transcripts if t.pk is None]
    Transcript.objects.bulk_create(new)
    _link_parents(transcripts)
    _bulk_messages(transcripts, prepared)

    upload.warnings = list(prepared.warnings)
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


def _write_data(upload: Upload, data: bytes) -> None:
    """Store the kept bytes with ``executemany``: with DEBUG on, ``execute`` renders every
    parameter into the query log, which for a 20 MB file costs ~1 s and twice its size."""
    field = Upload._meta.get_field("data")
    quote = connection.ops.quote_name
    table, column, pk = Upload._meta.db_table, _column(field), _column(Upload._meta.pk)
    sql = f"UPDATE {quote(table)} SET {quote(column)} = %s WHERE {quote(pk)} = %s"
    with connection.cursor() as cursor:
        cursor.executemany(sql, [(field.get_db_prep_save(data, connection), upload.pk)])
        if connection.vendor == "sqlite":
            # Python's sqlite3 keeps the statement cached with its last bound values: SQLite's
            # copy of the file's bytes (a whole file size) lived until the connection closed.
            # Running it again with an empty value on no row rebinds it to nothing.
            cursor.execute(sql, [b"", -1])
    upload.data = data


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


def _bulk_messages(transcripts: list[Transcript], prepared: _Prepared) -> None:
    """Insert every message with one prepared INSERT run by ``executemany``.

    ``bulk_create`` spent ~0.2 ms per row preparing 23 fields through the ORM and, with
    DEBUG on, formatting each multi-megabyte statement for the query log; a plain
    parameterised insert does the same write (no signals either way) at a fraction.
    """
    columns = _message_columns()
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        connection.ops.quote_name(Message._meta.db_table),
        ", ".join(connection.ops.quote_name(_column(f)) for f in columns),
        ", ".join(["%s"] * len(columns)),
    )
    json_column = [isinstance(f, models.JSONField) for f in columns]
    to_json = _json_adapter()
    empty = to_json([])
    batch: list[list[Any]] = []
    batch_chars = 0
    with connection.cursor() as cursor:
        for transcript, conversation, tokens, findings in zip(
            transcripts, prepared.conversations, prepared.tokens, prepared.findings, strict=True
        ):
            where: dict[int, list[list[Any]]] = {}
            for found in findings:
                if found["message"] is not None:  # None: a tool definition or metadata
                    where.setdefault(found["message"], []).append([found["block"], found["kind"]])
            for index, message in enumerate(conversation.messages):
                values = {
                    "transcript_id": transcript.pk,
                    "index": index,
                    "preview": preview_of(message),
                    "reference_tokens": tokens[index],
                    "secrets": where.get(index, []),
                    **message_fields(message, default_file=transcript.source_file),
                }
                row = [values[f.attname] for f in columns]
                for i, is_json in enumerate(json_column):
                    if is_json:
                        row[i] = empty if row[i] == [] else to_json(row[i])
                batch.append(row)
                batch_chars += sum(len(v) for v in row if isinstance(v, str | bytes))
                if len(batch) >= MESSAGE_BATCH or batch_chars >= MESSAGE_BATCH_CHARS:
                    cursor.executemany(sql, batch)
                    batch, batch_chars = [], 0
        if batch:
            cursor.executemany(sql, batch)


def _column(field: Field[Any, Any] | None) -> str:
    """A concrete field's column name (the stubs allow None for fields without one)."""
    if field is None or field.column is None:
        raise TypeError(f"{field!r} has no database column")
    return field.column


def _message_columns() -> list[Field[Any, Any]]:
    """Every stored column but the id, in model order (a new field is picked up here and
    must then be in ``message_fields`` or the values above: the KeyError says so)."""
    return [f for f in Message._meta.concrete_fields if not f.primary_key]


def _json_adapter() -> Callable[[Any], Any]:
    """A JSON value as the database's JSONField stores it.

    SQLite keeps JSON as text: compact separators (smaller, faster to write and to read
    back); ASCII escapes as Django writes them, since a lone surrogate from an untrusted
    source would not encode as UTF-8. Other databases get the field's own adapter.
    """
    if connection.vendor == "sqlite":
        encoder = json.JSONEncoder(separators=(",", ":"))
        return encoder.encode
    field = Message._meta.get_field("blocks")
    return lambda value: field.get_db_prep_save(value, connection)


def _summaries(transcripts: Iterable[Transcript]) -> tuple[ConversationSummary, ...]:
    return tuple(
        ConversationSummary(
            id=t.conversation_id,
            title=t.title,
            messages=t.message_count,
            tool_calls=t.tool_call_count,
            tool_results=t.tool_result_count,
            transcript_id=t.pk,
        )
        for t in transcripts
    )


def _stored_outcome(upload: Upload, prepared: _Prepared) -> ImportOutcome:
    transcripts = upload.transcripts.order_by("position").only(
        "pk", "conversation_id", "title", "message_count", "tool_call_count", "tool_result_count"
    )
    return ImportOutcome(
        name=upload.name,
        size=upload.size,
        format=upload.format,
        upload=upload,
        conversations=_summaries(transcripts),
        warnings=prepared.warnings,
    )


def _duplicate_outcome(upload: Upload, *, name: str) -> ImportOutcome:
    transcripts = upload.transcripts.order_by("position").only(
        "pk", "conversation_id", "title", "message_count", "tool_call_count", "tool_result_count"
    )
    return ImportOutcome(
        name=name,
        size=upload.size,
        format=upload.format,
        upload=upload,
        duplicate=True,
        conversations=_summaries(transcripts),
        warnings=tuple(upload.warnings),
    )


# Reads used by other apps


def load_conversation(transcript_id: int, user: Any = None) -> Conversation:
    """The stored (masked) conversation; scoped to ``user`` when one is given.

    Raises ``Transcript.DoesNotExist`` for a missing id or another user's transcript.
    """
    transcripts = Transcript.objects.all()
    if user is not None:
        transcripts = transcripts.filter(owner=user)
    return transcripts.get(pk=transcript_id).to_conversation()
