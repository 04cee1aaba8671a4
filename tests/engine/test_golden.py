"""Golden replays: real corpus transcripts, small windows, every preset fires."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import SMALL_WINDOWS as SMALL

from ctxlab.engine import cli
from ctxlab.engine.core.records import expand
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import PRESETS, STRATEGIES

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
FILES = [
    "claude-code/agentcmd-full-session.jsonl",
    "swe-agent-traj/marshmallow-1867-fc.traj",
]
# cowagent/picoclaw fire at user-request / post-turn boundaries: their own golden tests own
# that; here every preset must at least replay and serialise cleanly.
MUST_FIRE = {"qwenpaw", "copaw", "baseagent"}


@pytest.mark.parametrize("preset", [p for p in PRESETS if p in STRATEGIES])
@pytest.mark.parametrize("name", FILES, ids=[Path(f).parent.name for f in FILES])
def test_golden_replay_fires_and_serialises(name: str, preset: str) -> None:
    conversation = cli.load_file(CORPUS / name)
    result = run(conversation, preset, params=SMALL[preset])
    assert result.steps, "every corpus file has inference steps"
    if preset in MUST_FIRE:
        assert result.events, f"{preset} should act with a small window"
    # Context indexes are valid source indexes, in request order, never duplicated.
    for step in result.steps:
        ctx = expand(step.context)
        assert len(ctx) == len(set(ctx))
        assert all(0 <= i < len(conversation.messages) for i in ctx)
        assert step.source_index not in ctx
    data = json.loads(json.dumps(cli.result_to_json(result, detail=True)))
    assert set(data) >= {"strategy", "params", "estimator", "steps", "events", "summaries",
                         "findings", "metrics"}  # fmt: skip
    assert len(data["steps"][-1]["fates"]) == len(data["steps"][-1]["context"])
    assert "tables" not in cli.format_table(result)


@pytest.mark.parametrize("preset", ["qwenpaw", "copaw"])
def test_golden_summarising_presets_summarise(preset: str) -> None:
    conversation = cli.load_file(CORPUS / FILES[0])
    result = run(conversation, preset, params=SMALL[preset])
    assert result.summaries and not result.summaries[0].error
    assert "##" in result.summaries[0].output
