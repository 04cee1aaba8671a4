"""Qwen2.5 token counts (CoPaw's counter), offline, with the bytes//4 fallback.

The tokenizer file ships in ``ctxlab/engine/data/qwen2_5/`` (see NOTICE.md there) and is
loaded with the ``tokenizers`` package. When either is unavailable the counter falls back
to ``len(utf8) // 4``, exactly as CoPaw does on any tokenizer exception.
Counts are memoised per text and pre-computed per conversation in one batched pass.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TOKENIZER_PATH = Path(__file__).parent / "data" / "qwen2_5" / "tokenizer.json"
MEMO_LIMIT = 1_000_000  # distinct texts kept; cleared beyond (a long-lived worker)
TOKENIZER_SHA256 = "c0382117ea329cdf097041132f6d735924b697924d6f6fc3945713e96ce87539"


# Qwen2.5's pre-tokenizer makes every numeric character a chunk of its own (``\p{N}``, and
# every other alternative excludes \p{N}); an ASCII digit is one byte, hence one token, and
# no added token contains a digit. So replacing ASCII digits by "0" never changes a count:
# texts that differ only in their digits (timestamps) share one memo entry.
DIGIT_SHAPE = str.maketrans("123456789", "000000000")


def bytes_floor4(text: str) -> int:
    return len(text.encode("utf-8")) // 4


@functools.cache
def _tokenizer() -> Any:
    """The Qwen2.5 tokenizer, or None when it cannot be loaded offline."""
    try:
        from tokenizers import Tokenizer  # type: ignore[import-not-found, unused-ignore]

        return Tokenizer.from_file(str(TOKENIZER_PATH))
    except Exception:
        return None


def available() -> bool:
    return _tokenizer() is not None


class QwenCounter:
    """``count(text)`` = number of Qwen2.5 token ids of ``text`` (no special tokens are
    added for Qwen); bytes//4 if the tokenizer is unavailable or raises."""

    def __init__(self) -> None:
        self._tok = _tokenizer()
        self.exact = self._tok is not None
        self.name = "qwen2.5" if self.exact else "bytes//4 (Qwen2.5 tokenizer unavailable)"
        self._memo: dict[str, int] = {}

    def count(self, text: str) -> int:
        if not text:
            return 0
        value = self._memo.get(text)
        if value is None:
            value = self._encode_one(text)
            self._memo[text] = value
        return value

    def _encode_one(self, text: str) -> int:
        if self._tok is None:
            return bytes_floor4(text)
        try:
            return len(self._tok.encode(text, add_special_tokens=False).ids)
        except Exception:
            return bytes_floor4(text)

    def prime(self, texts: Iterable[str]) -> None:
        """Batch-count the texts not yet memoised (parallel in the Rust tokenizer)."""
        todo = list(dict.fromkeys(t for t in texts if t and t not in self._memo))
        if not todo:
            return
        if len(self._memo) + len(todo) > MEMO_LIMIT:
            self._memo.clear()
        if self._tok is None:
            for t in todo:
                self._memo[t] = bytes_floor4(t)
            return
        try:
            encoded = self._tok.encode_batch(todo, add_special_tokens=False)
        except Exception:
            for t in todo:
                self._memo[t] = self._encode_one(t)
            return
        for t, enc in zip(todo, encoded, strict=True):
            self._memo[t] = len(enc.ids)


@functools.cache
def qwen_counter() -> QwenCounter:
    """The shared counter (its memo is shared by every CoPaw replay in the process)."""
    return QwenCounter()
