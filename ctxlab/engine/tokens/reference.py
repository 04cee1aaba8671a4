"""Reference-tokenizer counts for one conversation, computed once and shared.

Every preset replayed over the same conversation reuses the same per-message counts
(``reference_tokens(conversation)`` memoises the last few conversations), so the
tiktoken cost of a comparison is paid once, in one batched pass.
"""

from __future__ import annotations

import bisect
import json
import re
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from ..core.model import (
    INPUT_JSON_KEPT_MAX,
    Block,
    BlockKind,
    BlockValues,
    Conversation,
    Message,
    input_json_unkept,
)
from .cl100k import MEDIA_TOKENS, PER_MESSAGE_OVERHEAD, _encoding, block_text, reference_counter


class ReferenceTokens:
    """Per-message cl100k counts (same rule as ``tokens.message_reference_tokens``)."""

    def __init__(
        self,
        conversation: Conversation,
        stored: list[int] | None = None,
        tables: Sequence[list[list[Any]] | None] | None = None,
    ) -> None:
        """``stored``: the per-message counts kept with the transcript when it was imported
        (same rule); given, nothing is tokenized now, and a long original's running counts
        are built only when a modified copy of it is counted, unless ``tables`` (also
        kept at import, ``stored_counts``) hold them."""
        counter = reference_counter()
        self._count = counter.count
        self._count_distinct = counter.count_distinct  # uncached
        self._tables: dict[str, tuple[list[int], list[int]]] = {}
        # A long original by its first characters: (text, a message holding it, or -1
        # when its count is memoised: not from stored counts).
        self._by_head: dict[str, list[tuple[str, int]]] = {}
        # Stored running counts by the first characters of their text, read (checked
        # against the text, then memoised) when a text starting so is first counted:
        # hashing and checking every long text up front cost a replay ~40 ms at 20k
        # messages, and most replays copy few of them.
        self._pending: dict[str, list[tuple[str, list[Any]]]] = {}
        self._asked: set[str] = set()  # originals a copy was counted without (stored counts)
        self._messages = conversation.messages
        self._originals: dict[int, int] | None = None  # id(original) -> index
        self._last: tuple[Message, int] | None = None  # see ``message_of``
        self._block_owners: dict[int, int] | None = None  # id(original block) -> index
        self._wholes: dict[str, int | None] = {}  # its count, from that message's stored one
        self._calls: dict[tuple[str, str], int] = {}  # (tool name, input JSON) -> count
        self._long_calls: BlockValues[int] = BlockValues()  # (a long input) block -> count
        self._heads: dict[tuple[int, int], tuple[str, int]] = {}  # see ``text``
        self.tools = _tools_tokens(conversation, counter.count)
        # per-message counts of a strategy's own rule, stored at import (``seed_rule``)
        self._rules: dict[str, list[int]] = {}
        # Every message costs at least PER_MESSAGE_OVERHEAD: a 0 was never counted.
        if (
            stored is not None
            and len(stored) == len(conversation.messages)
            and min(stored, default=1)
        ):
            self._memo: dict[str, int] = {}
            self.per_message = list(stored)
            tool_use, skip = BlockKind.TOOL_USE, (BlockKind.MEDIA, BlockKind.OPAQUE)
            for i, msg in enumerate(conversation.messages):
                for block in msg.blocks:
                    if block.kind is tool_use:
                        # A copy is counted from an original only at the original's
                        # newlines (running counts, ``_by_difference``); ``json.dumps``
                        # escapes them, so the call of a parsed input is neither dumped
                        # nor copied here (881 texts, 16 MiB on the realistic 20k
                        # transcript) unless its name holds one.
                        name, raw = block.tool_name, block.tool_input
                        if not isinstance(raw, str):
                            if "\n" not in name:
                                continue
                            raw = block.input_json
                        if len(name) + 1 + len(raw) < TABLE_MIN:
                            continue
                        text = f"{name} {raw}"
                    else:
                        text = block.text
                        if len(text) < TABLE_MIN or block.kind in skip:
                            continue
                    self._index_head(text, i)
            if tables is not None and len(tables) == len(conversation.messages):
                self._defer_tables(conversation, tables)
            return
        texts: list[str] = []
        owners: list[int] = []
        base = [PER_MESSAGE_OVERHEAD] * len(conversation.messages)
        for i, msg in enumerate(conversation.messages):
            for block in msg.blocks:
                if block.kind is BlockKind.MEDIA:
                    base[i] += MEDIA_TOKENS
                else:
                    text = block_text(block)
                    if text:
                        texts.append(text)
                        owners.append(i)
        # One tiktoken pass over the distinct texts (a transcript repeats file contents,
        # prompts and tool outputs); the counts stay here for recounting modified messages.
        # Long texts are counted in pieces cut at safe points (same total, see
        # ``safe_split``); their running counts let a truncated copy be counted from them.
        distinct = list(dict.fromkeys(texts))
        short = [t for t in distinct if len(t) < TABLE_MIN]
        self._memo = dict(zip(short, counter.count_distinct(short), strict=True))
        if len(short) < len(distinct):
            self._count_long([t for t in distinct if len(t) >= TABLE_MIN])
        memo = self._memo
        for owner, text in zip(owners, texts, strict=True):
            base[owner] += memo[text]
        self.per_message = base

    def _defer_tables(
        self, conversation: Conversation, tables: Sequence[list[list[Any]] | None]
    ) -> None:
        """The ``stored_counts`` entries of the long texts, kept by their texts' first
        characters until one starting so is counted (``_seed_head``)."""
        pending = self._pending
        for msg, entries in zip(conversation.messages, tables, strict=True):
            for entry in entries or ():
                if len(entry) != 5 or not 0 <= entry[0] < len(msg.blocks):
                    continue
                text = block_text(msg.blocks[entry[0]])
                if len(text) >= TABLE_MIN:
                    pending.setdefault(text[:HEAD_KEY], []).append((text, entry))

    def _seed_head(self, head: str) -> None:
        """Running counts and counts of the long texts starting with ``head`` from their
        stored entries; an entry that is not its block's text (another checksum, points
        past its end) is ignored."""
        for text, entry in self._pending.pop(head, ()):
            bounds, cums = entry[3], entry[4]
            if (
                entry[1] != _checksum(text)
                or not bounds
                or len(bounds) != len(cums)
                or bounds[-1] >= len(text)
            ):
                continue
            self._tables[text] = (list(bounds), list(cums))
            self._memo[text] = int(entry[2])

    def message(self, index: int) -> int:
        return self.per_message[index]

    def _original_index(self) -> dict[int, int]:
        """Each original message object's index (by identity; built on first use)."""
        found = self._originals
        if found is None:
            found = self._originals = {id(m): i for i, m in enumerate(self._messages)}
        return found

    def message_of(self, message: Message) -> int:
        """Count a message version: an original (the very object of the conversation) is
        its per-message count, computed or stored at import, never tokenized again; a
        modified one is counted (texts memoised by the shared counter)."""
        index = self._original_index().get(id(message))
        if index is not None and self._messages[index] is message:
            return self.per_message[index]
        # The last modified version counted: a replay's context and a strategy counting
        # with these counts both ask for the version a strategy just made.
        last = self._last
        if last is not None and last[0] is message:
            return last[1]
        kept = self._from_kept_blocks(message) if message.blocks else None
        if kept is not None:
            total = kept
        else:
            total = PER_MESSAGE_OVERHEAD
            for block in message.blocks:
                total += self._block(block)
        self._last = (message, total)
        return total

    def _block(self, block: Block) -> int:
        """One block's part of a message's count (the rule of ``message_of``)."""
        if block.kind is BlockKind.MEDIA:
            return MEDIA_TOKENS
        if block.kind is BlockKind.TOOL_USE:
            return self._tool_call(block)
        return self.text(block_text(block))

    def _from_kept_blocks(self, message: Message) -> int | None:
        """The count of a copy holding some of an original's very blocks (a request view
        pruning reasoning or tool parts): the original's count less the blocks it left
        out, when those are less text to count than the ones it kept (a message's count
        is its overhead plus its blocks', so both ways give the same). None otherwise."""
        owners = self._block_owners
        if owners is None:
            owners = self._block_owners = {
                id(b): i for i, m in enumerate(self._messages) for b in m.blocks
            }
        index = owners.get(id(message.blocks[0]))
        if index is None:
            return None
        blocks = self._messages[index].blocks
        kept = {id(b) for b in message.blocks}
        if len(kept) != len(message.blocks) or len(kept) >= len(blocks):
            return None
        removed = [b for b in blocks if id(b) not in kept]
        if len(removed) != len(blocks) - len(kept):  # a block not of that original
            return None
        if sum(map(_text_length, removed)) >= sum(map(_text_length, message.blocks)):
            return None
        return self.per_message[index] - sum(self._block(b) for b in removed)

    def seed_rule(self, rule: str, counts: Sequence[int | None]) -> bool:
        """Hand over the per-message counts of a strategy's own counting ``rule`` (e.g.
        Aider's cl100k of each message's JSON), computed once at import; ignored unless
        there is one for every message (a transcript imported before they were stored
        counts in the replay, as before). True when seeded."""
        if len(counts) != len(self._messages) or any(c is None for c in counts):
            return False
        self._rules[rule] = [int(c) for c in counts if c is not None]
        return True

    def rule_of(self, rule: str, message: Message) -> int | None:
        """The stored count of ``message`` under ``rule`` when it is an original (the very
        object of the conversation) and counts were seeded; None: count it."""
        counts = self._rules.get(rule)
        if counts is None:
            return None
        index = self._original_index().get(id(message))
        if index is not None and self._messages[index] is message:
            return counts[index]
        return None

    def rule_reader(self, rule: str) -> Callable[[Message], int | None] | None:
        """``rule_of`` bound to ``rule`` and the counts seeded for it now (None without
        any): what a strategy's counter asks for every message it counts."""
        counts = self._rules.get(rule)
        if counts is None:
            return None
        found = self._original_index().get
        messages = self._messages

        def read(message: Message) -> int | None:
            index = found(id(message))
            if index is not None and messages[index] is message:
                return counts[index]
            return None

        return read

    def _tool_call(self, block: Block) -> int:
        """``text(block_text(block))`` of a tool call, memoised without a text made for it
        (the memo and the shared counter's cache kept a copy of every call of a modified
        message: 9,166 texts, 20 MiB on the realistic 20k transcript): a call with a short
        input JSON (kept for its block, ``input_json_unkept``) by its name and that string,
        a longer one by the block while it lives (its JSON is not kept for it). A text
        without a newline has no safe point (``text`` gives its whole count): it is
        counted past the memo and the shared counter's cache."""
        value = self._long_calls.peek(block)
        if value is not None:
            return value
        name, raw = block.tool_name, input_json_unkept(block)
        kept = len(raw) < INPUT_JSON_KEPT_MAX
        if kept:
            value = self._calls.get((name, raw))
            if value is not None:
                return value
        text = f"{name} {raw}"
        value = self.text(text) if "\n" in text else self._count_distinct([text])[0]
        if kept:
            self._calls[(name, raw)] = value
        else:
            self._long_calls.put(block, value)
        return value

    def _count_long(self, texts: list[str]) -> None:
        for text in texts:
            if self._table(text) is not None:
                self._index_head(text, -1)

    def _index_head(self, text: str, owner: int) -> None:
        """Make ``text`` (first held by message ``owner``) a candidate original for the
        copies that start as it does."""
        heads = self._by_head.setdefault(text[:HEAD_KEY], [])
        if len(heads) < HEAD_CANDIDATES and all(t != text for t, _ in heads):
            heads.append((text, owner))

    def _table(self, text: str) -> tuple[list[int], list[int]] | None:
        """``text``'s safe points and running counts (None without any), its count memoised."""
        table = self._tables.get(text)
        if table is not None or text in self._memo:
            return table
        self._memo[text], bounds, cums = counted_in_pieces(text)
        if bounds:
            self._tables[text] = table = (bounds, cums)
        return table

    def text(self, text: str) -> int:
        if not text:
            return 0
        value = self._memo.get(text)
        if value is not None:
            return value
        if len(text) > SPLIT_MIN and self._by_head:
            value = self._from_original(text)
            if value is not None:
                self._memo[text] = value
                return value
        cut = safe_split(text) if len(text) > SPLIT_MIN else 0
        if cut:
            # A modified text is mostly an earlier text (a truncated output, a notice with
            # a unique path at the end): its head is counted once, memoised by the text
            # it was cut from (kept by the memo anyway) instead of a copy of it (3,900
            # heads, 9 MiB on the realistic 20k transcript with complexity_trap_summary).
            head = text[:cut]
            key = (hash(head), cut)
            seen = self._heads.get(key)
            if seen is not None and seen[0].startswith(head):
                counted = seen[1]
            elif head in self._memo:
                counted = self._memo[head]
            else:
                counted = self._count_distinct([head])[0]
                self._heads[key] = (text, counted)
            value = counted + self._count(text[cut:])
        else:
            value = self._count(text)
        self._memo[text] = value
        return value

    def lines(self, text: str) -> int:
        """The count of ``text`` as the sum of its pieces between safe points (see
        ``_SAFE_POINT``: the same total), each memoised by the shared counter: a text made
        of lines seen before (a summary repeating the previous one's, a truncation notice)
        tokenizes only its new ones. Not memoised itself (``text`` is)."""
        count = self._count
        total = 0
        start = 0
        last = len(text)
        for hit in _SAFE_POINT.finditer(text):
            end = hit.end()
            if end >= last:
                break
            total += count(text[start:end])
            start = end
        return total + count(text[start:])

    def text_by_lines(self, text: str) -> int:
        """``text(text)``, a new text counted by its lines (``lines``) and memoised: a
        summary, re-made at each compaction from the previous one's lines."""
        if not text:
            return 0
        value = self._memo.get(text)
        if value is None:
            value = self._memo[text] = self.lines(text)
        return value

    def _from_original(self, text: str) -> int | None:
        """The count of a modified copy of a long original (a truncated head, a head and a
        tail around a notice), from the original's running counts: only the part between
        the last safe point of the shared head and the first of the shared tail is
        tokenized. None when no original shares enough of it."""
        key = text[:HEAD_KEY]
        if self._pending:
            self._seed_head(key)
            value = self._memo.get(text)  # (an original itself, its count just read)
            if value is not None:
                return value
        shared, original, owner = -1, "", -1
        for candidate, holder in self._by_head.get(key, ()):
            length = common_prefix(text, candidate)
            if length > shared:
                shared, original, owner = length, candidate, holder
        if not original:
            return None
        if original not in self._tables:
            whole = self._whole(original, owner)
            if whole is not None:
                value = self._by_difference(text, original, shared, whole)
                if value is not None:
                    return value
        # An original never counted yet (the counts were stored at import) costs a pass over
        # all of it, more than counting one copy whole: its running counts are built for a
        # second copy at least half its length (a strategy that cuts an output again), and
        # never for a copy truncated to a third of it.
        if original not in self._tables and (
            original in self._memo
            or len(original) > BUILD_MAX * len(text)
            or original not in self._asked
        ):
            self._asked.add(original)
            return None
        table = self._table(original)
        if table is None:
            return None
        bounds, cums = table
        # head: the original's count up to its last safe point inside the shared prefix
        # that is also safe in ``text`` (the whitespace after it may differ there)
        k = bisect.bisect_left(bounds, shared) - 1
        while k >= 0 and not _SAFE_POINT.match(text, bounds[k] - 1):
            k -= 1
        head_end = bounds[k] if k >= 0 else 0
        head = cums[k] if k >= 0 else 0
        # tail: the original from its first safe point whose preceding newline is shared
        tail_len = common_suffix(text, original, len(text) - head_end)
        j = bisect.bisect_left(bounds, len(original) - tail_len + 1)
        tail_start = len(text)
        tail = 0
        if j < len(bounds):
            tail_start = len(text) - (len(original) - bounds[j])
            tail = self._memo[original] - cums[j]
        if tail_start - head_end > len(text) - MIN_SAVED:
            return None  # too little shared to be worth it
        # (the middle by its lines: a notice a strategy appends repeats most of them)
        return head + self.lines(text[head_end:tail_start]) + tail

    def _whole(self, original: str, index: int) -> int | None:
        """The count of a long original without tokenizing it: memoised, or its message's
        (``index``, -1 for none) stored count less the message's overhead and other
        (short) blocks. None when the message holds another long text (counting it would
        cost as much)."""
        value = self._memo.get(original)
        if value is not None or original in self._wholes:
            return value if value is not None else self._wholes[original]
        found: int | None = None
        if index >= 0:
            total = self.per_message[index] - PER_MESSAGE_OVERHEAD
            same = 0
            for block in self._messages[index].blocks:
                if block.kind is BlockKind.MEDIA:
                    total -= MEDIA_TOKENS
                    continue
                other = block_text(block)
                if other == original:
                    same += 1
                elif len(other) > SPLIT_MIN:
                    total = -1
                    break
                elif other:
                    total -= self._count(other)
            if same and total >= 0 and total % same == 0:
                found = total // same
        self._wholes[original] = found
        return found

    def _by_difference(self, text: str, original: str, shared: int, whole: int) -> int | None:
        """The count of a modified copy of ``original`` (whose count is ``whole``) sharing
        its first ``shared`` characters: ``whole`` less the original's part between the
        last safe point of the shared head and the first of the shared tail, plus the
        copy's part there (both sides add up at safe points, see ``_SAFE_POINT``). Only
        the two differing middles are tokenized; None when they are not much shorter
        than the copy (counted whole then)."""
        match = _SAFE_POINT.match
        budget = len(text) - MIN_SAVED
        k = original.rfind("\n", 0, shared)
        while k >= 0 and not (match(original, k) and match(text, k)):
            k = original.rfind("\n", 0, k)
        q = k + 1  # 0 without any
        if len(original) - q + len(text) - q <= budget:
            r, r_text = len(original), len(text)  # no tail needed
        else:
            tail = common_suffix(text, original, min(len(text), len(original)) - q)
            m = original.find("\n", len(original) - tail)
            while m >= 0 and not match(original, m):
                m = original.find("\n", m + 1)
            if m < 0 or m + 1 >= len(original):
                return None
            r = m + 1
            r_text = len(text) - (len(original) - r)
            if r <= q or r_text <= q:
                return None
        if (r - q) + (r_text - q) > budget:
            return None
        count = self._count
        return whole - count(original[q:r]) + count(text[q:r_text])


