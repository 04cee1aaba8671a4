"""Codex 0.145 multi-agent ("collaboration") rollouts as the importer reads them: a
sub-agent's ``agent_message`` delivered into the root agent's context is a message of the
context (the next request's reported input grows by it), ``world_state`` and
``inter_agent_communication_metadata`` are known bookkeeping records (no warning; the raw
lines stay in the upload). The real rollout is cut from entireio/entire-sem (README there)."""

from __future__ import annotations

import json
from pathlib import Path

from ctxlab.engine import importers
from ctxlab.engine.core.model import BlockKind, Role

DATA = Path(__file__).resolve().parents[2] / "data" / "codex-rollouts"
COLLAB = DATA / "entire-sem-0.145.0-collab-window1.jsonl"


def test_a_real_0145_collab_rollout_imports_every_agent_message_without_a_warning() -> None:
    parsed = importers.parse(COLLAB.read_bytes(), name=COLLAB.name)
    assert parsed.format == "codex-rollout" and not parsed.warnings
    (conversation,) = parsed.conversations
    raw = [json.loads(x) for x in COLLAB.read_text("utf-8").splitlines()]
    delivered = [r for r in raw if r["payload"].get("type") == "agent_message"]
    received = [m for m in conversation.messages if "agent_message" in m.flags]
    assert len(received) == len(delivered) == 13
    assert dict(conversation.metadata)["agent_messages"] == "13"
    first = received[0]
    assert first.role is Role.USER and first.name == "/root/review_pr39_40"
    assert first.blocks[0].text.startswith("Message Type: FINAL_ANSWER")
    assert "meta" in first.flags  # not typed by the user: no user turn, no title
    # a redacted encrypted part is kept as what it is
    opaque = [b for m in received for b in m.blocks if b.kind is BlockKind.OPAQUE]
    assert opaque and all(b.raw_type == "encrypted_content" for b in opaque)
    assert conversation.title.startswith("Review all open PRs")


def test_agent_messages_sit_where_they_were_delivered_between_two_requests() -> None:
    (conversation,) = importers.parse(COLLAB.read_bytes(), name=COLLAB.name).conversations
    messages = conversation.messages
    at = next(i for i, m in enumerate(messages) if "agent_message" in m.flags)
    before = next(m.usage for m in reversed(messages[:at]) if m.usage is not None)
    after = next(m.usage for m in messages[at:] if m.usage is not None)
    # the request after it reports a larger input than the one before
    assert after.prompt_tokens > before.prompt_tokens


def test_world_state_and_inter_agent_metadata_are_known_records() -> None:
    def rec(kind: str, payload: dict[str, object]) -> str:
        return json.dumps({"type": kind, "payload": payload})

    lines = [
        rec("session_meta", {"id": "s", "cli_version": "0.145.0-alpha.18"}),
        rec("world_state", {"full": True, "state": {"agents_md": {"text": "# Agents"}}}),
        rec("turn_context", {"model": "gpt-5.6-sol"}),
        rec("response_item", {"type": "message", "role": "user",
                              "content": [{"type": "input_text", "text": "review"}]}),
        rec("inter_agent_communication_metadata", {"trigger_turn": False}),
        rec("response_item", {"type": "agent_message", "author": "/root/w", "recipient": "/root",
                              "content": [{"type": "input_text", "text": "found 2 bugs"}]}),
    ]  # fmt: skip
    parsed = importers.parse("\n".join(lines).encode(), name="c.jsonl")
    assert not parsed.warnings
    (conversation,) = parsed.conversations
    assert [m.text for m in conversation.messages] == ["review", "found 2 bugs"]
    assert conversation.messages[1].name == "/root/w"
