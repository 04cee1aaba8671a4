"""``ReplayContext.check_findings`` keeps the broken tool pairs (unanswered in the request, answered in the
original) from the ids touched since the last step; at every step they equal the set
difference of every unmatched id, which it took before (and which grew with the session)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import synth
from ctxlab.engine.core.context import ReplayContext
from ctxlab.engine.replay import run

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


@pytest.mark.parametrize("name", ["aider", "openhands_condenser"])
def test_broken_pairs_equal_the_whole_difference_at_every_step(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation = synth.bench_conversation(CORPUS, messages=1_000, seed=1)
    seen = {"steps": 0, "broken": 0}

    check = ReplayContext.check_findings

    def checked(ctx: Any) -> None:
        check(ctx)
        whole = ctx.live_tools.unmatched - ctx.orig_tools.unmatched
        assert ctx.broken_tools == whole
        assert not ctx.live_tools.changed
        seen["steps"] += 1
        seen["broken"] += bool(whole)

    monkeypatch.setattr(ReplayContext, "check_findings", checked)
    result = run(conversation, name)
    assert seen["steps"] == len(result.steps)
    reported = [f for f in result.findings if f.kind == "tool_pair_broken"]
    assert seen["broken"] == len(reported) > 0  # the case breaks pairs
