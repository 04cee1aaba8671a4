"""Qwen2.5 token counts (CoPaw's counter), offline, exact, at tiktoken speed.

The tokenizer file ships in ``ctxlab/engine/data/qwen2_5/`` (see NOTICE.md there). It is a
byte-level BPE whose merges are listed in vocabulary-id order (merge ``i`` makes token
``256 + i``), so a tiktoken ``Encoding`` over the same vocabulary (ranks = ids), with the
file's own pre-tokenizer regex, merges exactly as ``tokenizers`` does. What ``tokenizers``
does around the BPE is reproduced here: its 22 added tokens (``<|im_start|>``,
``<tool_call>`` ...) are split out first and count one each (``encode`` recognises them even
with ``add_special_tokens=False``), then every remaining piece is NFC-normalised. Identity
is tested on every corpus text, on every Unicode code point in several contexts and by a
property test (tests/engine/tokens/test_qwen_fast.py); ~6x faster than ``tokenizers`` on one core.

Fallbacks: ``tokenizers`` when tiktoken is missing or the file's merges are not in id
order (then the shortcut would not be exact), and for texts with lone surrogates (not valid
UTF-8: ``tokenizers`` refuses them, tiktoken would replace them); ``len(utf8) // 4`` when no
tokenizer loads or it raises, exactly as CoPaw does on any tokenizer exception.
Counts are memoised per distinct text; ``prime`` counts texts one at a time, so memory
stays flat (no batch of every encoding at once). A primed text of some length is counted in
a few pieces cut where counts add up (``CUT_RE``) and keeps the count up to each cut, so
the same text inside other text (CoPaw's ``<tool_result>…</tool_result>`` summariser input)
costs only its two ends: ``count_wrapped``.
"""

from __future__ import annotations

import bisect
import functools
import json
import re
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

TOKENIZER_PATH = Path(__file__).parents[1] / "data" / "qwen2_5" / "tokenizer.json"
MEMO_LIMIT = 1_000_000  # distinct texts kept; cleared beyond (a long-lived worker)
SLOW_BATCH_CHARS = 4_000_000  # bounds one ``encode_batch`` of the tokenizers fallback


# Qwen2.5's pre-tokenizer makes every numeric character a chunk of its own (``\p{N}``, and
# every other alternative excludes \p{N}); an ASCII digit is one byte, hence one token, and
# no added token contains a digit. So replacing ASCII digits by "0" never changes a count:
# texts that differ only in their digits (timestamps) share one memo entry.
DIGIT_SHAPE = str.maketrans("123456789", "000000000")

_SURROGATE = re.compile("[\ud800-\udfff]")

# Cut points where the Qwen2.5 count is additive: count(t) == count(t[:q]) + count(t[q:]).
# (1) After a newline followed by a non-space: no pre-tokenizer chunk runs past it
# (``[\r\n]*`` and ``\s*[\r\n]+`` end there, a letter run's optional prefix excludes
# ``\n``, ``\s+(?!\S)`` is tried after ``\s*[\r\n]+``). (2) Before a space that follows
# a non-space: the chunk holding that non-space (a letter run, one digit, a contraction, a
# punctuation run whose ``[\r\n]*`` takes no space) ends there, a chunk takes a space
# only as its first character, and nothing looks behind; the matcher restarts at the
# space as on the right-hand text alone. Both: NFC composes nothing with a newline or a
# space, and no added token contains either. Python's ``\s`` is wider than the
# tokenizer's (``\x1c``-``\x1f``), so ``\S`` here is never whitespace there.
# tests/engine/tokens/test_qwen_cuts.py checks both against ``tokenizers``.
CUT_RE = re.compile(r"\n(?=\S)|(?<=\S)(?= )")
TABLE_MIN = 256  # characters; longer texts keep counts at a few cut points when primed


def _last_cut(text: str, lo: int, end: int) -> int:
    """The last point of ``CUT_RE`` in ``[lo, end)`` (0 when none): before a space whose
    previous character is no space, or after a newline whose next character is none."""
    space = text.rfind(" ", lo, end)
    while space > lo and text[space - 1].isspace():
        space = text.rfind(" ", lo, space)
    if space <= lo:  # (a cut at lo itself is no use: it is where the search starts)
        space = 0
    newline = text.rfind("\n", lo, end - 1) if end - 1 > lo else -1
    while newline >= lo and text[newline + 1].isspace():
        newline = text.rfind("\n", lo, newline)
    return max(space, newline + 1 if newline >= lo else 0)


