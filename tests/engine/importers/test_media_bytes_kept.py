"""Images (and other inline media) keep their bytes through every importer that can carry
them, without changing any token count: a media block is counted by kind, not by payload."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core import codec
from ctxlab.engine.core.model import Block, BlockKind, Conversation
from ctxlab.engine.tokens.cl100k import message_reference_tokens
from tests.engine.importers.claude_shapes import jsonl, user
from tests.engine.importers.tiny_images import PNG, PNG_B64

CORPUS = Path(__file__).parents[2] / "data" / "corpus"
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}
DATA_URL = f"data:image/png;base64,{PNG_B64}"


def _media(conversation: Conversation) -> list[Block]:
    return [
        part
        for m in conversation.messages
        for b in m.blocks
        for part in (b, *b.parts)
        if part.kind is BlockKind.MEDIA
    ]


def _only_media(data: bytes, name: str, fmt: str) -> Block:
    parsed = importers.parse(data, name=name, format=fmt)
    (block,) = [b for c in parsed.conversations for b in _media(c)]
    return block


SOURCES = {
    "claude-code": (
        jsonl(
            user("u1", None, [{"type": "text", "text": "see"}, IMAGE]),
            user(
                "u2",
                "u1",
                [{"type": "tool_result", "tool_use_id": "t1", "content": [IMAGE]}],
            ),
        ),
        "s.jsonl",
    ),
    "anthropic-messages": (
        json.dumps(
            {
                "model": "claude-haiku-4-5",
                "max_tokens": 10,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}, IMAGE]}],
            }
        ).encode(),
        "request.json",
    ),
    "openai-chat": (
        json.dumps(
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": DATA_URL}}]}]
        ).encode(),
        "chat.json",
    ),
    "openai-responses": (
        json.dumps(
            [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_image", "image_url": DATA_URL}],
                }
            ]
        ).encode(),
        "responses.json",
    ),
    "gemini-cli": (
        json.dumps(
            {
                "sessionId": "s1",
                "messages": [
                    {
                        "id": "u1",
                        "type": "user",
                        "content": [
                            {"text": "see"},
                            {"inlineData": {"mimeType": "image/png", "data": PNG_B64}},
                        ],
                    }
                ],
            }
        ).encode(),
        "session.json",
    ),
}


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_image_bytes_are_kept(fmt: str) -> None:
    data, name = SOURCES[fmt]
    parsed = importers.parse(data, name=name, format=fmt)
    media = [b for c in parsed.conversations for b in _media(c)]
    assert media, fmt
    for block in media:
        assert block.media_type == "image/png"
        assert base64.b64decode(block.data) == PNG
        assert block.size == len(PNG)
        assert block.text == ""  # no URL: the bytes are in ``data``


def test_a_percent_encoded_data_url_is_kept_as_base64() -> None:
    url = "data:image/svg+xml,%3Csvg%20xmlns%3D%22http%3A%2F%2Fwww.w3.org%2F2000%2Fsvg%22%2F%3E"
    body = json.dumps(
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
    ).encode()
    block = _only_media(body, "chat.json", "openai-chat")
    assert block.media_type == "image/svg+xml"
    assert base64.b64decode(block.data) == b'<svg xmlns="http://www.w3.org/2000/svg"/>'


def test_image_urls_stay_urls_without_bytes() -> None:
    body = json.dumps(
        [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}],
            }
        ]
    ).encode()
    block = _only_media(body, "chat.json", "openai-chat")
    assert (block.text, block.data) == ("https://x/a.png", "")


def test_kept_bytes_round_trip_the_codec_and_change_no_token_count() -> None:
    data, name = SOURCES["claude-code"]
    conversation = importers.parse(data, name=name, format="claude-code").conversations[0]
    assert codec.conversation_from_dict(codec.conversation_to_dict(conversation)) == conversation
    for message in conversation.messages:
        stripped = replace(
            message,
            blocks=tuple(
                replace(b, data="", parts=tuple(replace(p, data="") for p in b.parts))
                for b in message.blocks
            ),
        )
        assert message_reference_tokens(message) == message_reference_tokens(stripped)
    assert all(b.data for b in _media(conversation))


@pytest.mark.parametrize(
    ("folder", "file"),
    [
        ("claude-code", "agentcmd-full-session-two.jsonl"),
        (
            "codex-rollout",
            "agentcmd-rollout-2025-09-24T20-12-23-01997ea4-a70d-7da3-8c20-c736db82a7c5.jsonl",
        ),
    ],
    ids=["claude-code-screenshot", "codex-input-image"],
)
def test_corpus_screenshots_keep_their_png_bytes(folder: str, file: str) -> None:
    parsed = importers.parse((CORPUS / folder / file).read_bytes(), name=file)
    media = [b for c in parsed.conversations for b in _media(c)]
    assert media
    for block in media:
        raw = base64.b64decode(block.data, validate=True)
        assert raw.startswith(b"\x89PNG\r\n\x1a\n") and block.media_type == "image/png"
        assert len(raw) == block.size
