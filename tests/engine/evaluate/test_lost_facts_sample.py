"""The fact extractor against a hand-labelled sample of real corpus messages.

``tests/data/lost_facts/sample.jsonl`` (how it was labelled: its README): each row is one
message from a corpus transcript with the facts a person would miss marked by hand.
Precision counts every extracted fact that is not a marked fact as wrong; recall is over
the marked facts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.evaluate.extract import KINDS, message_facts

DATA = Path(__file__).resolve().parents[2] / "data"
SAMPLE = DATA / "lost_facts" / "sample.jsonl"
# whole lines: a marked line matches an extracted one when one holds the other
LINE_KINDS = ("errors", "instructions")

Fact = tuple[str, str]


def load(split: str | None = None) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if split is None or r["split"] == split]


def to_message(row: dict[str, Any]) -> Message:
    blocks = [
        Block(BlockKind.TOOL_USE, tool_id="t", tool_name=b["name"], tool_input=b["input"])
        if b["kind"] == "tool_use"
        else Block(BlockKind(b["kind"]), text=b["text"])
        for b in row["blocks"]
    ]
    return Message(Role(row["role"]), tuple(blocks))


def same(found: Fact, marked: Fact) -> bool:
    if found[0] != marked[0]:
        return False
    if found[0] in LINE_KINDS:
        return found[1] in marked[1] or marked[1] in found[1]
    return found[1] == marked[1]


def score(rows: list[dict[str, Any]]) -> tuple[int, int, int, int, list[str]]:
    """(right, extracted, found, marked, what went wrong)."""
    right = extracted = found = marked = 0
    report: list[str] = []
    for row in rows:
        got = sorted(message_facts(to_message(row)))
        facts = [(k, v) for k, v in row["facts"]]
        for fact in got:
            extracted += 1
            if any(same(fact, m) for m in facts):
                right += 1
            else:
                report.append(f"{row['id']} not a fact: {fact}")
        for m in facts:
            marked += 1
            if any(same(fact, m) for fact in got):
                found += 1
            else:
                report.append(f"{row['id']} missed: {m}")
    return right, extracted, found, marked, report


def test_sample_is_labelled_real_corpus_text_in_several_formats() -> None:
    rows = load()
    assert len(rows) >= 80 and len({r["id"] for r in rows}) == len(rows)
    assert {r["split"] for r in rows} == {"dev", "held-out"}
    assert len({r["source"].split("/")[0] for r in rows}) >= 6, "several formats"
    for row in rows:
        assert (DATA / "corpus" / row["source"]).is_file(), row["source"]
        assert all(kind in KINDS for kind, _ in row["facts"] + row["noise"])
    assert sum(len(r["facts"]) for r in rows) >= 300
    assert {k for r in rows for k, _ in r["facts"]} == set(KINDS), "every category labelled"


@pytest.mark.parametrize("split", [None, "dev", "held-out"])
def test_precision_and_recall_on_the_labelled_sample(split: str | None) -> None:
    right, extracted, found, marked, report = score(load(split))
    precision, recall = right / extracted, found / marked
    detail = "\n".join(report)
    assert precision >= 0.90, f"precision {precision:.3f} ({right}/{extracted})\n{detail}"
    assert recall >= 0.80, f"recall {recall:.3f} ({found}/{marked})\n{detail}"


def test_labelled_noise_is_not_listed() -> None:
    """The values judged not to be facts stay out (the noise the old extractor listed:
    JSON keys, nReport-style escapes, framework names, XML namespaces)."""
    listed = [
        (row["id"], (k, v))
        for row in load()
        for k, v in row["noise"]
        if any(same(f, (k, v)) for f in message_facts(to_message(row)))
    ]
    assert len(listed) <= 0.1 * sum(len(r["noise"]) for r in load()), listed
