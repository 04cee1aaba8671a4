"""What marks an instruction source in a text: the patterns of ``evaluate.instructions``,
alone (the standard library only), so that ``ctxlab statusline`` can tell that a user line
holds no source, and which sources it holds, without loading the engine's values and the
fact extraction."""

from __future__ import annotations

import re
from collections.abc import Iterable

# CLAUDE.md / AGENTS.md contents injected into the conversation
RULES_RE = re.compile(
    r"Contents of (?P<path>\S*?(?:CLAUDE|AGENTS)(?:\.local)?\.md)"
    r"|# (?P<agents>AGENTS\.md) instructions for"
    r"|<(?P<tag>user_instructions)>"
)
SKILL_RE = re.compile(r"Base directory for this skill: (?P<dir>\S+)|<skill[ >]")
# The constraints among the user's instructions: rules for the whole session, not requests
CONSTRAINT_RE = re.compile(
    r"\b(?:always|never|must(?:n't| not)?|don't|do not|make sure|avoid|only use"
    r"|use \S+ (?:instead|for|to|not|rather))\b",
    re.IGNORECASE,
)
# The same words without the word boundaries: a text one of whose sentences matches
# CONSTRAINT_RE matches this (a pattern without assertions matches wherever it did with them)
CONSTRAINT_WORDS_RE = re.compile(CONSTRAINT_RE.pattern.replace(r"\b", ""), CONSTRAINT_RE.flags)


# The literal each alternative of RULES_RE / SKILL_RE opens with (case-sensitive patterns):
# a text without any has no match, found by ``in`` (the regexes scan at every position)
RULES_NEEDLES = ("Contents of ", "# AGENTS.md instructions for", "<user_instructions>")
SKILL_NEEDLES = ("Base directory for this skill: ", "<skill")


def _holds(text: str, needles: tuple[str, ...]) -> bool:
    for needle in needles:  # noqa: SIM110 (a loop, no generator: runs for every text)
        if needle in text:
            return True
    return False


def may_hold_source(text: str) -> bool:
    """False when ``instructions.message_sources`` can find no source in a user text block
    ``text``: no CLAUDE.md / AGENTS.md or skill mark, no constraint word (a necessary test,
    not the rule: True says only that the rule must be run)."""
    return (
        (_holds(text, RULES_NEEDLES) and RULES_RE.search(text) is not None)
        or (_holds(text, SKILL_NEEDLES) and SKILL_RE.search(text) is not None)
        or CONSTRAINT_WORDS_RE.search(text) is not None
    )


# --- the rule on a user message's texts (``instructions.message_sources`` reads it too) ---


def rules_label(text: str) -> str | None:
    found = RULES_RE.search(text) if _holds(text, RULES_NEEDLES) else None
    if found is None:
        return None
    return found.group("path") or found.group("agents") or "user instructions"


def skill_label(text: str) -> str | None:
    found = SKILL_RE.search(text) if _holds(text, SKILL_NEEDLES) else None
    if found is None:
        return None
    directory = found.group("dir")
    return f"skill {directory.rstrip('/').rsplit('/', 1)[-1]}" if directory else "skill"


Found = tuple[str, str, str]  # (kind, label, text) of a source


def injected_sources(texts: Iterable[str]) -> list[Found]:
    """The project rules and skills among a user message's (non-empty) text blocks: when
    there is one, its sentences are that source, not the user's constraints."""
    found: list[Found] = []
    for text in texts:
        label = rules_label(text)
        if label is not None:
            found.append(("project_rules", label, text))
            continue
        label = skill_label(text)
        if label is not None:
            found.append(("skill", label, text))
    return found


def constraint_sources(sentences: Iterable[str]) -> list[Found]:
    """The user's constraints among the distinct instruction sentences of a message a person
    typed (``extract``'s ``instructions`` facts), in sorted order."""
    return [("user_constraint", s[:80], s) for s in sorted(sentences) if CONSTRAINT_RE.search(s)]
