"""Reference counts by lines (``ReferenceTokens.lines`` / ``text_by_lines``): a text is
counted as the sum of its pieces between safe points, each memoised by the shared counter,
so a summary repeating the previous one's lines (or a truncated copy's notice) tokenizes
only its new lines. Every figure equals a direct cl100k count."""

from __future__ import annotations

import random
from pathlib import Path

from ctxlab.engine import synth
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.stages.markers import qwenpaw_retruncate, qwenpaw_truncate_fresh
from ctxlab.engine.tokens.cl100k import _encoding, reference_counter
from ctxlab.engine.tokens.reference import ReferenceTokens, seed_reference_tokens

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def count(text: str) -> int:
    return len(_encoding().encode_ordinary(text))


def _reference(texts: list[str]) -> ReferenceTokens:
    messages = tuple(Message(Role.USER, (Block(BlockKind.TEXT, text=t),)) for t in texts)
    return ReferenceTokens(Conversation(id="t", title="t", messages=messages))


def test_lines_equal_the_whole_count() -> None:
    rng = random.Random(1)
    texts = [
        b.text
        for conversation in synth.corpus_conversations(CORPUS)
        for m in conversation.messages
        for b in m.blocks
        if "\n" in b.text
    ]
    texts = rng.sample(texts, min(400, len(texts)))
    alphabet = ["\n", "\r\n", " ", "\t", "\u00a0", "\u3000", "\x85", "a", "1", ".", "'",
                "é", "日", "->", "😀", "\u0301", "<|endoftext|>", "## ", "- "]  # fmt: skip
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60)))
              for _ in range(3000)]  # fmt: skip
    reference = _reference(["x"])
    for text in texts:
        assert reference.lines(text) == count(text), text
        assert reference.text_by_lines(text) == count(text), text


def test_a_summary_tokenizes_only_its_new_lines() -> None:
    reference = _reference(["x"])
    counter = reference_counter().count
    counter.cache_clear()  # type: ignore[attr-defined]
    lines = [f"- decided to keep item {k} of the plan, as the user asked\n" for k in range(40)]
    first = "## Summary\n" + "".join(lines)
    assert reference.text_by_lines(first) == count(first)
    misses = counter.cache_info().misses  # type: ignore[attr-defined]
    second = "## Summary\n" + "".join(lines[:20]) + "- a new line\n" + "".join(lines[20:])
    assert reference.text_by_lines(second) == count(second)
    assert counter.cache_info().misses == misses + 1  # type: ignore[attr-defined]
    # memoised whole: the summary-size check asks for the same text with ``text``
    assert reference.text(second) == count(second)
    assert counter.cache_info().misses == misses + 1  # type: ignore[attr-defined]
    assert reference.text_by_lines("") == 0


def test_truncated_copies_are_counted_exactly_from_stored_counts() -> None:
    """QwenPaw's truncated copies of long originals (the notice's lines memoised across
    copies) counted through seeded counts, as a worker counts them."""
    rng = random.Random(2)
    words = ["alpha", "beta", "  indented", "x = 1", "日本", "->", "{", "}", "'s", "42"]
    originals = [
        "\n".join(" ".join(rng.choice(words) for _ in range(rng.randrange(1, 12)))
                  for _ in range(rng.randrange(200, 600)))
        for _ in range(12)
    ]  # fmt: skip
    messages = tuple(Message(Role.TOOL, (Block(BlockKind.TEXT, text=t),)) for t in originals)
    conversation = Conversation(id="t", title="t", messages=messages)
    stored = [4 + count(t) for t in originals]
    reference = seed_reference_tokens(conversation, stored)
    for k, original in enumerate(originals):
        for limit in (3000, 1500):
            fresh = qwenpaw_truncate_fresh(
                original, max_bytes=limit, start_line=1, total_lines=original.count("\n") + 1,
                path=f"~/.qwenpaw/tool_results/{k:032x}.txt",
            )  # fmt: skip
            again = qwenpaw_retruncate(fresh, max_bytes=limit // 2)
            for copy in (fresh, again):
                message = Message(Role.TOOL, (Block(BlockKind.TEXT, text=copy),))
                assert reference.message_of(message) == 4 + count(copy)
