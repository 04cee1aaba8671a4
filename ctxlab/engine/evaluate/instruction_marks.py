"""What marks an instruction source in a text: the patterns of ``evaluate.instructions``,
alone (the standard library only), so that ``ctxlab statusline`` can tell that a user line
holds no source without loading the engine's values and the fact extraction."""

from __future__ import annotations

import re

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


def may_hold_source(text: str) -> bool:
    """False when ``instructions.message_sources`` can find no source in a user text block
    ``text``: no CLAUDE.md / AGENTS.md or skill mark, no constraint word (a necessary test,
    not the rule: True says only that the rule must be run)."""
    return (
        RULES_RE.search(text) is not None
        or SKILL_RE.search(text) is not None
        or CONSTRAINT_WORDS_RE.search(text) is not None
    )
