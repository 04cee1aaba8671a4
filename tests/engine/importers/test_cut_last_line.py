"""Issue 31 item 5: a JSONL file whose last line is cut off (a session still being written)
imports every complete line, with a warning naming the cut line; before, the whole file
was refused. Only the *last* line, with no newline after it: a bad line anywhere else (or
closed by a newline) is still an error. (Claude Code sessions have their own reader.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import TranscriptError

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _sharegpt() -> bytes:
    rows = [{"conversations": [{"from": "human", "value": f"q{i}"}, {"from": "gpt", "value": "a"}]}
            for i in range(3)]  # fmt: skip
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _openai_chat() -> bytes:
    rows = [{"messages": [{"role": "user", "content": f"q{i}"},
                          {"role": "assistant", "content": "a"}]} for i in range(3)]  # fmt: skip
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _proxy_log() -> bytes:
    tools = [{"name": "Bash", "description": "b", "input_schema": {"type": "object"}}]
    rows = []
    history: list[dict[str, object]] = []
    for i in range(3):
        history = [*history, {"role": "user", "content": f"step {i}"}]
        answer = {"id": f"m{i}", "type": "message", "role": "assistant", "model": "claude-x",
                  "content": [{"type": "text", "text": f"did {i}"}], "stop_reason": "end_turn",
                  "usage": {"input_tokens": 10 + i, "output_tokens": 2}}  # fmt: skip
        rows.append({"request": {"url": "https://api.anthropic.com/v1/messages",
                                 "body": {"model": "claude-x", "max_tokens": 100, "tools": tools,
                                          "messages": history}},
                     "response": {"status_code": 200, "body": answer}})  # fmt: skip
        history = [*history, {"role": "assistant", "content": answer["content"]}]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


FILES = {
    "codex-rollout": lambda: sorted((CORPUS / "codex-rollout").glob("*.jsonl"))[0].read_bytes(),
    "codex-exec-json": lambda: sorted((CORPUS / "codex-exec-json").glob("*.jsonl"))[0].read_bytes(),
    "openhands": lambda: (CORPUS / "openhands" / "resolver-mock-output.jsonl").read_bytes(),
    "sharegpt": _sharegpt,
    "openai-chat": _openai_chat,
    "anthropic-messages": _proxy_log,
}  # fmt: skip


def _cut(data: bytes) -> tuple[bytes, bytes, int]:
    """(the complete lines, them plus half a line more with no newline, its number): the
    file as the agent was writing its next record."""
    lines = data.rstrip(b"\n").split(b"\n")
    complete = b"\n".join(lines) + b"\n"
    return complete, complete + lines[-1][: len(lines[-1]) // 2], len(lines) + 1


@pytest.mark.parametrize("fmt", FILES)
def test_cut_last_line_imports_the_complete_lines_with_a_warning(fmt: str) -> None:
    complete, cut, number = _cut(FILES[fmt]())
    name = f"session.{fmt}.jsonl"
    whole = importers.parse(complete, name=name, format=fmt)
    parsed = importers.parse(cut, name=name, format=fmt)
    assert parsed.format == fmt
    assert [c.messages for c in parsed.conversations] == [c.messages for c in whole.conversations]
    (warning,) = [w for w in parsed.warnings if w.code == "cut-off-last-line"]
    assert warning.where.startswith(f"line {number}:")
    assert "cut off" in warning.message
    assert {w.code for w in whole.warnings} == {w.code for w in parsed.warnings} - {
        "cut-off-last-line"
    }


def test_a_codex_rollout_skips_a_bad_line_before_the_end_with_a_located_warning() -> None:
    """A Codex rollout is not refused for one line (as the Claude Code importer): a bad line
    closed by a newline, or one in the middle, is skipped and named; the rest is read."""
    complete, cut, number = _cut(FILES["codex-rollout"]())
    whole = importers.parse(complete, name="s.jsonl", format="codex-rollout")
    parsed = importers.parse(cut + b"\n", name="s.jsonl", format="codex-rollout")
    assert [c.messages for c in parsed.conversations] == [c.messages for c in whole.conversations]
    (warning,) = [w for w in parsed.warnings if w.code == "unreadable-json-text"]
    assert warning.where.startswith(f"line {number}:")


@pytest.mark.parametrize("fmt", ["sharegpt"])
def test_a_bad_line_before_the_end_is_still_refused(fmt: str) -> None:
    complete, cut, number = _cut(FILES[fmt]())
    with pytest.raises(TranscriptError) as raised:
        importers.parse(cut + b"\n", name="s.jsonl", format=fmt)  # closed: not being written
    assert raised.value.line == number
    lines = complete.split(b"\n")
    middle = b"\n".join([*lines[:1], lines[1][:10], *lines[2:]])  # line 2 cut, more after
    with pytest.raises(TranscriptError) as raised:
        importers.parse(middle, name="s.jsonl", format=fmt)
    assert raised.value.line == 2
