"""``ctxlab statusline`` counts a Claude Code response as the ``claude_code`` strategy and
the session page do (``_claude_code_versions.count_after_response``): in 2.1.64 and 2.1.69+
the response's own later lines are counted on top of its usage, and a usage line written when
the stream started leaves the final output to the response's own estimate. Real 2.1.49
lines: tests/data/claude-code-2.1.49 (FSM1/cipher-box, MIT)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.engine import cli, statusline
from ctxlab.engine.evaluate.session_now import session_now
from ctxlab.engine.importers import _anthropic_blocks as ab
from ctxlab.engine.strategies.claude_code import block_tokens

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "claude-code-2.1.49"
SESSIONS = sorted(
    [
        *DATA.glob("*.jsonl"),
        *(ROOT / "tests" / "data" / "claude-code-2.1").glob("*.jsonl"),
        *(ROOT / "tests" / "data" / "corpus" / "claude-code").glob("*.jsonl"),
        *(ROOT / "tests" / "data" / "agreement" / "entireio-cli").rglob("full.jsonl"),
    ]
)


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def _before_boundary(tmp_path: Path, name: str) -> Path:
    """The excerpt's lines before its compact_boundary: the session as the status line saw
    it right before the agent compacted."""
    lines = (DATA / name).read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if b'"compact_boundary"' in line)
    path = tmp_path / name
    path.write_bytes(b"".join(lines[:at]))
    return path


def test_a_2_1_49_response_s_later_line_is_counted_where_the_version_walks_back(
    tmp_path: Path,
) -> None:
    """The last response is two lines (a text, then a ``Read`` call): 2.1.49 counts its usage
    alone (166,519), the count the strategy had at the boundary; a version whose count walks
    back to the response's first line (2.1.69, named by the statusline JSON) adds the call's
    line (29): 166,548."""
    path = _before_boundary(tmp_path, "unwritten-result.jsonl")
    now = session_now(cli.load_file(path, format="claude-code"), "claude-code")
    page = now.steps[-1].count
    for status in (statusline.status_of(path, {}), statusline.cached_status_of(path, {})):
        assert status.used == page == 166_519
    assert statusline.status_of(path, {"version": "2.1.69"}).used == 166_548
    assert statusline.status_of(path, {"version": "2.1.42"}).used == 166_519


def test_a_stream_start_usage_line_counts_the_response_s_own_estimate(tmp_path: Path) -> None:
    """Read line by line as Claude Code writes them (the cache's path) or at once: the same
    count as the page's at every response."""
    path = _before_boundary(tmp_path, "stream-start-output.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    growing = tmp_path / "growing.jsonl"
    growing.write_bytes(b"")
    for line in lines:
        with growing.open("ab") as out:
            out.write(line)
        conversation = cli.load_file(growing, format="claude-code")
        now = session_now(conversation, "claude-code")
        if not now.steps:
            continue
        assert statusline.cached_status_of(growing, {}).used == now.steps[-1].count
        assert statusline.status_of(growing, {}).used == now.steps[-1].count


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.parent.name + "/" + p.name)
def test_block_estimate_is_the_strategy_s(path: Path) -> None:
    """``statusline.block_estimate`` of a raw content block equals ``block_tokens`` of the
    importer's block, for every block of the vendored Claude Code sessions."""
    seen = 0
    for raw in path.read_bytes().splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for value in content:
            assert statusline.block_estimate(value) == block_tokens(ab.block(value)), value
            seen += 1
    assert seen
