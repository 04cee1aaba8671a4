"""A user message that sent the model nothing (only ``ignored`` text: the Dynamic Context
Pruning plugin's "▣ DCP | ... removed" notice, which starts a loop of its own) is still a
turn to OpenCode's prune, which counts stored user messages (``if (turns < 2) continue``).
Unseen set 47 (shaheislam/dotfiles, OpenCode 1.14.25-1.16.2 with that plugin): 8 of 50
prune passes at the replay's step before, 49 after."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ctxlab.engine import importers
from ctxlab.engine.core.model import UNSENT_USER_TURN, Conversation, Role
from ctxlab.engine.replay import run

BIG = "x" * 100_000  # 25,000 tokens to OpenCode's estimate (length / 4)


def _user(mid: str, text: str, *, ignored: bool = False, at: int) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "text", "text": text}
    if ignored:
        part["ignored"] = True
    return {"info": {"id": mid, "sessionID": "ses_x", "role": "user", "time": {"created": at},
                     "agent": "build", "model": {"providerID": "p", "modelID": "m"}},
            "parts": [part]}  # fmt: skip


def _assistant(
    mid: str, parent: str, *parts: dict[str, Any], at: int, finish: str = "stop"
) -> dict[str, Any]:  # noqa: E501
    head = {"id": mid, "sessionID": "ses_x", "role": "assistant", "time": {"created": at},
            "parentID": parent, "modelID": "m", "providerID": "p", "mode": "build",
            "agent": "build", "cost": 0, "finish": finish,
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}}  # fmt: skip
    return {"info": head, "parts": [{"type": "step-start"}, *parts]}


def _tool(call: str) -> dict[str, Any]:
    return {"type": "tool", "callID": call, "tool": "read",
            "state": {"status": "completed", "input": {"filePath": call}, "output": BIG}}  # fmt: skip


def _session() -> Conversation:
    messages = [
        _user("u1", "read them", at=1),
        _assistant("a1", "u1", _tool("c1"), _tool("c2"), _tool("c3"), at=2, finish="tool-calls"),
        _assistant("a2", "u1", {"type": "text", "text": "read"}, at=3),
        _user("u2", "▣ DCP | -80.5K removed, +7.4K summary", ignored=True, at=4),
        _assistant("a3", "u2", {"type": "text", "text": "carrying on"}, at=5),
        _user("u3", "and now?", at=6),
        _assistant("a4", "u3", {"type": "text", "text": "done"}, at=7),
        _user("u4", "thanks", at=8),  # the next request, where the pruned outputs are gone
        _assistant("a5", "u4", {"type": "text", "text": "welcome"}, at=9),
    ]
    doc = {"info": {"id": "ses_x", "title": "t", "version": "1.14.25", "directory": "/w",
                    "time": {"created": 1, "updated": 7}}, "messages": messages}  # fmt: skip
    (conversation,) = importers.parse(json.dumps(doc).encode(), name="s.json").conversations
    return conversation


def _prunes(conversation: Conversation) -> list[dict[str, Any]]:
    return [dict(e.detail) for e in run(conversation, "opencode").events if e.kind == "prune"]


def test_the_unsent_user_message_marks_the_next_message() -> None:
    conversation = _session()
    flagged = [m for m in conversation.messages if UNSENT_USER_TURN in m.flags]
    assert [(m.role, m.id) for m in flagged] == [(Role.ASSISTANT, "a3")]
    assert "DCP" not in "".join(m.text for m in conversation.messages)  # never sent


def test_prune_counts_that_turn() -> None:
    """At the end of the u3 loop the two newest turns are u3's and u2's: the three 25,000
    token outputs of u1's turn are past the 40,000 protected, 35,000 > 20,000 pruned."""
    (prune,) = _prunes(_session())
    assert prune["scanned_tokens"] == 75_000 and prune["parts"] == 2


def test_without_the_turn_the_outputs_stay_protected() -> None:
    conversation = _session()
    plain = tuple(
        dataclasses.replace(m, flags=m.flags - {UNSENT_USER_TURN}) for m in conversation.messages
    )  # noqa: E501
    assert _prunes(dataclasses.replace(conversation, messages=plain)) == []
