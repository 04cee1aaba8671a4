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
# Lines holding a pattern word where the pattern itself finds nothing in the raw line, yet
# the readable line matches (offline._plain_miss must not skip them).
HINTED_ONLY = [
    '[tool_call bash] {"command": "x\\tplan it"}',  # the escape decodes to a tab: a boundary
    '[tool_call bash] {"command": "x\\bplan it"}',  # a backspace, likewise
    '[tool_call bash] {"command": "x\\u0020plan"}',  # an escaped space
    "x" * 147 + " we have " + "planned it all",  # cut after "plan" (the width)
    "- [x] " + "y" * 155 + " plan" + "s" * 50,  # the markers go, then the cut
]
# ... and lines where it finds nothing and the readable line matches nothing either.
PLAIN_MISSES = [
    "the explanation was unplanned",
    "x" * 170 + " an explanation",
    '[tool_call bash] {"command": "explain the planner"}',
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


def test_lines_whose_words_only_the_readable_text_matches_are_read() -> None:
    for line in HINTED_ONLY:
        offline.clear_caches()
        expected = _full_scan(line, DECISION_RE)
        assert expected, line
        assert _matching_lines(line, DECISION_RE) == expected, line
        assert offline._plain_miss(line, DECISION_RE, offline._OPENINGS[DECISION_RE]) is False


def test_a_word_inside_another_word_is_no_match_and_is_skipped() -> None:
    for line in PLAIN_MISSES:
        offline.clear_caches()
        assert _full_scan(line, DECISION_RE) == ()
        assert _matching_lines(line, DECISION_RE) == ()
        assert offline._plain_miss(line, DECISION_RE, offline._OPENINGS[DECISION_RE]), line


def test_every_harness_line_is_found_by_the_meta_prefilter() -> None:
    from ctxlab.engine.core import harness

    lines = [f"<{tag}>x</{tag}>" for tag in harness.HARNESS_TAGS]
    lines += [f"</{tag}" for tag in harness.HARNESS_TAGS]
    lines += [harness.CAVEAT, "[Request interrupted by user]", "(no content)", offline.NOTES["zh"]]
    for line in lines:
        assert offline._is_meta(line.strip()), line
        assert offline._may_hold_meta("some text\n" + line), line
    # a tag's name without its "<" is no harness line, and needs no line-by-line read
    assert not offline._may_hold_meta("the command-name and system-reminder fields")


def test_every_tool_id_is_found_by_its_prefilter() -> None:
    ids = [
        "toolu_01AbCdEfGh",
        "srvtoolu_01AbCdEf",
        "call_abcdefgh-1",
        "chatcmpl_ABCDEF1",
        "fc_1234567",
    ]
    for tool_id in ids:
        line = f"ran {tool_id} ok"
        assert offline.TOOL_ID_RE.search(line), line
        assert offline._may_hold_tool_id(line), line
        assert tool_id not in offline._readable(line)
    assert not offline._may_hold_tool_id("snake_case_name and my_call")
    assert offline._readable("snake_case_name and my_call") == "snake_case_name and my_call"


# Call lines holding no pattern word whose decoded first argument matches (argv lists are
# joined, escapes decode, quote pairs concatenate, a letter folds to ASCII): the call-mark
# lines are decoded, never skipped (offline._decoded_may_match).
DECODED_ONLY = [
    ("[tool_call bash] {'command': ['make', 'sure', 'x']}", CONSTRAINT_RE),
    ("[tool_call bash] {'command': ['we', 'will', 'use', 'it']}", DECISION_RE),
    ('[tool_call bash] {"command": "we \\u017fhould stop"}', CONSTRAINT_RE),
    ('[tool_call bash] {"command": "the pl\\u0061n"}', DECISION_RE),
    ("[tool_call bash] {'command': 'the pl' 'an'}", DECISION_RE),
    ('[tool_call bash] {"command": "\\u51b3\\u5b9a"}', DECISION_RE),
]


def test_call_lines_that_match_only_once_decoded_are_read() -> None:
    for line, pattern in DECODED_ONLY:
        offline.clear_caches()
        expected = _full_scan("intro\n" + line, pattern)
        assert expected, line
        assert _matching_lines("intro\n" + line, pattern) == expected, line
        needles = offline._NEEDLES[pattern] + offline._LITERALS[pattern]
        assert offline._decoded_may_match(line, needles), line


def test_call_lines_whose_decoded_text_holds_no_word_are_skipped() -> None:
    needles = offline._NEEDLES[DECISION_RE] + offline._LITERALS[DECISION_RE]
    for line in (
        "[tool_call bash] {'command': ['ls', '-la', 'src']}",
        '[tool_call bash] {"command": "echo \\u0041BC"}',
        "plain words [tool_call] without a call head",
    ):
        assert not offline._decoded_may_match(line, needles), line
