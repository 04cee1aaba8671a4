"""``extract.cut_version_facts`` (a truncated tool output's facts from its original's) gives
exactly what scanning the truncated text in full gives: on every tool output of the
realistic transcript cut at many places, and on generated texts."""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.engine.core.model import BlockKind, Message
from ctxlab.engine.evaluate import extract
from ctxlab.engine.synth import realistic as synth_realistic
from tests.engine.builders import results, tool_result

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
NOTICE = (
    "<<<TRUNCATED>>>\nThe output above was truncated.\nThe full content is saved to the file "
    "and contains {lines} lines in total.\nThis excerpt starts at line 1 and covers the next "
    "{chars} bytes.\nIf the current content is not enough, call `read_file` with "
    "file_path=~/.qwenpaw/tool_results/{tag}.txt start_line={lines} to read more."
)
ALPHABET = st.sampled_from(
    list("ab_Z0129./:-~@+ \n\n\t()<>\"'`]{[$\\\x1b→")
    + [
        "http://x.y/a",
        "Error",
        "failed",
        "src/a.py",
        "错误",
        "  12→",
        "    7\t",
        "3: ",
        "\\n",
        "\x1b[31m",
        "A" * 70,
        "$ ls -la",
        "`git status`",
        "300 ms",
        "v1.2.3",
        "KeyError: 'x'",
        "Traceback",
        "Next.js",
        "foo_bar",
        "CamelCase",
        "x = f(",
        "ok\n",
    ]  # fmt: skip
)


def _full(text: str) -> frozenset[tuple[str, str]]:
    extract.clear_caches()  # no memo: a scan of the text itself
    return extract.message_facts(tool_result("t", text))


def _full_message(message: Message) -> frozenset[tuple[str, str]]:
    extract.clear_caches()
    return extract.message_facts(message)


def _check(original: str, cut_at: int, notice: str) -> bool:
    """Whether ``cut_version_facts`` took the cut (its facts then checked)."""
    version = original[:cut_at] + notice
    before = tool_result("t", original)
    facts = _full(original)
    extract.clear_caches()
    got = extract.cut_version_facts(before, tool_result("t", version), facts)
    if got is not None:
        assert got == _full(version), (original[:200], cut_at)
        assert extract.message_facts(tool_result("t", version)) == got  # memoised the same
    return got is not None


def test_realistic_tool_outputs_cut_anywhere() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=3_000, seed=5)
    outputs = [
        b.text
        for m in conversation.messages
        for b in m.blocks
        if b.kind is BlockKind.TOOL_RESULT and b.text and len(b.text) > 200
    ]
    assert len(outputs) > 200
    rng = random.Random(48)
    checked = cut = 0
    for text in outputs[:400]:
        for cut_at in (3000, rng.randrange(len(text)), len(text) // 2):
            notice = NOTICE.format(lines=text.count("\n"), chars=cut_at, tag=f"{cut_at:x}")
            cut += _check(text, min(cut_at, len(text)), notice)
            checked += 1
    assert checked > 600
    assert cut > checked // 2  # most took the cut (the rest: JSON, no whole line kept)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(ALPHABET, min_size=1, max_size=80).map("".join),
    st.integers(min_value=0, max_value=400),
    st.lists(ALPHABET, max_size=12).map("".join),
)
def test_generated_texts_cut_anywhere(text: str, cut_at: int, notice: str) -> None:
    _check(text, min(cut_at, len(text)), notice)


def test_not_a_cut_of_a_plain_output() -> None:
    """JSON outputs (facts of their values), other blocks, no whole line kept: None; a
    message of several outputs: each one's facts."""
    plain = "line one /a/b.py\nline two foo_bar\n"
    facts = _full(plain)
    json_text = '[{"a": "/x/y.py"}]\n' + plain
    assert extract.cut_version_facts(
        tool_result("t", json_text), tool_result("t", json_text[:25]), _full(json_text)
    ) is None  # fmt: skip
    two = results(("a", plain), ("b", "x.py\n" + plain))
    cut = results(("a", plain[:20] + "<<<TRUNCATED>>>"), ("b", "x.py\n" + plain))
    extract.clear_caches()
    got = extract.cut_version_facts(two, cut, extract.message_facts(two))
    assert got == _full_message(cut)  # each output read from the kinds of the message's
    assert extract.cut_version_facts(two, results(("a", plain)), facts) is None  # not a cut
    assert extract.cut_version_facts(
        tool_result("t", plain), tool_result("t", "line on<<<TRUNCATED>>>"), facts
    ) is None  # fmt: skip
    got = extract.cut_version_facts(
        tool_result("t", plain), tool_result("t", plain[:20] + "<<<TRUNCATED>>>"), facts
    )
    assert got == _full(plain[:20] + "<<<TRUNCATED>>>")


_TEXTS = st.lists(ALPHABET, min_size=1, max_size=60).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(_TEXTS, st.integers(min_value=0, max_value=300), _TEXTS),
        min_size=1,
        max_size=3,
    )
)
def test_generated_messages_of_several_outputs(items: list[tuple[str, int, str]]) -> None:
    original = results(*[(f"t{i}", text) for i, (text, _, _) in enumerate(items)])
    version = results(
        *[
            (f"t{i}", text[: min(at, len(text))] + notice)
            for i, (text, at, notice) in enumerate(items)
        ]
    )
    facts = _full_message(original)
    extract.clear_caches()
    got = extract.cut_version_facts(original, version, facts)
    if got is not None:
        assert got == _full_message(version)
