"""One model window for a comparison: ``replay --window``, ``--sweep window=...`` and the
stored runs' effective params (ctxlab.engine.budget)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from ctxlab.engine.strategies import LIBRARY, get_strategy_class
from replay_app.configs import services as config_services
from replay_app.models import Run, RunStatus
from replay_app.runs import services
from replay_app.sweeps import sweep

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SESSION = CORPUS / "claude-code" / "agentcmd-full-session-four.jsonl"


def _call(*args: str) -> str:
    out = StringIO()
    call_command("replay", *args, stdout=out)
    return out.getvalue()


@pytest.mark.parametrize("strategy", LIBRARY)
def test_replay_file_window_json_for_every_strategy(strategy: str, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    _call("--file", str(SESSION), "--strategy", strategy, "--window", "32000", "--json", str(out))
    record = json.loads(out.read_text(encoding="utf-8"))
    cls = get_strategy_class(strategy)
    assert record["params"][cls.WINDOW] == 32000
    for follower in cls.WINDOW_FOLLOWS:  # derived ones follow (not their 200K defaults)
        default = next(p.default for p in cls.PARAMS if p.name == follower)
        assert record["params"][follower] < default, follower


def test_set_wins_over_the_window(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    _call("--file", str(SESSION), "--strategy", "claude_code", "--window", "32000",
          "--set", "output_reserve=1000", "--json", str(out))  # fmt: skip
    params = json.loads(out.read_text(encoding="utf-8"))["params"]
    assert params["context_window"] == 32000 and params["output_reserve"] == 1000


def test_window_out_of_range_is_a_clear_error() -> None:
    with pytest.raises(CommandError, match="window 500 is out of range for qwenpaw"):
        _call("--file", str(SESSION), "--strategy", "qwenpaw", "--window", "500")


@pytest.mark.django_db
def test_save_with_window_stores_the_effective_params(small_transcript: Any) -> None:
    _call("--transcript", str(small_transcript.pk), "--strategy", "baseagent",
          "--window", "20000", "--save")  # fmt: skip
    run = Run.objects.get()
    assert run.status == RunStatus.DONE and run.window == 20000
    assert run.params["model_context_limit"] == 20000
    assert run.params["output_token_max"] == 3200


@pytest.mark.django_db
def test_window_overrides_a_saved_configuration(user: Any, small_transcript: Any) -> None:
    config = config_services.config_create(
        owner=user, name="big", strategy="qwenpaw", params={"max_input_length": 500_000,
                                                            "pruning_recent_n": 2}
    )  # fmt: skip
    group = services.group_create(
        owner=user, transcript=small_transcript, enqueue=False,
        specs=[services.RunSpec(config=config, window=8000)],
    )  # fmt: skip
    run = group.runs.get()
    assert run.params["max_input_length"] == 8000 and run.params["pruning_recent_n"] == 2
    assert run.window == 8000 and run.label == "big"


@pytest.mark.django_db
def test_sweep_window_is_one_group_detected_as_a_window_sweep(small_transcript: Any) -> None:
    out = _call("--transcript", str(small_transcript.pk), "--strategy", "claude_code",
                "--sweep", "window=8000,16000,32000", "--save")  # fmt: skip
    runs = list(Run.objects.order_by("pk"))
    assert [r.window for r in runs] == [8000, 16000, 32000]
    assert [r.label for r in runs] == ["window=8000", "window=16000", "window=32000"]
    assert [r.params["autocompact_buffer_tokens"] for r in runs] == [520, 1040, 2080]
    found = sweep.detect(runs)
    assert found is not None and found.key == "window"
    assert [row.value for row in found.rows] == [8000, 16000, 32000]
    assert "window" in out


@pytest.mark.django_db
def test_sweep_window_out_of_range(small_transcript: Any) -> None:
    with pytest.raises(CommandError, match="window=10 is out of range"):
        _call("--transcript", str(small_transcript.pk), "--strategy", "codex",
              "--sweep", "window=10,20000", "--save")  # fmt: skip
