"""The tiktoken-built Qwen2.5 counter gives exactly the ``tokenizers`` counts: on every corpus
text, on every Unicode code point (in runs, alone and next to letters, digits, spaces and
added tokens) and on generated text. ``qwen_tokens`` falls back to ``tokenizers`` if the
shortcut cannot be built, so these tests are what makes it safe to use."""

from __future__ import annotations

import tracemalloc
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlab.engine import synth
from ctxlab.engine.stages import agentscope
from ctxlab.engine.tokens import qwen_tokens
from ctxlab.engine.tokens.cl100k import block_text

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"

pytestmark = pytest.mark.skipif(
    qwen_tokens._fast_count() is None or qwen_tokens._tokenizer() is None,
    reason="needs both tiktoken and tokenizers",
)


def _slow(text: str) -> int:
    return len(qwen_tokens._tokenizer().encode(text, add_special_tokens=False).ids)


def _fast(text: str) -> int:
    count = qwen_tokens._fast_count()
    assert count is not None
    return count(text)


def _mismatches(texts: list[str]) -> list[tuple[str, int, int]]:
    distinct = list(dict.fromkeys(texts))
    out = []
    for start in range(0, len(distinct), 2_000):
        batch = distinct[start : start + 2_000]
        encoded = qwen_tokens._tokenizer().encode_batch(batch, add_special_tokens=False)
        for text, enc in zip(batch, encoded, strict=True):
            if len(enc.ids) != _fast(text):
                out.append((text[:120], len(enc.ids), _fast(text)))
    return out


def test_every_corpus_text_counts_the_same() -> None:
    texts: list[str] = []
    for conversation in synth.corpus_conversations(CORPUS):
        for message in conversation.messages:
            texts.append(
                agentscope.format_message(
                    message, style="reme", include_thinking=False, tool_names={}
                )
            )
            for block in message.blocks:
                texts += [block.text, block.input_json, block_text(block)]
    texts = [t for t in texts if t]
    assert len(set(texts)) > 5_000, "the corpus holds thousands of distinct texts"
    assert _mismatches(texts) == []


def test_every_code_point_counts_the_same() -> None:
    """Runs of 48 consecutive code points (surrogates excluded), joined plainly and
    between letters, digits, spaces, newlines and an added token, cover how each code point
    is classed by the pre-tokenizer (letter, number, space, other) and merged. Unassigned
    and private-use runs (no letters or digits there) are checked joined plainly only."""
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = []
    for start in range(0, len(points), 48):
        run = points[start : start + 48]
        texts.append("".join(run))
        if all(unicodedata.category(c) in ("Cn", "Co") for c in run):
            continue
        texts.append("a" + " 1".join(run) + "\n")
        texts.append("<|im_end|>" + "x\n ".join(run))
    assert _mismatches(texts) == []


EDGES = [
    "",
    " ",
    "   \n\n  \t",
    "<|im_start|>user\nhi<|im_end|>",
    "<tool_call>{}</tool_call>",
    "<|endoftext|>\u0338",  # '>' + U+0338 would compose (NFC) if not split out first
    ">\u0338",
    "e\u0301\u0301 cafe\u0301",
    "I'LL've 'S 's",
    "x" * 20_000,
    " " * 5_000 + "y",
    "😀👍🏽👨‍👩‍👧 家族 ١٢٣ ½ Ⅻ",
    "\x1c\x1d\x1e\x1f \u00a0\u2028\u3000x",
]


@pytest.mark.parametrize("text", EDGES, ids=range(len(EDGES)))
def test_edge_texts_count_the_same(text: str) -> None:
    assert _fast(text) == _slow(text) if text else True
    assert qwen_tokens.QwenCounter().count(text) == (_slow(text) if text else 0)


_ADDED = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<tool_call>", "</tool_call>"]
_PIECES = st.one_of(
    st.text(min_size=1, max_size=40),  # any Unicode (no surrogates)
    st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1),
    st.text(alphabet=st.characters(min_codepoint=0x1F300, max_codepoint=0x1FAFF), min_size=1),
    st.text(alphabet=" \t\n\r\u00a0\u3000\x0b\x0c", min_size=1, max_size=30),
    st.text(alphabet="0123456789'sStTlLdDmMvVrRe.,:;!?-_/\\\"{}[]<>|", min_size=1),
    st.sampled_from(_ADDED),
    st.sampled_from(["\u0301", "\u0338", "\u200d", "\ufe0f", "\U0001f3fd"]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, min_size=1, max_size=12).map("".join))
def test_generated_text_counts_the_same(text: str) -> None:
    assert _fast(text) == _slow(text)


def test_lone_surrogates_take_the_slow_path() -> None:
    """Not valid UTF-8: ``tokenizers`` refuses them and CoPaw falls back to bytes//4, which
    refuses them too; the fast path must not quietly count a replacement character."""
    counter = qwen_tokens.QwenCounter()
    with pytest.raises(UnicodeEncodeError):
        counter.count("a\ud800b")


def test_prime_counts_once_per_distinct_text_with_flat_memory() -> None:
    counter = qwen_tokens.QwenCounter()
    texts = [f"line {i} 日本語 " * 50 for i in range(2_000)]
    tracemalloc.start()
    counter.prime(texts + texts)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(counter._memo) == len(texts)
    assert [counter._memo[t] for t in texts[:50]] == [_slow(t) for t in texts[:50]]
    # one encoding at a time: far below the ~10 MB the texts' ids would take at once
    assert peak < 3_000_000
