"""A run's long texts stored once: summary inputs, modified message texts, offloaded files.

A run used to copy them verbatim (up to 19 MB of summary inputs for one 20,000-message
run), although most of each is the transcript's own text: a summary input renders the
messages it summarises, a truncated or offloaded text starts with the original. Here each
such text becomes a list of *pieces*:

- ``"..."``: a short literal, inline (up to ``INLINE_MAX`` characters);
- ``{"h": key}``: a longer literal, one ``StoredText`` row per distinct text (blake2b-160 of
  its UTF-8), shared by every run that uses it and linked to each by a ``RunText`` row;
- ``[message, block, start, end, crc]`` (``[..., crc, form]`` for another form than 0):
  ``source_forms(block)[form][start:end]`` of the transcript's message: its text, or a tool
  call's input as JSON (form 0), a tool call's input as a Python literal (form 1), or
  form 0 with newlines flattened to spaces (form 2): the ways summarisers print them, with the CRC-32 of those characters' UTF-8 so that a message re-imported with
  other text afterwards is noticed (that part then reads as ``STALE``) instead of shown
  wrong.

``TextWriter`` turns the rows the worker is about to write into pieces; the readers
(``summary_inputs``, ``resolve_changes``, ``offload_texts`` ...) turn them back, with one
query for the stored texts and one for the messages they need. Rows written before this
existed keep their texts inline (``RunSummary.input``, ``changes[].message``,
``RunOffload.text``) and are read as they are.
"""

from __future__ import annotations

import hashlib
import logging
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.db.models.signals import pre_delete
from django.dispatch import receiver

from ctxlab.engine.core import codec
from ctxlab.engine.core.model import Block, BlockKind, Message
from ctxlab.engine.core.records import Event, ReplayResult, SummaryRecord
from replay_app.models import Run, RunEvent, RunOffload, RunSummary, RunText, StoredText
from replay_app.runs import textstore_candidates

if TYPE_CHECKING:
    from replay_app.runs.step_rows import NewEvent, NewSummary

log = logging.getLogger(__name__)

# Shorter literals stay inline: the rows holding pieces are stored compressed
# (models.fields.PackedJSONField), where a short notice costs less than a key and a link.
INLINE_MAX = 1024
ANCHOR = 64  # a transcript text is looked for by its first ANCHOR characters ...
WINDOW = 16_384  # ... first within this many characters of where the last one ended
GRAM = 32  # then anywhere, through an index of GRAM-character pieces at multiples of GRAM
SCAN_MAX = 65_536  # (texts up to this long are simply scanned again instead)
QUERY_CHUNK = 500  # keys / indexes per IN (...) query
STALE = "[message {index} was re-imported after this run: this part of the text is gone]"

Piece = str | dict[str, str] | list[int]
# Where a source text occurs: (at, end, message, block, start in the source, form, source)
_Span = tuple[int, int, int, int, int, int, str]


def text_key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def source_text(block: Block) -> str:
    """The block's text as a summariser or a strategy sees it (a tool call: its input)."""
    return block.input_json if block.kind == BlockKind.TOOL_USE else block.text


def source_forms(block: Block) -> tuple[str, str, str]:
    """The ways a text of this block is rendered (see the module doc; "" = not this form)."""
    text = source_text(block)
    parsed = block.kind == BlockKind.TOOL_USE and not isinstance(block.tool_input, str)
    return (
        text,
        repr(block.tool_input) if parsed else "",
        text.replace("\n", " ") if "\n" in text else "",
    )


class _Grams:
    """The ``GRAM``-character pieces starting at multiples of ``GRAM`` of a text, as a set:
    an anchor (``2 * GRAM`` characters) occurs in the text only if one of its ``GRAM``
    pieces is there (an occurrence at ``a`` covers the piece at the next multiple), so an
    absent anchor is told in ``GRAM`` lookups, and a present one is found by one C-level
    ``str.find``. Built at C speed (``map`` over slices): a per-position index of lists
    cost more to build than every search it saved."""

    def __init__(self, text: str) -> None:
        self.text = text
        size = len(text)
        cuts = map(slice, range(0, size - GRAM + 1, GRAM), range(GRAM, size + 1, GRAM))
        self.pieces = set(map(text.__getitem__, cuts))

    def find(self, anchor: str, start: int) -> int:
        """``self.text.find(anchor, start)`` for a ``2 * GRAM``-character anchor."""
        pieces = self.pieces
        for k in range(GRAM):
            if anchor[k : k + GRAM] in pieces:
                return self.text.find(anchor, start)
        return -1


