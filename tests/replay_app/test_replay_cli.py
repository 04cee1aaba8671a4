"""``manage.py replay --transcript ID (--config NAME | --strategy P [--set k=v]) --save``."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from replay_app import services
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
    config = services.config_create(
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
