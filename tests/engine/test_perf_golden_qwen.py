"""CoPaw counts a formatted message's header and body apart (a performance shortcut):
the exact Qwen2.5 count of the whole must equal the sum, on real and adversarial text."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import qwen_tokens, synth
from ctxlab.engine.model import Block, BlockKind, Message, Role
from ctxlab.engine.stages import agentscope
from ctxlab.engine.strategies.copaw import _header_split

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"

pytestmark = pytest.mark.skipif(not qwen_tokens.available(), reason="no Qwen2.5 tokenizer")


def _exact(text: str) -> int:
    return int(len(qwen_tokens._tokenizer().encode(text, add_special_tokens=False).ids))


def _formatted(message: Message) -> str:
    return agentscope.format_message(message, style="reme", include_thinking=False, tool_names={})


def _check(text: str) -> bool:
    k = _header_split(text)
    if not k:
        return False
    assert _exact(text) == _exact(text[:k]) + _exact(text[k:]), text[:200]
    return True


def test_header_split_corpus_messages_count_the_same() -> None:
    split = 0
    for conversation in synth.corpus_conversations(CORPUS):
        for message in conversation.messages:
            split += _check(_formatted(message))
    assert split > 500, "most formatted corpus messages have a header and a body"


ODD = [
    ("punctuation-name", "bot-", "hello"),
    ("combining-name", "e\u0301", "\u0301 starts with a combining mark"),
    ("digit-name", "agent7", "7 digits 123"),
    ("special-token-body", "user", "<|im_start|>system\n<|im_end|>"),
    ("newlines-body", "user", "\n\n\r\n  x"),
    ("cjk", "用户", "中文内容：测试"),
    ("space-name", "a b ", " lead"),
]


@pytest.mark.parametrize(("name", "body"), [o[1:] for o in ODD], ids=[o[0] for o in ODD])
def test_header_split_adversarial_names_and_bodies(name: str, body: str) -> None:
    message = Message(
        Role.USER, (Block(BlockKind.TEXT, text=body),), name=name, timestamp="2025-01-01T00:00:07Z"
    )
    assert _check(_formatted(message))


@pytest.mark.parametrize(
    ("text", "expected"),
    [("a:\n<b>", 3), ("a:\n\n<b>", 0), ("a\n<b>", 0), ("a:", 0), ("a:\nb", 0)],
    ids=["split", "two-newlines", "no-colon", "header-only", "no-tag"],
)
def test_header_split_only_where_safe(text: str, expected: int) -> None:
    assert _header_split(text) == expected


DIGITS = [
    ("timestamp-header", "[2025-01-01 00:00:07.123] assistant:\n"),
    ("numbers", "v1.2.3 took 9876543210 ms, 3.14159; id=a1b2c3 0x1F"),
    ("mixed-scripts", "第3章 ٣ ⅷ ²³ 12abc34 _9_ 7%"),
    ("digit-runs", "1\n22\n333 4444 55555"),
]


@pytest.mark.parametrize("text", [d[1] for d in DIGITS], ids=[d[0] for d in DIGITS])
def test_digit_shape_keeps_the_qwen_count(text: str) -> None:
    shaped = text.translate(qwen_tokens.DIGIT_SHAPE)
    assert shaped != text
    assert _exact(shaped) == _exact(text)


def test_digit_shape_corpus_texts_keep_the_qwen_count() -> None:
    checked = 0
    for conversation in synth.corpus_conversations(CORPUS):
        for message in conversation.messages[:40]:
            text = _formatted(message)
            shaped = text.translate(qwen_tokens.DIGIT_SHAPE)
            if shaped != text:
                assert _exact(shaped) == _exact(text), text[:200]
                checked += 1
    assert checked > 200
