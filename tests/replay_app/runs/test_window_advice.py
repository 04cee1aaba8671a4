"""Issue 31, item 13: a window that means something. The run form suggests windows from
what the agent really sent (reported usage where the transcript has it, else messages +
system prompt + tools, counted at import), warns when a window is not above the fixed part
(system prompt + tools) in the form, after starting runs or a suite, and in the CLI, and
shows the room each strategy leaves the conversation. One function (``budget.window_advice``)
decides; the form's fragment, its JSON twin and the CLI read it."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from replay_testdata import import_transcript
from window_shapes import REPORTED, claude_code_with_usage, traffic_with_big_tools

from ctxlab.engine import budget, importers
from ctxlab.engine.__main__ import main as engine_main
from sessions_app.models import Transcript

pytestmark = pytest.mark.django_db


def _advice(client: Client, transcript: Transcript, window: int | str = "") -> dict[str, Any]:
    response = client.get(
        "/runs/new/window/", {"transcript": transcript.pk, "window": window, "format": "json"}
    )
    assert response["Content-Type"].startswith("application/json")
    data: dict[str, Any] = response.json()
    return data


def _fragment(client: Client, transcript: Transcript, window: int | str = "") -> str:
    return client.get(
        "/runs/new/window/", {"transcript": transcript.pk, "window": window}
    ).content.decode()


def test_suggestions_come_from_the_reported_usage(auth_client: Client, user: Any) -> None:
    """Claude Code files hold neither the system prompt nor the tools: the messages weigh
    153 cl100k tokens while the provider reported requests up to 69,824 (+ the answer)."""
    transcript = import_transcript(user, claude_code_with_usage(), name="cc.jsonl")
    data = _advice(auth_client, transcript)
    assert data["peak_source"] == "reported"
    assert data["peak"] == data["reported_peak"] == REPORTED[-1]
    assert data["messages_peak"] < 1_000  # what the form used to suggest from
    assert data["windows"] == [17_000, 35_000, 52_000]
    html = _fragment(auth_client, transcript)
    hint = re.sub(r"<[^>]+>", "", re.search(r'<span id="window-hint">(.*?)</span>', html, re.S)[1])  # type: ignore[index]
    assert "largest request is 69,824 tokens (reported by the provider" in hint
    listed = re.findall(r'<option value="(\d+)">', html)
    assert [int(w) for w in listed] == data["windows"]
    # The whole run form shows the same advice as its fragment and the twin.
    page = auth_client.get(f"/runs/new/?transcript={transcript.pk}").content.decode()
    assert "largest request is 69,824 tokens" in page


def test_suggestions_stay_above_big_tool_definitions(auth_client: Client, user: Any) -> None:
    """~10k tokens of tool definitions around a 2.5k conversation: every suggested window
    is above the fixed part (the 50 % suggestion used to be 1,000, all steps overflowing)."""
    transcript = import_transcript(user, traffic_with_big_tools(), name="traffic.json")
    parsed = importers.parse(traffic_with_big_tools(), name="traffic.json").conversations[0]
    size = budget.sent_size(parsed)
    # Counted once at import and stored: the same numbers as the engine's own count.
    assert (transcript.messages_peak, transcript.system_tokens, transcript.tools_tokens) == (
        size.messages_peak, size.system, size.tools,
    )  # fmt: skip
    assert size.tools > 9_000 and size.messages_peak < 3_000
    data = _advice(auth_client, transcript)
    assert data["peak_source"] == "estimated"
    assert data["fixed_tokens"] == size.system + size.tools
    assert data["peak"] == size.messages_peak + size.tools
    assert data["windows"] and all(data["fixed_tokens"] < w for w in data["windows"])
    assert all(w < data["peak"] + 1_000 for w in data["windows"])
    # A transcript imported before the counts were stored reads the same advice.
    Transcript.objects.filter(pk=transcript.pk).update(
        messages_peak=None, system_tokens=None, tools_tokens=None
    )
    assert _advice(auth_client, transcript) == data


def test_a_window_below_the_fixed_part_is_warned_everywhere(
    auth_client: Client, user: Any, tmp_path: Path, capsys: Any
) -> None:
    transcript = import_transcript(user, traffic_with_big_tools(), name="traffic.json")
    fixed = _advice(auth_client, transcript)["fixed_tokens"]
    low = _advice(auth_client, transcript, 6_000)
    assert low["below_fixed"] is True
    assert f"= {fixed:,} cl100k tokens" in low["warning"]
    assert 'id="window-warning"' in _fragment(auth_client, transcript, 6_000)
    fine = _advice(auth_client, transcript, fixed + 2_000)
    assert fine["below_fixed"] is False and fine["warning"] == ""
    assert 'id="window-warning"' not in _fragment(auth_client, transcript, fixed + 2_000)
    # The form re-shown with that window carries the warning beside the field.
    form = auth_client.get(f"/runs/new/?transcript={transcript.pk}&window=6000")
    assert form.status_code == 200
    # Starting runs anyway: they start, and the comparison page says why they overflow.
    response = auth_client.post(
        "/runs/new/",
        {"transcript": transcript.pk, "window": "6000", "presets": ["qwenpaw"],
         "summarizer": "offline"},
        follow=True,
    )  # fmt: skip
    assert response.redirect_chain, response.content.decode()[:500]
    assert "Started, but" in response.content.decode()
    assert "not above the fixed part" in response.content.decode()
    # The CLI: manage.py replay --window and python -m ctxlab.engine replay --window.
    path = tmp_path / "traffic.json"
    path.write_bytes(traffic_with_big_tools())
    err = StringIO()
    call_command("replay", file=str(path), strategy="qwenpaw", window=6000,
                 stdout=StringIO(), stderr=err)  # fmt: skip
    assert "warning: window 6,000 is not above the fixed part" in err.getvalue()
    assert "windows that make compaction fire here: " in err.getvalue()
    err = StringIO()
    call_command("replay", file=str(path), strategy="qwenpaw", window=fixed + 2_000,
                 stdout=StringIO(), stderr=err)  # fmt: skip
    assert "warning" not in err.getvalue()
    assert engine_main(["replay", "--file", str(path), "--strategy", "qwenpaw",
                        "--window", "6000"]) == 0  # fmt: skip
    assert "warning: window 6,000 is not above the fixed part" in capsys.readouterr().err


def test_a_suite_at_a_window_below_the_fixed_part_says_so(auth_client: Client, user: Any) -> None:
    transcript = import_transcript(user, traffic_with_big_tools(), name="traffic.json")
    response = auth_client.post(
        "/suites/new/",
        {"name": "low", "summarizer": "offline", "max_attempts": "1", "presets": ["qwenpaw"],
         "transcripts": [transcript.pk], "window": "6000"},
        follow=True,
    )  # fmt: skip
    assert response.redirect_chain, response.content.decode()[:500]
    html = response.content.decode()
    assert "Started, but “Find why the build fails and fix it.”: window 6,000" in html
    assert "not above the fixed part" in html


def test_room_for_the_conversation_per_strategy(auth_client: Client, user: Any) -> None:
    transcript = import_transcript(user, traffic_with_big_tools(), name="traffic.json")
    data = _advice(auth_client, transcript, 30_000)
    head = transcript.head_conversation()
    assert len(head.tools) == 19 and [m.role.value for m in head.messages] == ["system"]
    for window in [*data["windows"], 30_000]:
        rows = {r["strategy"]: r for r in data["rooms"][str(window)]}
        assert {"qwenpaw", "picoclaw", "claude_code", "aider"} <= set(rows)
        for name in ("qwenpaw", "picoclaw", "claude_code", "codex"):
            room = budget.conversation_room(name, window, head)
            assert rows[name]["room"] == room.room, (name, window)
            # window - fixed part (own count) - margin
            assert room.room == window - room.fixed - room.margin
    rooms = {r["strategy"]: r for r in data["rooms"]["30000"]}
    # QwenPaw compacts at 80 % of the window in its own count, which leaves the tools out:
    # 24,000 less its system prompt; the ~10k of tools still ride along, so the request
    # fits while the conversation stays under 30,000 less the fixed part.
    qwen = rooms["qwenpaw"]
    assert (
        qwen["own_fixed"] < 100 and qwen["fixed"] > 9_000 and "no tool definitions" in qwen["note"]
    )
    assert qwen["room"] == min(24_000 - qwen["own_fixed"], 30_000 - qwen["fixed"])
    # Claude Code counts them: its trigger less its own fixed part.
    claude = rooms["claude_code"]
    assert claude["own_fixed"] > 9_000 and claude["room"] < 30_000 - claude["fixed"]
    html = _fragment(auth_client, transcript, 30_000)
    table = html[html.index('id="window-rooms"') :]
    row = re.search(r'<tr data-strategy="qwenpaw">(.*?)</tr>', table, re.S)
    assert row is not None
    cell = re.search(r'<td class="num" data-window="30000"([^>]*)>', row[1])
    assert cell is not None and f'data-room="{qwen["room"]}"' in cell[1]
    assert "counts no tool definitions" in cell[1]
    # At the smallest suggestion a strategy with a large reserve has no room: said so.
    smallest = {r["strategy"]: r for r in data["rooms"][str(data["windows"][0])]}
    assert smallest["pi"]["room"] <= 0
    assert "<strong>none</strong>" in _fragment(auth_client, transcript)
