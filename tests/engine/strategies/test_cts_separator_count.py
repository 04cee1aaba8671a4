"""Complexity Trap's count of a checkpoint with its separator, made from the checkpoint's
own count and its last line's, equals counting the joined text."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ctxlab.engine import cli
from ctxlab.engine.replay import run
from ctxlab.engine.strategies.complexity_trap_summary import CHECKPOINT, _with_separator
from ctxlab.engine.tokens.cl100k import _encoding

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _count(text: str) -> int:
    return len(_encoding().encode_ordinary(text))


def _awkward(rng: random.Random) -> str:
    pieces = ["word", " ", "\n", "\n\n", "  \n", "\t", "!?", ".)", "}\n", "::", "12", "é",
              "漢字", "🙂", "\r\n", " \n ", "x\u00a0y", "'s", "```", "- item"]  # fmt: skip
    return "".join(rng.choice(pieces) for _ in range(rng.randint(1, 60)))


def test_random_texts() -> None:
    rng = random.Random(5)
    for _ in range(3000):
        text = _awkward(rng)
        assert _with_separator(_count, text) == _count(text + "\n\n"), repr(text)


@pytest.mark.parametrize(
    "source", ["claude-code/agentcmd-full-session.jsonl", "swe-agent-traj/marshmallow-1867-fc.traj"]
)
def test_checkpoints_of_a_replay(source: str) -> None:
    result = run(
        cli.load_file(CORPUS / source),
        "complexity_trap_summary",
        params={"n": 2, "keep_last_m_turns": 1},
    )
    outputs = [s.output for s in result.summaries if not s.error]
    assert outputs
    for k, output in enumerate(outputs, 1):
        checkpoint = CHECKPOINT.format(k=k, summary=output)
        assert _with_separator(_count, checkpoint) == _count(checkpoint + "\n\n")
