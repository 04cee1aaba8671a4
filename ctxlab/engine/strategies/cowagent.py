"""CowAgent (zhayujie/chatgpt-on-wechat 2.0.8 @ 55aaf60): turn-based trimming with an
asynchronous daily-memory summary injected into the first kept user message.

Where it runs (``agent/protocol/agent_stream.py``): tool results are capped at 50 000 chars
when created, and the results of one reply's tool calls are ONE user message (consecutive
results-only transcript messages are held merged, so the adjacency check sees every id
answered); once per user request, as its query is appended (two queries in a row: two
trims), ``_trim_messages`` runs, then ``sanitize_claude_messages``, which also runs before
every LLM call; earlier tool results are cut to 20 000 chars (head only),
more than ``agent_max_context_turns`` turns drop the oldest half, and a token budget
(``agent_max_context_tokens`` + system prompt, within when ``<=``) either compresses every
turn to text when there are fewer than 5 turns, or drops the oldest half once (no loop).
Dropped turns go to the memory summariser in a background thread; its summary lands in the
first kept user message from the next LLM call on (recorded as pending), written into its
text: a later flush summarises that text, earlier summary included (ctxlab shows the
injection as the summary zone beside the message). An answer of 无
(or nothing) means no summary: the turns are simply gone. A provider overflow (simulated
with the reference tokenizer against the model window) triggers the aggressive trim, then
clears the whole history if that is not enough.

Original tests: chatgpt-on-wechat @ 55aaf60 has none for ``agent_stream.py``,
``message_utils.py`` or the memory summariser; the cases in
tests/engine/strategies/test_cowagent.py are ours (docs/strategies/cowagent.md lists where
the replay differs from the original).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import Block, BlockKind, Message, Role, ToolDef
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, SummaryRequest
from ..stages.remade_input import RemadeInput
from . import _cowagent_rules as cow
from ._cowagent_rules import CowMsg

if TYPE_CHECKING:
    from ..core.context import Action
    from ..core.context_view import ContextView
    from ..tokens.reference import ReferenceTokens


# Read once: on Python 3.11 ``Role.USER`` is ~0.2 us a read (every LLM call's sanitiser
# check and every appended message test these).
_TEXT, _RESULT = BlockKind.TEXT, BlockKind.TOOL_RESULT
_USER, _TOOL, _ASSISTANT = Role.USER, Role.TOOL, Role.ASSISTANT


@dataclass(slots=True)
class _State:
    flushed: set[str] = field(default_factory=set)  # the texts flushed so far
    inj_target: int | None = None
    inj_text: str = ""  # the target's first text block as injected
    inj_prefix: str = ""  # what the injection put in front of the stored text
    inj_row: tuple[CowMsg, str, CowMsg] | None = None  # (row, prefix, row with it), last made
    row_cache: dict[int, tuple[Message, CowMsg, bool]] = field(default_factory=dict)
    # _rows' merged list (injection not applied), made from the live entries ``rows_flat``;
    # ``rows_ends``: how many of them each row's end is past. Rows holding a message replaced
    # since (only this strategy replaces: _write_back / after_append lower ``rows_dirty``)
    # are made again, and so is everything after a row the live list no longer starts with.
    rows_merged: list[CowMsg] = field(default_factory=list)
    rows_flat: list[int] = field(default_factory=list)
    rows_ends: list[int] = field(default_factory=list)
    # ``rows_long[i]``: row i is a user row with a tool result over history_result_max_chars
    # (only those can be cut: the trim's cut visits them alone)
    rows_long: list[bool] = field(default_factory=list)
    # ``rows_query[i]``: row i is a real query (a turn starts there; the cut and the
    # injection leave that as it is)
    rows_query: list[bool] = field(default_factory=list)
    rows_dirty: int = 1 << 62
    clean: tuple[int, int] | None = None  # (live length, last index) found clean
    window: int = 0  # the provider's window, once known


class CowAgentStrategy(Strategy):
    name: ClassVar[str] = "cowagent"
    State = _State
    label: ClassVar[str] = "CowAgent (chatgpt-on-wechat 2.0.8)"
    description: ClassVar[str] = (
        "chatgpt-on-wechat agent_stream._trim_messages: once per user request, cap earlier "
        "tool results at 20K chars, keep the newer half of the turns when there are more than "
        "agent_max_context_turns, and over the token budget either compress turns to text "
        "(< 5 turns) or drop the older half once; dropped turns are summarised into daily "
        "memory and injected into the first kept user message on the next request."
    )
    estimator: ClassVar[str] = (
        "int(non-ASCII x 1.5 + ASCII x 0.25) + 1 per text; image 1200, tool_use 50+, "
        "tool_result 30+, other blocks 10; max(1, sum) per message"
    )
    WINDOW = "model_context_window"
    WINDOW_FOLLOWS = {"agent_max_context_tokens": 0.9}  # unset budget: 90% of the window
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "agent_max_context_tokens",
            50_000,
            "Token budget for history + system prompt (within when <=). 0 = unset: 90% of the "
            "model's context window from CowAgent's model-name table.",
            min=0,
            origin="config.py agent_max_context_tokens",
        ),
        Param(
            "agent_max_context_turns",
            20,
            "More turns than this drop the oldest floor(n/2) turns (executor default 30 when "
            "not passed).",
            min=1,
            origin="config.py agent_max_context_turns",
        ),
        Param(
            "model_context_window",
            0,
            "Window the provider enforces (overflow errors are simulated against it with the "
            "reference tokenizer). 0 = from the conversation's model name.",
            min=0,
            origin="Agent._get_model_context_window",
        ),
        Param(
            "memory_enabled",
            True,
            "A memory manager exists: dropped turns are flushed to the daily-memory summariser "
            "and the summary is injected. Off: turns are dropped with no summary.",
            "bool",
            origin="agent.memory_manager",
        ),
        Param(
            "summary_injection",
            "next_request",
            "When the background summary lands: from the next request (as the thread does) or "
            "synchronously in the request being trimmed.",
            "str",
            choices=("next_request", "sync"),
            origin="summarizer.flush_from_messages callback (background thread)",
        ),
        Param(
            "simulate_overflow",
            True,
            "Treat a request above model_context_window (reference tokens) as the provider's "
            "context-length error: aggressive trim, retry, then clear the history.",
            "bool",
            origin="AgentStreamExecutor._call_llm_stream except-path",
        ),
        Param(
            "current_turn_result_max_chars",
            cow.CURRENT_TURN_RESULT_MAX_CHARS,
            "Tool results are cut to this many chars (head) when created; 0 disables.",
            min=0,
            origin="agent_stream.py MAX_CURRENT_TURN_RESULT_CHARS",
        ),
        Param(
            "history_result_max_chars",
            cow.HISTORY_RESULT_MAX_CHARS,
            "Tool results of earlier turns are cut to this many chars (head only) at each trim.",
            min=1,
            origin="agent_stream.py MAX_HISTORY_RESULT_CHARS",
        ),
    )

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return cow.estimate_text(text)

    def count_message(self, message: Message) -> int:
        return cow.estimate_message(message)

    def message_counter(self, reference: ReferenceTokens, state: Any) -> Callable[[Message], int]:
        """``count_message``, read from the counts stored at import for an original message
        (``cow.stored_counts`` seeded as ``cow.STORED_RULE``; without them, counted: the
        JSON of every tool input was ~10% of a replay)."""
        estimate, stored = cow.estimate_message, reference.rule_of

        def count(message: Message) -> int:
            known = stored(cow.STORED_RULE, message)
            return estimate(message) if known is None else known

        return count

    def count_system(self, text: str, message: Message | None) -> int:
        return cow.estimate_system(text)

    def count_tools(self, tools: Sequence[ToolDef]) -> int:
        return 0  # CowAgent's budget ignores tool definitions

    # --- geometry -----------------------------------------------------------------------
    def _budget(self, ctx: ContextView) -> int:
        return cow.budget_tokens(
            int(self.params["agent_max_context_tokens"]), ctx.conversation.model
        )

    def window(self, ctx: ContextView) -> int:
        st: _State = ctx.state
        if not st.window:  # fixed for the replay; every LLM call compares with it
            given = int(self.params["model_context_window"])
            st.window = given or cow.context_window_for_model(ctx.conversation.model)
        return st.window

    def threshold(self, ctx: ContextView) -> int | None:
        return self._budget(ctx)

    # --- state --------------------------------------------------------------------------
    def _rows(self, ctx: ContextView) -> list[CowMsg]:
        """CowAgent's message list: the results of one reply's tool calls are one user
        message (``merge_tool_results``), and the injected summary is part of its target's
        text (written in place by the summary callback, so a later flush summarises it)."""
        st: _State = ctx.state
        live = ctx.live
        seen = self._kept_rows(st, live)
        if len(live) > seen:
            # Each message's row is kept until the message is replaced (rows are immutable).
            cache = st.row_cache
            new: list[CowMsg] = []
            flags: list[bool] = []
            for i in live[seen:]:
                msg = ctx.message(i)
                hit = cache.get(i)
                if hit is None or hit[0] is not msg:
                    row = cow.to_cow(i, msg)
                    hit = cache[i] = (msg, row, cow.is_results_only(row.msg))
                new.append(hit[1])
                flags.append(hit[2])
            last = cache[live[seen - 1]][2] if seen else False
            merged = st.rows_merged
            first = len(merged)
            cow.merge_tool_results(new, flags, into=merged, prev_flag=last)
            ends = st.rows_ends
            del ends[max(first - 1, 0) :]  # the last kept row may have grown
            for row in merged[max(first - 1, 0) :]:
                ends.append((ends[-1] if ends else 0) + len(row.sources))
            long = st.rows_long
            del long[max(first - 1, 0) :]
            limit = int(self.params["history_result_max_chars"])
            long.extend(cow.has_long_result(r.msg, limit) for r in merged[max(first - 1, 0) :])
            query = st.rows_query
            del query[max(first - 1, 0) :]
            query.extend(cow.is_user_query(r.msg) for r in merged[max(first - 1, 0) :])
            st.rows_flat = list(live)
        out = list(st.rows_merged)
        target = st.inj_target
        if target is not None and ctx.alive[target]:
            # The target holds text, so it is never results-only: never merged, and
            # injecting after the merge equals injecting before it. Its row is the one
            # whose sources reach past its live position (sources are unique).
            pos = bisect.bisect_left(live, target)
            if pos < len(live) and live[pos] == target:
                j = bisect.bisect_right(st.rows_ends, pos)
                if out[j].src == target:
                    out[j] = self._with_injection(st, out[j])
        return out

    @staticmethod
    def _kept_rows(st: _State, live: list[int]) -> int:
        """Cut the memo of merged rows down to the rows still valid for ``live`` and return
        how many live entries they cover. Valid: whole rows past the removed prefix, none
        holding a message replaced since, whose sources are exactly the start of ``live``
        (checked); a fresh merge starts a row there too (nothing before it to merge into)."""
        flat, ends, merged = st.rows_flat, st.rows_ends, st.rows_merged
        dirty, st.rows_dirty = st.rows_dirty, 1 << 62
        if not live or not flat:
            st.rows_merged, st.rows_flat, st.rows_ends = [], [], []
            st.rows_long, st.rows_query = [], []
            return 0
        gone = bisect.bisect_left(flat, live[0])  # entries before live's first are gone
        r0 = bisect.bisect_left(ends, gone)
        if r0 < len(ends) and ends[r0] == gone:
            r0 += 1
        start = ends[r0 - 1] if r0 else 0
        if start != gone:  # the first live entry is inside a row: nothing is kept
            r0, start = len(merged), len(flat)
        r1 = len(merged)
        if dirty <= flat[-1]:  # rows from the one holding the first replaced entry on
            r1 = min(r1, bisect.bisect_left(ends, bisect.bisect_left(flat, dirty) + 1))
        r1 = max(r1, r0)
        stop = ends[r1 - 1] if r1 > r0 else start
        if live[: stop - start] != flat[start:stop]:
            r1, stop = r0, start
        st.rows_merged = merged[r0:r1]
        st.rows_long = st.rows_long[r0:r1]
        st.rows_query = st.rows_query[r0:r1]
        st.rows_ends = [e - start for e in ends[r0:r1]]
        st.rows_flat = flat[start:stop]
        return stop - start

    def _with_injection(self, st: _State, row: CowMsg) -> CowMsg:
        # Made again only when its row or the injection changed (rows are immutable).
        kept = st.inj_row
        if kept is not None and kept[0] is row and kept[1] == st.inj_prefix:
            return kept[2]
        blocks = list(row.msg.blocks)
        for j, b in enumerate(blocks):
            if b.kind is BlockKind.TEXT:
                blocks[j] = replace(b, text=st.inj_prefix + b.text)
                break
        out = CowMsg(row.src, replace(row.msg, blocks=tuple(blocks)))
        st.inj_row = (row, st.inj_prefix, out)
        return out

    def _stored(self, ctx: ContextView, src: int, blocks: tuple[Block, ...]) -> Message:
        """The source message holding ``blocks`` as CowAgent changed them, with the
        injected summary taken out again (it is kept beside the message, as the summary)."""
        st: _State = ctx.state
        if src == st.inj_target and st.inj_prefix:
            for j, b in enumerate(blocks):
                if b.kind is BlockKind.TEXT:
                    if b.text.startswith(st.inj_prefix):
                        fixed = replace(b, text=b.text[len(st.inj_prefix) :])
                        blocks = (*blocks[:j], fixed, *blocks[j + 1 :])
                    break
        return cow.with_blocks(ctx.message(src), blocks)

    def _write_back(
        self,
        ctx: ContextView,
        act: Action,
        before: Sequence[CowMsg],
        after: Sequence[CowMsg],
        *,
        changed: Fate = Fate.TRUNCATED,
        removed: Fate = Fate.DROPPED,
    ) -> None:
        """Apply CowAgent's new message list ``after`` (made from ``before``) to the live
        context: a row that is gone takes all its sources with it; a changed row writes
        each source's new blocks (a merged row split back by tool id)."""
        st: _State = ctx.state
        now = {r.src: r for r in after if r.src is not None}
        # Removals wait until the next replacement or the end: one call per run of them
        # records the same changes in the same order (each call re-slices the live list).
        gone: list[int] = []
        for row in before:
            if row.src is None:
                continue
            new = now.get(row.src)
            if new is None:
                st.clean = None
                gone.extend(row.sources)
                continue
            if new.msg.blocks == row.msg.blocks:
                continue
            if _shape(new.msg) != _shape(row.msg):
                st.clean = None  # tool ids moved: the sanitiser must look again
            if row.members:
                originals = {i: ctx.message(i) for i in row.members}
                parts = cow.split_merged(row, new.msg, originals)
            else:
                parts = {row.src: new.msg.blocks}
            for src, blocks in parts.items():
                if not blocks:
                    gone.append(src)
                    continue
                stored = self._stored(ctx, src, blocks)
                if stored != ctx.message(src):
                    if gone:
                        act.remove(gone, removed)
                        gone = []
                    act.replace(src, stored, changed)
                    st.rows_dirty = min(st.rows_dirty, src)
        if gone:
            act.remove(gone, removed)

    # --- hooks --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        msg = ctx.message(index)
        cap = int(self.params["current_turn_result_max_chars"])
        if cap and cow.has_result_over(msg, cap):
            blocks = tuple(
                replace(b, text=cow.truncate_at_creation(b.text, cap), parts=())
                if b.kind is _RESULT and len(b.text) > cap
                else b
                for b in msg.blocks
            )
            with ctx.action("truncate", reason="tool result capped at creation", limit=cap) as act:
                act.replace(index, cow.with_blocks(msg, blocks), Fate.TRUNCATED)
            ctx.state.rows_dirty = min(ctx.state.rows_dirty, index)
        if cow.is_source_query(msg):
            # run_stream: each user request appends its query, then trims and sanitises
            # (two queries in a row are two requests: trimmed twice).
            self._trim(ctx)

    def before_call(self, ctx: ContextView) -> None:
        # _call_llm_stream: every LLM call sanitises first, then may overflow.
        self._sanitize(ctx)
        if self.params["simulate_overflow"] and ctx.request_ref() > self.window(ctx):
            self._overflow(ctx)

    # --- _trim_messages -----------------------------------------------------------------
    def _trim(self, ctx: ContextView) -> None:
        """``_trim_messages`` then ``sanitize_claude_messages``, once per user request (run
        as its query is appended). A background summary scheduled by an earlier request
        has landed by now (it is due from the LLM call after the one it was started for)."""
        ctx.run_pending()
        st: _State = ctx.state
        limit = int(self.params["history_result_max_chars"])
        before = self._rows(ctx)
        long = st.rows_long  # aligned with ``before`` (the injection cuts no result)
        rows, cuts = cow.truncate_historical_tool_results(
            before, limit=limit, candidates=itertools.compress(range(len(long)), long)
        )
        if cuts:
            with ctx.action(
                "truncate", reason="historical tool result cut (head only)", limit=limit,
                cuts=[{"message": c.src, "before": c.before_chars, "after": c.after_chars}
                      for c in cuts],
            ) as act:  # fmt: skip
                self._write_back(ctx, act, before, rows)
        turns = cow.split_turns(rows, st.rows_query)  # (the cut changes no query)
        if not turns:
            return
        max_turns = int(self.params["agent_max_context_turns"])
        if len(turns) > max_turns:
            cut = len(turns) // 2
            self._drop_turns(ctx, turns[:cut], turns[cut:], kind="drop",
                             reason=f"{len(turns)} turns > agent_max_context_turns {max_turns}",
                             turns=len(turns), limit=max_turns)  # fmt: skip
            turns = turns[cut:]
        budget = self._budget(ctx)
        current = ctx.history_tokens + ctx.summary_tokens
        if current + ctx.system_tokens <= budget:
            self._sanitize(ctx)
            return
        if len(turns) < cow.COMPRESS_THRESHOLD:
            self._compress(ctx, turns, budget=budget, current=current)
        else:
            cut = len(turns) // 2
            self._drop_turns(ctx, turns[:cut], turns[cut:], kind="drop",
                             reason="over the token budget: older half of the turns dropped once",
                             turns=len(turns), estimate=current + ctx.system_tokens,
                             budget=budget)  # fmt: skip
        self._sanitize(ctx)

    def _compress(
        self, ctx: ContextView, turns: list[list[CowMsg]], *, budget: int, current: int
    ) -> None:
        with ctx.action(
            "compress_text_only", reason="fewer than 5 turns over budget: turns kept as text",
            turns=len(turns), estimate=current + ctx.system_tokens, budget=budget,
        ) as act:  # fmt: skip
            for turn in turns:
                self._write_back(ctx, act, turn, cow.compress_turn_to_text_only(turn))
        self._check_injection_target(ctx)

    def _drop_turns(
        self,
        ctx: ContextView,
        dropped: list[list[CowMsg]],
        kept: list[list[CowMsg]],
        *,
        kind: str,
        reason: str,
        **detail: Any,
    ) -> None:
        st: _State = ctx.state
        rows = [r for turn in dropped for r in turn]
        summary, flushed, record_id = self._flush(ctx, rows, reason="trim")
        clean, live_before = st.clean, ctx.live
        with ctx.action(kind, reason=reason, dropped_turns=len(dropped), **detail) as act:
            st.clean = None
            # One removal per run of rows with the same fate (same changes, in the same
            # order, as one per row): each removal re-slices the live list.
            run: list[int] = []
            run_fate = Fate.DROPPED
            for row in rows:
                fate = Fate.SUMMARISED if summary and row.src in flushed else Fate.DROPPED
                if fate is not run_fate and run:
                    act.remove(run, run_fate)
                    run = []
                run_fate = fate
                run.extend(row.sources)
            if run:
                act.remove(run, run_fate)
            act.summary_id = record_id
        gone = len(live_before) - len(ctx.live)
        if clean is not None and gone < clean[0] and ctx.live == live_before[gone:]:
            # Only a prefix left (compared): every kept message has the same successors,
            # so the kept part found clean still is (first message and ledger: re-read).
            st.clean = (clean[0] - gone, clean[1])
        self._check_injection_target(ctx)
        if summary:
            target = cow.first_user_text_target(kept)
            self._schedule_injection(ctx, summary, len(dropped), target, record_id, rows)

    # --- memory flush and injection -----------------------------------------------------
    def _flush(
        self, ctx: ContextView, rows: list[CowMsg], *, reason: str
    ) -> tuple[str, set[int], int | None]:
        """Summarise ``rows`` as the memory flush does. Returns (summary or "", sources
        shown to the summariser, summary record id)."""
        st: _State = ctx.state
        if not self.params["memory_enabled"]:
            return "", set(), None
        texts: list[str] = []
        deduped = cow.dedupe_for_flush(rows, st.flushed, texts)
        conversation = cow.format_for_summary(deduped, texts)
        if not conversation.strip():
            return "", set(), None
        shown = [r.src for r in deduped if r.src is not None]
        request = SummaryRequest(
            strategy=self.name,
            system=cow.SUMMARY_SYSTEM_PROMPT,
            messages=(PromptMessage("user", cow.summary_user_prompt(conversation)),),
            max_output_tokens=cow.SUMMARY_MAX_TOKENS,
            temperature=cow.SUMMARY_TEMPERATURE,
            language="zh",
            style="bullets",
            material=tuple(
                MaterialItem(r.msg.role.value, text, r.src if r.src is not None else -1)
                for r, text in zip(deduped, texts, strict=True)
            ),
            purpose=f"memory-{reason}",
        )
        # the input made again from the rows' texts when read (kept anyway: the messages'
        # own texts mostly), not packed: compressing each prompt was ~1.5% of a replay
        remade = RemadeInput(_flush_input, request.strategy, deduped, texts)
        record = ctx.summarize(request, messages=shown, input_text=remade)
        if record.error:
            summary = cow.fallback_summary(deduped)
            ctx.emit("summary_failed", messages=shown, summary_id=record.id, error=record.error,
                     outcome="rule-based fallback summary", reason=reason)  # fmt: skip
        elif cow.is_no_summary(record.output):
            ctx.emit("summary_empty", messages=shown, summary_id=record.id,
                     reply=record.output.strip(), outcome="nothing written or injected")  # fmt: skip
            summary = ""
        else:
            summary = record.output.strip()
        return summary, set(shown), record.id

    def _schedule_injection(
        self,
        ctx: ContextView,
        summary: str,
        turns: int,
        target: int | None,
        record_id: int | None,
        replaced: list[CowMsg],
    ) -> None:
        if target is None:
            ctx.emit("summary_not_injected", summary_id=record_id, reason="no kept user text")
            return
        replaced_srcs = [i for r in replaced for i in r.sources]

        def apply(c: ContextView) -> None:
            self._inject(c, summary, turns, target, record_id, replaced_srcs)

        if self.params["summary_injection"] == "sync":
            apply(ctx)
        else:  # scheduled as the query is appended: lands from the next LLM call on
            ctx.defer(
                "summary_injection",
                f"memory summary of {turns} turns -> message {target}",
                apply,
                skip_next=True,
            )

    def _inject(
        self,
        ctx: ContextView,
        summary: str,
        turns: int,
        target: int,
        record_id: int | None,
        replaced: list[int],
    ) -> None:
        st: _State = ctx.state
        if not ctx.alive[target]:
            ctx.emit("summary_not_injected", summary_id=record_id, reason="target message gone",
                     target=target)  # fmt: skip
            return
        msg = ctx.message(target)
        first = next((b for b in msg.blocks if b.kind is BlockKind.TEXT), None)
        if first is None:
            return
        base = st.inj_text if st.inj_target == target else first.text
        injected = cow.injection_text(summary, turns, base)
        with_injection = replace(
            msg, blocks=tuple(replace(b, text=injected) if b is first else b for b in msg.blocks)
        )
        tokens = cow.estimate_message(with_injection) - cow.estimate_message(msg)
        rendered = injected[: len(injected) - len(first.text)]
        previous_ref = ctx.summary_ref
        with ctx.action(
            "summary_injected", reason="background memory summary prepended to the first kept "
            "user text", always=True, target=target, turns=turns,
        ) as act:  # fmt: skip
            ctx.set_summary(summary, tokens=tokens, rendered=rendered, summary_id=record_id)
            act.summary_id = record_id
        st.inj_target, st.inj_text, st.inj_prefix = target, injected, rendered
        check_summary_size(
            ctx, summary_rendered=rendered, replaced=replaced, summary_id=record_id,
            previous_ref=previous_ref,
        )  # fmt: skip

    def _check_injection_target(self, ctx: ContextView) -> None:
        """An injected summary lives inside its message: it leaves with it."""
        st: _State = ctx.state
        if st.inj_target is not None and not ctx.alive[st.inj_target]:
            st.inj_target, st.inj_text, st.inj_prefix = None, "", ""
            ctx.set_summary("", tokens=0, rendered="", summary_id=None)

    # --- sanitize_claude_messages -------------------------------------------------------
    def _sanitize(self, ctx: ContextView) -> None:
        # Every LLM call sanitises. Only appends happen between two calls unless this
        # strategy acted, so a history found clean needs only its new tail checked.
        st: _State = ctx.state
        live = ctx.live
        start = 0
        clean = st.clean
        if clean is not None and clean[0] <= len(live) and live[clean[0] - 1] == clean[1]:
            start = clean[0] - 1
        if _sanitize_is_noop(ctx, start):
            st.clean = (len(live), live[-1]) if live else None
            return
        st.clean = None
        rows = self._rows(ctx)
        out, removed, repairs = cow.sanitize(rows)
        if not removed and not repairs:
            return
        synthetic = [b.tool_id for r in out for b in r.msg.blocks if b.raw_type == "synthetic"]
        with ctx.action(
            "sanitize", reason="sanitize_claude_messages repaired tool pairing",
            removed=removed, repairs=repairs, synthetic_results=synthetic, always=True,
        ) as act:  # fmt: skip
            self._write_back(ctx, act, rows, out)
        self._check_injection_target(ctx)

    # --- provider overflow --------------------------------------------------------------
    def _overflow(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        st.clean = None
        window = self.window(ctx)
        before = ctx.request_ref()
        self._flush(ctx, self._rows(ctx), reason="overflow")  # written to memory, not injected
        view = self._rows(ctx)
        rows, truncated, removed_turns = cow.aggressive_trim(view)
        with ctx.action(
            "overflow_trim", reason="provider context-length error: aggressive trim and retry",
            reference=before, window=window, truncated_blocks=truncated,
            removed_turns=removed_turns,
        ) as act:  # fmt: skip
            self._write_back(ctx, act, view, rows)
        self._check_injection_target(ctx)
        if (truncated or removed_turns) and ctx.request_ref() <= window:
            return
        with ctx.action(
            "overflow_clear", reason="overflow persisted: history cleared, the request fails",
            reference=ctx.request_ref(), window=window,
        ) as act:  # fmt: skip
            act.remove(list(ctx.live), Fate.DROPPED)
        self._check_injection_target(ctx)


def _flush_input(strategy: str, rows: list[CowMsg], texts: list[str]) -> str:
    """A flush call's ``input_text()`` made again (``_flush``'s request of ``rows``)."""
    prompt = PromptMessage("user", cow.summary_user_prompt(cow.format_for_summary(rows, texts)))
    return SummaryRequest(strategy, cow.SUMMARY_SYSTEM_PROMPT, (prompt,)).input_text()


def _shape(msg: Message) -> tuple[tuple[BlockKind, str], ...]:
    return tuple((b.kind, b.tool_id) for b in msg.blocks)


def _sanitize_is_noop(ctx: ContextView, start: int = 0) -> bool:
    """True when ``cow.sanitize`` would change nothing, read off the context's ledgers:
    every tool_use answered in the very next message (a user or tool message holding all
    its ids, with the results-only messages after it: CowAgent holds them as one), no
    leading tool-result-only user message, no unmatched tool id. Assistant messages
    before live position ``start`` are known to be answered."""
    if ctx.live_tools.unmatched:
        return False
    live = ctx.live
    if not live:
        return True
    first = ctx.message(live[0])
    user, tool = _USER, _TOOL  # every LLM call runs this: bound once
    if (
        (first.role is user or first.role is tool)
        and cow.has_kind(first, _RESULT)
        and not cow.has_kind(first, _TEXT)
    ):
        return False
    last = len(live) - 1
    ids, message, assistant = ctx.ids, ctx.message, _ASSISTANT
    for k in range(start, len(live)):
        i = live[k]
        uses = ids(i)[0]
        if not uses or message(i).role is not assistant:
            continue
        if k == last:
            return False
        j = live[k + 1]
        answer = message(j)
        if answer.role is not user and answer.role is not tool:
            return False
        results = set(ids(j)[1])
        if cow.is_results_only(answer):  # merged with the results-only run after it
            m = k + 2
            while m < len(live) and cow.is_results_only(message(live[m])):
                results.update(ids(live[m])[1])
                m += 1
        if not results.issuperset(uses):
            return False
    return True


STRATEGY = CowAgentStrategy
