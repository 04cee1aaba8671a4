"""Reference counts of modified copies from the counts stored at import (reference.py,
``_whole`` / ``_by_difference``): an original's count comes from its message's stored count,
and a copy that differs from it only in a middle is that count less the original's middle
plus the copy's, both cut at safe points. Every figure must equal a direct cl100k count,
on corpus texts and on generated ones."""

from __future__ import annotations

import random
from pathlib import Path

from ctxlab.engine import synth
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.tokens.cl100k import _encoding
from ctxlab.engine.tokens.reference import ReferenceTokens

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def count(text: str) -> int:
    return len(_encoding().encode_ordinary(text))


def _stored(messages: list[Message]) -> ReferenceTokens:
    conversation = Conversation(id="t", title="t", messages=tuple(messages))
    counted = ReferenceTokens(conversation)
    return ReferenceTokens(conversation, list(counted.per_message))


def _message(*texts: str) -> Message:
    return Message(Role.TOOL, tuple(Block(BlockKind.TEXT, text=t) for t in texts))


def _variants(text: str, rng: random.Random) -> list[str]:
    """Copies a strategy makes: a head and a notice, a head and a tail, a middle edit."""
    cut = rng.randrange(len(text) // 2, len(text) - 10)
    notice = "<<<TRUNCATED>>>\nThe output above was truncated.\nread_file start_line=40"
    return [
        text[:cut] + notice,
        text[: len(text) - 300] + notice,
        text[:-200] + "\n[cut]\n" + text[-150:],
        text[: cut - 50] + "\n\n...12 tokens truncated...\n\n" + text[cut:],
        text[: len(text) // 2] + text[len(text) // 2 + 9 :],
    ]


def _corpus_longs() -> list[str]:
    out = []
    for conversation in synth.corpus_conversations(CORPUS):
        for message in conversation.messages:
            out.extend(b.text for b in message.blocks if len(b.text) >= 2048 and "\n" in b.text)
    return list(dict.fromkeys(out))[:250]


def test_copies_of_corpus_texts_count_from_the_stored_counts_exactly() -> None:
    rng = random.Random(3)
    longs = _corpus_longs()
    assert len(longs) > 50
    # each original alone in a message, beside a short text, or twice in one message
    messages = [
        _message(t) if k % 3 == 0 else _message("note:\n", t) if k % 3 == 1 else _message(t, t)
        for k, t in enumerate(longs)
    ]
    ref = _stored(messages)
    checked = 0
    for text in longs:
        for variant in _variants(text, rng):
            assert ref.text(variant) == count(variant)
            checked += 1
    assert checked > 1000
    derived = [t for t, n in ref._wholes.items() if n is not None]
    assert len(derived) > len(longs) // 2, "originals counted from their stored counts"
    assert all(ref._wholes[t] == count(t) for t in derived)


def test_generated_texts_count_exactly() -> None:
    rng = random.Random(4)
    alphabet = ["\n", "\r\n", " ", "  ", "\t", "\u00a0", "\u3000", "\x0b", "\x1c", "\x85", "a",
                "Word", "12", ".", "'s", "é", "日本", "->", "😀", "\u0301", "<|endoftext|>",
                "\n    ", "\n\n", "}"]  # fmt: skip
    checked = 0
    for _ in range(150):
        lines = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 25)))
                 for _ in range(rng.randrange(150, 400))]  # fmt: skip
        text = "\n".join(lines)
        if len(text) < 2100:
            continue
        ref = _stored([_message(text)])
        for variant in _variants(text, rng):
            assert ref.text(variant) == count(variant), (text, variant)
            checked += 1
    assert checked > 300


def test_a_message_with_two_long_texts_is_not_split() -> None:
    """Its stored count covers both: counting the other would cost as much as the copy."""
    a = "alpha beta\n" * 300
    b = "gamma delta\n" * 300
    ref = _stored([_message(a, b)])
    copy = a[:3000] + "<<<TRUNCATED>>>\nnotice"
    assert ref.text(copy) == count(copy)
    assert ref._wholes[a] is None


def test_only_the_middles_are_tokenized() -> None:
    text = "".join(f"line {i}: {'x' * (i % 40)}\n" for i in range(400))
    ref = _stored([_message(text)])
    seen: list[int] = []
    plain = ref._count
    ref._count = lambda t: seen.append(len(t)) or plain(t)  # type: ignore[method-assign]
    copy = text[: len(text) - 400] + "<<<TRUNCATED>>>\nsee the file"
    assert ref.text(copy) == count(copy)
    assert 0 < sum(seen) < len(copy) // 2
