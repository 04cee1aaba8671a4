"""Find the facts a compaction can lose: file paths, identifiers, numbers, URLs, error lines.

Shared by the offline summariser (to fill "critical context") and by ``lost.py`` (to list
what a compaction removed and nothing kept). Pure regexes, linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from .lru import BoundedLRU

URL_RE = re.compile(r"\bhttps?://[^\s<>\"'`)\]]+")
PATH_RE = re.compile(
    r"(?<![\w/.:-])(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?|(?<![\w/.-])(?:[\w.-]+/)+[\w.-]+\.\w{1,8}\b"
    r"|(?<![\w/.-])[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|java|c|h|cpp|md|json|yaml|yml|toml|txt|sh|html|css|sql|rb|php|kt|swift|cfg|ini)\b"
)
IDENT_RE = re.compile(
    r"\b(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z]+(?:[A-Z][a-z0-9]*)+)\b"
    r"|\b\w+\(\)"
)
NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)+(?![\w.])|(?<![\w.])\d{3,}(?![\w.])")
ERROR_RE = re.compile(
    r"^.*\b(?:Error|Exception|Traceback|FAILED|FAIL|error|failed|fatal|panic|错误|失败)\b.*$",
    re.MULTILINE,
)

KINDS = ("paths", "identifiers", "numbers", "urls", "errors")


@dataclass(frozen=True, slots=True)
class Facts:
    paths: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    numbers: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    def items(self) -> list[tuple[str, str]]:
        return [(kind, value) for kind in KINDS for value in getattr(self, kind)]


def _unique(values: list[str], limit: int | None) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for value in values:
        if value not in seen:
            seen[value] = None
            if limit is not None and len(seen) >= limit:
                break
    return tuple(seen)


def facts(text: str, *, limit: int | None = None, error_width: int = 200) -> Facts:
    """The distinct facts of ``text`` in first-seen order (at most ``limit`` per kind)."""
    urls = URL_RE.findall(text)
    stripped = URL_RE.sub(" ", text) if urls else text
    errors = [line.strip()[:error_width] for line in ERROR_RE.findall(stripped)]
    return Facts(
        paths=_unique(PATH_RE.findall(stripped), limit),
        identifiers=_unique(IDENT_RE.findall(stripped), limit),
        numbers=_unique(NUMBER_RE.findall(stripped), limit),
        urls=_unique(urls, limit),
        errors=_unique([e for e in errors if e], limit),
    )


@lru_cache(maxsize=8192)
def _part_facts(text: str, error_width: int) -> Facts:
    return facts(text, error_width=error_width)


def facts_of_parts(
    parts: Iterable[str], *, limit: int | None = None, error_width: int = 200
) -> Facts:
    """``facts("\\n".join(parts), ...)``, with each part's facts cached by content.

    Exact: no pattern matches across a newline (none matches ``\\n``, and a newline is
    neither a word character nor in any lookbehind set), so the matches of the joined
    text are the parts' matches in order. The same messages are summarised again by
    other strategies and later compactions; the cache keeps that work from repeating.
    """
    merged: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for part in parts:
        found = _part_facts(part, error_width)
        for kind in KINDS:
            merged[kind].extend(getattr(found, kind))
    return Facts(**{kind: _unique(values, limit) for kind, values in merged.items()})


FactPair = tuple[str, str]  # (kind, value), kind in KINDS

# Bounds of the fact-set memo: a long-lived worker analyses many transcripts, so the memo
# holds at most this many texts and this many characters of them (least recently used go).
# Sized for one 20,000-message transcript of 1.5 KB texts, so every run of a comparison
# reuses its facts; the fact sets take about 2 bytes per text character (corpus), so the
# memo stays under ~100 MB even when it holds the only reference to its texts.
FACT_SET_ENTRIES = 32_768
FACT_SET_CHARS = 32_000_000


_FACT_SETS: BoundedLRU[frozenset[FactPair]] = BoundedLRU(FACT_SET_ENTRIES, FACT_SET_CHARS)


def fact_set(text: str) -> frozenset[FactPair]:
    """``frozenset(facts(text).items())``, memoised by content: the same texts recur across
    the messages of a transcript, its modified versions and every run over it."""
    found = _FACT_SETS.get(text)
    if found is None:
        found = frozenset(facts(text).items())
        _FACT_SETS.set(text, found)
    return found


def clear_caches() -> None:
    """Forget cached facts (benchmarks start cold)."""
    _part_facts.cache_clear()
    _FACT_SETS.clear()
