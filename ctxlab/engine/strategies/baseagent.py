"""BaseAgent (PlatformNetwork/baseagent @ 18565d9): OpenCode-style prune + Codex-style
checkpoint summary, as ``src/core/compaction.py`` and ``src/core/loop.py`` run them.

Where it runs: ``manage_context`` before every LLM request. Tool outputs are capped with
``middle_out_truncate`` when they are created (persisted). When the whole list (system
message included) is estimated above 142 800 tokens, old tool outputs are pruned *in the
request view only* (the loop keeps the pruned list only if it is shorter, and pruning keeps
the length), so every request recomputes the prune from full outputs. If still above, the
list is replaced by exactly ``[system, user(SUMMARY_PREFIX + summary)]`` and that is
persisted; the original task goes too. A failed or empty summary sends the (pruned) list
unchanged. ``loop.py`` always sends a system message: with no system prompt in the
transcript it is empty and still costs its 4-token overhead.

Original tests: BaseAgent @ 18565d9 ships none for ``compaction.py`` (its repository has
no test files); the cases in tests/engine/strategies/test_baseagent.py are ours.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import Block, BlockKind, Message, ToolDef
from ..core.params import Param
from ..core.records import Fate, _positional_builder
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest
from ..stages.remade_input import RemadeInput
from . import _baseagent_rules as rules
from ._baseagent_rules import BaseMsg

if TYPE_CHECKING:
    from ..core.context_view import ContextView
    from ..tokens.reference import ReferenceTokens

SECTIONS = (
    Section("## Current progress and key decisions", "decisions"),
    Section("## Context, constraints and preferences", "constraints"),
    Section("## What remains (next steps)", "next"),
    Section("## Critical data, examples and references", "critical"),
    Section("## Files modified", "done"),
    Section("## Errors encountered and resolutions", "blocked"),
)


# Read once: on Python 3.11 ``BlockKind.TOOL_RESULT`` is a descriptor call (~0.2 us), and
# every appended message's blocks are tested.
_RESULT = BlockKind.TOOL_RESULT


@dataclass(slots=True)
class _RequestView:
    """What the current request view prunes (reset when a summary replaces the history)."""

    unpruned: dict[int, Message] = field(default_factory=dict)  # index -> full version
    prune_delta: int = 0  # tokens the current view saves versus the stored history
    # the stored live history as BaseAgent rows, incremental
    rows: _RowIndex = field(default_factory=lambda: _RowIndex())
    marked: tuple[int, int] = (0, 0)  # row positions [lo, hi) whose tool outputs are pruned
    view: dict[int, set[str]] = field(default_factory=dict)  # index -> pruned tool ids
    shown: dict[int, set[str] | None] = field(default_factory=dict)  # each placeholder's ids
    sticky: set[int] = field(default_factory=set)  # placeholders that never match their ids
    seq: dict[int, int] = field(default_factory=dict)  # insertion order (restore order)
    saved: dict[int, int] = field(default_factory=dict)  # index -> full - placeholder tokens
    next_seq: int = 0


@dataclass(slots=True)
class _State:
    summary_msg: BaseMsg | None = None
    req: _RequestView = field(default_factory=_RequestView)
    # id(message) -> (message, its rows with src=-1): the estimator and the row index both
    # convert every message; the message is kept so a reused id cannot match.
    base: dict[int, tuple[Message, list[BaseMsg]]] = field(default_factory=dict)


def _base_rows(st: _State, message: Message) -> list[BaseMsg]:
    """``to_base(-1, message)``, converted once per message object (do not mutate)."""
    hit = st.base.get(id(message))
    if hit is not None and hit[0] is message:
        return hit[1]
    rows = rules.to_base(-1, message)
    st.base[id(message)] = (message, rows)
    return rows


class BaseAgentStrategy(Strategy):
    name: ClassVar[str] = "baseagent"
    State = _State
    label: ClassVar[str] = "BaseAgent (OpenCode prune + Codex checkpoint)"
    description: ClassVar[str] = (
        "PlatformNetwork/baseagent src/core/compaction.py: before every request, if the "
        "chars//4 estimate of the whole list exceeds 85% of (200K - 32K), prune tool outputs "
        "older than the last two user turns beyond 40K protected tokens (request view only, "
        "only if > 20K are recovered); if still over, replace everything with the system "
        "prompt and one user message holding SUMMARY_PREFIX + a checkpoint summary."
    )
    estimator: ClassVar[str] = (
        "len(str)//4 per string (code points, floor) + 4 per message, 1000 per image"
    )
    WINDOW = "model_context_limit"
    WINDOW_FOLLOWS = {"output_token_max": 32_000 / 200_000}
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "model_context_limit",
            rules.MODEL_CONTEXT_LIMIT,
            "Context window BaseAgent assumes (hard-coded for Claude Opus 4.5).",
            min=1_000,
            origin="compaction.py MODEL_CONTEXT_LIMIT",
        ),
        Param(
            "output_token_max",
            rules.OUTPUT_TOKEN_MAX,
            "Tokens reserved for the answer; usable = limit - this.",
            min=0,
            origin="compaction.py OUTPUT_TOKEN_MAX",
        ),
        Param(
            "auto_compact_threshold",
            rules.AUTO_COMPACT_THRESHOLD,
            "Share of the usable context above which (strictly) pruning/compaction runs.",
            "float",
            min=0.01,
            max=1.0,
            origin="compaction.py AUTO_COMPACT_THRESHOLD",
        ),
        Param(
            "prune_protect",
            rules.PRUNE_PROTECT,
            "Tool-output tokens (newest first, after the protected turns) never pruned.",
            min=0,
            origin="compaction.py PRUNE_PROTECT",
        ),
        Param(
            "prune_minimum",
            rules.PRUNE_MINIMUM,
            "Prune only if strictly more than this many tokens would be recovered.",
            min=0,
            origin="compaction.py PRUNE_MINIMUM",
        ),
        Param(
            "protect_last_turns",
            rules.PROTECT_LAST_TURNS,
            "User messages (counted from the end) whose following tool outputs are protected.",
            min=0,
            max=100,
            origin="prune_old_tool_outputs(protect_last_turns=2)",
        ),
        Param(
            "max_output_tokens",
            rules.MAX_OUTPUT_TOKENS,
            "middle_out_truncate cap (bytes//4 tokens) applied to every tool output when "
            "created; 0 disables.",
            min=0,
            origin="defaults.py max_output_tokens",
        ),
        Param(
            "compaction_max_tokens",
            rules.COMPACTION_MAX_TOKENS,
            "max_tokens of the summary call.",
            min=1,
            origin="run_compaction llm.chat(max_tokens=4096)",
        ),
    )

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return rules.estimate_tokens(text)

    def count_message(self, message: Message) -> int:
        return sum(rules.estimate_message_tokens(m) for m in rules.to_base(-1, message))

    def message_counter(self, reference: ReferenceTokens, state: Any) -> Callable[[Message], int]:
        st: _State = state
        estimate = rules.estimate_message_tokens

        def count(message: Message) -> int:
            rows = _base_rows(st, message)
            if len(rows) == 1:  # most messages are one row
                return estimate(rows[0])
            return sum(estimate(m) for m in rows)

        return count

    def count_system(self, text: str, message: Message | None) -> int:
        # loop.py always sends {"role": "system", ...} first, so a transcript without a
        # system prompt still costs the 4-token message overhead (empty content).
        return rules.estimate_message_tokens(BaseMsg("system", text))

    def count_tools(self, tools: Sequence[ToolDef]) -> int:
        return 0  # tool definitions are not part of BaseAgent's estimate

    # --- geometry -----------------------------------------------------------------------
    def _threshold(self) -> float:
        p = self.params
        return rules.compact_threshold(
            p["model_context_limit"], p["output_token_max"], p["auto_compact_threshold"]
        )

    def window(self, ctx: ContextView) -> int:
        return int(self.params["model_context_limit"])

    def threshold(self, ctx: ContextView) -> int | None:
        return int(self._threshold())

    def output_reserve(self, ctx: ContextView) -> int:
        return int(self.params["output_token_max"])

    # --- state --------------------------------------------------------------------------
    def _stored_total(self, ctx: ContextView) -> int:
        """BaseAgent's estimate_total_tokens(messages) of the stored (unpruned) history."""
        st: _State = ctx.state
        return ctx.request_tokens() + st.req.prune_delta

    def _stored(self, ctx: ContextView, index: int) -> Message:
        st: _State = ctx.state
        return st.req.unpruned.get(index) or ctx.message(index)

    def _stored_rows(self, ctx: ContextView, index: int) -> list[BaseMsg]:
        return _base_rows(ctx.state, self._stored(ctx, index))

    # --- hooks --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        cap = int(self.params["max_output_tokens"])
        msg = ctx.message(index)
        if cap <= 0:
            return
        for b in msg.blocks:  # a plain loop: asked of every appended message
            if b.kind is _RESULT:
                break
        else:
            return
        blocks = list(msg.blocks)
        changed: list[dict[str, int]] = []
        for j, b in enumerate(blocks):
            if b.kind is _RESULT and b.text:
                new = rules.middle_out_truncate(b.text, cap)
                if new != b.text:
                    blocks[j] = replace(b, text=new, parts=())
                    changed.append({"block": j, "bytes": len(b.text.encode("utf-8"))})
        if changed:
            with ctx.action(
                "truncate", reason="middle_out_truncate at tool-output creation",
                max_output_tokens=cap, blocks=changed,
            ) as act:  # fmt: skip
                act.replace(index, replace(msg, blocks=tuple(blocks)), Fate.TRUNCATED)

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        threshold = self._threshold()
        total = self._stored_total(ctx)
        if not rules.is_overflow(total, threshold):
            if st.req.view:
                self._apply_view(ctx, None, total=total, threshold=threshold)
            return
        rows = st.req.rows
        synced = rows.sync(ctx, self._stored_rows)
        scan_total, scan_pruned, marked = rows.scan(
            protect_last_turns=int(self.params["protect_last_turns"]),
            prune_protect=int(self.params["prune_protect"]),
            prune_minimum=int(self.params["prune_minimum"]),
        )
        changed = (
            rows.sources_between(st.req.marked, marked)
            if synced
            else set(st.req.view) | rows.sources_between((0, 0), marked)
        )
        st.req.marked = marked
        self._apply_view(
            ctx,
            {i: rows.ids_in(i, marked) for i in changed},
            total=total,
            threshold=threshold,
            scan=(scan_total, scan_pruned),
        )
        pruned_total = ctx.request_tokens()
        if not rules.is_overflow(pruned_total, threshold):
            return
        self._compact(ctx, total=total, pruned_total=pruned_total, threshold=threshold)

    # --- request-view prune -------------------------------------------------------------
    def _apply_view(
        self,
        ctx: ContextView,
        update: dict[int, set[str]] | None,
        *,
        total: int,
        threshold: float,
        scan: tuple[int, int] | None = None,
    ) -> None:
        """Make the live context show the view (index -> pruned tool ids) and nothing else.

        ``update`` holds the new ids of every index whose pruned rows changed (empty set:
        no longer pruned); ``None`` lifts the whole view. Indexes outside ``update`` keep
        their ids, so a step costs O(changes), not O(history): same events, in the same
        order, as recomputing the whole view (restores in insertion order, prunes newest
        first)."""
        st: _State = ctx.state
        if update is None:
            st.req.marked = (0, 0)
            update = dict.fromkeys(st.req.view, set())
        view = st.req.view
        restore = sorted(
            (i for i, ids in update.items() if not ids and i in st.req.unpruned),
            key=st.req.seq.__getitem__,
        )
        if restore:
            with ctx.action(
                "restore_request", reason="request-view prune recomputed from full outputs",
                estimate=total, threshold=threshold,
            ) as act:  # fmt: skip
                for i in restore:
                    original = st.req.unpruned.pop(i)
                    act.replace(i, original, Fate.RESTORED)
                    st.req.prune_delta -= st.req.saved.pop(i)
                    del st.req.seq[i], st.req.shown[i]
                    st.req.sticky.discard(i)
        for i, ids in update.items():
            if ids:
                view[i] = ids
            else:
                view.pop(i, None)
        if not view:
            st.req.prune_delta = 0
            return
        candidates = {i for i, ids in update.items() if ids} | st.req.sticky
        todo = {
            i: view[i] for i in sorted(candidates, reverse=True) if st.req.shown.get(i) != view[i]
        }
        if todo:
            with ctx.action(
                "prune",
                reason="old tool output cleared in the request view only",
                estimate=total,
                threshold=threshold,
                scanned_tokens=scan[0] if scan else None,
                prunable_tokens=scan[1] if scan else None,
            ) as act:
                for i, ids in todo.items():
                    full = self._stored(ctx, i)
                    if i not in st.req.unpruned:
                        st.req.seq[i] = st.req.next_seq
                        st.req.next_seq += 1
                    st.req.unpruned[i] = full
                    act.replace(i, _placeholder(full, ids), Fate.PRUNED)
                    saved = sum(rules.estimate_message_tokens(m) for m in _base_rows(st, full))
                    saved -= ctx.tokens(i)
                    st.req.prune_delta += saved - st.req.saved.get(i, 0)
                    st.req.saved[i] = saved
                    shown = self._pruned_ids(ctx, i)
                    st.req.shown[i] = shown
                    if shown != ids:
                        st.req.sticky.add(i)
                    else:
                        st.req.sticky.discard(i)

    def _pruned_ids(self, ctx: ContextView, index: int) -> set[str] | None:
        st: _State = ctx.state
        if index not in st.req.unpruned:
            return None
        return {
            b.tool_id
            for b in ctx.message(index).blocks
            if b.kind is _RESULT and b.text == rules.PRUNE_MARKER
        } or {""}

    # --- compaction ---------------------------------------------------------------------
    def _compact(
        self, ctx: ContextView, *, total: int, pruned_total: int, threshold: float
    ) -> None:
        st: _State = ctx.state
        prompts, material = self._request_parts(ctx)
        compacted = list(ctx.live)
        request = SummaryRequest(
            strategy=self.name,
            system=ctx.system_text,
            messages=(*prompts, _prompt(rules.compaction_request(())[-1])),
            max_output_tokens=int(self.params["compaction_max_tokens"]),
            style="sections",
            sections=SECTIONS,
            material=material,
            previous_summary=ctx.summary,
        )
        remade = RemadeInput(
            _compaction_text, request.strategy, request.system, st.summary_msg,
            tuple(ctx.message(i) for i in compacted),
        )  # fmt: skip
        record = ctx.summarize(request, messages=compacted, input_text=remade)
        summary = record.output if not record.error else ""
        if not summary:
            ctx.emit(
                "summary_failed",
                messages=compacted,
                summary_id=record.id,
                error=record.error or "empty response",
                outcome="messages sent unchanged (pruned view)",
                estimate=pruned_total,
                threshold=threshold,
            )
            return
        rendered = rules.SUMMARY_PREFIX + summary
        previous_ref = ctx.summary_ref
        with ctx.action(
            "compact", reason="checkpoint summary replaced the whole history",
            estimate=total, pruned_estimate=pruned_total, threshold=threshold,
        ) as act:  # fmt: skip
            act.remove(compacted, Fate.SUMMARISED)
            st.summary_msg = BaseMsg("user", rendered)
            ctx.set_summary(
                summary,
                tokens=rules.estimate_message_tokens(st.summary_msg),
                rendered=rendered,
                summary_id=record.id,
            )
            act.summary_id = record.id
        st.req = _RequestView()  # the history is one summary now: nothing is pruned
        st.base.clear()  # no compacted message is counted or sent again
        check_summary_size(
            ctx,
            summary_rendered=rendered,
            replaced=compacted,
            summary_id=record.id,
            previous_ref=previous_ref,
        )

    def _request_parts(
        self, ctx: ContextView
    ) -> tuple[list[PromptMessage], tuple[MaterialItem, ...]]:
        """The compaction call's messages before its prompt, and the summariser's material,
        from the list BaseAgent sends ([system, summary?, *live rows]; system rows are the
        call's system prompt): each row rendered once, rows read from the estimator's."""
        st: _State = ctx.state
        prompts: list[PromptMessage] = []
        material: list[MaterialItem] = []
        if st.summary_msg is not None:
            prompt = _prompt(st.summary_msg)
            prompts.append(prompt)
            material.append(MaterialItem(prompt.role, prompt.text, -1))
        base, message = st.base, ctx.message
        for i in ctx.live:
            msg = message(i)
            hit = base.get(id(msg))  # ``_base_rows`` inlined: every live message, once
            rows = hit[1] if hit is not None and hit[0] is msg else _base_rows(st, msg)
            for m in rows:
                if m.role != "system":
                    prompt = _prompt(m)
                    prompts.append(prompt)
                    material.append(_new_material(m.role, prompt.text, i))
        return prompts, tuple(material)


