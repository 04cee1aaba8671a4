"""The offline summariser's first scans of a text, made cheaper, find exactly what their
plain forms find: ``_fact_text`` (a whole-text path when no line is a tool call, output,
disclaimer or harness line), ``_first_line`` (cached), ``_matching_lines`` (only the lines
that hold a pattern word or a tool call that may decode to one are read) and the path scan
(skipped when no "/" nor dot before a letter). Checked on every corpus text, the material
the five presets hand the summariser while replaying real and realistic transcripts, the
realistic bench transcript's distinct block texts, built edge cases and generated text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.engine import synth
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.core.summary_request import (
    PromptMessage,
    SummaryRequest,
    SummaryResponse,
    approx_tokens,
)
from ctxlab.engine.evaluate import extract
from ctxlab.engine.evaluate.extract import IDENT_RE, PATH_RE
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.strategies import PRESETS
from ctxlab.engine.summarize import offline
from ctxlab.engine.summarize.offline import (
    CONSTRAINT_RE,
    DECISION_RE,
    META_RE,
    SCAN_CHARS,
    TOOL_CALL_RE,
    TOOL_ID_RE,
    TOOL_OUTPUT_RE,
    OfflineSummarizer,
    _call_args,
    _is_note,
    _readable,
)
from ctxlab.engine.synth import realistic as synth_realistic
from ctxlab.engine.tokens.cl100k import block_text

pytestmark = pytest.mark.slow  # every corpus text, realistic transcripts, five replays

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
PATTERNS = (CONSTRAINT_RE, DECISION_RE)


# --- the plain forms (as they were before the shortcuts) ---------------------------------


def plain_fact_text(text: str) -> str:
    out: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if _is_note(stripped) or META_RE.match(stripped):
            continue
        call = TOOL_CALL_RE.match(stripped)
        if call:
            out.extend(extract.input_strings(_call_args(call.group(2))))
            continue
        out.append(TOOL_ID_RE.sub("", TOOL_OUTPUT_RE.sub("", stripped)))
    return "\n".join(out)


def plain_first_line(text: str) -> str:
    for line in text.splitlines():
        readable = _readable(line)
        if readable:
            return readable
    return ""


def check(text: str) -> None:
    """Each scan of ``text`` as the summariser makes it (its first ``SCAN_CHARS``, its
    ``FACT_CHARS`` head) equals the plain form's."""
    offline.clear_caches()
    scanned = text[:SCAN_CHARS]
    assert offline._fact_text(scanned) == plain_fact_text(scanned), scanned[:300]
    head = text[: offline.FACT_CHARS]
    assert offline._fact_head(head) == plain_fact_text(head), head
    assert offline._first_line(text) == plain_first_line(text), text[:300]
    readable = [r for r in map(_readable, scanned.splitlines()) if r]
    for pattern in PATTERNS:
        expected = tuple(r for r in readable if pattern.search(r))
        assert offline._matching_lines(text, pattern) == expected, (pattern, text[:300])
    for part in (scanned, extract._normalise(plain_fact_text(head))):
        assert extract._path_scan(part) == extract._scan(PATH_RE, part), part[:300]
        assert extract.identifiers_found(part) == IDENT_RE.findall(part), part[:300]


# --- texts ---------------------------------------------------------------------------------


class Recording:
    """The offline summariser, keeping every material text it is handed."""

    name = "offline"

    def __init__(self, texts: dict[str, None]) -> None:
        self.inner, self.texts = OfflineSummarizer(), texts

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        for item in request.material:
            self.texts[item.text] = None
        return self.inner.summarize(request)


def corpus_texts() -> list[str]:
    """Each corpus message's block texts, joined and one by one, and rendered as material:
    a tool call as ``[tool_call name] json`` and as ``[tool_use name] python-repr``."""
    out: dict[str, None] = {}
    for conversation in synth.corpus_conversations(CORPUS):
        for message in conversation.messages:
            texts = [t for b in message.blocks if (t := block_text(b))]
            out.update(dict.fromkeys(texts))
            out["\n".join(texts)] = None
            rendered = []
            for b in message.blocks:
                if b.kind.value == "tool_use":
                    rendered.append(f"[tool_call {b.tool_name}] {b.input_json}")
                    rendered.append(f"[tool_use {b.tool_name}] {b.tool_input!r}")
                elif b.text:
                    rendered.append(b.text)
            out["\n".join(rendered)] = None
    return list(out)


def material_texts(conversations: list[Conversation]) -> list[str]:
    """What the five presets hand the offline summariser while replaying ``conversations``."""
    texts: dict[str, None] = {}
    for conversation in conversations:
        for name in PRESETS:
            replay_run(conversation, name, summarizer=Recording(texts))
    return list(texts)


