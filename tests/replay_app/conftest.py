"""Fixtures for the replay lab."""

from __future__ import annotations

from typing import Any

import pytest
from replay_testdata import FULL_SESSION_FOUR, agent_chat, import_transcript

from replay_app import memo
from sessions_app.models import Transcript


@pytest.fixture
def transcript(user: Any) -> Transcript:
    return import_transcript(user, agent_chat())


@pytest.fixture
def small_transcript(user: Any) -> Transcript:
    return import_transcript(user, agent_chat(turns=6, size=500), name="small.json")


@pytest.fixture
def llm_transcript(user: Any) -> Transcript:
    """A short transcript for the runs against the fake Claude API."""
    return import_transcript(user, agent_chat(turns=8, size=3000), name="llm.json")


@pytest.fixture
def session_four(user: Any) -> Transcript:
    """A real Claude Code session (82 messages, long tool outputs) every preset compacts at
    ``SMALL_WINDOWS``."""
    return import_transcript(user, FULL_SESSION_FOUR.read_bytes(), name=FULL_SESSION_FOUR.name)


@pytest.fixture
def fresh_memo() -> None:
    """An empty inspect memo: run ids repeat across rolled-back tests."""
    memo.MEMO.clear()
