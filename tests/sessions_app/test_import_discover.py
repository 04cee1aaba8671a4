"""`import_transcripts --discover --home HOME`: a fake home holding a real session of every
agent, each where that agent keeps it; found, listed per agent, imported, and imported
again when one has grown (only what it gained)."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from opencode_store import SAMPLES, export, write_storage

from ctxlab.engine import importers
from ctxlab.engine.sources import discover
from sessions_app.models import Transcript, Upload

pytestmark = pytest.mark.django_db

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = DATA / "corpus"
CLAUDE = CORPUS / "claude-code" / "ccviewer-1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
CODEX = sorted((CORPUS / "codex-rollout").glob("*.jsonl"))[1]
GEMINI = CORPUS / "gemini-cli" / "agentcmd-session-2025-10-27T19-55-981c87cb.json"
PI = DATA / "pi" / "before-compaction.jsonl"
COPILOT = DATA / "copilot-cli" / "list-models.events.jsonl"
OPENHANDS = DATA / "openhands-v1" / "conversations" / "c0ffee00-0000-4000-8000-000000000001"
CLINE = DATA / "cline" / "saoudrizwan.claude-dev" / "tasks" / "1769053680585"
ROO = DATA / "cline" / "rooveterinaryinc.roo-cline" / "tasks"


def _copy(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)
    return target


def _home(root: Path) -> dict[str, Path]:
    """A home with one session of each agent (OpenCode: its samples' storage folder)."""
    placed = {
        "claude-code": _copy(CLAUDE, root / ".claude/projects/-home-me-app" / CLAUDE.name),
        "codex": _copy(CODEX, root / ".codex/sessions/2025/09/24" / CODEX.name.removeprefix("agentcmd-")),
        "gemini-cli": _copy(GEMINI, root / ".gemini/tmp/0a1b2c/chats/session-2025-10-27T19-55-981c87cb.json"),
        "pi": _copy(PI, root / ".pi/agent/sessions/--home-me-app--/2026-01-02T10-00-00_abc.jsonl"),
        "copilot-cli": _copy(COPILOT, root / ".copilot/session-state/3f0e9a/events.jsonl"),
        "openhands": _copy(OPENHANDS, root / ".openhands/conversations" / OPENHANDS.name),
        "cline": _copy(CLINE, root / ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks" / CLINE.name),
        "roo": _copy(ROO, root / ".config/Cursor/User/globalStorage/rooveterinaryinc.roo-cline/tasks"),
    }  # fmt: skip
    placed["opencode"] = write_storage(root / ".local/share/opencode", [export(p) for p in SAMPLES])
    # not sessions: a dotfile, a file of another name in a chats folder
    (root / ".claude/projects/-home-me-app/.hidden.jsonl").write_text("{}\n")
    (root / ".gemini/tmp/0a1b2c/chats/notes.txt").write_text("no\n")
    os.utime(placed["pi"], (2_000_000_000, 2_000_000_000))  # the newest of all
    return placed


def _run(home: Path, *args: str) -> tuple[str, list[dict[str, Any]]]:
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "import_transcripts", "--discover", "--home", str(home), *args, stdout=out, stderr=err
    )
    if "--json" in args:
        return err.getvalue(), [json.loads(line) for line in out.getvalue().splitlines()]
    return out.getvalue(), []


def test_discover_finds_every_agent_s_sessions_where_it_keeps_them(tmp_path: Path) -> None:
    _home(tmp_path)
    agents = {a.key: a for a in discover.discover(tmp_path)}
    assert list(agents) == ["claude-code", "codex", "gemini-cli", "pi", "copilot-cli",
                            "opencode", "openhands", "cline"]  # fmt: skip
    counts = {key: len(a.sessions) for key, a in agents.items()}
    assert counts == {"claude-code": 1, "codex": 1, "gemini-cli": 1, "pi": 1, "copilot-cli": 1,
                      "opencode": len(SAMPLES), "openhands": 1, "cline": 2}  # fmt: skip
    assert {Path(s.where).name for s in agents["cline"].sessions} == {
        CLINE.name,
        "0199b2a4-3c1e-7a51-b7f0-5a7d2c9e8f10",
    }
    assert agents["pi"].size == PI.stat().st_size
    assert agents["pi"].newest == 2_000_000_000


def test_dry_run_lists_per_agent_and_imports_nothing(tmp_path: Path, alice: Any) -> None:
    _home(tmp_path)
    text, _ = _run(tmp_path, "--dry-run", "--user", "alice")
    for label in ("Claude Code", "Codex CLI", "Gemini CLI", "pi", "GitHub Copilot CLI",
                  "OpenCode", "OpenHands", "Cline / Roo Code"):  # fmt: skip
        assert f"  {label}" in text, label
    assert "newest 2033-05-18" in text  # pi's file, dated on purpose
    assert not Upload.objects.exists()
    text, _ = _run(tmp_path, "--user", "alice")  # no terminal, no --yes: asks for it
    assert "run again with --yes" in text and not Upload.objects.exists()


def test_discover_imports_every_session_then_only_what_grew(tmp_path: Path, alice: Any) -> None:
    placed = _home(tmp_path)
    claude = placed["claude-code"]
    whole = claude.read_bytes()
    lines_of = whole.splitlines(keepends=True)
    claude.write_bytes(b"".join(lines_of[: len(lines_of) // 2]))  # the session so far
    _, lines = _run(tmp_path, "--yes", "--json", "--user", "alice")
    assert all(line["error"] is None for line in lines), [x for x in lines if x["error"]]
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by_agent.setdefault(line["agent"], []).append(line)
    formats = {agent: {line["format"] for line in found} for agent, found in by_agent.items()}
    assert formats == {
        "claude-code": {"claude-code"}, "codex": {"codex-rollout"}, "gemini-cli": {"gemini-cli"},
        "pi": {"pi-session"}, "copilot-cli": {"copilot-cli"}, "opencode": {"opencode"},
        "openhands": {"openhands-v1"}, "cline": {"cline"},
    }  # fmt: skip
    assert all(c["messages"] > 0 for line in lines for c in line["conversations"])
    uploads = Upload.objects.count()
    assert uploads == len(lines) == 7 + len(SAMPLES) + 1
    before = by_agent["claude-code"][0]

    claude.write_bytes(whole)  # the agent went on: discovered again, only what it gained
    _, again = _run(tmp_path, "--yes", "--json", "--user", "alice")
    (now,) = [line for line in again if line["agent"] == "claude-code"]
    assert now["upload"] == before["upload"] and not now["duplicate"]
    assert [c["transcript"] for c in now["conversations"]][: len(before["conversations"])] == [
        c["transcript"] for c in before["conversations"]
    ]
    (expected,) = importers.parse(whole, name=claude.name).conversations[:1]
    assert now["conversations"][0]["messages"] == len(expected.messages)
    assert bytes(Upload.objects.get(pk=now["upload"]).data) == whole
    assert Upload.objects.count() == uploads  # nothing stored twice
    assert all(line["duplicate"] for line in again if line["agent"] != "claude-code")
    assert Transcript.objects.filter(owner=alice).count() == sum(
        len(line["conversations"]) for line in again
    )


def test_a_task_folder_that_grew_adds_to_its_transcript(
    tmp_path: Path, alice: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """A place's session (here a Cline task folder, rebuilt as a bundle each time) found
    again with more messages keeps its upload and transcript; only the new ones are added."""
    task = _copy(CLINE, tmp_path / "tasks" / CLINE.name)
    history_file = task / "api_conversation_history.json"
    history = json.loads(history_file.read_bytes())
    history_file.write_text(json.dumps(history[:8]))  # the task earlier on
    out = io.StringIO()
    call_command(
        "import_transcripts", str(tmp_path / "tasks"), "--json", "--user", "alice", stdout=out
    )
    (first,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert first["conversations"][0]["messages"] == 8
    history_file.write_text(json.dumps(history))  # and now
    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        call_command(
            "import_transcripts", str(tmp_path / "tasks"), "--json", "--user", "alice", stdout=out
        )
    (again,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert again["upload"] == first["upload"] and not again["duplicate"]
    assert again["transcripts"] == first["transcripts"]
    assert again["conversations"][0]["messages"] == len(history) == 14
    assert callbacks  # the growth is announced after the commit
    transcript = Transcript.objects.get(pk=first["transcripts"][0])
    assert [m.role.value for m in transcript.to_conversation().messages] == [
        h["role"] for h in history
    ]
    out = io.StringIO()
    call_command(
        "import_transcripts", str(tmp_path / "tasks"), "--json", "--user", "alice", stdout=out
    )
    (third,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert third["duplicate"] and third["upload"] == first["upload"]
    assert Upload.objects.count() == 1
