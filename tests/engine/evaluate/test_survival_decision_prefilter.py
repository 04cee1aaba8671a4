"""``survival._decisions`` skips a text holding none of the decision words
(``survival._cannot_decide``, ASCII only): it must find exactly what splitting every text
into sentences and searching each finds."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.engine.evaluate import survival
from ctxlab.engine.evaluate.survival import DECISION_RE, SENTENCE_RE


def _full_scan(text: str) -> frozenset[tuple[str, str]]:
    found = set()
    for sentence in SENTENCE_RE.split(text):
        sentence = sentence.strip().lstrip("-*#> ").strip()
        if len(sentence) >= 12 and DECISION_RE.search(sentence):
            found.add(("decisions", sentence[:200]))
    return frozenset(found)


# Every alternative of the pattern, in several cases, cut and whole, beside the separators
ALTERNATIVES = re.sub(r"\(\?:ed\|ing\)\?", "ed", DECISION_RE.pattern[5:-3]).split("|")
PIECES = st.sampled_from(
    [*ALTERNATIVES, *(a.upper() for a in ALTERNATIVES), *(a.title() for a in ALTERNATIVES),
     *(a[:-1] for a in ALTERNATIVES), "switching to", "switch to", "ſwitch to", "\u212aey",
     "İ'll use", " ", ".", "! ", "\n", "- ", "# ", "> ", "we", "the", "approach", "x" * 12]
)  # fmt: skip


def test_every_alternative_is_a_word() -> None:
    """Each alternative of ``DECISION_RE`` holds one of ``_DECISION_WORDS`` (lower-cased)."""
    for alternative in ALTERNATIVES:
        assert any(w in alternative.lower() for w in survival._DECISION_WORDS), alternative
    assert not survival._cannot_decide("We switched to it, the approach works.")


@pytest.mark.parametrize(
    "text",
    ["I'll use uv instead of pip here.", "Nothing to see in this sentence at all.",
     "We SWITCHED TO postgres. Done.", "muſt chooſe to go on with this", "ROOT CAUSE found here"],
)  # fmt: skip
def test_table(text: str) -> None:
    assert frozenset(survival._decisions(text)) == _full_scan(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=14).map("".join))
def test_prefilter_finds_what_a_full_scan_finds(text: str) -> None:
    assert frozenset(survival._decisions(text)) == _full_scan(text)
