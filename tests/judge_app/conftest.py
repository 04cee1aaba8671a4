"""Fixtures of the probe pages."""

from __future__ import annotations

from typing import Any

import pytest
from judge_testdata import COWAGENT, QWENPAW, finished_run, import_session

from sessions_app.models import Transcript


@pytest.fixture
def coding(user: Any) -> Transcript:
    return import_session(user)


@pytest.fixture
def qwen_run(user: Any, coding: Transcript) -> Any:
    return finished_run(user, coding, "qwenpaw", QWENPAW)


@pytest.fixture
def cow_run(user: Any, coding: Transcript) -> Any:
    return finished_run(user, coding, "cowagent", COWAGENT)
