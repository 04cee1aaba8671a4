"""Content keys and word sets of texts, memoised by a hash of the text.

A memo keyed by the text itself holds every text alive and, bounded by characters,
evicts after a few long tool outputs (the issue-16 profile: the fact memo thrashed while
fact extraction was ~38% of the worker path). A 128-bit BLAKE2b digest is a short key
that keeps no text alive; the memo is bounded by the length of the texts it stands for.
"""

from __future__ import annotations

import hashlib
import re

from .lru import BoundedLRU


# Words that say nothing about what a text is about (matching a paraphrase by them would
# make every summary "keep" every sentence).
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _words(
    """a about above after again all also am an and any are as at be because been before
    being below between both but by can could did do does doing don done each else etc
    even every for from further had has have having he her here hers him his how i if in
    into is it its itself just let lets like make may me might more most much must my need
    no nor not now of off on once one only or other our ours out over own please same
    shall she should so some such than that the their them then there these they this
    those through to too under until up upon us use used using very via want was we were
    what when where which while who whom why will with would yet you your yours"""
)
WORD_RE = re.compile(r"[^\W_]{3,}|\d+(?:\.\d+)?", re.UNICODE)

WORD_SET_ENTRIES = 65_536
WORD_SET_CHARS = 64_000_000  # texts' characters the memo stands for (values are smaller)


def text_key(text: str) -> str:
    """A short key for ``text`` (hex BLAKE2b-128 of its UTF-8)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


_WORDS: BoundedLRU[frozenset[str]] = BoundedLRU(WORD_SET_ENTRIES, WORD_SET_CHARS)


def content_words(text: str) -> frozenset[str]:
    """The lower-cased words of ``text`` that carry content (3+ letters or a number, no
    stopword), memoised by ``text_key``."""
    key = text_key(text)
    found = _WORDS.get(key)
    if found is None:
        found = frozenset(w for w in WORD_RE.findall(text.lower()) if w not in STOPWORDS)
        _WORDS.set(key, found, weight=len(text))
    return found


def clear_caches() -> None:
    _WORDS.clear()
