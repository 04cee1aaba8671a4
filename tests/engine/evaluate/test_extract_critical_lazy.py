"""``critical_facts_of_parts`` (the offline summariser's lazy fact scan) finds exactly the
paths, identifiers, URLs and errors ``facts_of_parts`` finds: on the heads of real corpus
messages and on generated parts."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.engine import synth
from ctxlab.engine.evaluate.extract import clear_caches, critical_facts_of_parts, facts_of_parts
from ctxlab.engine.summarize.offline import FACT_CHARS, _fact_text
from ctxlab.engine.tokens.cl100k import block_text

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
KINDS = ("paths", "identifiers", "urls", "errors")
ALPHABET = st.sampled_from(
    list("ab_Z0129./:-~@+ \n\t()<>\"'`]")
    + ["http://x.y/", "Error: x", "failed", "src/a.py", "错误", "fooBar", "/usr/lib/x"]
)


def _same(parts: list[str], limit: int) -> None:
    clear_caches()
    lazy = critical_facts_of_parts(iter(parts), limit=limit)
    full = facts_of_parts(parts, limit=limit)
    assert {k: getattr(lazy, k) for k in KINDS} == {k: getattr(full, k) for k in KINDS}
    assert lazy.commands == () and lazy.numbers == ()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(ALPHABET, max_size=30).map("".join), max_size=12),
    st.integers(min_value=0, max_value=4),
)
def test_lazy_critical_facts_equal_full(parts: list[str], limit: int) -> None:
    _same(parts, limit)


def _heads() -> list[str]:
    heads: list[str] = []
    for conversation in synth.corpus_conversations(CORPUS):
        for message in conversation.messages:
            text = "\n".join(t for b in message.blocks if (t := block_text(b)))
            heads.append(_fact_text(text[:FACT_CHARS]))
    return heads


@pytest.mark.parametrize("limit", [1, 6])
def test_lazy_critical_facts_on_corpus_windows(limit: int) -> None:
    heads = _heads()
    assert len(heads) > 200
    saturated = 0
    for start in range(0, len(heads), 17):
        window = heads[start : start + 40]
        _same(window, limit)
        full = facts_of_parts(window, limit=limit)
        saturated += len(full.paths) >= limit and len(full.identifiers) >= limit
    assert saturated > 0  # the lazy path (URLs and errors only) was exercised
