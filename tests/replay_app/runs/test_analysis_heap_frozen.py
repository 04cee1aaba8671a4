"""The worker's analysis after done runs, like the replay, with the heap that existed
before it frozen (``core.heap.existing_heap_frozen``): every part of it (the ledger, the
survival analysis, the compare inputs with the probe set, the summary inputs as pieces and
their writes) allocates enough to set off full collections, which otherwise traverse the
conversation and the replay's records each time. The heap is its own again afterwards."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from inspect_helpers import make_run

from replay_app.compare import inputs as compare_inputs
from replay_app.costs import run_costs
from replay_app.models import RunAnalysis
from replay_app.runs import executor, textstore
from replay_app.steps import lost_analysis
from sessions_app.models import Transcript
from tests.engine.builders import SMALL_WINDOWS as SMALL

pytestmark = [pytest.mark.django_db]


def test_every_part_of_the_analysis_runs_with_the_heap_frozen(
    monkeypatch: pytest.MonkeyPatch, user: Any, session_four: Transcript
) -> None:
    frozen: dict[str, bool] = {}

    def watched(owner: Any, name: str, label: str) -> None:
        real = getattr(owner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            frozen[label] = gc.get_freeze_count() > 0
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, call)

    watched(run_costs, "finish_ledger", "ledger")
    watched(executor.run_survival, "finished", "analysis")
    watched(compare_inputs, "finished", "compare inputs")
    watched(textstore.TextWriter, "summaries_later", "summary inputs")
    watched(lost_analysis, "store_retention", "writes")
    assert gc.get_freeze_count() == 0
    run = make_run(user, session_four, "qwenpaw", **SMALL["qwenpaw"])
    assert run.finished_at is not None
    assert RunAnalysis.objects.filter(run=run).exclude(compare={}).exists()
    assert frozen == {
        "ledger": True,
        "analysis": True,
        "compare inputs": True,
        "summary inputs": True,
        "writes": True,
    }
    assert gc.get_freeze_count() == 0  # unfrozen again once the analysis is stored
