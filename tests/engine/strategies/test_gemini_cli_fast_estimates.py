"""Gemini CLI's estimator shortcuts (``_gemini_cli_rules``) give exactly what the plain
definitions give: ``js_len`` (UTF-16 units), ``js_json`` (``JSON.stringify``), the text
and ``{"output": ...}`` estimates, on every corpus text and on awkward random texts."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ctxlab.engine import cli
from ctxlab.engine.stages import js_text
from ctxlab.engine.strategies import _gemini_cli_rules as rules
from ctxlab.engine.strategies._gemini_cli_rules import (
    CHARS_PER_TOKEN,
    MAX_CHARS_FOR_FULL_HEURISTIC,
    NON_ASCII_TOKENS_PER_CHAR,
)

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def plain_js_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def plain_js_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def plain_text_tokens(text: str) -> float:
    n = plain_js_len(text)
    if n > MAX_CHARS_FOR_FULL_HEURISTIC:
        return n / CHARS_PER_TOKEN
    ascii_units = len(text.encode("ascii", "ignore"))
    return ascii_units / CHARS_PER_TOKEN + (n - ascii_units) * NON_ASCII_TOKENS_PER_CHAR


def plain_output_tokens(name: str, output: str) -> float:
    return (plain_js_len(name) + plain_js_len(plain_js_json({"output": output}))) / CHARS_PER_TOKEN


def _corpus_blocks() -> list[tuple[str, str, object]]:
    out = []
    for path in sorted(CORPUS.rglob("*")):
        if path.is_file() and path.suffix in {".jsonl", ".json"}:
            try:
                conversation = cli.load_file(path)
            except Exception:  # not every file is a transcript (fixtures, metadata)
                continue
            for message in conversation.messages:
                for block in message.blocks:
                    out.append((block.tool_name, block.text, block.tool_input))
    return out


def _random_texts(count: int) -> list[str]:
    rng = random.Random(7)
    alphabet = (
        [chr(c) for c in range(0, 0x80)]
        + list("é漢字🙂\u2028\u2029\ufeff\x7f\x85")
        + ["\ud800", "\udfff", "\U0001f600", "\\", '"', "\r\n", " " * 5]
    )
    texts = ["", "a", '"', "\\", "\x00", "🙂", "x" * (MAX_CHARS_FOR_FULL_HEURISTIC + 3)]
    texts.append("é" * (MAX_CHARS_FOR_FULL_HEURISTIC + 1))
    for _ in range(count):
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 200))))
    return texts


def _clear() -> None:
    rules.text_tokens.cache_clear()
    rules._output_tokens.cache_clear()


@pytest.mark.parametrize("source", ["corpus", "random"])
def test_estimates_equal_the_plain_definitions(source: str) -> None:
    _clear()
    if source == "corpus":
        blocks = _corpus_blocks()
        assert len(blocks) > 1000, "the corpus has transcripts"
    else:
        blocks = [
            ("tool", t, {"k": t, "n": [1, 2.5, None, True, float("inf"), -0.0, 1e300]})
            for t in _random_texts(3000)
        ]
    for name, text, value in blocks:
        assert rules.js_len(text) == plain_js_len(text)
        assert rules.text_tokens(text) == plain_text_tokens(text)
        assert rules._output_tokens(name or "", text) == plain_output_tokens(name or "", text)
        assert js_text.js_json(text) == plain_js_json(text)
        assert js_text.js_json(value) == plain_js_json(value)
        part = {"functionCall": {"name": name, "args": value or {}}}
        assert js_text.js_json(part) == plain_js_json(part)
    _clear()


def test_js_json_refuses_what_json_refuses() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        js_text.js_json({"a": object()})
    assert js_text.js_json({"a": [1]}) == '{"a":[1]}'  # nothing left behind by the failure
