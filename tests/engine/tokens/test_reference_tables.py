"""Reference counts of modified copies from their originals' running counts (reference.py):
long texts are counted in pieces cut at safe points, and a truncated copy (a head, a
notice, maybe a tail) is counted from the original's counts plus the changed middle.
Every figure must equal a direct cl100k count."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from ctxlab.engine import synth
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.tokens.cl100k import _encoding
from ctxlab.engine.tokens.reference import _SAFE_POINT, ReferenceTokens, safe_bounds

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def count(text: str) -> int:
    return len(_encoding().encode_ordinary(text))


def _texts() -> list[str]:
    out = []
    for conversation in synth.corpus_conversations(CORPUS):
        for message in conversation.messages:
            out.extend(b.text for b in message.blocks if b.text and "\n" in b.text)
    return out


def test_every_safe_point_splits_the_count_exactly() -> None:
    """Corpus texts and generated ones (line breaks, indentation, CRLF, Unicode spaces,
    combining marks): both sides of every safe point count as in the whole."""
    rng = random.Random(0)
    texts = [t[:2500] for t in rng.sample(_texts(), 600)]
    alphabet = ["\n", "\r", " ", "\t", "\u00a0", "\u3000", "\x0b", "\x1c", "\x85", "a", "1",
                ".", "'", "é", "日", "s", "->", "😀", "\u0301", "<|endoftext|>"]  # fmt: skip
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(2, 30)))
              for _ in range(6000)]  # fmt: skip
    checked = 0
    for text in texts:
        whole = count(text)
        for hit in list(_SAFE_POINT.finditer(text))[:40]:
            q = hit.end()
            if q < len(text):
                assert count(text[:q]) + count(text[q:]) == whole, (text, q)
                checked += 1
    assert checked > 10_000
    # the cases the point must not be taken at: a second line break in the blank run
    assert not _SAFE_POINT.match("a\n \nb", 1)
    assert not _SAFE_POINT.match("a\n\r\nb", 1)
    assert _SAFE_POINT.match("a\n    12→x", 1)


def _conversation(texts: list[str]) -> Conversation:
    blocks = [Message(Role.USER, (Block(BlockKind.TEXT, text=t),)) for t in texts]
    return Conversation(id="t", title="t", messages=tuple(blocks))


def test_modified_copies_count_as_direct_counts_on_corpus() -> None:
    rng = random.Random(1)
    longs = [t for t in dict.fromkeys(_texts()) if len(t) >= 2048][:300]
    assert len(longs) > 50
    ref = ReferenceTokens(_conversation(longs))
    assert ref._tables, "long corpus texts keep running counts"
    for text in longs:
        assert ref.text(text) == count(text)  # counted in pieces, same total
    checked = 0
    for text in longs:
        cut = rng.randrange(600, len(text))
        half = len(text) // 2
        points = [m.end() for m in re.finditer(r"\n(?=[ \t])", text)][:2]
        variants = [
            text[:cut] + "<<<TRUNCATED>>>\nThe output above was truncated.\nsee /tmp/x",
            text[:1500] + "\n\n...120 tokens truncated...\n\n" + text[-1500:],
            text[:half] + text[half + 7 :],
            "x\n" + text[3:],
            *(text[: q + 1] + ins + text[q + 1 :] for q in points for ins in ("\n", " \r\n")),
        ]
        for variant in variants:
            assert ref.text(variant) == count(variant)
            checked += 1
    assert checked > 1000


def test_a_copy_without_its_original_is_counted_whole() -> None:
    ref = ReferenceTokens(_conversation(["alpha\nbeta\n" * 300]))
    other = "gamma\ndelta\n" * 300 + "<<<TRUNCATED>>>"
    assert ref.text(other) == count(other)


@pytest.mark.parametrize("step", [1, 512])
def test_safe_bounds_are_safe_points_at_least_step_apart(step: int) -> None:
    text = "a\n  b\n\nc\n" * 400
    bounds = safe_bounds(text, step)
    assert bounds and all(_SAFE_POINT.match(text, b - 1) for b in bounds)
    assert all(b - a >= step for a, b in zip([0, *bounds], bounds, strict=False))
