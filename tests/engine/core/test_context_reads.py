"""The replay context's per-index reads and running totals stay equal to a recount.

The context keeps, per source index, the current version of each message, its reference
count and its tool ids in lists the view hands strategies at C level (``message``,
``ref_tokens``, ``ids``: those lists' ``__getitem__``), and the original's tool ids seen so
far as two sets (``SeenTools``); the view's properties read the context's attributes of
the same name. Strategies that replace, remove and restore messages (Vercel's request
view, BaseAgent's prune and lift, CowAgent's trim) must find at every step exactly what
a recount from the messages gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import synth
from ctxlab.engine.core.context import ReplayContext
from ctxlab.engine.core.context_view import ContextView
from ctxlab.engine.core.tool_pairs import ToolLedger, tool_ids
from ctxlab.engine.replay import Replay, run

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _recount(ctx: ReplayContext) -> None:
    view = ctx.view
    reference = ctx.reference
    originals = ctx.originals
    for i in range(len(originals)):
        version = view.message(i)
        assert version is ctx._current.get(i, originals[i])
        assert view.original(i) is originals[i]
        assert view.ref_tokens(i) == reference.message_of(version)
        assert view.ids(i) == tool_ids(version)
    live = ctx.live
    assert ctx.history_ref == sum(view.ref_tokens(i) for i in live)
    assert ctx.history_tokens == sum(view.tokens(i) for i in live)


@pytest.mark.parametrize("name", ["vercel_prune_messages", "baseagent", "cowagent"])
def test_per_index_reads_and_totals_equal_a_recount_at_every_step(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation = synth.bench_conversation(CORPUS, messages=600, seed=2)
    seen = {"steps": 0, "modified": 0}
    record = ReplayContext.record

    def checked(ctx: ReplayContext, source_index: int) -> Any:
        out = record(ctx, source_index)
        _recount(ctx)
        seen["steps"] += 1
        seen["modified"] = max(seen["modified"], len(ctx._current))
        return out

    monkeypatch.setattr(ReplayContext, "record", checked)
    result = run(conversation, name)
    assert seen["steps"] == len(result.steps) > 100
    assert seen["modified"] > 0  # the strategy changed messages: the lists were written


def test_original_tool_ids_unmatched_as_a_ledger_of_the_appended_originals() -> None:
    conversation = synth.bench_conversation(CORPUS, messages=400, seed=3)
    steps = 0

    def check(ctx: ReplayContext) -> None:
        ledger = ToolLedger()
        first = 0 if ctx.system_index is None else 1
        for i in range(first, ctx.source_index):  # the messages appended so far
            ledger.add(tool_ids(ctx.originals[i]))
        assert ctx.orig_tools.unmatched == ledger.unmatched

    job = Replay(conversation, "baseagent")
    for _ in job:
        check(job.ctx)
        steps += 1
    assert steps > 50


def test_view_properties_read_the_context_attribute_of_the_same_name() -> None:
    conversation = synth.bench_conversation(CORPUS, messages=60, seed=1)
    job = Replay(conversation, "copaw")
    next(iter(job))
    ctx, view = job.ctx, job.ctx.view
    names = [n for n, v in vars(ContextView).items() if isinstance(v, property)]
    assert len(names) > 20
    for name in names:
        if name == "summary":  # a text made when first read: equal, not the same object
            assert view.summary == ctx.summary
            continue
        assert getattr(view, name) is getattr(ctx, name), name
    with pytest.raises(AttributeError):
        view.history_tokens = 1  # type: ignore[misc]
