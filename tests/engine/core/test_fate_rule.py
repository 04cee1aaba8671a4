"""One rule for how a message's changes combine (``records.apply_change``): the engine's
``fates_at``, the fate log the pages read and the CLI's per-step fates agree, on a real
strategy's replay and on a hand-made restore."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import SMALL_WINDOWS

from ctxlab.engine.cli import load_file, result_to_json
from ctxlab.engine.core.fatelog import FateLog
from ctxlab.engine.core.records import Change, Event, Fate, apply_change, expand, fates_at
from ctxlab.engine.replay import run

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SESSION = CORPUS / "claude-code" / "agentcmd-full-session.jsonl"


def test_restored_clears_a_prune_and_a_later_change_replaces_an_earlier_one() -> None:
    current: dict[int, str] = {}
    assert apply_change(current, 3, Fate.PRUNED, "pruned") is None
    assert apply_change(current, 3, Fate.TRUNCATED, "truncated") == "pruned"
    assert current == {3: "truncated"}
    assert apply_change(current, 3, Fate.RESTORED, "restored") == "truncated"
    assert current == {}


def test_fate_log_counts_and_fates_follow_a_restore() -> None:
    events = [
        Event(1, 2, "prune", changes=(Change(5, Fate.PRUNED), Change(6, Fate.PRUNED))),
        Event(2, 4, "restore", changes=(Change(5, Fate.RESTORED),)),
        Event(3, 4, "drop", changes=(Change(7, Fate.DROPPED),)),
    ]
    log = FateLog.from_events(events)
    assert log.counts_at(3) == {"pruned": 2}
    assert log.counts_at(4) == {"pruned": 1, "dropped": 1}
    assert log.fates_at(4) == {6: (Fate.PRUNED, 1), 7: (Fate.DROPPED, 3)}
    assert log.fates_at(4, [5]) == {}
    expected = {i: (c.fate, event_id) for i, (c, event_id) in fates_at(events, 4).items()}
    assert log.fates_at(4) == expected


@pytest.mark.parametrize("strategy", ["baseagent", "qwenpaw"])
def test_every_reader_agrees_on_a_real_replay(strategy: str) -> None:
    conversation = load_file(SESSION)
    result = run(conversation, strategy, params=SMALL_WINDOWS[strategy])
    assert any(e.changes for e in result.events), "the session must make the strategy act"
    log = FateLog.from_events(result.events)
    stored = [
        (e.id, e.step, [{"index": c.index, "fate": c.fate.value} for c in e.changes])
        for e in result.events
    ]  # the rows the web app keeps
    assert FateLog.from_stored(stored) == log
    cli_steps = result_to_json(result, detail=True)["steps"]
    for step, row in zip(result.steps, cli_steps, strict=True):
        engine = {i: c.fate for i, (c, _) in fates_at(result.events, step.index).items()}
        assert {i: f for i, (f, _) in log.fates_at(step.index).items()} == engine
        shown = [engine.get(i, Fate.KEPT).value for i in expand(step.context)]
        assert row["fates"] == shown