def _checksum(text: str) -> int:
    """CRC-32 of the text's UTF-8 (lone surrogates passed through)."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def bytes_floor4(text: str) -> int:
    return len(text.encode("utf-8")) // 4


@functools.cache
def _tokenizer() -> Any:
    """The Qwen2.5 tokenizer (``tokenizers``), or None when it cannot be loaded offline."""
    try:
        from tokenizers import Tokenizer  # type: ignore[import-not-found, unused-ignore]

        return Tokenizer.from_file(str(TOKENIZER_PATH))
    except Exception:
        return None


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet (printable stand-ins for the 256 bytes), reversed."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    chars = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return {c: b for b, c in chars.items()}


def _fast_parts(spec: dict[str, Any]) -> tuple[dict[bytes, int], str, list[str]] | None:
    """(ranks, pre-tokenizer regex, added tokens) when tiktoken's rank-ordered merging is
    provably the file's own: a plain byte-level BPE, NFC, one Split regex, merges in id
    order. None otherwise."""
    model = spec.get("model") or {}
    pre = spec.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers") or []
    if (
        model.get("type") != "BPE"
        or model.get("dropout") is not None
        or model.get("byte_fallback")
        or model.get("continuing_subword_prefix")
        or model.get("end_of_word_suffix")
        or (spec.get("normalizer") or {}).get("type") != "NFC"
        or len(steps) != 2
        or steps[0].get("type") != "Split"
        or steps[0].get("behavior") != "Isolated"
        or steps[0].get("invert")
        or steps[1].get("type") != "ByteLevel"
        or steps[1].get("use_regex")
        or steps[1].get("add_prefix_space")
    ):
        return None
    vocab: dict[str, int] = model["vocab"]
    for i, merge in enumerate(model["merges"]):
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        if vocab.get(left + right) != 256 + i:
            return None  # a merge out of id order: rank-by-id would merge differently
    decode = _byte_decoder()
    ranks = {bytes(decode[c] for c in token): rank for token, rank in vocab.items()}
    if len(ranks) != len(vocab):
        return None
    added = [t["content"] for t in spec.get("added_tokens", ())]
    if any(t.get("lstrip") or t.get("rstrip") or t.get("normalized") or t.get("single_word")
           for t in spec.get("added_tokens", ())):  # fmt: skip
        return None  # not modelled by the split below
    return ranks, steps[0]["pattern"]["Regex"], added


@functools.cache
def _fast_count() -> Callable[[str], int] | None:
    """An exact Qwen2.5 counter built on tiktoken, or None (see ``_fast_parts``)."""
    try:
        import tiktoken

        spec = json.loads(TOKENIZER_PATH.read_text(encoding="utf-8"))
        parts = _fast_parts(spec)
        del spec
        if parts is None:
            return None
        ranks, pattern, added = parts
        encoding = tiktoken.Encoding(
            name="qwen2.5", pat_str=pattern, mergeable_ranks=ranks, special_tokens={}
        )
    except Exception:
        return None
    encode = encoding.encode_ordinary
    nfc = unicodedata.normalize
    # Added tokens are matched leftmost-longest on the raw text, before normalisation.
    added_re = re.compile("|".join(map(re.escape, sorted(added, key=len, reverse=True))))
    starts = "".join(sorted({t[0] for t in added}))

    def piece_count(piece: str) -> int:
        if not piece.isascii():
            piece = nfc("NFC", piece)
        return len(encode(piece))

    def count(text: str) -> int:
        if not any(c in text for c in starts) or not added_re.search(text):
            return piece_count(text)
        total = 0
        pos = 0
        for match in added_re.finditer(text):
            if match.start() > pos:
                total += piece_count(text[pos : match.start()])
            total += 1
            pos = match.end()
        return total + (piece_count(text[pos:]) if pos < len(text) else 0)

    return count


def available() -> bool:
    return _fast_count() is not None or _tokenizer() is not None


class QwenCounter:
    """``count(text)`` = number of Qwen2.5 token ids of ``text`` (no special tokens are
    added for Qwen); bytes//4 if no tokenizer is available or it raises."""

    def __init__(self) -> None:
        self._fast = _fast_count()
        self._tok = _tokenizer() if self._fast is None else None  # loaded lazily otherwise
        self.exact = self._fast is not None or self._tok is not None
        self.name = "qwen2.5" if self.exact else "bytes//4 (Qwen2.5 tokenizer unavailable)"
        self._memo: dict[str, int] = {}
        # text -> (cut points, count of the text up to each): see ``count_wrapped``
        self._tables: dict[str, tuple[list[int], list[int]]] = {}
        # id() of the message sequence whose every text was seeded (``mark_seeded``)
        self._seeded: int | None = None
        # Per message of one sequence, values a caller counted once and stored with it
        # (CoPaw's counts of each message, ``_copaw_stored``): (the sequence, each
        # message's position by identity, the values; None for a message without any).
        self._per_message: tuple[Sequence[object], dict[int, int], list[Any]] | None = None

    def clear(self) -> None:
        self._memo.clear()
        self._tables.clear()
        self._seeded = None
        self._per_message = None

    def seed_messages(self, messages: Sequence[object], values: list[Any]) -> None:
        """Keep ``values[i]`` for ``messages[i]`` (one sequence at a time, until ``clear``):
        ``message_value`` finds it for the very message object."""
        index = {id(m): i for i, m in enumerate(messages)}
        self._per_message = (messages, index, values)

    def message_value(self, message: object) -> Any:
        """The value seeded for ``message`` (the very object), None without one."""
        held = self._per_message
        if held is None:
            return None
        messages, index, values = held
        i = index.get(id(message))
        if i is None or messages[i] is not message:
            return None
        return values[i]

    def mark_seeded(self, messages: object) -> None:
        """Every text of ``messages`` was seeded from stored entries (``_copaw_stored``):
        priming them again would find each one memoised (``seeded_for``)."""
        self._seeded = id(messages)

    def seeded_for(self, messages: object) -> bool:
        """True when ``mark_seeded(messages)`` holds since the memo was last cleared. By
        identity: another sequence reusing the id only makes a replay prime nothing,
        which counts on demand, slower, never differently."""
        return self._seeded is not None and self._seeded == id(messages)

    def memoised(self) -> int:
        """How many texts are memoised."""
        return len(self._memo)

    def count(self, text: str) -> int:
        if not text:
            return 0
        value = self._memo.get(text)
        if value is None:
            value = self._encode_one(text)
            self._memo[text] = value
        return value

    def _encode_one(self, text: str) -> int:
        if self._fast is not None and (text.isascii() or not _SURROGATE.search(text)):
            return self._fast(text)
        return self._slow_one(text)

    def _slow_one(self, text: str) -> int:
        tok = self._tok if self._tok is not None else _tokenizer()
        if tok is None:
            return bytes_floor4(text)
        try:
            return len(tok.encode(text, add_special_tokens=False).ids)
        except Exception:
            return bytes_floor4(text)

    def prime(self, texts: Iterable[str], ends: tuple[int, ...] = ()) -> None:
        """Count the texts not yet memoised, each distinct text once. The longer ones keep
        the counts ``count_wrapped`` needs to count them cut at a length in ``ends`` or
        whole, inside other text."""
        memo = self._memo
        todo = list(dict.fromkeys(t for t in texts if t and t not in memo))
        if not todo:
            return
        if len(memo) + len(todo) > MEMO_LIMIT:
            self.clear()
        if self._fast is not None:
            for t in todo:
                if len(t) < TABLE_MIN or not (t.isascii() or not _SURROGATE.search(t)):
                    memo[t] = self._encode_one(t)
                else:
                    memo[t] = self._counted_in_pieces(t, ends)
            return
        if self._tok is None:
            for t in todo:
                memo[t] = self._encode_one(t)
            return
        self._prime_slow(todo)

    def prime_joined(self, pairs: Iterable[tuple[str, str]], ends: tuple[int, ...] = ()) -> None:
        """``prime`` for texts ``head + body`` (memoised as one text) whose ``body`` is
        later counted alone inside other text (``count_wrapped``): CoPaw counts a tool
        call as its name and input, and formats the input after ``params=``."""
        memo = self._memo
        todo = list(dict.fromkeys((h, b) for h, b in pairs if (h or b) and h + b not in memo))
        if len(memo) + len(todo) > MEMO_LIMIT:
            self.clear()
        for head, body in todo:
            text = head + body
            if (
                self._fast is None
                or len(body) < TABLE_MIN
                or not (text.isascii() or not _SURROGATE.search(text))
            ):
                memo[text] = self._encode_one(text)
            else:
                memo[text] = self._counted_in_pieces(body, ends, head)
        # (without the fast counter ``_encode_one`` is ``tokenizers`` one text at a time)

    def stored_entry(self, text: str, ends: tuple[int, ...] = (), head: str = "") -> list[Any]:
        """What ``prime`` (``prime_joined`` with ``head``) keeps for ``head + text``, to be
        stored with the transcript and given back to ``seed``: ``[length, crc32, count]``
        of ``head + text`` (the first two let ``seed`` refuse an entry of another text),
        plus the cut points of ``text`` and the counts up to each when it is counted in
        pieces."""
        whole = head + text
        key = [len(whole), _checksum(whole)]
        if (
            self._fast is None
            or len(text) < TABLE_MIN
            or not (whole.isascii() or not _SURROGATE.search(whole))
        ):
            return [*key, self._encode_one(whole) if whole else 0]
        count = self._counted_in_pieces(text, ends, head)
        table = self._tables.pop(text, None)
        if table is None:
            return [*key, count]
        return [*key, count, table[0], table[1]]

    def seed(self, text: str, entry: list[Any], head: str = "") -> bool:
        """Memoise ``head + text`` from a ``stored_entry`` (and keep the cut points of
        ``text``), as ``prime`` would have counted it; False when the entry is malformed or
        not one of this text (another length or checksum)."""
        whole = head + text
        if (
            len(entry) not in (3, 5)
            or not whole
            or entry[0] != len(whole)
            or entry[1] != _checksum(whole)
        ):
            return False
        if len(entry) == 5:
            bounds, cums = entry[3], entry[4]
            if not bounds or len(bounds) != len(cums) or bounds[-1] > len(text):
                return False
            self._tables[text] = (list(bounds), list(cums))
        self._memo[whole] = int(entry[2])
        return True

    def _counted_in_pieces(self, text: str, ends: tuple[int, ...], head: str = "") -> int:
        """The count of ``head + text`` as the sum of its pieces between a few cut points of
        ``text``: the first one, the last one before each length in ``ends`` and before the
        end. Those points and the count up to each are kept for ``text``
        (``count_wrapped`` uses differences of the counts only: ``head`` cancels out)."""
        fast = self._fast
        assert fast is not None
        first = CUT_RE.search(text, 1)
        if first is None or first.end() >= len(text):
            return fast(head + text)
        start = first.end()
        points = {start}
        for end in (*ends, len(text)):
            if end <= len(text):
                points.add(max(start, _last_cut(text, start, end)))
        total = fast(head + text[:start])
        bounds = [start]
        cums = [total]
        for end in sorted(points)[1:]:
            total += fast(text[start:end])
            bounds.append(end)
            cums.append(total)
            start = end
        self._tables[text] = (bounds, cums)
        return total + fast(text[start:])

    def count_wrapped(
        self, prefix: str, source: str, length: int, suffix: str, primed_head: str = ""
    ) -> int:
        """``count(prefix + source[:length] + suffix)``. When ``source`` was counted in
        pieces (``prime``), only the two ends are tokenized: up to its first cut point and
        from its last cut point before ``length``; a cut point of ``source`` is one of the
        whole as well (each rule looks only at the two characters around it, both kept)."""
        table = self._tables.get(source)
        if table is not None and not _SURROGATE.search(prefix + suffix):
            bounds, cums = table
            j = bisect.bisect_left(bounds, length) - 1  # the last cut point before length
            if j >= 0:
                head = self.count(prefix + source[: bounds[0]])
                tail = self.count(source[bounds[j] : length] + suffix)
                return head + cums[j] - cums[0] + tail
        elif length == len(source) and (whole := self._memo.get(primed_head + source)):
            # A shorter text counted whole (``prime``; ``prime_joined`` after
            # ``primed_head``): its middle is that count less its first and last pieces
            # (words, mostly memoised), which are counted again with the prefix and the
            # suffix, so only those few characters are tokenized.
            first = CUT_RE.search(source, 1)
            if (
                first is not None
                and first.end() < len(source)
                and (source.isascii() or not _SURROGATE.search(source))
                and not _SURROGATE.search(prefix + suffix + primed_head)
            ):
                a = first.end()
                b = max(a, _last_cut(source, a, len(source)))
                count = self.count
                middle = whole - count(primed_head + source[:a]) - count(source[b:])
                return count(prefix + source[:a]) + middle + count(source[b:] + suffix)
        return self.count(prefix + source[:length] + suffix)

    def _prime_slow(self, todo: list[str]) -> None:
        """``tokenizers`` in batches of bounded size (its batch is parallel, but holds every
        encoding of the batch at once)."""
        tok = self._tok
        assert tok is not None
        start = 0
        while start < len(todo):
            end, size = start, 0
            while end < len(todo) and (end == start or size < SLOW_BATCH_CHARS):
                size += len(todo[end])
                end += 1
            batch = todo[start:end]
            try:
                encoded = tok.encode_batch(batch, add_special_tokens=False)
                for t, enc in zip(batch, encoded, strict=True):
                    self._memo[t] = len(enc.ids)
            except Exception:
                for t in batch:
                    self._memo[t] = self._slow_one(t)
            start = end


@functools.cache
def qwen_counter() -> QwenCounter:
    """The shared counter (its memo is shared by every CoPaw replay in the process)."""
    return QwenCounter()
