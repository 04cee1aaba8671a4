"""``manage.py replay --transcript ID (--config NAME | --strategy P [--set k=v]) --save``."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from ctxlab.engine.strategies import STRATEGIES
from replay_app.configs import services as config_services
from replay_app.models import Run, RunStatus, RunStep

pytestmark = pytest.mark.django_db


def _call(*args: str) -> str:
    out = StringIO()
    call_command("replay", *args, stdout=out)
    return out.getvalue()


def test_replay_save_strategy_with_set_stores_run(small_transcript: Any):
    out = _call(
        "--transcript",
        str(small_transcript.pk),
        "--strategy",
        "picoclaw",
        "--set",
        "summarize_message_threshold=4",
        "--save",
    )
    run = Run.objects.get()
    assert out.startswith(f"run {run.pk} done: /runs/{run.pk}/")
    assert run.status == RunStatus.DONE and run.owner == small_transcript.owner
    assert run.params["summarize_message_threshold"] == 4
    assert RunStep.objects.filter(run=run).count() == run.steps_total > 0


def test_replay_save_config_by_name(user: Any, small_transcript: Any):
    config = config_services.config_create(
        owner=user, name="tight", strategy="qwenpaw", params={"pruning_old_msg_max_bytes": 200}
    )
    _call("--transcript", str(small_transcript.pk), "--config", "tight", "--save")
    run = Run.objects.get()
    assert run.config == config and run.label == "tight"
    assert run.params["pruning_old_msg_max_bytes"] == 200


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--config", "nope", "--save"], "no configuration named 'nope'"),
        (
            ["--strategy", "qwenpaw", "--set", "pruning_recent_n=99", "--save"],
            "pruning_recent_n=99",
        ),
        (["--config", "x"], "--save and --config need --transcript"),
    ],
    ids=["unknown-config", "bad-param", "config-without-save"],
)
def test_replay_save_errors_are_readable(small_transcript: Any, args: list[str], message: str):
    with pytest.raises(CommandError, match=message):
        _call("--transcript", str(small_transcript.pk), *args)
    assert not Run.objects.exists()


def test_replay_save_unknown_transcript():
    with pytest.raises(CommandError, match="no transcript with id '999'"):
        _call("--transcript", "999", "--strategy", "copaw", "--save")


def test_import_then_replay_by_the_printed_id(user: Any):
    """The pipeline a script runs: import_transcripts --json, then replay each printed id."""
    session = (
        Path(__file__).resolve().parents[2]
        / "data" / "corpus" / "claude-code" / "agentcmd-full-session.jsonl"
    )  # fmt: skip
    out = StringIO()
    call_command("import_transcripts", str(session), "--user", user.username, "--json", stdout=out)
    (line,) = [json.loads(text) for text in out.getvalue().splitlines()]
    (transcript_id,) = line["transcripts"]
    assert line["conversations"][0]["transcript"] == transcript_id

    args = ["--strategy", "qwenpaw", "--set", "max_input_length=20000", "--json"]
    stored = json.loads(_call("--transcript", str(transcript_id), *args))
    from_file = json.loads(_call("--file", str(session), *args))
    # The stored conversation replays as the file does (same steps, same compactions).
    assert stored["metrics"]["steps"] == from_file["metrics"]["steps"] > 0
    assert [e["kind"] for e in stored["events"]] == [e["kind"] for e in from_file["events"]]
    assert stored["events"], "qwenpaw compacts this session at a 20k window"

    saved = _call("--transcript", str(transcript_id), "--strategy", "qwenpaw", "--save")
    run = Run.objects.get()
    assert run.transcript_id == transcript_id and saved.startswith(f"run {run.pk} done")


def test_list_strategies_table_and_json():
    table = _call("--list-strategies")
    names = [line.split()[0] for line in table.splitlines()[1:]]
    assert sorted(names) == sorted(STRATEGIES)
    rows = json.loads(_call("--list-strategies", "--json"))
    assert [r["name"] for r in rows] == names
    picoclaw = next(r for r in rows if r["name"] == "picoclaw")
    assert picoclaw["window"] == "context_window"
    assert picoclaw["follows"] == [{"param": "max_tokens", "share": 0.25, "default": 32768}]


def test_replay_without_a_source_is_a_readable_error():
    with pytest.raises(CommandError, match="--transcript ID or --file PATH"):
        _call("--strategy", "qwenpaw")
