"""``agentscope.format_message`` (clipping inlined, one pass) gives the same text as the
per-block ``_clip`` rendering it replaced, kept here as the oracle, in both styles, on
corpus transcripts, a realistic transcript and edge blocks."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from ctxlab.engine import synth
from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.stages import agentscope
from ctxlab.engine.stages.markers import QWENPAW_MARKER
from ctxlab.engine.synth import realistic as synth_realistic

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _clip(text: str, limit: int, *, flatten: bool) -> str:
    if len(text) > limit:
        text = text[:limit] + "..."
    return text.replace("\n", " ") if flatten else text


def oracle(
    message: Message, *, style: str, include_thinking: bool, tool_names: dict[str, str]
) -> str:
    reme = style == "reme"
    limit = 2000 if reme else 1000
    ts = agentscope.as_timestamp(message.timestamp)
    lines = [(f"[{ts}] " if ts else "") + f"{agentscope.as_name(message)}:"]
    for b in message.blocks:
        kind = b.kind
        if kind is BlockKind.TEXT:
            if b.text:
                body = _clip(b.text, limit, flatten=not reme)
                lines.append(f"<text>{body}</text>" if reme else f"[text]: {body}")
        elif kind is BlockKind.THINKING:
            if include_thinking and b.text:
                body = _clip(b.text, limit, flatten=not reme)
                lines.append(f"<thinking>{body}</thinking>" if reme else f"[think]: {body}")
        elif kind is BlockKind.TOOL_USE:
            body = f"{b.tool_name} params={_clip(b.input_json, limit, flatten=not reme)}"
            lines.append(f"<tool_use>{body}</tool_use>" if reme else f"[tool_use]: {body}")
        elif kind is BlockKind.TOOL_RESULT:
            output = agentscope.tool_output_text(b, with_files=reme)
            if not reme:
                output = output.split(QWENPAW_MARKER, 1)[0]
            if not output:
                continue
            name = b.tool_name or tool_names.get(b.tool_id, "")
            body = f"{name} output={_clip(output, limit, flatten=not reme)}"
            lines.append(f"<tool_result>{body}</tool_result>" if reme else f"[tool_result]: {body}")
        elif kind is BlockKind.MEDIA and b.text:
            tag = (b.media_type.split("/")[0] or "image") if b.media_type else "image"
            lines.append(f"<{tag}>{b.text}</{tag}>" if reme else f"[{tag}]: {b.text}")
    return "\n".join(lines)


def _edges() -> list[Message]:
    long = "line one\nline two " * 150
    part = Block(BlockKind.TEXT, text="part\ntext")
    file = Block(BlockKind.MEDIA, media_type="file/pdf", text="/tmp/a.pdf")
    blocks = (
        Block(BlockKind.TEXT, text=""),
        Block(BlockKind.TEXT, text=long),
        Block(BlockKind.THINKING, text="think\nhard"),
        Block(BlockKind.TOOL_USE, tool_id="u1", tool_name="bash", tool_input={"c": long}),
        Block(BlockKind.TOOL_USE, tool_id="u2", tool_name="raw", tool_input="not json\n"),
        Block(BlockKind.TOOL_RESULT, tool_id="u1", text=long + QWENPAW_MARKER + "\ntail"),
        Block(BlockKind.TOOL_RESULT, tool_id="u2", text=QWENPAW_MARKER + "only notice"),
        Block(BlockKind.TOOL_RESULT, tool_id="u9", tool_name="own", text="x"),
        Block(BlockKind.TOOL_RESULT, tool_id="u1", text="joined", parts=(part, file)),
        Block(BlockKind.MEDIA, media_type="image/png", text="http://x/y.png"),
        Block(BlockKind.MEDIA, media_type="", text="http://x/z"),
        Block(BlockKind.MEDIA, media_type="image/png", size=3),
    )
    return [
        Message(Role.ASSISTANT, blocks, timestamp="2025-01-02T03:04:05.678Z", name="bot"),
        Message(Role.USER, blocks[:3], timestamp="not a time"),
        Message(Role.TOOL, blocks[5:9]),
        Message(Role.SYSTEM, ()),
    ]


@cache
def _messages() -> list[Message]:
    out = list(_edges())
    for conversation in list(synth.corpus_conversations(CORPUS))[::4]:
        out.extend(conversation.messages[:150])
    out.extend(synth_realistic.realistic_bench_conversation(CORPUS, messages=1500).messages)
    return out


@pytest.mark.parametrize(
    ("style", "thinking"), [("qwenpaw", True), ("qwenpaw", False), ("reme", False), ("reme", True)]
)
def test_format_message_equals_the_clip_rendering(style: str, thinking: bool) -> None:
    names = {"u1": "bash", "u2": "raw"}
    checked = 0
    for message in _messages():
        for b in message.blocks:
            if b.kind is BlockKind.TOOL_USE and b.tool_id not in names:
                names[b.tool_id] = b.tool_name
        got = agentscope.format_message(
            message, style=style, include_thinking=thinking, tool_names=names
        )
        assert got == oracle(message, style=style, include_thinking=thinking, tool_names=names)
        checked += 1
    assert checked > 2000