def _text_length(block: Block) -> int:
    """``len(block_text(block))`` without making the text of a tool call."""
    kind = block.kind
    if kind is BlockKind.TOOL_USE:
        return len(block.tool_name) + 1 + len(block.input_json)
    if kind is BlockKind.MEDIA or kind is BlockKind.OPAQUE:
        return 0
    return len(block.text)


def counted_in_pieces(text: str) -> tuple[int, list[int], list[int]]:
    """(count, safe points, count up to each) of ``text``, tokenized between the points."""
    encode = _encoding().encode_ordinary
    bounds = safe_bounds(text, CHUNK)
    cums: list[int] = []
    total = 0
    start = 0
    for end in bounds:
        total += len(encode(text[start:end]))
        cums.append(total)
        start = end
    return total + len(encode(text[start:])), bounds, cums


def _checksum(text: str) -> int:
    """CRC-32 of the text's UTF-8 (lone surrogates passed through)."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def _tools_tokens(conversation: Conversation, count: Callable[[str], int]) -> int:
    tools = conversation.tools
    if not tools:
        return 0
    listed = [
        {"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools
    ]
    return count(json.dumps(listed, ensure_ascii=False))


SPLIT_MIN = 512  # characters; shorter texts are counted whole
TABLE_MIN = 2048  # characters; longer texts keep running counts at safe points
CHUNK = 512  # characters between those points (at least)
HEAD_KEY = 64  # a modified copy is matched to its original by this many first characters
HEAD_CANDIDATES = 4
MIN_SAVED = 512
BUILD_MAX = 2  # ... for a second copy at least half an original's length (stored counts)
# After a newline whose following whitespace run (if any) holds no other line break: the
# chunk holding that newline ends there (``\s*[\r\n]`` backtracks to it, ``[\r\n]*`` stops
# at it) and nothing looks behind, so cl100k counts both sides as in the whole, as
# ``safe_split`` argues for the narrower case of a non-space next character. Indented
# lines (``cat -n`` output, code) qualify too. Python's \s is a superset of the
# tokenizer's, so the run checked here is never shorter than the tokenizer's.
_SAFE_POINT = re.compile(r"\n(?![^\S\r\n]*[\r\n])")


def safe_bounds(text: str, step: int) -> list[int]:
    """Safe points of ``text`` (see ``_SAFE_POINT``), at least ``step`` characters apart."""
    out: list[int] = []
    search = _SAFE_POINT.search
    pos = step
    while pos < len(text):
        hit = search(text, pos - 1)
        if hit is None or hit.end() >= len(text):
            break
        out.append(hit.end())
        pos = hit.end() + step
    return out


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix (binary search over C-level comparisons). Each
    test compares only the part past the prefix already known to be shared, so the copies
    made for it add up to twice the shorter length (whole prefixes made 16 copies of up to
    the shorter length: a truncated copy and its original, for every copy counted)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:  # a[:lo] == b[:lo] already
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit`` (as ``common_prefix``: each
    test compares only the part before the suffix already known to be shared)."""
    lo, hi = 0, min(len(a), len(b), limit)
    na, nb = len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[na - mid : na - lo] == b[nb - mid : nb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def safe_split(text: str) -> int:
    r"""The last position ``q`` after a newline whose next character is not whitespace, or 0.

    cl100k's pre-tokenizer then has a chunk boundary at ``q`` and chunks ``text[:q]`` the
    same way alone: the whitespace run ending in that newline is one chunk either way
    (``\s*[\r\n]`` in the whole, ``\s++$`` alone; a punctuation run takes its trailing
    newlines in both), nothing looks behind and the only lookahead stays inside a run. So
    ``count(text) == count(text[:q]) + count(text[q:])`` exactly."""
    k = text.rfind("\n", 0, len(text) - 1)
    while k > 0:
        if not text[k + 1].isspace():  # str.isspace covers every regex \s character
            return k + 1
        k = text.rfind("\n", 0, k)
    return 0


_CACHE: OrderedDict[int, tuple[Conversation, ReferenceTokens]] = OrderedDict()
_LOCK = threading.Lock()
_KEEP = 4


def reference_tokens(conversation: Conversation) -> ReferenceTokens:
    """The (memoised) reference counts of ``conversation``."""
    key = id(conversation)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is conversation:
            _CACHE.move_to_end(key)
            return hit[1]
    value = ReferenceTokens(conversation)
    with _LOCK:
        _CACHE[key] = (conversation, value)
        while len(_CACHE) > _KEEP:
            _CACHE.popitem(last=False)
    return value


def seed_reference_tokens(
    conversation: Conversation,
    stored: list[int],
    tables: Sequence[list[list[Any]] | None] | None = None,
) -> ReferenceTokens:
    """Reference counts of ``conversation`` from the per-message counts (and the long
    texts' running counts) stored at import (``stored_counts``; what ``reference_tokens``
    then returns for it): a worker tokenizes no message again."""
    value = ReferenceTokens(conversation, stored, tables)
    with _LOCK:
        _CACHE[id(conversation)] = (conversation, value)
        _CACHE.move_to_end(id(conversation))
        while len(_CACHE) > _KEEP:
            _CACHE.popitem(last=False)
    return value