TRICKY = [
    '[tool_call bash] {"command": ["make", "sure"]}\né',  # argv joined: "make sure"
    '[tool_call bash] {"command": ["make", "sure"]}',  # the same in ASCII text
    '[tool_call bash] {"command": ["echo", "we", "decided"]}\n\u00e9 plan',
    "[tool_call bash] {'command': 'we pl' 'an to use it'}\né",  # implicit concatenation
    '[tool_call bash] {"command": "we decided\\u0020so"}\n— ok',  # an escape makes the space
    "[tool_call bash] {'command': 'don\\'t do it'}\né",  # a Python escape makes the quote
    "[tool_call bash] {'command': 'do\\x20not'}\né",
    '[tool_use Edit] {"why": "\\u56e0\\u4e3a"}',  # 因为, escaped
    '<tool_use>edit {"path": "a", "why": "because"}\né',
    "make toolu_01AbCdEfGh\u017fure é",  # a removed tool id joins "make " and "ſure"
    "İnstead we go",
    "x" * 150 + " décidé plan" + "ning",
    "Caveat: you must not é",
    "[tool_result toolu_01]: you should é",
    "<command-name>/plan</command-name>\nwe decided é",
    "(no content)\nplease é\n\u2028we must\r\nbecause\x1cplan",
    "This session is being continued from a previous conversation\nsee toolu_0123456789",
    "see call_abcdefgh-plan and fc_123456789 decided\n  12→ path/to/a.py",
    "e.g. the v1.2 build\nno/slash here.and.Dots",
    "README.md and Next.js at ~/x/y",
    offline.NOTES["en"] + "\nplease keep it",
]

PIECES = st.sampled_from(
    list("ab_Z0129./:-~@+ \n\r\t()<>\"'`]\\[{}é\u0130\u017f\u2028")
    + ["[tool_call bash] ", "[tool_use Read] ", "<tool_use>", "[tool_result x]: ", "toolu_",
       "call_abcdefgh", "must", "do not", "decided", "plan", "Caveat:", "<bash-stdout>",
       '{"command": ["make", "sure"]}', "{'a': 'b' 'c'}", '{"x": "\\u0020"}', "(no content)",
       "src/a.py", "/usr/lib/x", "  12→", "决定", "请", offline.NOTES["en"]]
)  # fmt: skip


# --- tests ---------------------------------------------------------------------------------


def test_every_corpus_text_scans_as_before() -> None:
    texts = corpus_texts() + TRICKY + ["\n".join(TRICKY)]
    assert len(texts) > 2000
    for text in texts:
        check(text)


def test_the_presets_material_scans_as_before() -> None:
    real = sorted(synth.corpus_conversations(CORPUS), key=lambda c: -len(c.messages))[:3]
    realistic = synth_realistic.realistic_bench_conversation(CORPUS, messages=3_000, seed=5)
    texts = material_texts([*real, realistic])
    assert len(texts) > 2000
    skipped = 0
    for text in texts:
        check(text)
        skipped += "[tool_" in text and not offline._may_hold_meta(text)
    assert skipped > 100  # rendered tool calls were read on the shortcut's line-by-line path


def test_the_realistic_bench_transcripts_distinct_texts_scan_as_before() -> None:
    conversation = synth_realistic.realistic_bench_conversation(CORPUS, messages=20_000, seed=0)
    texts = dict.fromkeys(
        t for m in conversation.messages for b in m.blocks if (t := block_text(b))
    )
    assert len(texts) > 20_000
    for text in texts:
        check(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=40).map("".join))
def test_generated_text_scans_as_before(text: str) -> None:
    check(text)


TEXT = st.text(st.sampled_from(list("ab \n[]é中😀")), max_size=12)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.lists(st.tuples(st.sampled_from(["user", "assistant", "sÿs"]), TEXT), max_size=4))
def test_input_tokens_estimate_equals_the_rendered_inputs(system: str, messages: list) -> None:  # type: ignore[type-arg]
    request = SummaryRequest(
        strategy="x", system=system, messages=tuple(PromptMessage(r, t) for r, t in messages)
    )
    assert request.approx_input_tokens() == approx_tokens(request.input_text())


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=40).map("".join), st.sampled_from([1, 2, 3, 5, 16]))
def test_first_line_from_growing_prefixes(text: str, chunk: int) -> None:
    """Whatever the prefix size, a cut line (and a cut "\\r\\n") is read again whole."""
    kept = offline.FIRST_LINE_CHUNK
    offline.FIRST_LINE_CHUNK = chunk
    try:
        for variant in (
            text,
            "\r\n" * 3 + text,
            "   \n" * chunk + text,
            text.replace("\n", "\r\n"),
        ):
            assert offline._first_line.__wrapped__(variant) == plain_first_line(variant)
    finally:
        offline.FIRST_LINE_CHUNK = kept


