"""A benchmark session that repeats its texts no more than a real one does.

``synth.bench_conversation`` cycles a handful of real sessions, so 20,000 messages hold only
a few hundred distinct block texts and every per-text cache looks better than it would on a
real session (the corpus sessions are 85-100% distinct). ``realistic_bench_conversation``
joins the same way, then rewrites every repeated copy of a source so its texts are new:

- the first copy of each source is verbatim; in later copies, about a third of the
  distinct words of each message (ASCII words of 3+ letters, digit runs, single CJK/kana
  characters) are each replaced by another corpus word of the same length and letter case
  (or number of as many digits, or CJK/kana character), chosen by a hash of (copy, message
  position, word), so a message's own repeats stay consistent;
- tool inputs keep their keys and structure (only string values change), tool names, ids,
  roles, block kinds, sizes and the message mix stay those of the real sessions;
- nothing after a backslash is touched, so escapes stay escapes.

Same-length replacements keep the byte sizes and roughly the token counts. Deterministic:
the same corpus and seed give the same transcript (no ``hash()``, no clock).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import synth
from ..core.model import Block, BlockKind, Conversation, Message

# A word: 3+ ASCII letters or a run of digits, not preceded by a letter, digit, underscore
# or backslash (escape sequences such as \n or \u00e9 stay intact), or one CJK / kana
# character.
_WORD = re.compile(r"(?<![\\A-Za-z0-9_])(?:[A-Za-z]{3,}|[0-9]+)|[\u3040-\u30ff\u4e00-\u9fff]")
REPLACED_SHARE = 3  # one word in REPLACED_SHARE is replaced in a repeated copy


def _shape(word: str) -> tuple[int, str]:
    if not word.isascii():
        return (1, "cjk")
    if word.isdigit():
        return (len(word), "digits")
    case = "l" if word.islower() else "u" if word.isupper() else "t" if word.istitle() else "m"
    return (len(word), case)


class _Vocabulary:
    """Corpus words by (length, case), each list sorted (deterministic choices)."""

    def __init__(self, texts: Iterable[str]) -> None:
        buckets: dict[tuple[int, str], set[str]] = {}
        for text in texts:
            for word in _WORD.findall(text):
                buckets.setdefault(_shape(word), set()).add(word)
        self.buckets = {shape: sorted(words) for shape, words in buckets.items()}

    def renamer(self, salt_text: str) -> Callable[[str], str]:
        """``text -> text`` with the word replacements drawn for ``salt_text``."""
        chosen: dict[str, str] = {}
        salt = f"{salt_text}\0".encode()

        def pick(match: re.Match[str]) -> str:
            word = match.group()
            new = chosen.get(word)
            if new is None:
                h = zlib.crc32(salt + word.encode())
                bucket = self.buckets.get(_shape(word), ())
                new = word
                if h % REPLACED_SHARE == 0 and len(bucket) > 1:
                    new = bucket[(h // REPLACED_SHARE) % len(bucket)]
                chosen[word] = new
            return new

        return lambda text: _WORD.sub(pick, text) if text else text


def _vary_value(value: Any, rename: Callable[[str], str]) -> Any:
    """A tool input with every string value renamed; keys and structure kept."""
    if isinstance(value, str):
        return rename(value)
    if isinstance(value, dict):
        return {k: _vary_value(v, rename) for k, v in value.items()}
    if isinstance(value, list):
        return [_vary_value(v, rename) for v in value]
    return value


def _vary_block(block: Block, rename: Callable[[str], str]) -> Block:
    if block.kind in (BlockKind.MEDIA, BlockKind.OPAQUE):
        return block
    if block.kind is BlockKind.TOOL_USE:
        return replace(block, tool_input=_vary_value(block.tool_input, rename))
    parts = tuple(_vary_block(p, rename) for p in block.parts)
    return replace(block, text=rename(block.text), parts=parts)


def _block_texts(conversations: Iterable[Conversation]) -> Iterable[str]:
    for conversation in conversations:
        for message in conversation.messages:
            for block in message.blocks:
                yield block.text
                if block.kind is BlockKind.TOOL_USE:
                    yield block.input_json


class DistinctCopies:
    """A ``join_conversations`` rewrite: the first copy of each source verbatim, every
    later copy renamed (see the module docstring)."""

    def __init__(self, vocabulary_from: Iterable[str]) -> None:
        self.vocabulary = _Vocabulary(vocabulary_from)
        self.seen: set[str] = set()

    def __call__(self, copy: int, source: Conversation, messages: list[Message]) -> list[Message]:
        if source.id not in self.seen:
            self.seen.add(source.id)
            return messages
        out = []
        for position, message in enumerate(messages):
            rename = self.vocabulary.renamer(f"{copy}.{position}")
            out.append(
                replace(message, blocks=tuple(_vary_block(b, rename) for b in message.blocks))
            )
        return out


def realistic_bench_conversation(
    corpus_dir: Path | str, *, messages: int = 20_000, seed: int = 0
) -> Conversation:
    """``messages`` messages joined from the corpus's dense tool-using sessions, as
    ``synth.bench_conversation`` does, with every repeated copy made distinct."""
    conversations = synth.joined_sources(corpus_dir)
    return synth.bench_conversation(
        corpus_dir,
        messages=messages,
        seed=seed,
        conversations=conversations,
        rewrite=DistinctCopies(_block_texts(conversations)),
        title=f"Benchmark: {messages:,} messages from real sessions, repeated copies made "
        f"distinct (seed {seed})",
    )