class _RowIndex:
    """The stored live history as BaseAgent rows (``to_base`` of each message's full
    version), kept incrementally: BaseAgent's history only grows between compactions, and
    a message's stored version is final once it was appended (the creation-time cap runs
    in ``after_append``). Prefix sums of tool-output estimates let ``scan`` answer
    ``prune_old_tool_outputs`` in O(log n) instead of walking the whole list."""

    __slots__ = ("covered", "ids", "last", "markers", "pre", "spans", "srcs", "tools", "users")

    def __init__(self) -> None:
        self.covered = 0  # live messages indexed
        self.last = -1  # source index of the last one
        self.pre = [0]  # pre[k] = sum of tool-output estimates of rows < k
        self.srcs: list[int] = []  # row -> source index
        self.ids: list[str] = []  # row -> tool_call_id
        self.tools: list[int] = []  # positions of tool rows
        self.users: list[int] = []  # positions of user rows
        self.markers: list[int] = []  # positions of tool rows whose output is PRUNE_MARKER
        self.spans: dict[int, tuple[int, int]] = {}  # source index -> its rows [start, end)

    def sync(
        self, ctx: ContextView, stored_rows: Callable[[ContextView, int], list[BaseMsg]]
    ) -> bool:
        """Index the messages appended since the last call. False when the live history
        changed otherwise (then everything is re-indexed)."""
        live = ctx.live
        synced = self.covered <= len(live) and (
            self.covered == 0 or live[self.covered - 1] == self.last
        )
        if not synced:
            self.__init__()  # type: ignore[misc]
        for i in live[self.covered :]:
            start = len(self.srcs)
            for row in stored_rows(ctx, i):  # src is -1 in these rows: unused here
                pos = len(self.srcs)
                self.srcs.append(i)
                self.ids.append(row.tool_call_id)
                est = 0
                if row.role == "user":
                    self.users.append(pos)
                elif row.role == "tool":
                    self.tools.append(pos)
                    content = row.content if isinstance(row.content, str) else ""
                    if content == rules.PRUNE_MARKER:
                        self.markers.append(pos)
                    else:
                        est = rules.estimate_tokens(content)
                self.pre.append(self.pre[-1] + est)
            self.spans[i] = (start, len(self.srcs))
        self.covered = len(live)
        self.last = live[-1] if live else -1
        return synced

    def scan(
        self,
        *,
        protect_last_turns: int,
        prune_protect: int,
        prune_minimum: int,
    ) -> tuple[int, int, tuple[int, int]]:
        """``rules.scan_prune`` over [system, summary?, *rows]: (total, pruned, marked row
        positions [lo, hi), empty unless applied). Walking back from the end, rows after
        the ``protect_last_turns``-th user row are skipped, an earlier PRUNE_MARKER output
        stops the walk, and every tool row from the one where the running total first
        exceeds ``prune_protect`` back to that stop is marked."""
        users = self.users
        n = len(self.srcs)
        if protect_last_turns == 0:
            b = n - 1
        elif len(users) >= protect_last_turns:
            b = users[-protect_last_turns]
        else:  # the walk starts at the summary row or never starts: no live tool row
            return 0, 0, (0, 0)
        k = bisect.bisect_right(self.markers, b) - 1
        lo = self.markers[k] + 1 if k >= 0 else 0
        pre = self.pre
        total = pre[b + 1] - pre[lo]
        if total <= prune_protect:
            return total, 0, (0, 0)
        crossing = bisect.bisect_left(pre, pre[b + 1] - prune_protect, lo, b + 2) - 1
        pruned = pre[crossing + 1] - pre[lo]
        if pruned <= prune_minimum:
            return total, pruned, (0, 0)
        return total, pruned, (lo, crossing + 1)

    def sources_between(self, old: tuple[int, int], new: tuple[int, int]) -> set[int]:
        """Source indexes with a tool row in exactly one of the two position ranges."""
        spans: list[tuple[int, int]] = []
        for a, b in ((old, new), (new, old)):
            if a[0] >= a[1]:
                continue
            if b[0] >= b[1] or b[1] <= a[0] or a[1] <= b[0]:
                spans.append(a)
                continue
            if a[0] < b[0]:
                spans.append((a[0], b[0]))
            if b[1] < a[1]:
                spans.append((b[1], a[1]))
        out: set[int] = set()
        tools, srcs = self.tools, self.srcs
        for lo, hi in spans:
            for k in range(bisect.bisect_left(tools, lo), bisect.bisect_left(tools, hi)):
                out.add(srcs[tools[k]])
        return out

    def ids_in(self, index: int, marked: tuple[int, int]) -> set[str]:
        """The tool_call_ids of ``index``'s tool rows inside the marked range."""
        start, end = self.spans[index]
        lo, hi = max(start, marked[0]), min(end, marked[1])
        tools = self.tools
        return {
            self.ids[tools[k]]
            for k in range(bisect.bisect_left(tools, lo), bisect.bisect_left(tools, hi))
        }


