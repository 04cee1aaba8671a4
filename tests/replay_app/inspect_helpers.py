"""Helpers shared by the inspect/compare tests (a unique module name: ``conftest`` is
ambiguous when tests/engine runs in the same session)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from replay_app import services
from replay_app.models import Run, RunStatus
from replay_app.services import RunSpec

_spec = importlib.util.spec_from_file_location(
    "replay_app_test_conftest", Path(__file__).with_name("conftest.py")
)
assert _spec is not None and _spec.loader is not None
_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_conftest)

agent_chat = _conftest.agent_chat
import_transcript = _conftest.import_transcript


def make_run(user: Any, transcript: Any, strategy: str, **params: Any) -> Run:
    run = services.run_create(
        owner=user,
        transcript=transcript,
        spec=RunSpec(strategy=strategy, params=params),
        enqueue=False,
    )
    run = services.run_execute(run=run)
    assert run.status == RunStatus.DONE, run.error
    return run
