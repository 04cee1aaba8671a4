"""QwenPaw's per-message shortcuts give what the shared rules give: ``count_message``
(common blocks inlined) equals ``agentscope.message_tokens`` for every message, and a
message ``_over_limit`` calls clean has no tool result text ``_truncate`` would change
(so ``_apply_limits`` may skip it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import synth
from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.stages import agentscope
from ctxlab.engine.stages.markers import qwenpaw_truncate_fresh
from ctxlab.engine.strategies.qwenpaw import SLACK, QwenPaw, _over_limit
from ctxlab.engine.synth import realistic as synth_realistic

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _messages() -> list[Message]:
    out = [m for c in synth.corpus_conversations(CORPUS) for m in c.messages]
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=600, seed=5)
    return out + list(conversation.messages)


def test_count_message_is_the_shared_rule() -> None:
    messages = _messages()
    kinds = {b.kind for m in messages for b in m.blocks}
    assert {BlockKind.TEXT, BlockKind.TOOL_USE, BlockKind.TOOL_RESULT} <= kinds
    for divisor in (4.0, 3.0, 2.5):
        strategy = QwenPaw({"token_count_estimate_divisor": divisor})
        for m in messages:
            assert strategy.count_message(m) == agentscope.message_tokens(m, strategy.count_text), (
                divisor,
                m.role,
            )


def _result(text: str, tool_id: str = "t1", parts: tuple[Block, ...] = ()) -> Message:
    block = Block(BlockKind.TOOL_RESULT, text=text, tool_id=tool_id, parts=parts)
    return Message(role=Role.TOOL, blocks=(block,))


def test_a_message_within_its_limits_is_left_alone() -> None:
    strategy = QwenPaw()
    limit, recent = 3000, 50_000
    long_line = "word " * 700  # 3,500 bytes
    cjk = "决定改用" * 260  # 1,040 characters, 3,120 bytes: over by bytes only
    cjk_within = "决定" * 500  # 1,000 characters, 3,000 bytes: within by bytes
    truncated = qwenpaw_truncate_fresh(
        "line\n" * 2000, max_bytes=limit, start_line=1, total_lines=2001, path="p"
    )
    retruncated = qwenpaw_truncate_fresh(
        "line\n" * 20_000, max_bytes=recent, start_line=1, total_lines=20_001, path="p"
    )
    texts = ["", "short", "x" * (limit + SLACK), "x" * (limit + SLACK + 1), long_line, cjk,
             cjk_within, truncated, retruncated]  # fmt: skip
    part = Block(BlockKind.TEXT, text=cjk)
    cases = [_result(t) for t in texts]
    cases += [_result(t, tool_id="exempt") for t in texts]
    cases.append(_result("", parts=(part, Block(BlockKind.MEDIA, text="u"))))
    cases.append(_result("", parts=(Block(BlockKind.TEXT, text="ok"),)))
    over = 0
    for message in cases:
        changes = False
        for b in message.blocks:
            lim = recent if b.tool_id == "exempt" else limit
            for text in [p.text for p in b.parts if p.kind is BlockKind.TEXT] or [b.text]:
                if text and strategy._truncate(text, lim, 1, 0, -1)[0] != text:
                    changes = True
        flagged = _over_limit(message, limit, recent, {"exempt"})
        assert flagged or not changes, message.blocks[0].text[:40]
        over += flagged
    assert over >= 4  # the long ones are flagged (and changed)


def test_a_fresh_truncation_reads_only_the_kept_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_truncate`` hands ``qwenpaw_truncate_fresh`` the first ``limit + 1`` characters
    (and the whole text's line count): the same notice and cut as the whole text gives,
    without encoding a long output twice."""
    from ctxlab.engine.strategies import qwenpaw

    seen: list[int] = []

    def spy(text: str, **kwargs: Any) -> str:
        seen.append(len(text))
        return qwenpaw_truncate_fresh(text, **kwargs)

    monkeypatch.setattr(qwenpaw, "qwenpaw_truncate_fresh", spy)
    strategy = QwenPaw()
    texts = ["line\n" * 20_000, "x" * 60_000, "é" * 2000 + "\n" + "x" * 5000,
             "决定改用" * 5000, "a\n" + "😀" * 1200, "one very long line " * 400]  # fmt: skip
    for text in texts:
        for limit in (3000, 50_000):
            got, path = strategy._truncate(text, limit, 7, 1, -1)
            if len(text.encode()) <= limit + SLACK:
                assert (got, path) == (text, "")
                continue
            whole = qwenpaw_truncate_fresh(
                text, max_bytes=limit, start_line=1, total_lines=text.count("\n") + 1, path=path
            )
            assert path and got == whole
            assert seen[-1] <= limit + 1


def test_over_is_the_byte_comparison() -> None:
    """``_over`` (encoding only a text whose length leaves the answer open) is
    ``_utf8_len(text) > room``."""
    from ctxlab.engine.strategies.qwenpaw import _over, _utf8_len

    texts = ["", "x" * 3100, "x" * 3101, "é" * 1550, "é" * 1551, "决" * 1033, "决" * 1034,
             "😀" * 775, "😀" * 776, "a" * 3000 + "决" * 40, "决" * 4000]  # fmt: skip
    for text in texts:
        for room in (1, 775, 1550, 3100, 3101, 50_100):
            assert _over(text, room) == (_utf8_len(text) > room), (text[:5], room)
