"""Tool pairs: the tool_use / tool_result ids of a message, and the ledger of unmatched ones.

The replay context keeps two ledgers (the live history and the original) current as
messages come and go; a tool call whose answer the live history lost is a broken pair.
"""

from __future__ import annotations

from collections.abc import Sequence

from .model import BlockKind, Message, Role

_NO_IDS: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # shared by the many without


def _ids_and_result(message: Message) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], bool]:
    """(``tool_ids``, ``has_tool_result``) of a message in one pass over its blocks (every
    appended message asks both)."""
    uses: list[str] = []
    results: list[str] = []
    has_result = False
    for b in message.blocks:
        kind = b.kind
        if kind is BlockKind.TOOL_USE:
            if b.tool_id:
                uses.append(b.tool_id)
        elif kind is BlockKind.TOOL_RESULT:
            has_result = True
            if b.tool_id:
                results.append(b.tool_id)
    return ((tuple(uses), tuple(results)) if uses or results else _NO_IDS), has_result


class OriginalIds:
    """Per source index of a conversation: its ``tool_ids`` (``ids``) and whether it is a
    user query (``query``, ``is_user_query``), read by index for every appended message;
    and where each tool id first occurs from ``start`` on as a call (``first_use``) and as
    a result (``first_result``): the original's ids among the messages before ``upto`` are
    known from these without adding each appended message's ids to a ledger."""

    __slots__ = ("first_result", "first_use", "ids", "query")

    def __init__(self, messages: Sequence[Message], start: int = 0) -> None:
        ids: list[tuple[tuple[str, ...], tuple[str, ...]]] = [_NO_IDS] * len(messages)
        query = bytearray(len(messages))
        first_use: dict[str, int] = {}
        first_result: dict[str, int] = {}
        use_kind, result_kind, user = BlockKind.TOOL_USE, BlockKind.TOOL_RESULT, Role.USER
        for i, message in enumerate(messages):
            uses: list[str] = []
            results: list[str] = []
            has_result = False
            for b in message.blocks:
                kind = b.kind
                if kind is use_kind:
                    if b.tool_id:
                        uses.append(b.tool_id)
                elif kind is result_kind:
                    has_result = True
                    if b.tool_id:
                        results.append(b.tool_id)
            if uses or results:
                ids[i] = (tuple(uses), tuple(results))
                if i >= start:
                    for tid in uses:
                        if tid not in first_use:
                            first_use[tid] = i
                    for tid in results:
                        if tid not in first_result:
                            first_result[tid] = i
            if message.role is user and not has_result:
                query[i] = 1
        self.ids, self.query = ids, query
        self.first_use, self.first_result = first_use, first_result

    def seen(self, upto: int) -> SeenTools:
        """The ids of the messages from ``start`` to ``upto`` (excluded)."""
        out = SeenTools()
        out.uses.update(t for t, i in self.first_use.items() if i < upto)
        out.results.update(t for t, i in self.first_result.items() if i < upto)
        return out


def tool_ids(message: Message) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(tool_use ids, tool_result ids) of a message, empty ids ignored."""
    return _ids_and_result(message)[0]


def has_tool_result(message: Message) -> bool:
    return any(b.kind is BlockKind.TOOL_RESULT for b in message.blocks)


def is_user_query(message: Message) -> bool:
    """A user message that is not only tool results (the generic "new request" test)."""
    return message.role is Role.USER and not has_tool_result(message)


class ToolLedger:
    """Multiset of tool_use / tool_result ids with the set of unmatched ids kept current;
    every id an ``add`` touches also goes into ``changed`` (shared by the live and original
    ledgers: ``ReplayContext.check_findings`` rechecks only those)."""

    __slots__ = ("changed", "results", "unmatched", "uses")

    def __init__(self, changed: set[str] | None = None) -> None:
        self.uses: dict[str, int] = {}
        self.results: dict[str, int] = {}
        self.unmatched: set[str] = set()
        self.changed: set[str] = set() if changed is None else changed

    def add(
        self, ids: tuple[tuple[str, ...], tuple[str, ...]], sign: int = 1, *, mark: bool = True
    ) -> None:
        # Runs for every appended, replaced and removed message: kept flat. ``mark=False``:
        # the caller has just added the same ids to the shared ``changed``.
        uses, results = ids
        use_counts, result_counts, unmatched = self.uses, self.results, self.unmatched
        if mark:
            self.changed.update(uses, results)
        for tid in uses:
            n = use_counts[tid] = use_counts.get(tid, 0) + sign
            if (n > 0) == (result_counts.get(tid, 0) > 0):
                unmatched.discard(tid)
            else:
                unmatched.add(tid)
        for tid in results:
            n = result_counts[tid] = result_counts.get(tid, 0) + sign
            if (use_counts.get(tid, 0) > 0) == (n > 0):
                unmatched.discard(tid)
            else:
                unmatched.add(tid)

    def remove_all(self, many: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> None:
        """``add(ids, -1)`` for each of ``many`` (the messages one removal takes out), in
        one frame."""
        use_counts, result_counts, unmatched = self.uses, self.results, self.unmatched
        update = self.changed.update
        for uses, results in many:
            update(uses, results)
            for tid in uses:
                n = use_counts[tid] = use_counts.get(tid, 0) - 1
                if (n > 0) == (result_counts.get(tid, 0) > 0):
                    unmatched.discard(tid)
                else:
                    unmatched.add(tid)
            for tid in results:
                n = result_counts[tid] = result_counts.get(tid, 0) - 1
                if (use_counts.get(tid, 0) > 0) == (n > 0):
                    unmatched.discard(tid)
                else:
                    unmatched.add(tid)


class SeenTools:
    """The tool_use / tool_result ids of the original messages appended so far: they only
    ever join, so an id is unmatched in the original when exactly one of its sides was
    seen (what a ``ToolLedger`` of them holds, kept as two sets updated at C level)."""

    __slots__ = ("results", "uses")

    def __init__(self) -> None:
        self.uses: set[str] = set()
        self.results: set[str] = set()

    def add(self, ids: tuple[tuple[str, ...], tuple[str, ...]]) -> None:
        self.uses.update(ids[0])
        self.results.update(ids[1])

    @property
    def unmatched(self) -> set[str]:
        return self.uses ^ self.results
