"""Vercel AI SDK ``pruneMessages``: reasoning and tool call/result parts pruned from older
messages before they reach the model.

Source: vercel/ai @ ed857f50f112e23930b0c2dd8d532cc8bebbc911 (2026-08-22),
``packages/ai/src/generate-text/prune-messages.ts``; its tests
``prune-messages.test.ts`` ported as tables (``tests/engine/strategies/test_vercel_prune_messages.py``);
the reference page ``content/docs/07-reference/02-ai-sdk-ui/32-prune-messages.mdx``.

What it does, on the ``ModelMessage[]`` of a request:

1. ``reasoning``: ``'all'`` removes the reasoning parts of every assistant message,
   ``'before-last-message'`` of every one but the list's last message, ``'none'`` keeps them.
2. ``toolCalls``: ``'all'``, ``'before-last-message'``, ``'before-last-N-messages'`` (or
   the array form with ``tools``): in assistant and tool messages before the last N, the
   tool-call, tool-result and approval parts are removed, except those whose call id also
   appears in the last N messages (a call whose result is kept stays) and, with ``tools``,
   the parts of tools not listed. ``N = 0`` is falsy in the original: nothing is pruned.
3. ``emptyMessages``: ``'remove'`` (default) drops messages left without parts.

Defaults here are the reference page's example (``reasoning: 'before-last-message',
toolCalls: 'before-last-2-messages', emptyMessages: 'remove'``); the function's own
defaults (``'none'``, ``[]``) prune nothing.

Readings:

- Messages: the system prompt is ``system:`` (not a message); an assistant message's
  blocks are its parts (thinking = reasoning); a transcript message's tool results are one
  ``tool`` message, its other blocks a ``user`` message after it.
- Where it runs: the page's example prunes the request's messages once per request of the
  chat route (a user turn; the tool loop inside ``streamText`` adds steps unpruned).
  ``apply_at="call"`` prunes before every call (``prepareStep``). Either way the full
  history is kept and only the request view changes; an older message only ever loses
  more parts, so the view is updated where it changes, not recomputed.
- Approval parts are not in transcripts: not modelled. The SDK counts no tokens; the
  curves use the lab's reference counts (cl100k).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, overload

from ..core.model import BlockKind, Message, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import ReferenceEstimator, Strategy

if TYPE_CHECKING:
    from ..core.context_view import ContextView

_TOOL_KINDS = (BlockKind.TOOL_USE, BlockKind.TOOL_RESULT)
_BEFORE_LAST_N = re.compile(r"before-last-(\d+)-messages")


def keep_last(tool_calls: str) -> int | None:
    """How many trailing messages ``toolCalls`` spares (None: all pruned, ``'all'``),
    -1 for ``'none'``; ValueError for another value."""
    if tool_calls == "none":
        return -1
    if tool_calls == "all":
        return None
    if tool_calls == "before-last-message":
        return 1
    m = _BEFORE_LAST_N.fullmatch(tool_calls)
    if m is None:
        raise ValueError(
            f"toolCalls={tool_calls!r}: 'all', 'before-last-message', "
            "'before-last-N-messages' or 'none'"
        )
    return int(m.group(1))


@dataclass(slots=True, eq=False)
class Entry:
    """One ``ModelMessage``: its source message and the block positions it holds."""

    role: str  # "user" | "assistant" | "tool"
    source: int
    parts: tuple[int, ...]
    ids: tuple[str, ...] = ()  # tool call ids of its tool-call / tool-result parts


def entries_of(message: Message, source: int) -> list[Entry]:
    blocks = message.blocks
    if message.role is Role.ASSISTANT:
        ids = tuple(b.tool_id for b in blocks if b.kind is BlockKind.TOOL_USE)
        return [Entry("assistant", source, tuple(range(len(blocks))), ids)]
    results = tuple(p for p, b in enumerate(blocks) if b.kind is BlockKind.TOOL_RESULT)
    if message.role is Role.TOOL:  # a tool message, whatever its blocks
        return [Entry("tool", source, tuple(range(len(blocks))),
                      tuple(blocks[p].tool_id for p in results))]  # fmt: skip
    rest = tuple(p for p, b in enumerate(blocks) if b.kind is not BlockKind.TOOL_RESULT)
    out: list[Entry] = []
    if results:
        out.append(Entry("tool", source, results, tuple(blocks[p].tool_id for p in results)))
    if rest or not results:
        out.append(Entry("user", source, rest))
    return out


def prune(
    messages: Sequence[Message],
    entries: Sequence[Entry],
    *,
    reasoning: str,
    tool_calls: str,
    tools: frozenset[str] = frozenset(),
    empty_messages: str = "remove",
    positions: list[int] | None = None,
    names: Mapping[str, str] | None = None,
) -> dict[int, tuple[int, ...] | None]:
    """``pruneMessages`` over ``entries`` (``messages[e.source]`` holds their blocks):
    {position: the block positions it keeps, None if removed as empty}, for ``positions``
    (default all) that change. ``names``: tool call id -> tool name (results' names)."""
    n = len(entries)
    k = keep_last(tool_calls)
    kept_ids: set[str] = set()
    if k is not None and k > 0:
        for e in entries[max(0, n - k) :]:
            if e.role in ("assistant", "tool"):
                kept_ids.update(e.ids)
    names = names or {}
    out: dict[int, tuple[int, ...] | None] = {}
    for p in positions if positions is not None else range(n):
        e = entries[p]
        blocks = messages[e.source].blocks
        strip_reasoning = e.role == "assistant" and (
            reasoning == "all" or (reasoning == "before-last-message" and p != n - 1)
        )
        prune_tools = (
            e.role in ("assistant", "tool") and k != -1 and k != 0
            and (k is None or p < n - k)
        )  # fmt: skip
        kept: list[int] = []
        for pos in e.parts:
            b = blocks[pos]
            if b.kind is BlockKind.THINKING and strip_reasoning:
                continue
            if b.kind in _TOOL_KINDS and prune_tools and b.tool_id not in kept_ids:
                name = b.tool_name or names.get(b.tool_id, "")
                if not tools or name in tools:
                    continue
            kept.append(pos)
        if len(kept) == len(e.parts):
            continue
        out[p] = tuple(kept) if kept or empty_messages == "keep" else None
    return out


_MADE_KEEP = 256  # sources whose entries stay made (a request reads its last messages)


class Entries(Sequence[Entry]):
    """The model messages of the history so far, made on demand from their source message
    (a long replay keeps ints and strings per message, not objects the garbage collector
    walks at every collection); those of the last ``_MADE_KEEP`` sources read are kept,
    since a request reads its newest messages several times (``made``)."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self.source: list[int] = []  # position -> source message
        self.first: dict[int, int] = {}  # source -> its first position
        self.sizes: dict[int, int] = {}  # source -> how many positions
        self._made: dict[int, list[Entry]] = {}  # source -> its entries (the latest read)

    def made(self, source: int) -> list[Entry]:
        """The entries of source message ``source`` (all its positions, in order)."""
        got = self._made.get(source)
        if got is None:
            got = self._made[source] = entries_of(self.messages[source], source)
            if len(self._made) > _MADE_KEEP:
                del self._made[next(iter(self._made))]
        return got

    def add(self, source: int) -> list[Entry]:
        made = self.made(source)
        self.first[source] = len(self.source)
        self.sizes[source] = len(made)
        self.source.extend([source] * len(made))
        return made

    def positions(self, source: int) -> range:
        first = self.first[source]
        return range(first, first + self.sizes[source])

    def __len__(self) -> int:
        return len(self.source)

    @overload
    def __getitem__(self, p: int) -> Entry: ...
    @overload
    def __getitem__(self, p: slice) -> list[Entry]: ...
    def __getitem__(self, p: int | slice) -> Entry | list[Entry]:
        if isinstance(p, slice):
            return [self[q] for q in range(*p.indices(len(self.source)))]
        source = self.source[p]
        return self.made(source)[p - self.first[source]]


@dataclass(slots=True)
class _State:
    entries: Entries | None = None
    names: dict[str, str] = field(default_factory=dict)  # tool call id -> tool name
    view: dict[int, tuple[int, ...] | None] = field(default_factory=dict)  # position -> kept
    shown: dict[int, tuple[int, ...] | None] = field(default_factory=dict)  # source -> kept
    done: int = 0  # positions below it can only lose parts kept by a call id
    pending: set[int] = field(default_factory=set)  # positions with parts kept by a call id
    id_pos: dict[str, int] = field(default_factory=dict)  # call id -> its first position
    id_more: dict[str, list[int]] = field(default_factory=dict)  # a reused id's others
    turn_open: bool = False


class VercelPruneMessagesStrategy(ReferenceEstimator, Strategy):
    name: ClassVar[str] = "vercel_prune_messages"
    label: ClassVar[str] = "Vercel AI SDK pruneMessages"
    description: ClassVar[str] = (
        "The Vercel AI SDK's pruneMessages as its reference page applies it: before the "
        "model call, reasoning is removed from every assistant message but the last, and "
        "tool calls and results from every message before the last two (a call whose "
        "result is still kept stays); messages left empty are removed. Request view only: "
        "nothing is summarised."
    )
    estimator: ClassVar[str] = "reference cl100k counts (pruneMessages counts no tokens)"
    WINDOW = "context_window"
    State: ClassVar[type[Any]] = _State
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("reasoning", "before-last-message", "Remove reasoning parts from assistant "
              "messages: all, all but the last message, or none (function default).", "str",
              choices=("all", "before-last-message", "none"),
              origin="pruneMessages({reasoning})"),
        Param("toolCalls", "before-last-2-messages", "Remove tool call/result parts: all, "
              "before-last-message, before-last-N-messages, or none (function default []).",
              "str", origin="pruneMessages({toolCalls})"),
        Param("tools", [], "Only these tools' parts are pruned (the array form's tools; "
              "empty: every tool).", "list", origin="pruneMessages({toolCalls: [{type, tools}]})"),
        Param("emptyMessages", "remove", "Remove messages left without parts.", "str",
              choices=("keep", "remove"), origin="pruneMessages({emptyMessages})"),
        Param("apply_at", "turn", "Prune once per user turn (the route handler of the "
              "reference page) or before every call (prepareStep).", "str",
              choices=("turn", "call"), origin="where pruneMessages is called"),
        Param("context_window", 128_000, "Model context window (overflow findings only).",
              min=1_000, origin="model context window"),
    )  # fmt: skip

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        self.k = keep_last(str(self.params["toolCalls"]))
        tools = self.params["tools"]
        if not all(isinstance(t, str) for t in tools):
            raise ValueError("tools must be a list of tool names")
        self.tools = frozenset(tools)

    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_window"])

    def prepare(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        st.entries = Entries(ctx.originals)

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        entries = st.entries
        assert entries is not None
        start = len(entries)
        made = entries.add(index)
        id_pos = st.id_pos
        for offset, e in enumerate(made):
            for call_id in e.ids:
                if call_id in id_pos:
                    st.id_more.setdefault(call_id, []).append(start + offset)
                else:
                    id_pos[call_id] = start + offset
        message = ctx.original(index)
        for b in message.blocks:
            if b.kind is BlockKind.TOOL_USE and b.tool_id:
                st.names[b.tool_id] = b.tool_name
        if made[-1].role == "user" and made[-1].parts:
            st.turn_open = True

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        if self.params["apply_at"] == "turn" and not st.turn_open:
            return
        st.turn_open = False
        entries = st.entries
        assert entries is not None
        n = len(entries)
        # Candidates: what arrived or left the window since, the former last message, and
        # the parts kept by a call id last time. Older positions cannot change any more.
        settled = max(0, n - max(self.k or 1, 1))  # the last message's reasoning may go
        candidates = set(range(max(0, st.done - 1), n)) | st.pending
        if self.k is not None and self.k > 0:  # a call id reused in the last messages
            for e in entries[max(0, n - self.k) :]:
                if e.role != "user":
                    for call_id in e.ids:
                        if call_id in st.id_more:
                            candidates.add(st.id_pos[call_id])
                            candidates.update(st.id_more[call_id])
        st.done = n
        changes = prune(
            ctx.originals, entries, reasoning=str(self.params["reasoning"]),
            tool_calls=str(self.params["toolCalls"]), tools=self.tools,
            empty_messages=str(self.params["emptyMessages"]),
            positions=sorted(candidates), names=st.names,
        )  # fmt: skip
        touched: set[int] = set()
        for p in candidates:
            new = changes.get(p, ...)
            if st.view.get(p, ...) != new:
                if new is ...:
                    st.view.pop(p, None)
                else:
                    st.view[p] = new
                touched.add(entries.source[p])
        st.pending = {p for p in candidates if p >= settled or self._kept_by_id(ctx, p, n)}
        self._apply(ctx, touched, n)

    def _kept_by_id(self, ctx: ContextView, p: int, n: int) -> bool:
        """Does the entry still hold tool parts (kept by a call id in the last messages)?"""
        st: _State = ctx.state
        assert st.entries is not None
        e = st.entries[p]
        if not e.ids or e.role == "user":
            return False
        kept = st.view.get(p, e.parts)
        if kept is None or self.k in (-1, 0):
            return False
        blocks = ctx.original(e.source).blocks
        tools = self.tools
        return any(
            blocks[q].kind in _TOOL_KINDS
            and (not tools or (blocks[q].tool_name or st.names.get(blocks[q].tool_id)) in tools)
            for q in kept
        )

    def _apply(self, ctx: ContextView, touched: set[int], n: int) -> None:
        st: _State = ctx.state
        back: list[int] = []  # shown whole again (a call id reused in the last messages)
        gone: list[int] = []
        cut: list[tuple[int, tuple[int, ...]]] = []
        for s in sorted(touched):
            assert st.entries is not None
            positions = st.entries.positions(s)
            made = st.entries.made(s)
            desired: tuple[int, ...] | None = None
            whole = all(p not in st.view for p in positions)
            if not whole and not all(st.view.get(p, ...) is None for p in positions):
                desired = tuple(sorted(q for p in positions for q in (
                    st.view[p] if p in st.view else made[p - positions.start].parts)
                    or ()))  # fmt: skip
            before = st.shown.get(s, ...)
            if (whole and before is ...) or (not whole and before == desired):
                continue
            if before is None or (whole and before is not ...):
                back.append(s)
            if whole:
                st.shown.pop(s, None)
                continue
            st.shown[s] = desired
            if desired is None:
                gone.append(s)
            else:
                cut.append((s, desired))
        detail = {"reasoning": str(self.params["reasoning"]),
                  "toolCalls": str(self.params["toolCalls"]), "model_messages": n}  # fmt: skip
        if back:
            with ctx.action("restore_request", reason="a call id of the last messages "
                            "matches parts pruned before (request view)", **detail) as act:  # fmt: skip
                alive = ctx.alive  # (an entry's source is never the system prompt)
                act.restore([s for s in back if not alive[s]])
                for s in back:
                    if alive[s] and s not in st.shown:
                        act.replace(s, ctx.original(s), Fate.RESTORED)
        if not gone and not cut:
            return
        with ctx.action(
            "prune",
            reason="pruneMessages: reasoning and tool call/result parts of older messages "
            "removed (request view)",
            **detail,
        ) as act:
            for s, kept_blocks in cut:
                original = ctx.original(s)
                act.replace(s, replace(original, blocks=tuple(original.blocks[q]
                                                              for q in kept_blocks)),
                            Fate.PRUNED)  # fmt: skip
            if gone:
                act.remove(gone, Fate.DROPPED, reason="left without parts (emptyMessages)")


STRATEGY = VercelPruneMessagesStrategy
