"""``textstore._Grams.find`` is ``str.find`` for an anchor of ``2 * GRAM`` characters: the
summary inputs' pieces (``TextWriter.encode``) search long inputs through it."""

from __future__ import annotations

import random

from replay_app.runs import textstore
from replay_app.runs.textstore import ANCHOR, GRAM, _Grams


def test_find_is_str_find_for_every_anchor_and_start() -> None:
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "\n", " ", "src/app.py", "Error: x"]
    text = "".join(rng.choice(words) for _ in range(4_000))
    grams = _Grams(text)
    anchors = [text[a : a + ANCHOR] for a in rng.sample(range(len(text) - ANCHOR), 200)]
    anchors += [text[-ANCHOR:], text[:ANCHOR], "z" * ANCHOR, text[5 : 5 + ANCHOR - 1] + "z"]
    for anchor in anchors:
        assert len(anchor) == 2 * GRAM
        for start in (0, 1, len(text) // 2, len(text) - ANCHOR, len(text) - ANCHOR + 1):
            assert grams.find(anchor, start) == text.find(anchor, start), (anchor, start)


def test_long_input_pieces_join_back_to_the_input() -> None:
    # an input longer than SCAN_MAX, whose texts are rendered out of order: found away
    # from the hint through the grams
    from ctxlab.engine.core.model import Block, BlockKind, Message, Role

    rng = random.Random(3)
    texts = [
        "".join(rng.choice("abcdefghij \n") for _ in range(3_000)) + f" #{i}" for i in range(40)
    ]
    messages = [
        Message(role=Role.USER, blocks=(Block(kind=BlockKind.TEXT, text=t),)) for t in texts
    ]
    order = list(range(40))
    rng.shuffle(order)
    text = "\n".join(texts[i] for i in order)
    assert len(text) > textstore.SCAN_MAX
    writer = textstore.TextWriter(None, messages)  # type: ignore[arg-type]
    pieces = writer.encode(text, range(40))
    refs = [p for p in pieces if isinstance(p, list)]
    assert len(refs) == 40  # every message found, though not where the last one ended
    joined = "".join(
        p
        if isinstance(p, str)
        else writer.pending[p["h"]]
        if isinstance(p, dict)
        else textstore.source_forms(messages[p[0]].blocks[p[1]])[p[5] if len(p) > 5 else 0][
            p[2] : p[3]
        ]
        for p in pieces
    )
    assert joined == text