def _common_suffix(text: str, end: int, source: str, known: int) -> int:
    """Length of the longest common suffix of ``text[:end]`` and ``source``."""
    lo, hi = known, min(len(source), end)
    size = len(source)
    while lo < hi:  # text[end-lo:end] == source[size-lo:]
        mid = (lo + hi + 1) // 2
        if text[end - mid : end - lo] == source[size - mid : size - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_prefix(text: str, at: int, source: str, known: int) -> int:
    """Length of the longest common prefix of ``text[at:]`` and ``source`` (``known``
    characters are known to match)."""
    if text.startswith(source, at):
        return len(source)
    lo, hi = known, min(len(source), len(text) - at)
    while lo < hi:  # text[at:at+lo] == source[:lo]; grow lo by halving the gap
        mid = (lo + hi + 1) // 2
        if text[at + lo : at + mid] == source[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


# ---------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------


def _text(source: str | SummaryRecord) -> str:
    return source if isinstance(source, str) else source.input


class TextWriter:
    """Turns a run's rows into pieces before they are written; ``write()`` stores the new
    texts and links (inside the writer's transaction, before the rows)."""

    def __init__(self, run: Run, messages: Sequence[Message]) -> None:
        self.run = run
        self.messages = messages
        self.pending: dict[str, str] = {}  # key -> text, not yet written
        self.linked: set[str] = set()  # keys this run links already
        self.offload_index: dict[str, int] = {}  # offload path -> the message it came from
        # Offloaded messages since the last flush, (index, their modified texts): a message
        # with several outputs offloaded names one path in its change, the others in text.
        self.offloaded: list[tuple[int, str]] = []
        self._prefixes: textstore_candidates.SourcePrefixes | None = None  # on first use
        # Summary inputs stored as pieces later (``summaries_later``): (seq, input,
        # messages), the input its text (written inline for now) or the record whose
        # input is made when read (its row has none yet); None: each is stored as pieces
        # as it comes.
        self.later: list[tuple[int, str | SummaryRecord, Any]] | None = None

    def literal(self, pieces: list[Piece], text: str) -> None:
        if not text:
            return
        if len(text) <= INLINE_MAX:
            pieces.append(text)
            return
        key = text_key(text)
        if key not in self.linked:
            self.pending[key] = text
        pieces.append({"h": key})

    def encode(self, text: str, indexes: Iterable[int]) -> list[Piece]:
        """``text`` as pieces: the texts of the messages ``indexes`` where they occur in it
        (whole, a prefix, or a head and a tail), and literals between. Every piece is an
        exact match, so the pieces always join back to ``text``."""
        spans = sorted(self._spans(text, indexes), key=lambda s: (s[0], s[0] - s[1]))
        pieces: list[Piece] = []
        cursor = 0
        for at, end, i, j, start, form, source in spans:
            if end - max(at, cursor) < ANCHOR:
                continue
            if at < cursor:  # overlaps the one before: keep the rest of it
                start, at = start + cursor - at, cursor
            self.literal(pieces, text[cursor:at])
            stop = start + end - at
            pieces.append([i, j, start, stop, _crc(source[start:stop])] + ([form] if form else []))
            cursor = end
        self.literal(pieces, text[cursor:])
        return pieces

    def _spans(self, text: str, indexes: Iterable[int]) -> list[_Span]:
        """Where the messages' texts occur: near where the previous one ended (the usual
        case: texts are rendered in order), else their first unclaimed occurrence."""
        if isinstance(indexes, Sequence) and textstore_candidates.worthwhile(text, indexes):
            # many indexes for the text (a summary of summaries): only those that may match
            if self._prefixes is None:
                self._prefixes = textstore_candidates.SourcePrefixes(
                    self.messages, source_forms, ANCHOR
                )
            indexes = self._prefixes.may_match(text, indexes)
        spans: list[_Span] = []
        grams: _Grams | None = None  # built on the first search away from the hint
        claimed: set[int] = set()
        hint = 0
        count = len(self.messages)
        for i in indexes:
            if not 0 <= i < count:
                continue
            for j, block in enumerate(self.messages[i].blocks):
                forms = [(f, t) for f, t in enumerate(source_forms(block)) if len(t) >= ANCHOR]
                # Near where the last text ended first (texts are usually rendered in order),
                # else the first unclaimed occurrence anywhere.
                found = [
                    (f, t, text.find(t[:ANCHOR], hint, hint + WINDOW + ANCHOR)) for f, t in forms
                ]
                found = [(f, t, at) for f, t, at in found if at >= 0 and at not in claimed]
                if not found:
                    for form, source in forms:
                        at, tries = -1, 0
                        while tries < 8:  # skip occurrences other texts claimed
                            after = 0 if at < 0 else at + 1
                            if len(text) <= SCAN_MAX:  # short: scanning beats an index
                                at = text.find(source[:ANCHOR], after)
                            else:
                                grams = grams or _Grams(text)
                                at = grams.find(source[:ANCHOR], after)
                            if at < 0 or at not in claimed:
                                break
                            tries += 1
                        if at >= 0 and at not in claimed:
                            found.append((form, source, at))
                best: tuple[int, int, int, str] | None = None  # (at, n, form, source)
                for form, source, at in found:
                    n = _common_prefix(text, at, source, ANCHOR)
                    if best is None or n > best[1]:
                        best = (at, n, form, source)
                if best is None:
                    continue
                at, n, form, source = best
                claimed.add(at)
                spans.append((at, at + n, i, j, 0, form, source))
                hint = at + n
                if len(source) - n < ANCHOR:
                    continue
                # Cut in the middle ("head ... N tokens truncated ... tail"): the tail too.
                end = text.find(source[-ANCHOR:], hint, hint + WINDOW + ANCHOR) + ANCHOR
                if end < ANCHOR:
                    continue
                m = min(_common_suffix(text, end, source, ANCHOR), len(source) - n, end - hint)
                spans.append((end - m, end, i, j, len(source) - m, form, source))
                hint = end
        return spans

    def summary(self, row: NewSummary, record: SummaryRecord | None = None) -> None:
        """``record``: the row's engine record, when the row was made without its input
        (``NewSummary.of(..., with_input=False)``): read when stored (``summaries_later``)."""
        if self.later is not None:  # inline (a reader reads it as it is) or unread, encoded later
            self.later.append((row.seq, row.input if record is None else record, row.messages))
            return
        text = row.input if record is None else record.input
        row.input_parts = self.encode(text, row.messages)
        row.input = ""

    def summaries_later(self) -> list[tuple[int, list[Piece]]]:
        """The inputs kept for later as pieces, by summary ``seq``: the rows to update
        (with ``write()`` for their texts, in one transaction). They stay kept, for
        ``summaries_unstored`` should the rows not be written."""
        later = self.later or []
        return [(seq, self.encode(_text(source), messages)) for seq, source, messages in later]

    def summaries_unstored(self) -> list[tuple[int, str]]:
        """The inputs kept for later whose rows hold no text yet, as (seq, text): what to
        store inline when they could not be stored as pieces (made or written)."""
        later, self.later = self.later or [], []
        return [(seq, source.input) for seq, source, _ in later if not isinstance(source, str)]

    def event(self, row: NewEvent) -> None:
        for change in row.changes:
            if change.get("offload_path"):
                self.offload_index.setdefault(change["offload_path"], int(change["index"]))
            message = change.pop("message", None)
            if message is not None and change.get("fate") == "offloaded":
                texts = "\n".join(str(b.get("text", "")) for b in message.get("blocks") or [])
                self.offloaded.append((int(change["index"]), texts))
            if message is not None:
                self._blocks(message.get("blocks") or [], int(change["index"]))
                change["message@"] = message

    def _blocks(self, blocks: list[dict[str, Any]], index: int) -> None:
        for block in blocks:
            text = block.get("text")
            if isinstance(text, str) and len(text) > INLINE_MAX:
                block["text@"] = self.encode(block.pop("text"), (index,))
            self._blocks(block.get("parts") or [], index)

    def offloads(
        self, offloads: Mapping[str, str], written: set[str]
    ) -> list[tuple[str, str, list[Piece]]]:
        """The ``RunOffload`` rows of the files not ``written`` yet: (path, text, text_parts)."""
        rows = []
        for path in offloads:  # (a text is unpacked only when it is new: core PackedTexts)
            if path in written:
                continue
            text = offloads[path]
            index = self.offload_index.get(path)
            if index is None:
                index = next((i for i, texts in self.offloaded if path in texts), None)
            parts = self.encode(text, () if index is None else (index,))
            rows.append((path, "", parts))
        self.offloaded = []
        return rows

    def write(self) -> None:
        """Store the texts met since the last call and link them to the run."""
        if not self.pending:
            return
        texts = [
            StoredText(key=k, text=t, size=len(t.encode("utf-8", "surrogatepass")))
            for k, t in self.pending.items()
        ]
        StoredText.objects.bulk_create(texts, batch_size=200, ignore_conflicts=True)
        links = [RunText(run=self.run, text_id=k) for k in self.pending]
        RunText.objects.bulk_create(links, batch_size=500, ignore_conflicts=True)
        self.linked.update(self.pending)
        self.pending = {}


# ---------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------


class _Reader:
    """Resolves pieces of one transcript's runs: ``need`` them all, then ``text`` each."""

    def __init__(self, transcript_id: int) -> None:
        self.transcript_id = transcript_id
        self.keys: set[str] = set()
        self.indexes: set[int] = set()
        self.texts: dict[str, str] = {}
        self.blocks: dict[int, tuple[Block, ...]] = {}

    def need(self, pieces: Iterable[Piece]) -> None:
        for piece in pieces:
            if isinstance(piece, dict):
                self.keys.add(piece["h"])
            elif isinstance(piece, list):
                self.indexes.add(int(piece[0]))

    def load(self) -> None:
        from sessions_app.models import Message as MessageRow

        keys = sorted(self.keys - self.texts.keys())
        for start in range(0, len(keys), QUERY_CHUNK):
            chunk = keys[start : start + QUERY_CHUNK]
            self.texts.update(StoredText.objects.filter(key__in=chunk).values_list("key", "text"))
        indexes = sorted(self.indexes - self.blocks.keys())
        for start in range(0, len(indexes), QUERY_CHUNK):
            rows = (
                MessageRow.objects.filter(
                    transcript_id=self.transcript_id, index__in=indexes[start : start + QUERY_CHUNK]
                )
                .order_by()  # the model's ordering joins transcript and upload: ~30 ms a query
                .values_list("index", "blocks")
            )
            for index, blocks in rows:
                self.blocks[index] = codec.blocks_from_list(blocks)

    def text(self, pieces: Iterable[Piece]) -> str:
        out: list[str] = []
        for piece in pieces:
            if isinstance(piece, str):
                out.append(piece)
            elif isinstance(piece, dict):
                out.append(self.texts.get(piece["h"], STALE.format(index="?")))
            else:
                out.append(self._slice(*(int(v) for v in piece)))
        return "".join(out)

    def _slice(self, index: int, block: int, start: int, end: int, crc: int, form: int = 0) -> str:
        blocks = self.blocks.get(index, ())
        forms = source_forms(blocks[block]) if block < len(blocks) else ()
        if form < len(forms):
            text = forms[form][start:end]
            if len(text) == end - start and _crc(text) == crc:
                return text
        return STALE.format(index=index)


def summary_inputs(transcript_id: int, rows: Sequence[RunSummary]) -> dict[int, str]:
    """Each summary row's exact input by ``seq`` (older rows: their inline ``input``)."""
    reader = _Reader(transcript_id)
    for row in rows:
        reader.need(row.input_parts or [])
    reader.load()
    return {row.seq: reader.text(row.input_parts) if row.input_parts else row.input for row in rows}


def summary_input(row: RunSummary) -> str:
    if not row.input_parts:
        return row.input
    transcript_id = Run.objects.filter(pk=row.run_id).values_list("transcript_id", flat=True)[0]
    return summary_inputs(transcript_id, [row])[row.seq]


def summary_records(run: Run, rows: Iterable[RunSummary]) -> list[SummaryRecord]:
    rows = list(rows)
    inputs = summary_inputs(run.transcript_id, rows)
    return [row.to_record(inputs[row.seq]) for row in rows]


def _message_pieces(blocks: list[dict[str, Any]]) -> Iterable[Piece]:
    for block in blocks:
        yield from block.get("text@") or ()
        yield from _message_pieces(block.get("parts") or [])


def _restore(blocks: list[dict[str, Any]], reader: _Reader) -> list[dict[str, Any]]:
    out = []
    for block in blocks:
        block = dict(block)
        if "text@" in block:
            block["text"] = reader.text(block.pop("text@"))
        if block.get("parts"):
            block["parts"] = _restore(block["parts"], reader)
        out.append(block)
    return out


def resolve_changes(
    transcript_id: int, changes_lists: Sequence[Sequence[dict[str, Any]]]
) -> list[list[dict[str, Any]]]:
    """Events' ``changes`` lists as they were before storage: each ``message@`` back to
    the ``message`` (codec JSON) it was. Copies; other changes are returned as they are."""
    reader = _Reader(transcript_id)
    for changes in changes_lists:
        for change in changes:
            if "message@" in change:
                reader.need(_message_pieces(change["message@"].get("blocks") or []))
    reader.load()
    out = []
    for changes in changes_lists:
        resolved = []
        for change in changes:
            if "message@" in change:
                change = dict(change)
                message = dict(change.pop("message@"))
                message["blocks"] = _restore(message.get("blocks") or [], reader)
                change["message"] = message
            resolved.append(change)
        out.append(resolved)
    return out


def engine_events(transcript_id: int, rows: Sequence[RunEvent]) -> list[Event]:
    """The engine's events of these rows, modified messages read back in one go."""
    resolved = resolve_changes(transcript_id, [row.changes for row in rows])
    for row, changes in zip(rows, resolved, strict=True):
        row.changes = changes
    return [row.to_event() for row in rows]


def offload_texts(run: Run, paths: Iterable[str] | None = None) -> dict[str, str]:
    """Offloaded file path -> full text (only ``paths`` when given)."""
    rows = RunOffload.objects.filter(run=run)
    if paths is not None:
        rows = rows.filter(path__in=list(paths))
    items = list(rows.order_by("id").values_list("path", "text", "text_parts"))
    reader = _Reader(run.transcript_id)
    for _, _, parts in items:
        reader.need(parts or [])
    reader.load()
    return {path: reader.text(parts) if parts else text for path, text, parts in items}


# ---------------------------------------------------------------------------------------
# Deleting: a text goes with the last run that links it
# ---------------------------------------------------------------------------------------


def delete_orphans(keys: Iterable[str]) -> int:
    """Delete those of ``keys`` no run links any more; returns how many went."""
    keys = sorted(set(keys))
    deleted = 0
    for start in range(0, len(keys), QUERY_CHUNK):
        chunk = keys[start : start + QUERY_CHUNK]
        try:
            with transaction.atomic():
                count, _ = StoredText.objects.filter(key__in=chunk, links__isnull=True).delete()
        except (ProtectedError, IntegrityError):  # a run linked one meanwhile: keep them
            log.info("stored texts relinked while being collected; kept")
            continue
        deleted += count
    return deleted


def unlink(run: Run) -> None:
    """Forget which texts ``run`` used (its rows are being rewritten or deleted)."""
    keys = list(RunText.objects.filter(run=run).values_list("text_id", flat=True))
    RunText.objects.filter(run=run).delete()
    if keys:
        transaction.on_commit(lambda: delete_orphans(keys))


def run_deleting(run: Run) -> None:
    """Before ``run`` is deleted: its texts that no other run links go after the commit."""
    keys = list(RunText.objects.filter(run=run).values_list("text_id", flat=True))
    if keys:
        transaction.on_commit(lambda: delete_orphans(keys))


@receiver(pre_delete, sender=Run)
def _run_deleting(sender: Any, instance: Run, **kwargs: Any) -> None:
    run_deleting(instance)


# --- a stored run back to engine values (for inspection pages) ---------------------------


def run_events(run: Run, *, until_step: int | None = None) -> list[Event]:
    """The run's engine events in seq order (up to ``until_step``), modified messages read
    back in one go."""
    rows = run.events.order_by("seq")
    if until_step is not None:
        rows = rows.filter(step__lte=until_step)
    return engine_events(run.transcript_id, list(rows))


def replay_result(run: Run) -> ReplayResult:
    """The whole stored replay as the engine's ReplayResult (reads every row)."""
    events = run_events(run)
    return ReplayResult(
        strategy=run.strategy,
        params=dict(run.params),
        estimator=run.estimator,
        summarizer=run.summarizer,
        message_count=run.transcript.message_count,
        steps=[s.to_record() for s in run.steps.order_by("index")],
        events=events,
        summaries=summary_records(run, run.summaries.order_by("seq")),
        findings=[f.to_record() for f in run.findings.order_by("step", "id")],
        offloads=offload_texts(run),
        metrics=dict(run.metrics),
    )
