"""stages.originals: the original's compactions by the message that opens them, continued
files, and the split of a reported usage into overhead and context not in this file."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ctxlab.engine.core.model import OriginalCompaction
from ctxlab.engine.stages.originals import (
    OriginalIndex,
    outside_context,
    starts_after_compaction,
)
from tests.engine.builders import assistant, conv, system, user

SUMMARY = "This session is being continued from a previous conversation that ran out of context."


def test_original_index_finds_the_summary_message_not_the_boundary():
    c = replace(
        conv(system(), user("a"), assistant("b"), user(SUMMARY), assistant("c")),
        compactions=(
            OriginalCompaction(before_index=3, kind="compact_boundary", summary_index=3),
            OriginalCompaction(before_index=2, kind="microcompact", cleared_tool_ids=("t1",)),
        ),
    )
    index = OriginalIndex(c)
    assert index.at(3) is c.compactions[0]
    assert index.at(2) is None  # a microcompact is listed apart
    assert [m.cleared_tool_ids for m in index.microcompactions[2]] == [("t1",)]
    assert len(index) == 1


def test_original_index_without_summary_uses_before_index_and_skips_index_0():
    c = replace(
        conv(user("a"), assistant("b"), user("c"), assistant("d")),
        compactions=(
            OriginalCompaction(before_index=0, kind="compact_boundary"),
            OriginalCompaction(before_index=2, kind="compacted"),
        ),
    )
    index = OriginalIndex(c)
    assert index.at(0) is None
    assert index.at(2) is c.compactions[1]


@pytest.mark.parametrize(
    ("messages", "metadata", "compactions", "expected"),
    [
        ((user("hi"), assistant("ok")), (), (), ""),
        ((user("hi"), assistant("ok")), (("continued", "1"),), (), "importer"),
        (
            (user("hi"), assistant("ok")),
            (),
            (OriginalCompaction(before_index=0, kind="compact_boundary"),),
            "opens with",
        ),
        ((system(), user(SUMMARY + " ..."), assistant("ok")), (), (), "first message"),
    ],
    ids=["plain", "metadata", "compaction-at-0", "summary-text"],
)
def test_starts_after_compaction(messages, metadata, compactions, expected):
    c = replace(conv(*messages), metadata=metadata, compactions=compactions)
    reason = starts_after_compaction(c)
    assert (expected in reason) if expected else reason == ""


def test_outside_context_splits_overhead_from_context_not_in_file():
    plain = outside_context(30_000, 12_000)
    assert (plain.overhead, plain.not_in_file) == (18_000, 0)
    cont = outside_context(150_000, 10_000, "continued", overhead=18_000)
    assert (cont.overhead, cont.not_in_file) == (18_000, 122_000)
    assert cont.as_detail() == {
        "overhead": 18_000,
        "not_in_file": 122_000,
        "not_in_file_reason": "continued",
    }
    unknown = outside_context(150_000, 10_000, "continued")
    assert (unknown.overhead, unknown.not_in_file) == (0, 140_000)
    assert outside_context(5_000, 9_000).overhead == 0  # never negative
