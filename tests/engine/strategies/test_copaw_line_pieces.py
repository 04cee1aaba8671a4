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


@pytest.mark.skipif(_tokenizer() is None, reason="Qwen2.5 tokenizer unavailable")
def test_system_and_summary_counts_the_system_once() -> None:
    # CoPaw counts system + summary as one string: the system's pieces are counted once per
    # replay, the rest with the summary; the total is the count of the joined text, for
    # every pair of texts (a system ending in a newline, a summary starting with one ...).
    from types import SimpleNamespace

    from ctxlab.engine.strategies.copaw import CoPaw, _State
    from ctxlab.engine.tokens.qwen_tokens import QwenCounter

    strategy = CoPaw()
    exact = QwenCounter()
    texts = [*TEXTS.values(), "\n", " lead\n", "\nnext\n## Done"]
    for system in texts:
        state = _State()
        for summary in texts:
            ctx = SimpleNamespace(state=state, system_text=system)
            got = strategy._system_and_summary(ctx, summary)  # type: ignore[arg-type]
            assert got == exact.count(system + summary), (system, summary)
        assert state.system_pieces is not None and state.system_pieces[0] == system
