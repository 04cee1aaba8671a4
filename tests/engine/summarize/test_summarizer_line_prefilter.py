"""The offline summariser skips a message that cannot hold a constraint/decision line
before making its lines readable (offline._cannot_match); the lines it finds must be
exactly those of a full scan (every line made readable, then searched)."""

from __future__ import annotations

import random
from pathlib import Path

from ctxlab.engine import synth
from ctxlab.engine.summarize import offline
from ctxlab.engine.summarize.offline import (
    _WORDS,
    CONSTRAINT_RE,
    DECISION_RE,
    _lines,
    _matching_lines,
)

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _full_scan(text: str, pattern):  # type: ignore[no-untyped-def]
    return tuple(s for s in _lines(text) if pattern.search(s))


def _material_texts(repr_tag: str = "tool_call") -> list[str]:
    """Every corpus message rendered as strategies render material: a tool call once as
    ``[tool_call name] json`` and once as ``[<repr_tag> name] python-repr``."""
    out: list[str] = []
    for conversation in synth.corpus_conversations(CORPUS):
        for message in conversation.messages:
            rendered = []
            for b in message.blocks:
                if b.kind.value == "tool_use":
                    rendered.append(f"[tool_call {b.tool_name}] {b.input_json}")
                    rendered.append(f"[{repr_tag} {b.tool_name}] {b.tool_input!r}")
                elif b.text:
                    rendered.append(b.text)
            if rendered:
                out.append("\n".join(rendered))
    return out


TRICKY = [
    "[tool_call bash] {'command': 'we pl' 'an to use it'}",  # implicit concatenation
    '[tool_call bash] {"command": "we decided\\u0020so"}',  # an escape makes the space
    '[tool_call bash] {"command": "\\u51b3\\u5b9a"}',  # 决定, escaped
    '<tool_use>edit {"path": "a", "why": "because"}',
    "   12→ we will use toolu_01AbCdEfGh instead",
    "see call_abcdefgh-plan and fc_123456789 decided",
    "x" * 152 + " we plan" + "ning",  # the width cut makes a word boundary
    "Caveat: you must not",
    "[tool_result toolu_01]: you should",
    "do  not" + " please" * 3,
    "muſt do it",  # Unicode case folding
]


def test_prefilter_finds_exactly_what_a_full_scan_finds() -> None:
    texts = _material_texts()
    rng = random.Random(3)
    texts = rng.sample(texts, min(len(texts), 3000)) + TRICKY + ["\n".join(TRICKY)]
    found = 0
    for text in texts:
        for pattern in (CONSTRAINT_RE, DECISION_RE):
            offline.clear_caches()
            expected = _full_scan(text, pattern)
            assert _matching_lines(text, pattern) == expected, text[:200]
            found += len(expected)
    assert found > 100


def test_tricky_lines_are_not_skipped() -> None:
    for line in TRICKY[:4] + TRICKY[6:7]:
        matched = _matching_lines(line, DECISION_RE) or _matching_lines(line, CONSTRAINT_RE)
        assert matched, line


def test_the_words_are_the_patterns_ascii_alternatives() -> None:
    for pattern, words in _WORDS.items():
        inner = pattern.pattern.split(r"\b")[1].removeprefix("(?:").removesuffix(")")
        assert tuple(inner.split("|")) == words
