"""extract.fact_set: the content-keyed, bounded memo of a text's facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import synth
from ctxlab.engine.core.lru import BoundedLRU
from ctxlab.engine.evaluate import extract, lost
from ctxlab.engine.evaluate.extract import facts

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def uncached(text: str) -> frozenset[tuple[str, str]]:
    return frozenset(facts(text).items())


@pytest.fixture(scope="module")
def corpus_texts() -> list[str]:
    texts = [lost.message_text(m) for c in synth.corpus_conversations(CORPUS) for m in c.messages]
    assert len(texts) > 5000, "the corpus has thousands of messages"
    return texts


def test_memoised_fact_sets_equal_uncached_extraction_on_the_corpus(
    corpus_texts: list[str],
) -> None:
    lost.clear_caches()
    for _ in range(2):  # cold, then served from the memo
        for text in corpus_texts:
            assert lost.fact_set(text) == uncached(text)
    assert any(lost.fact_set(t) for t in corpus_texts), "corpus messages hold facts"


def test_memoised_message_facts_equal_uncached_extraction_on_the_corpus() -> None:
    """What the loss analysis uses: per-block memos (texts, decoded inputs, instructions)
    give the same facts cold, warm and without any memo."""
    messages = [m for c in synth.corpus_conversations(CORPUS) for m in c.messages]
    expected = []
    for m in messages:
        lost.clear_caches()
        expected.append(lost.message_facts(m))  # extracted with empty memos
    lost.clear_caches()
    for _ in range(2):
        assert [lost.message_facts(m) for m in messages] == expected
    assert sum(1 for f in expected if f) > len(messages) // 3, "most messages hold facts"


def test_same_text_is_extracted_once() -> None:
    lost.clear_caches()
    text = "see /srv/app/main.py and parse_config at line 1234"
    first = lost.fact_set(text)
    assert lost.fact_set("".join(list(text))) is first  # an equal, distinct string object


def test_clear_caches_forgets_memoised_sets() -> None:
    text = "fatal: refusing src/x.py"
    first = extract.fact_set(text)
    lost.clear_caches()
    assert extract.fact_set(text) is not first
    assert extract.fact_set(text) == first


def test_memo_is_bounded_by_entries() -> None:
    memo = BoundedLRU[frozenset[tuple[str, str]]](max_entries=3, max_chars=10_000)
    for i in range(5):
        memo.set(f"text {i}", frozenset())
    assert list(memo.items) == ["text 2", "text 3", "text 4"]
    assert memo.chars == 3 * len("text 0")


def test_memo_is_bounded_by_characters_and_keeps_recently_used() -> None:
    memo = BoundedLRU[frozenset[tuple[str, str]]](max_entries=100, max_chars=30)
    memo.set("a" * 10, frozenset())
    memo.set("b" * 10, frozenset())
    assert memo.get("a" * 10) is not None  # now the most recently used
    memo.set("c" * 15, frozenset())
    assert set(memo.items) == {"a" * 10, "c" * 15}
    assert memo.chars == 25
    memo.set("d" * 31, frozenset())  # larger than the whole memo: not kept
    assert "d" * 31 not in memo.items and memo.chars == 25
