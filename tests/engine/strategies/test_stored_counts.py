"""``stored_counts``: the one list of per-message counts an import stores and a replay
seeds. Each strategy's estimate read back under its rule is the strategy's own count of
that message; a replay seeded from them equals one that counts everything itself; a column
missing for older rows (None) is counted in the replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import synth
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.strategies import stored_counts
from ctxlab.engine.tokens.reference import ReferenceTokens

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


@pytest.fixture(scope="module")
def conversation() -> Conversation:
    return synth.bench_conversation(CORPUS, messages=240, seed=3)


def test_counted_holds_every_column_for_every_message(conversation: Conversation) -> None:
    columns = stored_counts.counted(conversation.messages)
    assert tuple(columns) == stored_counts.COLUMNS
    assert all(len(values) == len(conversation.messages) for values in columns.values())
    assert columns["reference_tokens"] == ReferenceTokens(conversation).per_message


@pytest.mark.parametrize("estimate", stored_counts.ESTIMATES, ids=lambda e: e.column)
def test_each_estimate_reads_back_under_its_rule(
    conversation: Conversation, estimate: stored_counts.Estimate
) -> None:
    columns = stored_counts.counted(conversation.messages)
    reference = stored_counts.seeded(conversation, columns)
    got = [reference.rule_of(estimate.rule, m) for m in conversation.messages]
    assert got == estimate.counts(conversation.messages) == columns[estimate.column]


@pytest.mark.parametrize("name", ["aider", "cowagent", "qwenpaw"])
def test_a_seeded_replay_equals_one_that_counts_itself(
    conversation: Conversation, name: str
) -> None:
    columns = stored_counts.counted(conversation.messages)
    seeded = replay_run(conversation, name, reference=stored_counts.seeded(conversation, columns))
    counted = replay_run(conversation, name)
    assert [s.tokens for s in seeded.steps] == [s.tokens for s in counted.steps]
    assert [(e.step, e.kind) for e in seeded.events] == [(e.step, e.kind) for e in counted.events]


def test_a_column_older_rows_lack_is_counted_in_the_replay(conversation: Conversation) -> None:
    columns = stored_counts.counted(conversation.messages)
    older = {**columns, "aider_tokens": [None] * len(conversation.messages)}
    reference = stored_counts.seeded(conversation, older)
    assert reference.rule_of(stored_counts.ESTIMATES[0].rule, conversation.messages[0]) is None
    rule = stored_counts.ESTIMATES[1].rule  # the other columns are still seeded
    assert reference.rule_of(rule, conversation.messages[0]) == columns["cowagent_tokens"][0]


def test_from_rows_reads_columns_in_their_order() -> None:
    rows = [tuple(f"{c}-{i}" for c in stored_counts.COLUMNS) for i in range(3)]
    got = stored_counts.from_rows(rows)
    assert list(got) == list(stored_counts.COLUMNS)
    assert got["aider_tokens"] == ("aider_tokens-0", "aider_tokens-1", "aider_tokens-2")
    assert all(v == () for v in stored_counts.from_rows([]).values())
