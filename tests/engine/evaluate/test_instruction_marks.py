"""``instruction_marks.may_hold_source``: the status line's test that a user text holds no
instruction source, so it need not load the rule's machinery (issue 38). A necessary test:
wherever ``instructions.message_sources`` finds a source in a user message, one of its text
blocks passes it; and it does turn most typed requests away."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.evaluate import instructions
from ctxlab.engine.evaluate.instruction_marks import may_hold_source

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "data" / "corpus"
SESSIONS = sorted(
    [
        *(ROOT / "tests" / "data" / "claude-code-2.1").glob("*.jsonl"),
        *(CORPUS / "claude-code").glob("*.jsonl"),
        *(CORPUS / "codex-rollout").glob("*.jsonl"),
        *(ROOT / "tests" / "data" / "agreement" / "entireio-cli").rglob("full.jsonl"),
    ]
)


def user(*texts: str) -> Message:
    return Message(Role.USER, tuple(Block(BlockKind.TEXT, t) for t in texts))


def passes(message: Message) -> bool:
    return any(
        may_hold_source(b.text) for b in message.blocks if b.kind is BlockKind.TEXT and b.text
    )


def test_every_source_of_the_vendored_sessions_passes() -> None:
    found = turned_away = 0
    kinds: set[str] = set()
    for path in SESSIONS:
        for conversation in importers.parse(path.read_bytes(), name=path.name).conversations:
            for index, message in enumerate(conversation.messages):
                if message.role is not Role.USER:
                    continue
                sources = list(instructions.message_sources(index, message))
                if sources:
                    assert passes(message), (path.name, index, message.text[:200])
                    found += 1
                    kinds.update(s.kind for s in sources)
                elif not passes(message):
                    turned_away += 1
    assert "user_constraint" in kinds  # (CLAUDE.md texts: the synthetic cases below)
    assert found and turned_away > found  # most user texts need no rule at all


@pytest.mark.parametrize(
    "text",
    [
        "1always run the tests.",  # the line's numbering stripped: a word boundary appears
        "-never push to main",
        "Please ALWAYS use pnpm.",
        "Use ruff instead of flake8",
        "Contents of /repo/CLAUDE.md (project instructions):\n\nUse pnpm.",
        "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>x</INSTRUCTIONS>",
        "Base directory for this skill: /home/u/.claude/skills/pdf\n\n# PDF",
        "<skill name='x'>do it</skill>",
        "Don't touch the migrations",
    ],
)
def test_texts_with_a_source_pass(text: str) -> None:
    assert list(instructions.message_sources(0, user(text)))
    assert may_hold_source(text)


@pytest.mark.parametrize(
    "text", ["fix the failing test", "go on", "What does this function return?", "继续"]
)
def test_requests_without_a_constraint_are_turned_away(text: str) -> None:
    assert not list(instructions.message_sources(0, user(text)))
    assert not may_hold_source(text)


def test_the_needles_change_no_answer() -> None:
    """``may_hold_source`` tries RULES_RE / SKILL_RE only where an opening literal of theirs
    is: the same answers as the three searches, on every user text of the sessions."""
    from ctxlab.engine.evaluate.instruction_marks import CONSTRAINT_WORDS_RE, RULES_RE, SKILL_RE

    texts = [
        b.text
        for path in SESSIONS
        for conversation in importers.parse(path.read_bytes(), name=path.name).conversations
        for message in conversation.messages
        if message.role is Role.USER
        for b in message.blocks
        if b.text
    ]
    texts += [
        "Contents of CLAUDE.md",
        "contents of /r/CLAUDE.md",
        "<skill>",
        "<skills>",
        "<user_instructions>",
    ]
    assert len(texts) > 400
    for text in texts:
        searched = any(p.search(text) for p in (RULES_RE, SKILL_RE, CONSTRAINT_WORDS_RE))
        assert may_hold_source(text) is searched, text[:200]
