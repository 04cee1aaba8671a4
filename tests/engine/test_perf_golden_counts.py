"""Exact counting shortcuts of the performance work: CoPaw counts a formatted message from its
block texts' counts (header by digit shape, each block line from the text's running counts),
reference counts split at a safe newline: the exact counts of the whole must equal the sums,
on real and adversarial text."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import synth
from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.stages import agentscope
from ctxlab.engine.strategies._copaw_format import reme_count
from ctxlab.engine.tokens import qwen_tokens

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"

pytestmark = pytest.mark.skipif(not qwen_tokens.available(), reason="no Qwen2.5 tokenizer")


def _exact(text: str) -> int:
    return int(len(qwen_tokens._tokenizer().encode(text, add_special_tokens=False).ids))


def _formatted(message: Message) -> str:
    return agentscope.format_message(message, style="reme", include_thinking=False, tool_names={})


def _check(message: Message) -> bool:
    """reme_count equals the exact count of the formatted text (True when it had blocks)."""
    qwen = qwen_tokens.QwenCounter()
    qwen.prime(
        t for b in message.blocks for t in (b.text, b.input_json, *(p.text for p in b.parts))
    )
    text = _formatted(message)
    assert reme_count(qwen, message, {}) == _exact(text), text[:200]
    return "\n<" in text


def test_reme_count_corpus_messages_count_the_same() -> None:
    split = 0
    for conversation in synth.corpus_conversations(CORPUS):
        for message in conversation.messages:
            split += _check(message)
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
def test_reme_count_adversarial_names_and_bodies(name: str, body: str) -> None:
    message = Message(
        Role.USER, (Block(BlockKind.TEXT, text=body),), name=name, timestamp="2025-01-01T00:00:07Z"
    )
    assert _check(message)


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


# --- reference (cl100k) counts split at a safe newline --------------------------------------

SPLITS = [
    ("notice", "x = 1\n" * 200 + "<<<TRUNCATED>>>\nThe output above was truncated.\nsee /tmp/a"),
    ("blank-lines", "para one.\n\n\n  \nPara two" * 80 + "\n\nend"),
    ("crlf", "a,b\r\nc,d\r\n" * 120 + "tail"),
    ("punct-newlines", "done.)\n\n" * 100 + ")))more"),
    ("trailing-space", "word  \n  \nnext \n" * 90 + "X"),
    ("unicode", "ligne été\n日本語\n" * 100 + "\u00a0nbsp\n\u3000wide\nz"),
]


@pytest.mark.parametrize("text", [s[1] for s in SPLITS], ids=[s[0] for s in SPLITS])
def test_reference_safe_split_keeps_the_cl100k_count(text: str) -> None:
    from ctxlab.engine.tokens.cl100k import _encoding
    from ctxlab.engine.tokens.reference import safe_split

    def count(t: str) -> int:
        return len(_encoding().encode_ordinary(t))

    q = safe_split(text)
    assert q > 0
    assert count(text) == count(text[:q]) + count(text[q:])
    # every safe boundary of the text, not only the last one
    for k in range(1, len(text)):
        if text[k - 1] == "\n" and not text[k].isspace():
            assert count(text) == count(text[:k]) + count(text[k:]), k


def test_reference_modified_counts_equal_direct_counts_on_corpus() -> None:
    from ctxlab.engine.tokens.cl100k import _encoding
    from ctxlab.engine.tokens.reference import ReferenceTokens, safe_split

    encode = _encoding().encode_ordinary
    checked = 0
    for conversation in synth.corpus_conversations(CORPUS):
        ref = ReferenceTokens(conversation)
        for message in conversation.messages:
            for block in message.blocks:
                text = block.text
                if len(text) < 600 or not safe_split(text):
                    continue
                for variant in (text[: len(text) // 2] + "\n[notice]", text + "\nfile=/x/1"):
                    assert ref.text(variant) == len(encode(variant))
                    checked += 1
    assert checked > 100
