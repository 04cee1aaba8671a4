"""The fact patterns were rewritten for speed only (a lookbehind every alternative already
required put first, possessive runs, a word prefilter before the error scan): each must
find exactly what the plain form finds, on every corpus text and on generated text."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.engine import synth
from ctxlab.engine.evaluate import extract
from ctxlab.engine.tokens.cl100k import block_text

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"

_PCH = r"[\w.@+()\[\]-]"
PLAIN_PATH_RE = re.compile(
    r"(?=[~./\w@+()\[\]-])(?:"
    r"(?=[~./])(?<![\w/.:@-])(?:~|\.{1,2})?(?:/" + _PCH + r"+){2,}/?"
    r"|(?=/)(?<![^\s\"'`(=])/[A-Za-z][\w.-]{3,}(?![\w/])"
    r"|(?<![\w/.@()-])(?:" + _PCH + r"++/)+[\w.-]*\.[A-Za-z]\w{0,7}\b"
    r"|(?<![\w/.@-])[\w-]+\.(?:py|ipynb|js|mjs|cjs|ts|tsx|jsx|go|rs|java|c|h|cc"
    r"|cpp|hpp|md|json|jsonl|yaml|yml|toml|txt|sh|html|css|scss|sql|rb|php|kt|swift|cfg|ini"
    r"|lock|log|csv|xml|env|vue|svelte|lua|pl|r|m|cs|dart|ex|exs|tf)\b"
    r")"
)
PLAIN_IDENT_RE = re.compile(
    r"(?=[A-Za-z0-9_])(?:"
    r"\b(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|__[a-z]\w*__|_[a-z0-9]+_[a-z0-9_]+"
    r"|[A-Z][a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+|[a-z]+[0-9]*(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}(?:_[A-Z0-9]+)+)\b"
    r"|\b(?=[A-Z0-9]*[A-Z])(?=[A-Z0-9]*[0-9])[A-Z0-9]{5,12}\b"
    r"|(?<![#\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])"
    r")"
)


def _plain_error_lines(text: str) -> list[str]:
    return extract.lines_hit(extract.ERROR_RE, text)  # without the error-word prefilter


def _same(text: str) -> None:
    assert extract.PATH_RE.findall(text) == PLAIN_PATH_RE.findall(text), text[:200]
    assert extract.IDENT_RE.findall(text) == PLAIN_IDENT_RE.findall(text), text[:200]
    assert extract._error_lines(text) == _plain_error_lines(text), text[:200]


def test_corpus_texts_give_the_same_matches() -> None:
    texts = {
        block_text(b)
        for conversation in synth.corpus_conversations(CORPUS)
        for m in conversation.messages
        for b in m.blocks
    }
    assert len(texts) > 1000
    found = 0
    for text in texts:
        _same(text)
        found += bool(PLAIN_IDENT_RE.search(text)) + bool(_plain_error_lines(text))
    assert found > 300  # the patterns did find things to compare


EDGES = [
    "foo_bar_baz fooBar FooBar HTTP_OK HAT170 abc1234f -abc1234f #abc1234f x_y_ __init__",
    "_a_b_ __a__b__ a1_b2 aB1cD2 AB_ ABC_1_2 foo_barX café_bar fooé_bar é_x ñBar",
    "KeyError: x\nERR! y\n  Traceback (most recent call last)\nexit code 2\nİError: z\n失败",
    "./a/b /tmp/xy a/b.py (g)/p/x.ts @s/x/y.md x-y.json .env.local ~/.cfg/a/b",
]


def test_built_edges_give_the_same_matches() -> None:
    for text in EDGES:
        _same(text)
        _same(text.upper())
        _same(text.replace(" ", "/"))


ALPHABET = "aAbBfFxXzZ09_-#/.~@()[] \t\nEeRrOoLlTtSsİı:!é中"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=80))
def test_generated_text_gives_the_same_matches(text: str) -> None:
    _same(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(EDGES[0].split() + EDGES[1].split() + ["Error", "failed:"])))
def test_generated_words_give_the_same_matches(words: list[str]) -> None:
    _same(" ".join(words))
    _same("_".join(words))
    _same("".join(words))
