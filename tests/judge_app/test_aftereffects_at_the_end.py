"""A compaction the transcript ends at has no turns after it: its row says so and the
summary does not count it as "never went back to its files" (trial: the compacted
claude-trace session read "0 turns read", "never" and "1 never went back")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from judge_testdata import import_session

pytestmark = pytest.mark.django_db

SESSION = Path(__file__).resolve().parents[1] / "data/recorded/claude-trace-req34-compacted.jsonl"


def test_a_compaction_at_the_end_is_not_a_never(auth_client: Any, user: Any) -> None:
    transcript = import_session(user, SESSION.read_bytes(), name=SESSION.name)
    data = auth_client.get(f"/transcripts/{transcript.pk}/aftereffects/?format=json").json()
    (row,) = data["compactions"]
    assert row["turns"] == 0 and row["files_before"] > 0  # files touched, nothing after
    assert data["summary"]["never_returned"] == 0
    page = auth_client.get(f"/transcripts/{transcript.pk}/aftereffects/").content.decode()
    assert "— (no turns after it)" in page
    assert "never went back" not in page and ">never<" not in page
