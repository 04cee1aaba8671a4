"""Your session, now, for Gemini CLI (issue 38): its compression threshold is the
``gemini_cli`` strategy's one rule, its compressions (not in its session files) are read from
the reported prompts, and the forecast's span is what its own split would take."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import importers, statusline
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.evaluate.session_now import forecast, gemini_cut, session_now
from ctxlab.engine.strategies import _gemini_cli_rules as gr
from ctxlab.engine.strategies.gemini_cli import GeminiCliStrategy

DATA = Path(__file__).resolve().parents[2] / "data"
# A real Gemini CLI session (gemini-2.5-pro, started 2025-10-27): 15 calls, no compression
SESSION = DATA / "corpus" / "gemini-cli" / "agentcmd-session-2025-10-27T19-55-981c87cb.json"
# Reported prompts of a session grown from it: 606,000 at the 7th call is over the 0.5
# threshold (524,288), the 8th is compressed (240,000), then 3,000 more a call.
PROMPTS = [6_000 + 100_000 * i for i in range(7)] + [240_000 + 3_000 * i for i in range(30)]


def _parse(data: bytes, name: str = "session.json") -> Conversation:
    parsed = importers.parse(data, name=name)
    assert parsed.format == "gemini-cli"
    return parsed.conversations[0]


def _grown(prompts: list[int], start: str = "2026-08-01T10:00:00.000Z") -> dict[str, Any]:
    """The real session's records repeated until there are ``len(prompts)`` responses, the
    n-th reporting ``prompts[n]`` prompt tokens (the texts are the session's own)."""
    base = json.loads(SESSION.read_bytes())
    out: list[dict[str, Any]] = []
    n = 0
    while n < len(prompts):
        for record in base["messages"]:
            if n >= len(prompts):
                break
            record = copy.deepcopy(record)
            record["id"] = f"{record['id']}-{len(out)}"
            if record["type"] == "gemini":
                record["tokens"] = {
                    "input": prompts[n], "output": 50, "cached": 0, "thoughts": 0,
                    "tool": 0, "total": prompts[n] + 50,
                }  # fmt: skip
                n += 1
            out.append(record)
    return {**base, "startTime": start, "messages": out}


def test_the_threshold_is_the_strategys_rule_at_the_sessions_date() -> None:
    conv = _parse(SESSION.read_bytes())
    now = session_now(conv, "gemini-cli")
    limit = GeminiCliStrategy().params["token_limit"]
    # started 2025-10-27: the 0.7 default (0.2 from 2025-10-30, 0.7 again, 0.5 from 11-20)
    assert now.rules.agent == "gemini_cli" and now.rules.window == limit == 1_048_576
    assert now.rules.threshold == gr.threshold_tokens(0.7, limit) == 734_003
    assert now.rules.event == "compression"
    today = GeminiCliStrategy()  # today's default, as the strategy replays it
    assert today.threshold(None) == gr.threshold_tokens(0.5, limit)  # type: ignore[arg-type]
    assert [gr.default_threshold(d)[0] for d in ("2025-07-01", "2025-11-01", "2025-11-15")] == [
        0.7,
        0.2,
        0.7,
    ]
    assert gr.default_threshold("2026-01-05")[0] == gr.default_threshold("")[0] == 0.5


def test_a_real_session_zones_add_up_and_the_forecast_counts_the_prompt() -> None:
    conv = _parse(SESSION.read_bytes())
    now = session_now(conv, "gemini-cli")
    assert len(now.steps) == 15 and not now.boundaries
    for step in now.steps:
        z = step.zones
        parts = z["unseen"] + z["instruction_files"] + z["summary"] + z["compactable"]
        assert parts == step.reported  # the request's zones are its reported prompt
        assert step.count == step.reported  # Gemini CLI compares the last prompt's count
        assert z["output_reserve"] == 1_048_576 - 734_003
    last = now.steps[-1]
    ahead = forecast(now, last)
    assert ahead.turns.count == 9_198 and ahead.turns.threshold == 734_003
    assert ahead.turns.turns is not None and ahead.turns.low is not None
    assert ahead.turns.low <= ahead.turns.turns <= (ahead.turns.high or 10**9)
    # a short history: the split finds no user turn past 70 % and the last item is a
    # plain model answer, so Gemini CLI would compress all of it
    assert ahead.span == (0, last.message + 1) and ahead.summarised == last.message + 1
    assert ahead.facts  # facts at risk, by category


def test_compressions_are_read_from_the_reported_prompts() -> None:
    prompts = PROMPTS
    conv = _parse(json.dumps(_grown(prompts)).encode())
    now = session_now(conv, "gemini-cli")
    assert now.rules.threshold == 524_288  # 2026: the 0.5 default
    assert len(now.boundaries) == 1
    b = now.boundaries[0]
    assert b.inferred and b.trigger == "auto" and b.pre_tokens == 606_000
    seventh = now.steps[6]
    assert b.before_index == seventh.message + 1  # before the pending input
    after = now.steps[7]
    assert after.compacted_before == b and after.span_start == b.before_index
    # the history kept the newest 30 % (Gemini CLI's own split)
    assert 0 < after.history_start < b.before_index
    assert after.history_start == gemini_cut(conv.messages, 0, b.before_index, False)
    # the growth since the compression only: 3,000 a turn
    last = now.steps[-1]
    ahead = forecast(now, last)
    assert ahead.turns.rate == pytest.approx(3_000)
    assert ahead.turns.turns == -(-(524_288 - prompts[-1]) // 3_000)
    assert ahead.span[0] == last.history_start and ahead.span[1] <= last.message + 1
    assert 0 < ahead.summarised < last.message + 1 - last.history_start


def test_statusline_file_reads_a_gemini_session(tmp_path: Path) -> None:
    assert not statusline.is_claude_code(SESSION)
    status = statusline.status_of_any(SESSION)
    assert status.event == "compression" and status.window == 1_048_576
    assert status.line().startswith("ctx 9.2k/1.05M 1% | compression in ~")
    prompts = PROMPTS
    grown = tmp_path / "session.json"
    grown.write_text(json.dumps(_grown(prompts)))
    status = statusline.status_of_any(grown)
    turns = -(-(524_288 - prompts[-1]) // 3_000)
    assert f"compression in ~{turns} turns (524.3k) |" in status.line()  # steady: no range
    assert status.compacted


def test_the_hook_output_is_a_system_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    payload = {"session_id": "s", "transcript_path": str(SESSION), "hook_event_name": "AfterAgent"}

    assert statusline.main(["--hook"], stdin=io.StringIO(json.dumps(payload))) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"systemMessage"} and "compression in ~" in out["systemMessage"]
    # before Gemini CLI records the session, its transcript_path is "": still JSON
    payload["transcript_path"] = ""
    assert statusline.main(["--hook"], stdin=io.StringIO(json.dumps(payload))) == 0
    assert json.loads(capsys.readouterr().out) == {
        "systemMessage": "ctxlab: no transcript_path yet"
    }
