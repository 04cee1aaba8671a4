"""``count_wrapped`` of a text shorter than ``TABLE_MIN`` counted whole by ``prime`` (or
after a tool name by ``prime_joined``): its middle comes from that count, only its first
and last pieces are tokenized again with the prefix and the suffix. It equals counting the
wrapped text with ``tokenizers``, on corpus texts and generated text."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxlab.engine import synth
from ctxlab.engine.core.model import BlockKind
from ctxlab.engine.tokens import qwen_tokens

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"

pytestmark = pytest.mark.skipif(
    qwen_tokens._fast_count() is None or qwen_tokens._tokenizer() is None,
    reason="needs both tiktoken and tokenizers",
)

WRAPS = [
    ("<text>", "</text>\n", ""),
    ("<tool_result>Bash output=", "</tool_result>", ""),
    ("<", "é", ""),
    ("x", "'s", ""),
    ("", "", ""),
]


def _exact(text: str) -> int:
    return len(qwen_tokens._tokenizer().encode(text, add_special_tokens=False).ids)


def test_short_corpus_texts_wrapped_count_as_the_whole() -> None:
    texts: list[str] = []
    calls: list[tuple[str, str]] = []
    for conversation in list(synth.corpus_conversations(CORPUS))[::3]:
        for message in conversation.messages[:80]:
            for block in message.blocks:
                if block.kind is BlockKind.TOOL_USE:
                    calls.append((block.tool_name, block.input_json))
                elif block.text and len(block.text) < qwen_tokens.TABLE_MIN:
                    texts.append(block.text)
    qwen = qwen_tokens.QwenCounter()
    qwen.prime(texts)
    qwen.prime_joined(calls)
    checked = 0
    for text in list(dict.fromkeys(texts))[:300]:
        for before, after, _ in WRAPS:
            got = qwen.count_wrapped(before, text, len(text), after)
            assert got == _exact(before + text + after), (before, text, after)
            checked += 1
    for name, body in list(dict.fromkeys(calls))[:200]:
        before, after = f"<tool_use>{name} params=", "</tool_use>\n"
        if len(body) >= qwen_tokens.TABLE_MIN:
            continue
        got = qwen.count_wrapped(before, body, len(body), after, name)
        assert got == _exact(before + body + after), (name, body)
        checked += 1
    assert checked > 500


ALPHABET = [
    " ", "  ", "\n", "\r\n", "\t", "\u00a0", "\x1c", "a", "Z", "é", "e\u0301", "\u0301",
    "'s", "'ll", "7", "42", ".", "<", ">", "\"", "{", ":", "中", "\U0001f600",
    "<|im_start|>", "<tool_call>",
]  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=60),
    st.sampled_from(["", "Bash", "read_file", "x "]),
    st.sampled_from(["", "<", "x", " ", "\n", "é", "'"]),
    st.sampled_from(["", ">", "...", " ", "\n", "\u0301", "s"]),
)
def test_wrapped_short_text_equals_the_whole_on_generated_text(
    pieces: list[str], head: str, before: str, after: str
) -> None:
    text = "".join(pieces)
    qwen = qwen_tokens.QwenCounter()
    qwen.prime_joined([(head, text)])
    assert qwen.count(head + text) == _exact(head + text)
    got = qwen.count_wrapped(before, text, len(text), after, head)
    assert got == _exact(before + text + after)
