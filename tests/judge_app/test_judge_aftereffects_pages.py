"""After-effects on the transcript page (the panel at each real compaction) and its JSON
twin, on a Claude Code session whose right answers are known."""

from __future__ import annotations

import json
from typing import Any

import pytest
from judge_testdata import import_session

pytestmark = pytest.mark.django_db

SUMMARY = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\nSummary: fixing the parser."
)


def _line(kind: str, uuid: str, parent: str | None, content: Any, **extra: Any) -> str:
    row = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
           "timestamp": f"2025-06-01T10:{len(uuid):02d}:{int(uuid[1:]):02d}Z",
           "message": {"role": kind, "content": content}, **extra}  # fmt: skip
    if kind == "assistant":
        row["message"]["model"] = "claude-sonnet-4-5"
    return json.dumps(row)


def _use(tid: str, name: str, **args: Any) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": tid, "name": name, "input": args}]


def _result(tid: str, text: str) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": tid, "content": text}]


def compacted_session() -> bytes:
    lines = [
        _line("user", "u1", None, "Fix the parser in src/parse.py"),
        _line("assistant", "a2", "u1", _use("r1", "Read", file_path="/repo/src/parse.py")),
        _line("user", "u3", "a2", _result("r1", "def parse(): ...")),
        _line("assistant", "a4", "u3", _use("b1", "Bash", command="pytest -q tests/test_parse.py")),
        _line("user", "u5", "a4", _result("b1", "1 failed")),
        json.dumps({"type": "system", "subtype": "compact_boundary", "uuid": "b6",
                    "parentUuid": None, "logicalParentUuid": "u5", "sessionId": "s1",
                    "timestamp": "2025-06-01T10:30:00Z", "content": "Conversation compacted",
                    "compactMetadata": {"trigger": "auto", "preTokens": 150000}}),  # fmt: skip
        _line("user", "u7", "b6", SUMMARY, isCompactSummary=True),
        _line("assistant", "a8", "u7", [{"type": "text", "text": "Sorry, I lost track. What would you like me to do next?"}]),
        _line("user", "u9", "a8", "continue fixing the parser"),
        _line("assistant", "a10", "u9", _use("r2", "Read", file_path="/repo/src/parse.py")),
        _line("user", "u11", "a10", _result("r2", "def parse(): ...")),
        _line("assistant", "a12", "u11", _use("b2", "Bash", command="pytest -q tests/test_parse.py")),
        _line("user", "u13", "a12", _result("b2", "ok")),
        _line("assistant", "a14", "u13", [{"type": "text", "text": "Fixed."}]),
    ]  # fmt: skip
    return ("\n".join(lines) + "\n").encode()


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
