"""The fact extractor's faster scan finds exactly what the plain one found.

``extract.facts`` opens its path, identifier and error patterns with a lookahead on the
characters every alternative starts with, and takes a pattern's matches and its
``sub(" ", ...)`` from one scan. ``_plain_facts`` below is the earlier extractor: the
patterns without that lookahead, ``findall`` then ``sub``. Both run over every text of
every corpus conversation (block texts and tool-input strings) and over generated text.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from ctxlab.engine.evaluate import extract
from ctxlab.engine.synth import corpus_conversations

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"

_PCH = r"[\w.@+()\[\]-]"
PLAIN_PATH_RE = re.compile(
    r"(?=[~./])(?<![\w/.:@-])(?:~|\.{1,2})?(?:/" + _PCH + r"+){2,}/?"
    r"|(?=/)(?<![^\s\"'`(=])/[A-Za-z][\w.-]{3,}(?![\w/])"
    r"|(?<![\w/.@()-])(?:" + _PCH + r"++/)+[\w.-]*\.[A-Za-z]\w{0,7}\b"
    r"|(?<![\w/.@-])[\w-]+\.(?:py|ipynb|js|mjs|cjs|ts|tsx|jsx|go|rs|java|c|h|cc"
    r"|cpp|hpp|md|json|jsonl|yaml|yml|toml|txt|sh|html|css|scss|sql|rb|php|kt|swift|cfg|ini"
    r"|lock|log|csv|xml|env|vue|svelte|lua|pl|r|m|cs|dart|ex|exs|tf)\b"
)
PLAIN_IDENT_RE = re.compile(
    r"\b(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|__[a-z]\w*__|_[a-z0-9]+_[a-z0-9_]+"
    r"|[A-Z][a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+|[a-z]+[0-9]*(?:[A-Z][a-z0-9]*)+"
    r"|[A-Z]{2,}(?:_[A-Z0-9]+)+)\b"
    r"|\b(?=[A-Z0-9]*[A-Z])(?=[A-Z0-9]*[0-9])[A-Z0-9]{5,12}\b"
    r"|(?<![#\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])"
)
PLAIN_ERROR_RE = re.compile(
    r"(?<=[a-z])(?=[EF])(?:Error|Exception|Failure)(?::|$)"
    r"|\b(?=[eEfFpP\d])(?:(?:error|ERROR|Error|fatal|FATAL|Fatal|panic|ERR!|FAILED|FAIL|Failed"
    r"|failed)[ \t]*[:!\]]|(?:FAILED|FAIL|ERROR)\b(?= |$)|error [A-Z]+\d+:|error\(s\)"
    r"|Failed (?:Tests?|Suites?)\b|\d+ failed\b|[Ee]xit code [1-9])"
    r"|^[ \t]*Traceback \(most recent call last\)"
    r"|(?=[NcPS错失])(?:No such file or directory|command not found|Permission denied"
    r"|Segmentation fault|错误|失败)",
    re.MULTILINE,
)


def _plain_error_lines(text: str) -> list[str]:
    return extract.lines_hit(PLAIN_ERROR_RE, text)  # without the error-word prefilter


def _plain_facts(text: str) -> list[tuple[str, str]]:
    """The extractor as it was before the faster scan (same order of facts)."""
    x = extract
    text = x._normalise(text)
    urls = [
        x._clean_url(u)
        for u in x.URL_RE.findall(text)
        if not u.endswith(("...", "…")) and not x.BOILERPLATE_URL_RE.match(u)
    ]
    rest = x.URL_RE.sub(" ", text) if urls or "http" in text else text
    errors = [
        line.strip()[:200] for line in _plain_error_lines(rest) if not x.CODE_LINE_RE.search(line)
    ]
    commands = [c.strip()[:200] for c in x.PROMPT_RE.findall(rest)]
    commands += [
        c.strip()[:200]
        for c in x.INLINE_COMMAND_RE.findall(rest)
        if not all(arg.startswith("-") for arg in c.split()[1:])
    ]
    paths = [
        p for p in map(x._path, PLAIN_PATH_RE.findall(rest)) if p and not x._is_product_name(p)
    ]
    # names inside a path fact are part of it; a match that is no path keeps its names
    words = PLAIN_PATH_RE.sub(lambda m: " " if x._is_path_fact(m.group()) else m.group(), rest)
    found = x.Facts(
        paths=x._unique(paths, None),
        commands=x._unique([c for c in commands if c], None),
        errors=x._unique([e for e in errors if e], None),
        identifiers=x._unique(
            (w for w in PLAIN_IDENT_RE.findall(words) if x._is_identifier(w)), None
        ),
        numbers=x._unique(x.NUMBER_RE.findall(words), None),
        urls=x._unique(urls, None),
    )
    return found.items()


@pytest.fixture(scope="module")
def corpus_texts() -> list[str]:
    texts: dict[str, None] = {}
    for conversation in corpus_conversations(CORPUS):
        for message in conversation.messages:
            for block in message.blocks:
                if block.text:
                    texts[block.text] = None
                if block.tool_name:
                    texts[block.input_json] = None
                    for value in extract.input_strings(extract._decoded_input(block)):
                        texts[value] = None
    return list(texts)


@pytest.mark.slow  # ~25 s: two extractions of every corpus text
def test_fast_scan_equals_plain_on_every_corpus_text(corpus_texts: list[str]) -> None:
    assert len(corpus_texts) > 5_000  # the whole corpus, not a sample
    differing = [t[:120] for t in corpus_texts if extract.facts(t).items() != _plain_facts(t)]
    assert differing == []
    assert sum(len(extract.facts(t).items()) for t in corpus_texts[:2000]) > 1000


ALPHABET = "abcxyzABCXYZ0189_-./~@+()[]#$:;'\"`=\\ \t\n→é错误失败EFefpPTNcPS"
WORDS = (
    "Error: ", "KeyError: x", "FAILED ", "Traceback (most recent call last)", "./src/a.py",
    "~/x/y", "/workspace", "http://a.b/c", "snake_case", "CamelCase", "HAT170", "deadbeef12",
    "12 ms", "v1.2.3", "$ ls -la", "`git status`", "   12→", "No such file or directory",
    "Next.js", "/10/20", "a\\nb",
)  # fmt: skip


def test_fast_scan_equals_plain_on_generated_text() -> None:
    rng = random.Random(16)
    for _ in range(3_000):
        parts = [
            rng.choice(WORDS) if rng.random() < 0.3 else "".join(rng.choices(ALPHABET, k=6))
            for _ in range(rng.randint(1, 12))
        ]
        text = "".join(parts)
        assert extract.facts(text).items() == _plain_facts(text), text
