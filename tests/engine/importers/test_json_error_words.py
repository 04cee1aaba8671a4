"""A file cut short names what is wrong in words that end: the decoder's "Unterminated
string starting at" lost its position (given as line and byte), which read as a
sentence cut off on the upload result (trial: a truncated Gemini CLI session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine.core.model import TranscriptError
from ctxlab.engine.importers import parse

CORPUS = Path(__file__).resolve().parents[2] / "data/corpus"
GEMINI = CORPUS / "gemini-cli/agentcmd-session-2025-10-27T19-55-981c87cb.json"
CODEX = CORPUS / "codex-rollout/agentcmd-rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl"  # fmt: skip


@pytest.mark.parametrize(
    ("path", "cut", "expected"),
    [(GEMINI, 30000, "a JSON document"), (CODEX, 150, "one JSON object per line")],
)  # the rollout cut inside its first line and closed by a newline: nothing in it reads (a
# bad line after readable ones is skipped with a warning, a cut *last* line left out)
def test_a_truncated_file_says_what_is_wrong_without_a_dangling_at(
    path: Path, cut: int, expected: str
) -> None:
    data = path.read_bytes()[:cut] + (b"\n" if path.suffix == ".jsonl" else b"")
    with pytest.raises(TranscriptError) as raised:
        parse(data, name=path.name)
    error = raised.value
    assert error.reason == "invalid JSON: Unterminated string"
    assert error.expected == expected and error.line is not None and error.offset is not None
    assert data[error.offset : error.offset + 1] == b'"'  # the string that never ends
    assert not str(error).split("(")[0].rstrip().endswith(" at")