def _placeholder(message: Message, tool_ids: set[str]) -> Message:
    """``message`` with the outputs of ``tool_ids`` replaced by PRUNE_MARKER: ``replace``
    of each block (``text=PRUNE_MARKER, parts=()``) and of the message (``blocks=``),
    through the positional builders (every prune makes one; replace() reads the fields)."""
    blocks = tuple(
        _marker_block(b) if b.kind is _RESULT and b.tool_id in tool_ids else b
        for b in message.blocks
    )
    m = message
    return _new_message(
        m.role, blocks, m.source, m.timestamp, m.model, m.usage, m.id, m.name, m.flags
    )


def _marker_block(b: Block) -> Block:
    return _new_block(
        b.kind, rules.PRUNE_MARKER, b.tool_id, b.tool_name, b.tool_input, b.is_error,
        b.media_type, b.size, b.raw_type, (), b.data,
    )  # fmt: skip


# Every field in order (tests/engine/strategies/test_baseagent.py compares with replace()).
_new_block = _positional_builder(Block)
_new_message = _positional_builder(Message)


def _compaction_text(
    strategy: str, system: str, summary_msg: BaseMsg | None, messages: tuple[Message, ...]
) -> str:
    """The compaction call's ``input_text()`` made again (``_compact``'s request: the
    summary row, every live message's non-system rows, the compaction prompt)."""
    prompts = [_prompt(summary_msg)] if summary_msg is not None else []
    for message in messages:
        prompts.extend(_prompt(m) for m in rules.to_base(-1, message) if m.role != "system")
    prompts.append(_prompt(rules.compaction_request(())[-1]))
    return SummaryRequest(strategy, system, tuple(prompts)).input_text()


def _prompt(m: BaseMsg) -> PromptMessage:
    body = m.content if isinstance(m.content, str) else "\n".join(t for _, t in m.parts)
    if not m.tool_calls:
        return _new_prompt(m.role, body or "")
    calls = "".join([f"\n[tool_call {tc.name}] {tc.arguments}" for tc in m.tool_calls])
    return _new_prompt(m.role, (body or "") + calls)


# One of each per live row at every compaction (role, text / role, text, index).
_new_prompt = _positional_builder(PromptMessage)
_new_material = _positional_builder(MaterialItem)


STRATEGY = BaseAgentStrategy
