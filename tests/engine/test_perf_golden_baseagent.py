"""BaseAgent's incremental request-view prune equals the straightforward one.

``OldBaseAgent`` is the pre-optimisation algorithm (rebuild every row, ``scan_prune`` the
whole list, recompute the whole view every request): both must produce identical replays
across the prune parameters, including literal PRUNE_MARKER outputs that stop the walk.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_perf_golden import digest

from ctxlab.engine import synth
from ctxlab.engine.core.context_view import ContextView
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message
from ctxlab.engine.core.records import Fate
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import _baseagent_rules as rules
from ctxlab.engine.strategies._baseagent_rules import BaseMsg
from ctxlab.engine.strategies.baseagent import BaseAgentStrategy, _placeholder
from ctxlab.engine.summarize.offline import FailingSummarizer

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"


class OldBaseAgent(BaseAgentStrategy):
    def _all_rows(self, ctx: ContextView) -> list[BaseMsg]:
        rows: list[BaseMsg] = []
        if ctx.system_index is not None:
            rows.append(BaseMsg("system", ctx.system_text, src=ctx.system_index))
        if ctx.state.summary_msg is not None:
            rows.append(ctx.state.summary_msg)
        for i in ctx.live:
            rows.extend(rules.to_base(i, self._stored(ctx, i)))
        return rows

    def before_call(self, ctx: ContextView) -> None:
        threshold = self._threshold()
        total = self._stored_total(ctx)
        if not rules.is_overflow(total, threshold):
            self._old_apply(ctx, {}, total=total, threshold=threshold)
            return
        rows = self._all_rows(ctx)
        scan = rules.scan_prune(
            rows,
            protect_last_turns=int(self.params["protect_last_turns"]),
            prune_protect=int(self.params["prune_protect"]),
            prune_minimum=int(self.params["prune_minimum"]),
        )
        view: dict[int, set[str]] = {}
        if scan.applied:
            for pos in scan.indexes:
                row = rows[pos]
                if row.src is not None:
                    view.setdefault(row.src, set()).add(row.tool_call_id)
        self._old_apply(ctx, view, total=total, threshold=threshold, scan=scan)
        pruned_total = ctx.request_tokens()
        if not rules.is_overflow(pruned_total, threshold):
            return
        self._compact(ctx, total=total, pruned_total=pruned_total, threshold=threshold)

    def _old_apply(
        self,
        ctx: ContextView,
        view: dict[int, set[str]],
        *,
        total: int,
        threshold: float,
        scan: rules.PruneScan | None = None,
    ) -> None:
        req = ctx.state.req
        restore = [i for i in req.unpruned if i not in view]
        if restore:
            with ctx.action(
                "restore_request", reason="request-view prune recomputed from full outputs",
                estimate=total, threshold=threshold,
            ) as act:  # fmt: skip
                for i in restore:
                    act.replace(i, req.unpruned.pop(i), Fate.RESTORED)
        if not view:
            req.prune_delta = 0
            return
        todo = {i: ids for i, ids in view.items() if self._pruned_ids(ctx, i) != ids}
        if todo:
            with ctx.action(
                "prune",
                reason="old tool output cleared in the request view only",
                estimate=total,
                threshold=threshold,
                scanned_tokens=scan.total if scan else None,
                prunable_tokens=scan.pruned if scan else None,
            ) as act:
                for i, ids in todo.items():
                    full = self._stored(ctx, i)
                    req.unpruned[i] = full
                    act.replace(i, _placeholder(full, ids), Fate.PRUNED)
        req.prune_delta = sum(
            self.count_message(req.unpruned[i]) - ctx.tokens(i) for i in req.unpruned
        )


@functools.cache
def _conversation(markers: bool, messages: int = 700) -> Conversation:
    conv = synth.bench_conversation(CORPUS, messages=messages, seed=3)
    if not markers:
        return conv
    # Every 37th tool output is literally the prune marker (the walk must stop there).
    seen = 0
    messages: list[Message] = []
    for m in conv.messages:
        blocks: list[Block] = []
        for b in m.blocks:
            if b.kind is BlockKind.TOOL_RESULT:
                seen += 1
                if seen % 37 == 0:
                    b = replace(b, text=rules.PRUNE_MARKER, parts=())
            blocks.append(b)
        messages.append(replace(m, blocks=tuple(blocks)))
    return replace(conv, messages=tuple(messages))


GRID: list[tuple[str, dict[str, Any]]] = [
    ("defaults", {}),
    ("small", {"model_context_limit": 30000, "output_token_max": 2000}),
    (
        "protect0",
        {
            "model_context_limit": 40000,
            "protect_last_turns": 0,
            "prune_protect": 5000,
            "prune_minimum": 1000,
        },
    ),  # fmt: skip
    (
        "protect1",
        {
            "model_context_limit": 40000,
            "protect_last_turns": 1,
            "prune_protect": 3000,
            "prune_minimum": 0,
        },
    ),  # fmt: skip
    (
        "protect5",
        {
            "model_context_limit": 60000,
            "protect_last_turns": 5,
            "prune_protect": 8000,
            "prune_minimum": 2000,
            "max_output_tokens": 0,
        },
    ),  # fmt: skip
    ("no-minimum", {"model_context_limit": 25000, "prune_protect": 0, "prune_minimum": 0}),
]


@pytest.mark.parametrize("failing", [False, True], ids=["summary", "summary-fails"])
@pytest.mark.parametrize("markers", [False, True], ids=["plain", "literal-markers"])
@pytest.mark.parametrize("params", [g[1] for g in GRID], ids=[g[0] for g in GRID])
def test_baseagent_incremental_prune_matches_full_rescan(
    params: dict[str, Any], markers: bool, failing: bool
) -> None:
    # Without summaries the history only grows: the full rescan is quadratic, keep it short.
    conv = _conversation(markers, 250 if failing else 700)
    summarizer = FailingSummarizer() if failing else None
    new = run(conv, BaseAgentStrategy(params), summarizer=summarizer)
    old = run(conv, OldBaseAgent(params), summarizer=summarizer)
    assert old.events, "every case acts"
    assert digest(new) == digest(old)


def test_baseagent_incremental_prune_grid_covers_prune_and_lift() -> None:
    kinds: set[str] = set()
    for params in (GRID[2][1], GRID[3][1]):
        conv = _conversation(True, 250)
        result = run(conv, BaseAgentStrategy(params), summarizer=FailingSummarizer())
        kinds.update(e.kind for e in result.events)
    assert {"prune", "restore_request", "summary_failed"} <= kinds
