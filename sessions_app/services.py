"""Writes for imported transcripts: parse with the engine, mask secrets, count tokens, store.

``upload_import`` is the one path every import takes (web page, CLI, demo loader, tests):
one transaction per file, so a file that fails stores nothing at all.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from ctxlab.engine import importers, sources
from ctxlab.engine.core import codec, import_warnings
from ctxlab.engine.core.model import Conversation, ParsedFile, TranscriptError
from ctxlab.engine.core.model import Message as EngineMessage
from ctxlab.engine.importers._stream import ConversationStream, StreamedFile, from_parsed

from . import import_store, live
from .import_store import _column, message_reference_tokens_many, preview_of
from .models import Transcript, Upload

log = logging.getLogger(__name__)
T = TypeVar("T")

# Re-exported: tests and other modules count and preview messages the way imports do.
__all__ = ["message_reference_tokens_many", "preview_of"]
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
    # What the place a session came from says about it (``sources.Loaded``: "kind",
    # its facts, "summary", "note"); None for a file imported as a file.
    source: dict[str, Any] | None = None

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
            # no importer took the file: each format considered and what it looks for
            "declined": [
                {"format": fmt, "looks_for": why}
                for fmt, why in (self.error.declined if self.error is not None else ())
            ],
            "duplicate": self.duplicate,
            "upload": None if self.upload is None else self.upload.pk,
            "transcripts": [c.transcript_id for c in self.conversations],
            "size": self.size,
            **({"source": self.source} if self.source is not None else {}),
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


def upload_import_file(
    *, owner: Any, name: str, file: BinaryIO, size: int, format: str | None = None
) -> ImportOutcome:
    """``upload_import`` for a file not yet read (one on disk for the CLI, a spooled upload
    for the web page: the same path for both). Over the size limit it is refused unread;
    from its first ``importers.HEAD_BYTES`` a file that is no transcript (binary, an
    archive, empty, no known format) is refused without reading the rest; only a file
    that looks like a transcript is read whole and imported."""
    name = name[:255]
    if size > max_upload_bytes():
        return ImportOutcome(name=name, size=size, error=oversize_error(name=name, size=size))
    try:
        file.seek(0)
        head = file.read(importers.HEAD_BYTES)
        if format is None and not head.startswith(NATIVE_MARK):
            importers.detect_head(head, name, whole=len(head) >= size)
        file.seek(0)
        data = file.read()
    except TranscriptError as exc:
        return ImportOutcome(name=name, size=size, error=exc)
    except OSError as exc:
        error = TranscriptError(f"could not read the file: {exc.strerror or exc}", file=name)
        return ImportOutcome(name=name, size=size, error=error)
    return _import(owner=owner, name=name, data=data, format=format)


def import_found(
    *, owner: Any, found: Iterable[sources.Found], remember: bool = False
) -> Iterator[tuple[sources.Found, ImportOutcome]]:
    """Sessions a place holds (``sources.find``: an Entire branch, an OpenCode store,
    OpenHands folders, Cline / Roo Code tasks), each read and imported once through
    ``upload_import_file``; the outcome's ``source`` is what the place says about it.
    ``remember`` (a place on this machine: the command, not an uploaded ZIP whose name
    says nothing of where it came from): where each was found is kept
    (``Upload.source_path``), and a session found there again with more messages has them
    added to that upload (``refresh_place``)."""
    for item in found:
        try:
            loaded = item.load()
        except (TranscriptError, OSError) as exc:
            error = exc if isinstance(exc, TranscriptError) else TranscriptError(str(exc))
            yield item, ImportOutcome(name=item.name, size=0, error=error)
            continue
        facts = {**loaded.facts, "summary": loaded.summary, "note": loaded.note}
        # Imported from here before: what the session gained is added to that upload.
        previous = (
            Upload.objects.defer("data")
            .filter(owner=owner, source_path=item.where)
            .order_by("-created_at", "-id")
            .first()
            if remember
            else None
        )
        if previous is not None:
            refreshed = refresh_place(previous, loaded.data)
            if not any(o.reason for o in refreshed):
                previous.refresh_from_db()
                if any(o.grown for o in refreshed):
                    yield item, replace(_stored_outcome(previous), source=facts)
                else:
                    yield item, replace(_duplicate_outcome(previous, name=item.name), source=facts)
                continue
        outcome = upload_import_file(
            owner=owner,
            name=item.name,
            file=io.BytesIO(loaded.data),
            size=len(loaded.data),
            format=loaded.format,
        )
        if (
            remember
            and outcome.upload is not None
            and outcome.ok
            and not outcome.upload.source_path
        ):
            Upload.objects.filter(pk=outcome.upload.pk).update(source_path=item.where)
            outcome.upload.source_path = item.where
        yield item, replace(outcome, source=facts)


def _import(
    *,
    owner: Any,
    name: str,
    data: bytes,
    format: str | None,
    parsed: ParsedFile | None = None,
) -> ImportOutcome:
    """``upload_import``; ``parsed`` (when given) is what parsing ``data`` yields.

    Messages are parsed, masked, counted and written as they come, inside the one
    transaction: an error on the file's last line stores nothing at all.
    """
    name = name[:255]
    size = len(data)
    if size > max_upload_bytes():
        return ImportOutcome(name=name, size=size, error=oversize_error(name=name, size=size))
    sha256 = hashlib.sha256(data).hexdigest()
    existing = _existing_upload(owner=owner, sha256=sha256)
    if existing is not None:
        return _duplicate_outcome(existing, name=name)
    try:
        streamed = _open(data, name=name, format=format, parsed=parsed)
        with transaction.atomic():
            upload = Upload.objects.create(
                owner=owner,
                name=name,
                format=streamed.format,
                forced_format=format or "",
                size=size,
                sha256=sha256,
                data=b"",
                importer_version=importer_version(),
            )
            _write_data(upload, data)
            import_store.store_stream(upload, streamed, existing={})
    except TranscriptError as exc:
        return ImportOutcome(name=name, size=size, format=format or "", error=exc)
    except IntegrityError:
        # The same content was stored concurrently (unique owner+sha256): report that one.
        existing = _existing_upload(owner=owner, sha256=sha256)
        if existing is None:
            raise
        return _duplicate_outcome(existing, name=name)
    return _stored_outcome(upload)


def upload_reparse(*, upload: Upload) -> ImportOutcome:
    """Re-parse the kept bytes with the current importers, replacing the stored messages.

    Transcripts keep their ids where the file still yields a conversation at the same
    position (runs point at them); extra old ones are deleted. On error nothing changes.
    """
    data = bytes(Upload.objects.values_list("data", flat=True).get(pk=upload.pk))
    try:
        streamed = _open(data, name=upload.name, format=upload.forced_format or None)
        with transaction.atomic():
            existing = {t.position: t for t in upload.transcripts.all()}
            upload.format = streamed.format
            upload.importer_version = importer_version()
            import_store.store_stream(upload, streamed, existing=existing)
    except TranscriptError as exc:
        upload.refresh_from_db()
        return ImportOutcome(name=upload.name, size=upload.size, upload=upload, error=exc)
    return _stored_outcome(upload)


# A file that grows


@dataclass(frozen=True, slots=True)
class RefreshOutcome:
    """What reading a transcript's file again did.

    ``new_messages``: messages appended to this transcript (0: nothing new); ``messages``:
    its total now; ``grown``: bytes were appended to its upload (another conversation of
    the same file may be the one that grew); ``reason``: why nothing was appended when the
    file could not be (gone, changed before its end, unreadable): "" otherwise."""

    transcript_id: int
    new_messages: int = 0
    messages: int = 0
    grown: bool = False
    reason: str = ""


def refresh_transcript(transcript: Transcript) -> RefreshOutcome:
    """Read the file the transcript was imported from again (``Upload.source_path``) and
    append what it gained; the transcript keeps its id. See ``refresh_upload``."""
    outcomes = refresh_upload(transcript.upload)
    for outcome in outcomes:
        if outcome.transcript_id == transcript.pk:
            transcript.refresh_from_db()
            return outcome
    return RefreshOutcome(transcript.pk, reason="the file no longer holds this conversation")


def refresh_upload(upload: Upload, *, data: bytes | None = None) -> list[RefreshOutcome]:
    """Append what the upload's file gained since it was imported (one outcome per
    transcript, new conversations of the file included).

    The file must still start with every kept byte (same path, same first bytes: a file
    an agent appends to); the bytes kept become the file's (up to its last complete line
    when its last line is still being written, so an open session imports what is
    complete). Only the messages after the stored ones are written; the transcripts keep
    their ids, get a new ``revision`` (no decoded cache survives), their counts, facts,
    secrets and compactions are set anew and their stored derived analyses dropped. When
    the stored messages are not the file's first ones any more, the whole file is stored
    again as a re-parse does (transcripts kept by position). After the commit, each
    transcript that gained messages is announced to its channel-layer group
    (``live.send_grown``)."""
    stored = Upload.objects.defer("data").get(pk=upload.pk)
    transcripts = list(stored.transcripts.order_by("position"))

    def unchanged(reason: str = "") -> list[RefreshOutcome]:
        return [RefreshOutcome(t.pk, messages=t.message_count, reason=reason) for t in transcripts]

    if not stored.source_path:
        return unchanged("the upload was not read from a file on this machine")
    if data is None:
        try:
            data = Path(stored.source_path).read_bytes()
        except OSError as exc:
            return unchanged(f"could not read {stored.source_path}: {exc.strerror or exc}")
    if len(data) <= stored.size:
        if hashlib.sha256(data).hexdigest() == stored.sha256:
            return unchanged()
        return unchanged("the file changed before its end: import it as a new file")
    kept = bytes(Upload.objects.values_list("data", flat=True).get(pk=stored.pk))
    if not data.startswith(kept):
        return unchanged("the file changed before its end: import it as a new file")
    data = _complete_lines(data)
    if len(data) <= len(kept):
        return unchanged()  # the one new line is still being written
    return _appended(stored, data, transcripts)


def refresh_place(upload: Upload, data: bytes) -> list[RefreshOutcome]:
    """``refresh_upload`` for a session of a place (a Cline task folder, an OpenHands
    conversation, an OpenCode or Entire session: ``sources``), whose bytes the place
    rebuilds each time (a bundle of its files: no longer the kept bytes and more): the
    stored messages the new bytes still start with are kept, the rest written as for a
    grown file; the same bytes change nothing."""
    stored = Upload.objects.defer("data").get(pk=upload.pk)
    transcripts = list(stored.transcripts.order_by("position"))
    if hashlib.sha256(data).hexdigest() == stored.sha256:
        return [RefreshOutcome(t.pk, messages=t.message_count) for t in transcripts]
    return _appended(stored, data, transcripts)


def _appended(stored: Upload, data: bytes, transcripts: list[Transcript]) -> list[RefreshOutcome]:
    before = {t.pk: t.message_count for t in transcripts}
    try:
        _append(stored, data, transcripts)
    except TranscriptError as exc:
        reason = f"the grown file does not parse: {exc}"
        return [RefreshOutcome(t.pk, messages=t.message_count, reason=reason) for t in transcripts]
    except IntegrityError:  # another upload of the owner already holds these very bytes
        stored.refresh_from_db()
        same = _existing_upload(owner=stored.owner, sha256=hashlib.sha256(data).hexdigest())
        reason = f"these bytes are already stored (upload {same.pk if same else '?'})"
        return [RefreshOutcome(t.pk, messages=t.message_count, reason=reason) for t in transcripts]
    after = list(stored.transcripts.order_by("position"))
    outcomes = [
        RefreshOutcome(
            t.pk,
            new_messages=max(0, t.message_count - before.get(t.pk, 0)),
            messages=t.message_count,
            grown=True,
        )
        for t in after
    ]
    grown = [(o.transcript_id, o.messages) for o in outcomes if o.new_messages]
    transaction.on_commit(lambda: [live.send_grown(pk, total) for pk, total in grown])
    return outcomes


def _complete_lines(data: bytes) -> bytes:
    """``data`` up to its last complete line: a last line that is no JSON value yet is
    still being written (a line-per-record session the agent is appending to)."""
    cut = data.rfind(b"\n") + 1
    if cut == len(data):
        return data
    try:
        json.loads(data[cut:])
    except ValueError:
        return data[:cut]
    return data


def _append(upload: Upload, data: bytes, transcripts: list[Transcript]) -> None:
    """Store ``data`` (the upload's kept bytes and more) as the upload's, appending the
    messages it adds; one transaction."""
    streamed = _open(data, name=upload.name, format=upload.forced_format or upload.format)
    try:
        with transaction.atomic():
            _store_grown(upload, data, streamed, transcripts)
    except import_store.Diverged:
        log.info("upload %s: stored messages differ from the file's, stored again", upload.pk)
        streamed = _open(data, name=upload.name, format=upload.forced_format or upload.format)
        with transaction.atomic():
            upload.size, upload.sha256 = len(data), hashlib.sha256(data).hexdigest()
            _write_data(upload, data)
            existing = {t.position: t for t in transcripts}
            import_store.store_stream(upload, streamed, existing=existing)
            _drop_derived([t.pk for t in transcripts])


def _store_grown(
    upload: Upload, data: bytes, streamed: StreamedFile, transcripts: list[Transcript]
) -> None:
    upload.size, upload.sha256 = len(data), hashlib.sha256(data).hexdigest()
    upload.importer_version = importer_version()
    _write_data(upload, data)
    existing = {t.position: t for t in transcripts}
    import_store.append_stream(upload, streamed, existing=existing)
    _drop_derived([t.pk for t in transcripts])


def _drop_derived(transcript_ids: list[int]) -> None:
    """What was derived from a transcript's messages and stored beside them (the survival
    of its own compactions, built on first view) is built again from the grown messages."""
    from django.apps import apps

    survival = apps.get_model("replay_app", "OriginalSurvival")
    survival.objects.filter(transcript_id__in=transcript_ids).delete()


def import_path(
    *, owner: Any, path: Path, format: str | None = None
) -> tuple[ImportOutcome, list[RefreshOutcome] | None]:
    """A file on this machine: when the owner already imported this path and the file
    has only grown since, what it gained is appended to that upload (refresh outcomes
    second); otherwise imported as any file (``upload_import_file``), its path kept."""
    where = str(path.absolute())
    name = path.name
    previous = (
        Upload.objects.defer("data")
        .filter(owner=owner, source_path=where)
        .order_by("-created_at", "-id")
        .first()
    )
    try:
        size = path.stat().st_size
        if previous is not None and size >= previous.size:
            data = path.read_bytes()
            refreshed = refresh_upload(previous, data=data)
            if not any(o.reason for o in refreshed):
                previous.refresh_from_db()
                if not any(o.grown for o in refreshed):  # the same bytes: nothing to do
                    return _duplicate_outcome(previous, name=name), refreshed
                return _stored_outcome(previous), refreshed
        file = path.open("rb")
    except OSError as exc:
        error = TranscriptError(exc.strerror or str(exc), file=where)
        return ImportOutcome(name=name, size=0, error=error), None
    with file:
        outcome = upload_import_file(owner=owner, name=name, file=file, size=size, format=format)
    if outcome.upload is not None and outcome.ok and not outcome.upload.source_path:
        Upload.objects.filter(pk=outcome.upload.pk).update(source_path=where)
        outcome.upload.source_path = where
    return outcome, None


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


def _open(
    data: bytes, *, name: str, format: str | None, parsed: ParsedFile | None = None
) -> StreamedFile:
    """The file as a stream of conversations (``importers.stream``); an importer's crash,
    now or while the stream is read, becomes a ``TranscriptError`` (not a 500)."""
    if parsed is not None:
        return from_parsed(parsed)
    if format == NATIVE_FORMAT or (format is None and data[:16].startswith(NATIVE_MARK)):
        return from_parsed(_parse_native(data, name=name))
    streamed = _guarded(lambda: importers.stream(data, name=name, format=format), name)
    return StreamedFile(
        streamed.format,
        _guarded_conversations(streamed.conversations, name),
        lambda: _guarded(streamed.finish, name),
    )


def _guarded(step: Callable[[], T], name: str) -> T:
    try:
        return step()
    except TranscriptError:
        raise
    except Exception as exc:  # an importer bug must not become a 500 for a whole batch
        log.exception("importer crashed on %s", name)
        raise TranscriptError(
            f"the importer failed unexpectedly ({type(exc).__name__}: {exc})", file=name
        ) from exc


def _guarded_conversations(
    conversations: Iterator[ConversationStream], name: str
) -> Iterator[ConversationStream]:
    while (stream := _guarded(lambda: next(conversations, None), name)) is not None:
        yield ConversationStream(
            _guarded_messages(stream.messages, name),
            lambda stream=stream: _guarded(stream.finish, name),  # type: ignore[misc]
        )


def _guarded_messages(messages: Iterator[EngineMessage], name: str) -> Iterator[EngineMessage]:
    while (message := _guarded(lambda: next(messages, None), name)) is not None:
        yield message


def _existing_upload(*, owner: Any, sha256: str) -> Upload | None:
    return Upload.objects.defer("data").filter(owner=owner, sha256=sha256).first()


# Storing


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


def _stored_outcome(upload: Upload) -> ImportOutcome:
    transcripts = upload.transcripts.order_by("position").only(
        "pk", "conversation_id", "title", "message_count", "tool_call_count", "tool_result_count"
    )
    return ImportOutcome(
        name=upload.name,
        size=upload.size,
        format=upload.format,
        upload=upload,
        conversations=_summaries(transcripts),
        warnings=tuple(upload.warnings),
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
