"""Where a transcript's instructions come from, so that survival can follow them.

An *instruction source* is a piece of context that tells the agent how to work:

- ``system_prompt``: a system message;
- ``project_rules``: CLAUDE.md / AGENTS.md contents injected into the conversation (Claude
  Code's ``Contents of /path/CLAUDE.md`` system reminder, Codex's ``# AGENTS.md
  instructions for`` / ``<user_instructions>`` message);
- ``skill``: a skill's text loaded into the conversation (``Base directory for this
  skill:``, ``<skill>`` blocks);
- ``user_constraint``: a sentence the user typed that constrains the work ("always run the
  tests", "never touch the migrations", "use pnpm") — a subset of ``extract``'s
  instructions.

After a compaction each source is ``kept`` (its message is still in the request, as it
was), ``reattached`` (the same text is in the request again, from another message: Claude
Code re-injects CLAUDE.md), ``summarised`` (only a paraphrase in the summary: most of its
rule lines' words are there) or ``dropped``. The last two are findings
(``instruction_summarised``, ``instruction_dropped`` in ``catalogue``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..core.model import BlockKind, Message, Role
from ..core.textkeys import content_words, text_key
from . import extract
from .instruction_marks import constraint_sources, injected_sources

KINDS = ("system_prompt", "project_rules", "skill", "user_constraint")
LOST_STATUSES = frozenset({"summarised", "dropped"})

# A summary "keeps" a paraphrase when this share of a rule line's content words is in it
PARAPHRASE_SHARE = 0.6
RULE_LINES_SHARE = 0.5  # ... and, for a long source, this share of its rule lines


@dataclass(frozen=True, slots=True)
class Source:
    kind: str  # in KINDS
    label: str  # a path, a skill, the first words of a constraint
    message: int  # source index of the message holding it
    key: str  # text_key of its text: the same source elsewhere has the same key
    text: str


def message_sources(
    index: int, message: Message, facts: frozenset[tuple[str, str]] | None = None
) -> Iterator[Source]:
    """The instruction sources of one message (usually none); ``facts``: its
    ``extract.message_facts`` when they are known already. A user message's rule reads its
    texts alone (``instruction_marks``: ``ctxlab statusline`` reads the same one)."""
    if message.role is Role.SYSTEM:
        text = message.text
        if text.strip():
            yield Source("system_prompt", "system prompt", index, text_key(text), text)
        return
    if message.role is not Role.USER:
        return
    texts = [b.text for b in message.blocks if b.kind is BlockKind.TEXT and b.text]
    found = injected_sources(texts)  # rules or a skill: their sentences are not the user's
    if not found:
        pairs = extract.message_facts(message) if facts is None else facts
        found = constraint_sources(value for kind, value in pairs if kind == "instructions")
    for kind, label, text in found:
        yield Source(kind, label, index, text_key(text), text)


def sources(
    messages: Sequence[Message],
    facts: Callable[[int], frozenset[tuple[str, str]]] | None = None,
) -> list[Source]:
    """Every instruction source of ``messages``, in source order; ``facts(i)``: message
    ``i``'s ``extract.message_facts`` when they are known already (``lost.FactIndex``)."""
    if facts is None:
        return [s for i, m in enumerate(messages) for s in message_sources(i, m)]
    return [
        s
        for i, m in enumerate(messages)
        if m.role is Role.SYSTEM or m.role is Role.USER
        for s in message_sources(i, m, facts(i))
    ]


def _rule_lines(text: str) -> list[frozenset[str]]:
    lines = [content_words(line) for line in text.splitlines()]
    return [w for w in lines if len(w) >= 3] or ([content_words(text)] if text else [])


def paraphrased(text: str, summary_words: frozenset[str]) -> bool:
    """Whether ``summary_words`` hold most of the content words of most rule lines of
    ``text`` (word sets, not meaning: a summary that says the opposite with the same words
    counts as keeping it)."""
    if not summary_words:
        return False
    lines = _rule_lines(text)
    if not lines:
        return False
    kept = sum(
        1
        for words in lines
        if words and len(words & summary_words) >= PARAPHRASE_SHARE * len(words)
    )
    return kept >= RULE_LINES_SHARE * len(lines) and kept > 0


def status(
    source: Source,
    *,
    kept: bool,
    reattached: bool,
    summary_words: frozenset[str],
) -> str:
    """The source's fate after a compaction that touched its message."""
    if kept:
        return "kept"
    if reattached:
        return "reattached"
    return "summarised" if paraphrased(source.text, summary_words) else "dropped"


def by_key(found: Sequence[Source]) -> dict[str, list[int]]:
    """key -> the messages holding a source with that text (for "re-attached")."""
    holders: dict[str, list[int]] = {}
    for s in found:
        holders.setdefault(s.key, []).append(s.message)
    return holders


def fates(
    at_risk: Sequence[Source],
    holders: dict[str, list[int]],
    available: Callable[[int], bool],
    summary_words: frozenset[str],
) -> list[tuple[Source, str]]:
    """Each source of a compaction's touched messages (once per distinct text) with its
    status; ``available(i)``: message ``i`` is in the request after it, as it was."""
    out: list[tuple[Source, str]] = []
    seen: set[str] = set()
    for source in at_risk:
        if source.key in seen:
            continue
        seen.add(source.key)
        kept = available(source.message)
        reattached = not kept and any(
            j != source.message and available(j) for j in holders.get(source.key, ())
        )
        out.append(
            (source, status(source, kept=kept, reattached=reattached, summary_words=summary_words))
        )
    return out
