"""After-effects on the transcript page (the panel at each real compaction) and its JSON
twin, on a Claude Code session whose right answers are known."""

from __future__ import annotations

from typing import Any

import pytest
from judge_testdata import compacted_session, import_session

pytestmark = pytest.mark.django_db


def test_transcript_page_shows_after_effects_at_each_compaction(
    auth_client: Any, user: Any
) -> None:
    transcript = import_session(user, compacted_session(), name="compacted.jsonl")
    assert transcript.compactions
    data = auth_client.get(f"/transcripts/{transcript.pk}/aftereffects/?format=json").json()
    assert data["transcript"] == transcript.pk
    (row,) = data["compactions"]
    assert row["kind"] == "compact_boundary" and row["trigger"] == "auto"
    assert row["files_reread"] == ["/repo/src/parse.py"]
    assert row["commands_repeated"] == ["pytest -q tests/test_parse.py"]
    assert row["question_count"] == 1 and row["apology_count"] == 1
    assert row["turns_to_same_files"] == 2  # a8 (text), then a10 reads src/parse.py
    assert data["summary"]["files_reread"] == 1 and data["summary"]["compactions"] == 1
    assert data["metrics"] == {
        "aftereffect_files_reread": 1, "aftereffect_commands_repeated": 1,
        "aftereffect_questions": 1, "aftereffect_apologies": 1,
        "aftereffect_turns_to_same_files": 2,
    }  # fmt: skip
    page = auth_client.get(f"/transcripts/{transcript.pk}/").content.decode()
    assert 'id="aftereffects"' in page and "After each compaction" in page
    assert "1 file re-read · 1 command repeated · 1 question · 1 apology" in page
    assert "What would you like me to do next?" in page


def test_no_panel_without_a_compaction(auth_client: Any, user: Any) -> None:
    transcript = import_session(user)
    page = auth_client.get(f"/transcripts/{transcript.pk}/").content.decode()
    assert 'id="aftereffects"' not in page
    data = auth_client.get(f"/transcripts/{transcript.pk}/aftereffects/?format=json").json()
    assert data["compactions"] == [] and data["summary"]["compactions"] == 0
    assert (
        "records no compaction"
        in auth_client.get(f"/transcripts/{transcript.pk}/aftereffects/").content.decode()
    )


def test_after_effects_are_owner_only(client: Any, user: Any, other_user: Any) -> None:
    transcript = import_session(user, compacted_session(), name="compacted.jsonl")
    client.force_login(other_user)
    assert client.get(f"/transcripts/{transcript.pk}/aftereffects/").status_code == 404
