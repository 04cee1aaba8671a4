"""The fate log's columns and per-message index (``FateLog.positions``): a page reads the
fates of one page of messages through it, and it must say what the whole log says; the
log pickles as flat arrays (the web app shares it between processes through files)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from builders import SMALL_WINDOWS

from ctxlab.engine.cli import load_file
from ctxlab.engine.core.fatelog import FateLog
from ctxlab.engine.replay import run

SESSION = Path(__file__).resolve().parents[2] / "data" / "corpus" / "claude-code"


@pytest.mark.parametrize("strategy", ["baseagent", "qwenpaw", "picoclaw"])
def test_a_page_of_messages_reads_what_the_whole_log_says(strategy: str) -> None:
    conversation = load_file(SESSION / "agentcmd-full-session.jsonl")
    result = run(conversation, strategy, params=SMALL_WINDOWS[strategy])
    log = FateLog.from_events(result.events)
    assert len(log.steps) > 10, "the session must make the strategy act"
    total = len(conversation.messages)
    for step in result.steps:
        whole = log.fates_at(step.index)
        for start in range(0, total + 20, 17):
            window = range(start, start + 17)
            assert log.fates_at(step.index, window) == {
                i: v for i, v in whole.items() if i in window
            }
    for i in (-1, total + 5):
        assert list(log.positions(i)) == []
    for i in set(log.indexes):
        entries = list(log.positions(i))
        assert entries == [k for k, j in enumerate(log.indexes) if j == i]  # event order
    again = pickle.loads(pickle.dumps(log, protocol=pickle.HIGHEST_PROTOCOL))
    assert again == log and again.final() == log.final()
