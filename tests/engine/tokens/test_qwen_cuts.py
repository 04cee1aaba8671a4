"""The Qwen2.5 cut points (``qwen_tokens.CUT_RE``: after a newline before a non-space, before
a space after a non-space) split a text where ``tokenizers`` counts both sides as in the
whole; ``count_wrapped`` (a text's ends tokenized, its middle from running counts) equals
counting the wrapped text, on every corpus text and on generated text."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlab.engine import synth
from ctxlab.engine.tokens import qwen_tokens
from ctxlab.engine.tokens.cl100k import block_text

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"

pytestmark = pytest.mark.skipif(
    qwen_tokens._fast_count() is None or qwen_tokens._tokenizer() is None,
    reason="needs both tiktoken and tokenizers",
)


def _exact(text: str) -> int:
    return len(qwen_tokens._tokenizer().encode(text, add_special_tokens=False).ids)


def _cuts(text: str) -> list[int]:
    return [m.end() for m in qwen_tokens.CUT_RE.finditer(text) if 0 < m.end() < len(text)]


# Characters around which chunking, NFC or added tokens could go wrong.
ALPHABET = [
    " ", "  ", "\n", "\r\n", "\t", "\u00a0", "\u3000", "\x1c", "\x85", "\u2028",
    "a", "Z", "é", "e\u0301", "\u0301", "'s", "'T", "'ll", "7", "42", "٣", "²",
    ".", "...", ")", "-", "_", "<", ">", "</", "\"", "{", "}", ":", "=",
    "中", "文", "ア", "한", "\U0001f600", "\u200d", "\ufe0f",
    "<|im_start|>", "<tool_call>", "</tool_call>", "<|endoftext|>",
]  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(ALPHABET), min_size=2, max_size=40))
def test_every_cut_point_is_additive(pieces: list[str]) -> None:
    text = "".join(pieces)
    whole = _exact(text)
    for q in _cuts(text):
        assert whole == _exact(text[:q]) + _exact(text[q:]), (text, q)


def test_cut_points_of_corpus_texts_are_additive() -> None:
    """With the tiktoken-built counter (identical to ``tokenizers`` on every corpus text and
    generated text, test_qwen_fast.py): ``tokenizers`` here would take minutes."""
    count = qwen_tokens._fast_count()
    assert count is not None
    checked = 0
    for conversation in list(synth.corpus_conversations(CORPUS))[::10]:  # every format
        for message in conversation.messages[:60]:
            for block in message.blocks:
                text = block_text(block)[:3000]
                cuts = _cuts(text)
                if not cuts:
                    continue
                whole = count(text)
                for q in cuts[:: max(1, len(cuts) // 4)]:
                    assert whole == count(text[:q]) + count(text[q:]), (text[:200], q)
                    checked += 1
    assert checked > 1000


def test_count_wrapped_equals_the_whole_on_corpus_texts() -> None:
    qwen = qwen_tokens.QwenCounter()
    texts = [
        t
        for conversation in list(synth.corpus_conversations(CORPUS))[::5]
        for message in conversation.messages
        for block in message.blocks
        if len(t := block_text(block)) >= qwen_tokens.TABLE_MIN
    ]
    qwen.prime(texts)
    assert qwen._tables, "long corpus texts are counted in pieces"
    checked = 0
    for text in list(dict.fromkeys(texts))[:200]:
        assert qwen.count(text) == _exact(text)
        for length in (len(text), 2000, len(text) // 2, 300):
            length = min(length, len(text))
            for before, after in (
                ("<text>", "</text>"),
                ("<tool_result>Bash output=", "...</tool_result>\n"),
            ):
                assert qwen.count_wrapped(before, text, length, after) == _exact(
                    before + text[:length] + after
                ), (text[:120], length)
                checked += 1
    assert checked > 1000


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(ALPHABET), min_size=200, max_size=900),
    st.integers(min_value=1, max_value=3000),
    st.sampled_from(["", "<", "x", " ", "\n", "é", "'"]),
    st.sampled_from(["", ">", "...", " ", "\n", "\u0301", "s"]),
)
def test_count_wrapped_equals_the_whole_on_generated_text(
    pieces: list[str], length: int, before: str, after: str
) -> None:
    text = "".join(pieces)
    qwen = qwen_tokens.QwenCounter()
    qwen.prime([text])
    length = min(length, len(text))
    assert qwen.count(text) == _exact(text)
    assert qwen.count_wrapped(before, text, length, after) == _exact(before + text[:length] + after)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([" ", "  ", "\n", "\r\n", "a", "\t", "é", "\x1c", "\n "]), max_size=30
    ),
    st.data(),
)
def test_last_cut_is_the_last_cut_point(pieces: list[str], data: st.DataObject) -> None:
    text = "".join(pieces)
    lo = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(lo, len(text)))
    expected = 0
    for hit in qwen_tokens.CUT_RE.finditer(text, lo, end):
        if lo < hit.end() < end:
            expected = hit.end()
    assert qwen_tokens._last_cut(text, lo, end) == expected


def test_tool_inputs_keep_their_counts_inside_the_call() -> None:
    """A tool call is counted as name + input; its input's counts serve the formatted line."""
    qwen = qwen_tokens.QwenCounter()
    body = '{"command": "ls -la /tmp && echo done", "description": "List the files"} ' * 40
    qwen.prime_joined([("Bash", body)], ends=(2000,))
    assert qwen.count("Bash" + body) == _exact("Bash" + body)
    assert body in qwen._tables
    for length in (len(body), 2000, 777):
        before, after = "<tool_use>Bash params=", "...</tool_use>\n"
        assert qwen.count_wrapped(before, body, length, after) == _exact(
            before + body[:length] + after
        )
