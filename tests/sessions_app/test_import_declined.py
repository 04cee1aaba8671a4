"""A file no importer takes says which formats were considered and what each looks for."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from ctxlab.engine import importers
from ctxlab.engine.core.model import TranscriptError

pytestmark = pytest.mark.django_db


def test_detection_names_every_importer_that_declined() -> None:
    with pytest.raises(TranscriptError) as caught:
        importers.detect(b'{"recipe": "soup", "steps": ["boil"]}', "soup.json")
    declined = dict(caught.value.declined)
    assert list(declined) == list(importers.FORMATS)
    assert "api_conversation_history.json" in declined["cline"]
    assert declined["claude-code"] == "the markers of a Claude Code session"
    assert "declined" not in str(caught.value)  # the one-line message is as before


def test_the_command_says_what_was_considered(tmp_path: Path, alice: Any) -> None:
    soup = tmp_path / "soup.json"
    soup.write_text('{"recipe": "soup", "steps": ["boil"]}')
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_transcripts", str(soup), "--json", "--user", "alice", stdout=out)
    (line,) = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [d["format"] for d in line["declined"]] == list(importers.FORMATS)
    assert all(d["looks_for"] for d in line["declined"])
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_transcripts", str(soup), "--user", "alice", stdout=out)
    assert f"considered {len(importers.FORMATS)} formats, each declined" in out.getvalue()
    good = Path(__file__).resolve().parents[1] / "data" / "pi" / "before-compaction.jsonl"
    out = io.StringIO()
    call_command("import_transcripts", str(good), "--json", "--user", "alice", stdout=out)
    assert json.loads(out.getvalue())["declined"] == []
