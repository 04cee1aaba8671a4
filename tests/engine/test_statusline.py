"""``ctxlab statusline`` (issue 38): Claude Code's documented statusline JSON in, one line out,
the same figures as the session page's rule, without Django."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from ctxlab.engine import cli, statusline
from ctxlab.engine.evaluate.session_now import forecast, session_now

ROOT = Path(__file__).resolve().parents[2]
# Claude Code 2.1.14: a microcompact_boundary (line 33), an auto compact_boundary (line 155)
SESSION = ROOT / "tests" / "data" / "agreement" / "entireio-cli" / "76" / "62d755ef9f" / "2"
FULL = SESSION / "full.jsonl"


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command keeps what it read under XDG_CACHE_HOME: the tests' own, never the
    user's (subprocesses inherit it)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def documented(transcript: Path, **extra: object) -> dict[str, object]:
    """The statusline JSON with the fields Claude Code's statusline page documents."""
    return {
        "hook_event_name": "Status",
        "session_id": "abc123",
        "transcript_path": str(transcript),
        "cwd": "/work/project",
        "model": {"id": "claude-opus-4-5", "display_name": "Opus"},
        "workspace": {"current_dir": "/work/project", "project_dir": "/work/project"},
        "version": "2.1.14",
        "output_style": {"name": "default"},
        "cost": {"total_cost_usd": 0.42, "total_duration_ms": 180000},
        "context_window": {
            "total_input_tokens": 15234,
            "total_output_tokens": 4521,
            "context_window_size": 200000,
        },
        **extra,
    }


def run_main(payload: dict[str, object] | None, *args: str) -> str:
    out = io.StringIO()
    stdin = io.StringIO(json.dumps(payload) if payload is not None else "")
    saved = sys.stdout
    sys.stdout = out
    try:
        assert statusline.main(list(args), stdin=stdin) == 0
    finally:
        sys.stdout = saved
    return out.getvalue().strip()


def cut(tmp_path: Path, lines: int) -> Path:
    """The session's first ``lines`` lines: the session as it was at that moment."""
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"\n".join(FULL.read_bytes().splitlines()[:lines]) + b"\n")
    return path


def test_the_line_from_the_documented_json(tmp_path: Path) -> None:
    # after the microcompact, 10 responses before the agent's auto-compact
    path = cut(tmp_path, 135)
    line = run_main(documented(path))
    assert line.startswith("ctx 1")
    assert "/200k" in line and "auto-compact in ~" in line and "(155k" in line
    assert line.endswith("instructions at risk")
    assert "\n" not in line


def test_the_same_figures_as_the_session_page(tmp_path: Path) -> None:
    for lines in (60, 100, 135, 150, 160):
        path = cut(tmp_path, lines)
        status = statusline.status_of(path, documented(path))
        now = session_now(cli.load_file(path, format="claude-code"), "claude-code")
        last = now.steps[-1]
        page = forecast(now, last)
        assert status.used == last.count, lines
        assert status.turns.turns == page.turns.turns, lines
        assert status.turns.threshold == page.turns.threshold == 155_000
        assert list(status.instructions) == [i["label"] for i in page.instructions_at_risk], lines


def test_after_the_compaction_only_its_span_is_read(tmp_path: Path) -> None:
    status = statusline.status_of(FULL, documented(FULL))
    assert status.compacted
    assert status.turns.turns is None  # one response since the compaction: no rate yet
    assert "no growth rate" in status.turns.why


def test_a_boundary_cut_by_a_chunk_edge_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = statusline.tail_lines(FULL)
    for chunk in (97, 1000, 4096):
        monkeypatch.setattr(statusline, "CHUNK", chunk)
        assert statusline.tail_lines(FULL) == whole
    lines, found = whole
    assert found and b'"compact_boundary"' in lines[0]


def test_window_from_the_json_or_the_model() -> None:
    assert statusline._window({"context_window": {"context_window_size": 1_000_000}}) == 1_000_000
    assert statusline._window({"model": {"id": "claude-opus-4-6[1m]"}}) == 1_000_000
    assert statusline._window({}) == 200_000


def test_without_a_transcript_it_still_prints_one_line(tmp_path: Path) -> None:
    assert run_main({"session_id": "x"}) == "ctxlab: no transcript_path yet"
    assert run_main(None) == "ctxlab: no transcript_path yet"
    missing = documented(tmp_path / "gone.jsonl")
    assert run_main(missing) == "ctxlab: no transcript at gone.jsonl"


def test_file_and_json_options(tmp_path: Path) -> None:
    path = cut(tmp_path, 135)
    figures = json.loads(run_main(None, "--file", str(path), "--json"))
    assert figures["window"] == 200_000 and figures["turns_to_auto_compact"]["turns"] >= 1


