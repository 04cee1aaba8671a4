"""Long conversations made of real ones, deterministically.

The corpus sessions are short next to a 200K window, so compaction has little to do on them.
``join_conversations`` concatenates real sessions (a seeded shuffle, cycled) into one long
conversation that stays API-valid: one system prompt at the start, tool ids made unique per
copy so every tool_result still answers its own tool_use, timestamps strictly increasing.
Only the joining is synthetic: every message's blocks and source position are the real ones.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..core.model import Block, BlockKind, Conversation, Message, Role, ToolDef, TranscriptError
from ..tokens.cl100k import message_reference_tokens

_EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
_STEP = timedelta(seconds=7)  # synthetic spacing between consecutive messages
_CUT_NOTE = "[synthetic join: this message's tool calls were cut at the end of the conversation]"
_SKIP_FILES = {"MANIFEST.tsv", "README.md", "NOTICE.md"}
# Corpus files added after the joined benchmark and golden transcripts were fixed. The
# joined transcripts keep their sources, so perf goldens and bench figures stay comparable
# when the corpus grows; the files still count everywhere else (corpus_conversations).
JOINED_SOURCES_EXCLUDE = frozenset(
    {"swe-agent-traj/pydicom-1458-gpt4.traj", "swe-agent-traj/ctf-katy.traj"}
)


def _timestamp(index: int) -> str:
    return (_EPOCH + _STEP * index).strftime("%Y-%m-%dT%H:%M:%SZ")


def _copy_messages(source: Conversation, copy: int) -> list[Message]:
    """One copy of a source without its system messages, ids suffixed with ``~copy``.

    Sources may reuse a tool id (tau-bench does, within one conversation): each tool_use gets
    a fresh id and a tool_result is linked to the latest call with its original id, which is
    how the source itself paired them."""
    latest: dict[str, str] = {}
    calls = 0
    out: list[Message] = []
    for message in source.messages:
        if message.role is Role.SYSTEM:
            continue
        blocks = []
        for block in message.blocks:
            if block.kind is BlockKind.TOOL_USE:
                calls += 1
                new_id = f"{block.tool_id or 'call'}~{copy}.{calls}"
                latest[block.tool_id] = new_id
                blocks.append(replace(block, tool_id=new_id))
            elif block.kind is BlockKind.TOOL_RESULT:
                new_id = latest.get(block.tool_id, f"{block.tool_id or 'orphan'}~{copy}")
                blocks.append(replace(block, tool_id=new_id))
            else:
                blocks.append(block)
        out.append(
            replace(
                message,
                blocks=tuple(blocks),
                id=f"{message.id}~{copy}" if message.id else "",
                usage=None,  # reported usage described the source's context, not this one
            )
        )
    return out


def _drop_cut_calls(messages: list[Message], cut: set[str]) -> None:
    """Remove tool_use blocks whose results fell past the cut (tail only: results follow
    their calls, so the calls are in the last few messages)."""
    for i in range(len(messages) - 1, -1, -1):
        if not cut:
            return
        message = messages[i]
        ids = {b.tool_id for b in message.tool_uses} & cut
        if not ids:
            continue
        kept = tuple(
            b for b in message.blocks if not (b.kind is BlockKind.TOOL_USE and b.tool_id in ids)
        )
        messages[i] = replace(message, blocks=kept or (Block(BlockKind.TEXT, text=_CUT_NOTE),))
        cut -= ids


def join_conversations(
    conversations: Iterable[Conversation],
    *,
    target_messages: int | None = None,
    target_tokens: int | None = None,
    seed: int = 0,
    title: str = "",
    rewrite: Callable[[int, Conversation, list[Message]], list[Message]] | None = None,
) -> Conversation:
    """Join real conversations into one long one.

    Sources with tool calls are used (all sources when none has any), in a seeded shuffle,
    cycled as often as needed. With only ``target_messages`` the result has exactly that many
    messages; otherwise it ends at the first clean boundary (no pending tool call) once every
    target is reached. Deterministic: the same inputs and seed give an identical result.
    ``rewrite(copy_number, source, messages)`` may change each copy's messages (ids and
    tool ids already made unique) before they are appended.
    """
    if target_messages is None and target_tokens is None:
        raise ValueError("give target_messages and/or target_tokens")
    pool = [c for c in conversations if any(m.role is not Role.SYSTEM for m in c.messages)]
    with_tools = [c for c in pool if c.tool_call_count]
    pool = with_tools or pool
    if not pool:
        raise ValueError("no source conversation has any message")
    rng = random.Random(seed)
    system = next(
        (m for c in pool for m in c.messages if m.role is Role.SYSTEM and m.text.strip()), None
    )
    messages: list[Message] = [system] if system else []
    tokens = message_reference_tokens(system) if system and target_tokens else 0
    used: list[str] = []
    tools: dict[str, ToolDef] = {}
    copy = 0

    def reached() -> bool:
        return (target_messages is None or len(messages) >= target_messages) and (
            target_tokens is None or tokens >= target_tokens
        )

    exact = target_messages is not None and target_tokens is None
    pending: set[str] = set()  # calls of the current copy still waiting for their result
    done = reached()
    while not done:
        order = list(pool)
        rng.shuffle(order)
        for source in order:
            copy += 1
            used.append(source.id)
            for tool in source.tools:
                tools.setdefault(tool.name, tool)
            pending = set()
            copied = _copy_messages(source, copy)
            if rewrite is not None:
                copied = rewrite(copy, source, copied)
            for message in copied:
                messages.append(message)
                for block in message.blocks:
                    if block.kind is BlockKind.TOOL_USE:
                        pending.add(block.tool_id)
                    elif block.kind is BlockKind.TOOL_RESULT:
                        pending.discard(block.tool_id)
                if target_tokens is not None:
                    tokens += message_reference_tokens(message)
                if reached() and (exact or not pending):
                    done = True
                    break
            if done or reached():  # a source's own dangling calls end with its copy
                done = True
                break
    if exact:
        assert target_messages is not None
        del messages[target_messages:]
        _drop_cut_calls(messages, pending)
    messages = [replace(m, timestamp=_timestamp(i)) for i, m in enumerate(messages)]
    first_model = next((c.model for c in pool if c.model), "")
    return Conversation(
        id=f"synth-{seed}-{len(messages)}",
        title=title or f"{len(messages):,} messages joined from {len(set(used))} real sessions",
        messages=tuple(messages),
        tools=tuple(tools.values()),
        model=first_model,
        metadata=(
            ("synth_seed", str(seed)),
            ("synth_copies", str(copy)),
            ("synth_sources", ",".join(dict.fromkeys(used))),
        ),
    )


def corpus_conversations(
    corpus_dir: Path | str, *, exclude: frozenset[str] = frozenset()
) -> list[Conversation]:
    """Every conversation the importers can read from a corpus folder, in a stable order,
    but for the files in ``exclude`` (paths relative to the folder). Files no importer
    accepts are skipped (the corpus is tested file by file elsewhere)."""
    from .. import importers  # late: the registry imports every importer module

    root = Path(corpus_dir)
    out: list[Conversation] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.name in _SKIP_FILES or path.suffix in (".yaml", ".yml"):
            continue  # cassette twins: the .json holds the same bodies
        if path.relative_to(root).as_posix() in exclude:
            continue
        try:
            parsed = importers.parse(path.read_bytes(), name=path.relative_to(root).as_posix())
        except TranscriptError:
            continue
        out.extend(parsed.conversations)
    return out


def joined_sources(corpus_dir: Path | str) -> list[Conversation]:
    """The corpus conversations the joined (demo and benchmark) transcripts are built from."""
    return corpus_conversations(corpus_dir, exclude=JOINED_SOURCES_EXCLUDE)


def _density(conversation: Conversation) -> float:
    """Reference tokens per message."""
    total = sum(message_reference_tokens(m) for m in conversation.messages)
    return total / max(len(conversation.messages), 1)


def long_demo_conversation(
    corpus_dir: Path | str, *, target_tokens: int = 300_000, seed: int = 0
) -> Conversation:
    """A demo session of at least ``target_tokens`` reference tokens, joined from every
    real tool-using session of the corpus."""
    return join_conversations(
        joined_sources(corpus_dir),
        target_tokens=target_tokens,
        seed=seed,
        title=f"Joined real sessions (≥{target_tokens // 1000}K tokens, seed {seed})",
    )


BENCH_MIN_DENSITY = 300.0  # tokens per message: 20,000 messages then hold > 5M tokens


def bench_conversation(
    corpus_dir: Path | str,
    *,
    messages: int = 20_000,
    seed: int = 0,
    conversations: list[Conversation] | None = None,
    rewrite: Callable[[int, Conversation, list[Message]], list[Message]] | None = None,
    title: str = "",
) -> Conversation:
    """A benchmark-sized session of exactly ``messages`` messages, built from the sessions
    with big tool outputs (≥ ``BENCH_MIN_DENSITY`` reference tokens per message) so that
    20,000 messages carry several million reference tokens. ``conversations``: the corpus
    already parsed; ``rewrite``: see ``join_conversations``."""
    if conversations is None:
        conversations = joined_sources(corpus_dir)
    candidates = [c for c in conversations if c.tool_call_count]
    dense = [c for c in candidates if _density(c) >= BENCH_MIN_DENSITY]
    return join_conversations(
        dense or candidates,
        target_messages=messages,
        seed=seed,
        title=title or f"Benchmark: {messages:,} messages from real sessions (seed {seed})",
        rewrite=rewrite,
    )