WORDISH = st.sampled_from(
    list("aAfF09_-#.: \n\u00e9\u00c9\u0663\u00b2\u2167")
    + ["snake_case", "CamelCase", "camelCase", "HAT170", "deadbeef1", "__init__", "_a_b",
       "ABC", "A1234", "1234A", "x86", "FooBAr", "Foo2Bar", "v2", "2024", "a1b2c3d", "Ab",
       "FOO_BAR"]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(WORDISH, max_size=30).map("".join))
def test_identifiers_found_from_seeds_equal_findall(text: str) -> None:
    assert extract.identifiers_found(text) == IDENT_RE.findall(text)


def test_a_word_character_is_alphanumeric_or_underscore() -> None:
    """``identifiers_found`` walks back to a run's start with ``str.isalnum``: it must be
    exactly the regex engine's ``\\w``."""
    word = re.compile(r"\w")
    for code in range(0x110000):
        c = chr(code)
        assert bool(word.match(c)) == (c.isalnum() or c == "_"), hex(code)


PATHISH = st.sampled_from(
    list("/.~@+()[]-_aZ09 \n\"'`=:é")
    + ["src/a.py", "/usr/lib", "./x", "../y/z", "~/h/i", "a.md", "Next.js", "(group)", "[id]",
       "http://x.y/z", "v1.2", "/10/20", "x.PY", "data.tar.gz"]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(PATHISH, max_size=30).map("".join))
def test_path_scan_of_runs_equals_a_full_scan(text: str) -> None:
    assert extract._path_scan(text) == extract._scan(PATH_RE, text)


def _path_before(found: str) -> str:
    """What ``_path`` answered before its segment loop (a list, then ``all``)."""
    if found.endswith(".") and not found.endswith(".."):
        found = found.rstrip(".")
    while found[-1:] in ")]" and found.count(found[-1]) > found.count(
        "(" if found[-1] == ")" else "["
    ):
        found = found[:-1]
    parts = [p for p in found.split("/") if p not in ("", "~", ".", "..")]
    if not parts or not all(re.search(r"[A-Za-z_]", p) for p in parts):
        return ""
    return found


@settings(max_examples=500, deadline=None)
@given(st.lists(PATHISH, max_size=30).map("".join))
def test_a_path_is_kept_as_before(text: str) -> None:
    for found in PATH_RE.findall(text):
        assert extract._path(found) == _path_before(found), found


def test_a_path_without_a_lettered_segment_is_none() -> None:
    for found in ("/10/20", "./..", "~/", "a/1/b", "/"):
        assert extract._path(found) == "", found
    for found in ("/usr/lib", "~/h/i", "../y/z.py", "src/a.py."):
        assert extract._path(found) == found.rstrip("."), found


def test_the_argv_list_pattern_names_every_command_key() -> None:
    keys = offline._ARGV_LIST.pattern.split(")")[0].removeprefix("(?:").split("|")
    assert sorted(keys) == sorted(extract.COMMAND_KEYS)


NORMALISABLE = st.sampled_from(
    list("0123456789 \n\t:→aZ+/=.-\u0663")
    + [": ", "12: ", "   7→", "A" * 40, "QUJD" * 9, "x/y=" * 5]
)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(st.lists(NORMALISABLE, max_size=60).map("".join))
def test_normalise_prefilters_only_skip_texts_without_a_match(text: str) -> None:
    """``_normalise`` skips the line-number and base64 patterns on a text its plain tests
    clear: neither pattern may find anything there."""
    if not extract._may_number_lines(text):
        assert extract.LINE_NUMBER_RE.search(text) is None, text
    # the base64 test is exact: the pattern runs only where it finds something
    assert extract._may_hold_base64(text) == (extract.BASE64_RE.search(text) is not None), text


def test_normalise_prefilters_find_the_usual_cases() -> None:
    assert extract._may_number_lines(": x\n  12: y")  # a later ": " after a digit
    assert not extract._may_number_lines("note: prose: more")
    assert extract._may_hold_base64("see " + "QUJD" * 17 + " end")
    assert not extract._may_hold_base64("plain words and more " * 10)
    # a long path or name fills an aligned block of 32 without a run of 64 around it
    assert not extract._may_hold_base64("/workspace/src/components/ChatInterface.tsx holds one")
    for at in range(40):  # a run of exactly 64 anywhere
        assert extract._may_hold_base64(" " * at + "QUJD" * 16 + " end")
        assert not extract._may_hold_base64(" " * at + "QUJD" * 15 + "QUJ end")