def test_the_console_command_does_not_load_django() -> None:
    code = (
        "import sys; from ctxlab.console import main; "
        f"main(['statusline', '--file', {str(FULL)!r}]); "
        "print('django' in sys.modules, 'ctxlab.engine.strategies' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    first, loaded = done.stdout.strip().splitlines()
    assert first.startswith("ctx ")
    assert loaded == "False False"


VENDORED = sorted(
    [
        *(ROOT / "tests" / "data" / "claude-code-2.1").glob("*.jsonl"),
        *(ROOT / "tests" / "data" / "corpus" / "claude-code").glob("*.jsonl"),
        *(ROOT / "tests" / "data" / "agreement" / "entireio-cli").rglob("full.jsonl"),
    ]
)


@pytest.mark.parametrize("path", VENDORED, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_vendored_claude_code_session_reads_as_the_page_does(path: Path) -> None:
    """The tail read (boundaries, a response's lines, progress lines of sub-agents, meta
    reminders, files written with spaces) gives the page's figures at the file's end."""
    now = session_now(cli.load_file(path, format="claude-code"), "claude-code")
    if not now.steps:
        pytest.skip("no model call in the file")
    page = forecast(now, now.steps[-1])
    status = statusline.status_of(path, {})
    assert status.used == now.steps[-1].count
    assert status.turns.turns == page.turns.turns
    assert list(status.instructions) == [i["label"] for i in page.instructions_at_risk]


def test_a_codex_rollout_by_file_reads_as_the_page_does() -> None:
    """Codex has no command status line: ``--file`` reads a rollout through the importer
    and the session page's own code (its window and auto-compact limit)."""
    rollout = ROOT / "tests" / "data" / "agreement" / "agentv" / "00" / "34f597b72d" / "1"
    path = rollout / "full.jsonl"
    assert not statusline.is_claude_code(path) and statusline.is_claude_code(FULL)
    status = statusline.status_of_any(path)
    now = session_now(cli.load_file(path), "codex-rollout")
    page = forecast(now, now.steps[-1])
    assert now.rules.agent == "codex" and status.window == now.rules.window
    assert status.turns.threshold == now.rules.threshold and status.turns.turns == page.turns.turns
    assert status.used is not None
    line = run_main(None, "--file", str(path))
    assert f"({statusline._k(now.rules.threshold or 0)}" in line


def test_claude_md_is_not_at_risk_a_users_rule_is(tmp_path: Path) -> None:
    """Claude Code puts CLAUDE.md back after compacting (a re-attached source): listed in
    the span, not counted at risk; the user's own constraint is at risk, on the page and in
    the status line alike."""

    def line(kind: str, uuid: str, parent: str | None, message: Mapping[str, object]) -> str:
        record = {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "s",
            "version": "2.1.14",
            "message": message,
        }
        return json.dumps(record)

    def reply(n: int, parent: str, total: int) -> str:
        usage = {"input_tokens": 10, "cache_read_input_tokens": total, "output_tokens": 5}
        body = {"id": f"msg_{n}", "role": "assistant", "model": "claude",
                "content": [{"type": "text", "text": "ok"}], "usage": usage}  # fmt: skip
        return line("assistant", f"a{n}", parent, body)

    rules = "Contents of /repo/CLAUDE.md (project instructions):\n\nUse pnpm, never npm."
    lines = [
        line("user", "u0", None, {"role": "user", "content": rules}),
        line("user", "u1", "u0", {"role": "user", "content": "Never touch the migrations."}),
        reply(1, "u1", 30_000),
        line("user", "u2", "a1", {"role": "user", "content": "go on"}),
        reply(2, "u2", 31_000),
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    now = session_now(cli.load_file(path, format="claude-code"), "claude-code")
    page = forecast(now, now.steps[-1])
    kinds = {i["kind"]: i["reattached"] for i in page.instructions}
    assert kinds == {"project_rules": True, "user_constraint": False}
    assert [i["kind"] for i in page.instructions_at_risk] == ["user_constraint"]
    assert page.as_dict()["instructions_at_risk_count"] == 1
    status = statusline.status_of(path, {})
    assert list(status.instructions) == [i["label"] for i in page.instructions_at_risk]
    assert status.line().endswith("| 1 instruction at risk")


def test_a_warm_call_imports_neither_dataclasses_nor_inspect(tmp_path: Path) -> None:
    """What Claude Code runs after each message: the cache warm, a response appended. The
    values it reads (``forecast.TurnsEstimate``, the version table, ``Status``, ``Span``)
    are not dataclasses: ``dataclasses`` with ``inspect`` cost each call ~10 ms."""
    path = cut(tmp_path, 158)  # after the auto-compact
    code = (
        "import sys; from ctxlab.console import main; "
        f"main(['statusline', '--file', {str(path)!r}]); "
        "print(sorted(m for m in ('dataclasses', 'inspect') if m in sys.modules))"
    )
    run = [sys.executable, "-c", code]
    subprocess.run(run, capture_output=True, text=True, check=True, cwd=ROOT)  # the cache
    with path.open("ab") as handle:
        handle.write(b"\n".join(FULL.read_bytes().splitlines()[158:]) + b"\n")
    done = subprocess.run(run, capture_output=True, text=True, check=True, cwd=ROOT)
    line, loaded = done.stdout.strip().splitlines()
    assert line == run_main(None, "--file", str(path), "--no-cache")
    assert loaded == "[]"


def test_a_partial_compaction_keeps_its_segment_s_instructions_at_risk(tmp_path: Path) -> None:
    """Claude Code 2.1.2xx partial compaction (``preservedSegment``, as in the real 2.1.217
    lines of tests/data/claude-code-2.1.217): the kept segment, written before the boundary,
    stays in context, so a constraint typed in it is at risk at the next compaction; one
    typed before it was summarised. The line says what the session page says, read at once
    and grown line by line through the cache."""

    def record(kind: str, uuid: str, parent: str | None, **fields: object) -> str:
        return json.dumps({"type": kind, "uuid": uuid, "parentUuid": parent,
                           "isSidechain": False, "sessionId": "s", "version": "2.1.217",
                           **fields})  # fmt: skip

    def user(uuid: str, parent: str | None, text: str, **fields: object) -> str:
        return record("user", uuid, parent, message={"role": "user", "content": text}, **fields)

    def reply(n: int, parent: str, total: int) -> str:
        usage = {"input_tokens": 10, "cache_read_input_tokens": total, "output_tokens": 5}
        body = {"id": f"msg_{n}", "role": "assistant", "model": "claude",
                "content": [{"type": "text", "text": "ok"}], "usage": usage}  # fmt: skip
        return record("assistant", f"a{n}", parent, message=body)

    segment = {"headUuid": "u1", "anchorUuid": "s1", "tailUuid": "a1"}
    lines = [
        user("u0", None, "Always answer in French."),
        reply(0, "u0", 20_000),
        user("u1", "a0", "Never touch the migrations."),  # the kept segment's head
        reply(1, "u1", 30_000),  # its tail
        record(
            "system",
            "b1",
            None,
            subtype="compact_boundary",
            logicalParentUuid="a1",
            content="Conversation compacted",
            compactMetadata={"trigger": "manual", "preTokens": 30_015, "preservedSegment": segment},
        ),  # fmt: skip
        user(
            "s1",
            "b1",
            "This session is being continued from a previous conversation.",
            isCompactSummary=True,
        ),  # fmt: skip
        user("u2", "a1", "go on"),
        reply(2, "u2", 12_000),
        user("u3", "a2", "and the next one"),
        reply(3, "u3", 13_000),
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    now = session_now(cli.load_file(path, format="claude-code"), "claude-code")
    page = [i["label"] for i in forecast(now, now.steps[-1]).instructions_at_risk]
    assert any("migrations" in label for label in page), page
    assert not any("French" in label for label in page), page
    assert list(statusline.status_of(path, {}).instructions) == page
    with pytest.MonkeyPatch.context() as patch:  # a file that cannot be mapped: read in chunks
        patch.setattr(statusline.mmap, "mmap", _no_mmap)
        assert list(statusline.status_of(path, {}).instructions) == page

    grown, cache = tmp_path / "grown.jsonl", tmp_path / "cache"
    for n in range(1, len(lines) + 1):
        grown.write_text("\n".join(lines[:n]) + "\n")
        status = statusline.cached_status_of(grown, {}, cache)
        assert status == statusline.status_of(grown, {}), n
    assert list(status.instructions) == page


def _no_mmap(*args: object, **kwargs: object) -> object:
    raise OSError("no mmap here")


USER_TEXTS = [
    "Always run the tests before you commit. Fix the failing one.",
    "never push to main",
    "Contents of /repo/CLAUDE.md (project instructions):\n\nAlways use pnpm.",
    "Base directory for this skill: /home/u/.claude/skills/pdf\n\nNever guess.",
    "<command-name>/review</command-name>\nAlways review twice.",
    "This session is being continued from a previous conversation. Never stop.",
    "Caveat: The messages below were generated by the user while running local commands.",
    "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>Do not touch x.</INSTRUCTIONS>",
    "Use ruff instead of flake8. Don't touch the migrations, make sure CI passes.",
]


@pytest.mark.parametrize("meta", [False, True])
@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("text", USER_TEXTS)
def test_a_user_line_s_labels_are_the_rule_s(text: str, split: bool, meta: bool) -> None:
    """The status line runs ``instructions.message_sources``' rule on a user line's texts
    (no engine values): the labels of the message the importer would make of the line."""
    from ctxlab.engine.core.model import Block, BlockKind, Message, Role
    from ctxlab.engine.evaluate import instructions
    from ctxlab.engine.evaluate.forecast import reattached

    texts = text.split("\n\n") if split else [text]
    content = [{"type": "text", "text": t} for t in texts] if split else text
    record = {"type": "user", "message": {"role": "user", "content": content}}
    if meta:
        record["isMeta"] = True
    blocks = tuple(Block(BlockKind.TEXT, t) for t in texts)
    message = Message(Role.USER, blocks, flags=frozenset({"meta"} if meta else ()))
    expected = [
        s.label
        for s in instructions.message_sources(0, message)
        if not reattached("claude_code", s.kind)
    ]
    assert statusline._user_sources(0, json.dumps(record).encode()) == expected
