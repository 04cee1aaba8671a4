"""The offline summariser's constraint/decision scan on non-ASCII text and escaped tool
arguments reads only the lines that hold one of the pattern's words or a tool call whose
arguments may decode to one (offline._matches_in_marked_lines); what it finds must
equal a full scan (every line made readable, then searched): on real corpus messages with
non-ASCII or escaped text, and on lines built to break the shortcut."""

from __future__ import annotations

import pytest

from ctxlab.engine.summarize import offline
from ctxlab.engine.summarize.offline import CONSTRAINT_RE, DECISION_RE, _matching_lines
from tests.engine.summarize.test_summarizer_line_prefilter import _full_scan, _material_texts

TRICKY = [
    "  12→ we plan é",  # a Read output line: non-ASCII
    "你必须先运行测试",  # a CJK alternative
    "我们决定改用 uv",
    '[tool_call bash] {"command": ["make", "sure"]}\né',  # argv joined: "make sure"
    '[tool_call bash] {"command": "we decided\\u0020so"}\n— ok',
    '[tool_use Edit] {"why": "\\u56e0\\u4e3a"}',  # 因为, escaped
    "İnstead we go",  # folds to "instead" under IGNORECASE
    "we ınstead go",
    "muſt do it é",
    "\u212aeep it; we mu\u017ft",
    "résumé only",  # a word next to accents
    "plan→ned " + "é" * 3,
    "x" * 150 + " décidé plan" + "ning",  # the width cut makes a word boundary
    "toolu_01AbCdEfGhé must",
    "do\u00a0not touch é",  # a no-break space is no space
]


def _texts() -> list[str]:
    """Corpus material with non-ASCII or escaped text (Claude Code's ``[tool_use ...]``)."""
    return [t for t in _material_texts("tool_use") if not t.isascii() or "\\" in t]


@pytest.mark.parametrize("pattern", [CONSTRAINT_RE, DECISION_RE], ids=["constraint", "decision"])
def test_shortcut_finds_exactly_what_a_full_scan_finds(pattern) -> None:  # type: ignore[no-untyped-def]
    texts = _texts() + TRICKY + ["\n".join(TRICKY)]
    assert len(texts) > 500
    found = shortcut = 0
    for text in texts:
        offline.clear_caches()
        expected = _full_scan(text, pattern)
        assert _matching_lines(text, pattern) == expected, text[:200]
        found += len(expected)
        head = text[: offline.SCAN_CHARS]
        words = offline._WORDS[pattern]
        shortcut += not offline._cannot_match(head, words) and not any(
            c in head for c in offline._FOLDS_TO_ASCII
        )
    assert found > 20
    assert shortcut > 100  # the shortcut was taken on real text


def test_tricky_lines_that_match_are_found() -> None:
    for line in TRICKY[:7] + TRICKY[8:10]:
        offline.clear_caches()
        matched = _matching_lines(line, DECISION_RE) + _matching_lines(line, CONSTRAINT_RE)
        assert matched, line
