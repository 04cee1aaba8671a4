from __future__ import annotations

import pytest

from ctxlab.engine.strategies.copaw import _line_pieces
from ctxlab.engine.tokens.qwen_tokens import _tokenizer

TEXTS = {
    "plain": "## Goal\nship it\n- [x] done\n",
    "blank-lines": "a\n\n\nb\n \n c\n\t\nd",
    "punct-newlines": "x:\n\n<tag>\n1.\n2)",
    "combining": "e\n\u0301b\ncafe\u0301\n",
    "control-space": "a\n\x1cq\n\x85z\n\u3000w",
    "contraction": "it\n's\nab'll\n'd",
    "special": "<|im_start|>\n<|im_end|>\n<|endoftext|>x",
    "cjk": "决定\n改用\n错误：失败\n",
    "crlf": "a\r\nb\r\n\r\nc",
    "empty": "",
}


@pytest.mark.parametrize("text", list(TEXTS.values()), ids=list(TEXTS))
def test_line_pieces_rejoin(text: str) -> None:
    assert "".join(_line_pieces(text)) == text


@pytest.mark.skipif(_tokenizer() is None, reason="Qwen2.5 tokenizer unavailable")
@pytest.mark.parametrize("text", list(TEXTS.values()), ids=list(TEXTS))
def test_line_pieces_qwen_count_is_additive(text: str) -> None:
    tok = _tokenizer()
    assert tok is not None

    def count(t: str) -> int:
        return len(tok.encode(t, add_special_tokens=False).ids)

    assert sum(count(p) for p in _line_pieces(text)) == count(text)
