"""The sentences a person typed that ask for something or constrain it: the fact
extraction's ``instructions`` kind (``extract.instructions``), alone (the standard library
only), so that ``ctxlab statusline`` finds a user's constraints without compiling the
other facts' patterns."""

from __future__ import annotations

import re

INSTRUCTION_RE = re.compile(
    r"\b(?:must|mustn't|never|always|don't|do not|dont|make sure|ensure|avoid|should"
    r"|shouldn't|need to|needs to|please|without|instead of|i want|i'd like|i would like"
    r"|i need|can you|could you|let's|we can|you can|we need|we should|it'd be nice"
    r"|would be nice|would require)\b"
    r"|^(?:add|fix|create|make|use|change|remove|delete|update|write|implement|run|build"
    r"|keep|check|move|rename|refactor|install|test|set|put|show|find|replace|convert|look"
    r"|read|explain|try|stop|go|commit|push|deploy|help|book|cancel)(?=\s)"
    r"|必须|不要|请|务必|避免|需要",
    re.IGNORECASE,
)
SENTENCE_RE = re.compile(r"(?<=[.!?。！？])\s+")
# Lines of user text that the harness wrote, not the person
META_LINE_RE = re.compile(
    r"^\s*(?:<[/\w-]+>|Caveat:|\[Request interrupted|This session is being continued"
    r"|<system-reminder>)",
)


def instruction_sentences(text: str, *, width: int = 200) -> tuple[str, ...]:
    """Sentences of user-typed ``text`` that ask for something or constrain it (harness
    lines such as ``<command-name>`` markup and caveats are skipped), each once, in order."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip().lstrip("-*>#0123456789.) ").strip()
        if not line or META_LINE_RE.match(line) or line.startswith("```"):
            continue
        for sentence in SENTENCE_RE.split(line):
            sentence = sentence.strip()
            sentence = sentence.rstrip("\\").rstrip()  # a typed line break: "foo:\\"
            if len(sentence) >= 8 and INSTRUCTION_RE.search(sentence):
                out.append(sentence[:width])
    return tuple(dict.fromkeys(out))
