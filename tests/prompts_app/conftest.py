"""Fixtures for the prompt editor: the replay lab's test transcripts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))

from replay_testdata import agent_chat, import_transcript  # noqa: E402

from sessions_app.models import Transcript  # noqa: E402


@pytest.fixture
def transcript(user: Any) -> Transcript:
    return import_transcript(user, agent_chat(turns=24, size=3000))
