"""PicoClaw's ``to_pico`` and BaseAgent's ``to_base`` convert a message in one pass over its
blocks with positional constructors: the rows equal (every field, ``src`` included) those
of the plain per-kind conversion they replaced, kept here as the oracle, on corpus
transcripts of every format, a realistic transcript and hand-made edge messages."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from builders import assistant, call, results, system, tool_result, tool_use, user

from ctxlab.engine import cli
from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.strategies import _baseagent_rules as br
from ctxlab.engine.strategies import _picoclaw_budget as pb
from ctxlab.engine.synth import realistic as synth_realistic

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _pico_texts(blocks: tuple[Block, ...], kind: BlockKind) -> str:
    return "\n".join(b.text for b in blocks if b.kind is kind and b.text)


def pico_oracle(src: int, msg: Message) -> list[pb.PicoMsg]:
    media = sum(1 for b in msg.blocks if b.kind is BlockKind.MEDIA)
    if msg.role is Role.SYSTEM:
        return [pb.PicoMsg("system", _pico_texts(msg.blocks, BlockKind.TEXT), src=src)]
    if msg.role is Role.ASSISTANT:
        calls = tuple(
            pb.PicoToolCall(b.tool_id, b.tool_name, pb._arguments(b))
            for b in msg.blocks
            if b.kind is BlockKind.TOOL_USE
        )
        return [
            pb.PicoMsg(
                "assistant",
                _pico_texts(msg.blocks, BlockKind.TEXT),
                reasoning=_pico_texts(msg.blocks, BlockKind.THINKING),
                tool_calls=calls,
                media=media,
                src=src,
            )
        ]
    found = [b for b in msg.blocks if b.kind is BlockKind.TOOL_RESULT]
    out = [pb.PicoMsg("tool", b.text, tool_call_id=b.tool_id, src=src) for b in found]
    text = _pico_texts(msg.blocks, BlockKind.TEXT)
    if msg.role is Role.TOOL:
        if not found:
            out.append(pb.PicoMsg("tool", text, tool_call_id="", src=src))
        return out
    if not found or text or media:
        out.append(pb.PicoMsg("user", text, media=media, src=src))
    return out


def base_oracle(src: int, msg: Message) -> list[br.BaseMsg]:
    texts = [b.text for b in msg.blocks if b.kind is BlockKind.TEXT]
    images = [b for b in msg.blocks if b.kind is BlockKind.MEDIA]
    if msg.role is Role.ASSISTANT:
        calls = tuple(
            br.BaseToolCall(b.tool_id, b.tool_name, br._arguments(b))
            for b in msg.blocks
            if b.kind is BlockKind.TOOL_USE
        )
        return [br.BaseMsg("assistant", "\n".join(texts) or None, tool_calls=calls, src=src)]
    found = [b for b in msg.blocks if b.kind is BlockKind.TOOL_RESULT]
    out = [br.BaseMsg("tool", b.text, tool_call_id=b.tool_id, src=src) for b in found]
    if msg.role is Role.TOOL:
        if not found:
            out.append(br.BaseMsg("tool", "\n".join(texts), src=src))
        return out
    if found and not texts and not images:
        return out
    role = "system" if msg.role is Role.SYSTEM else "user"
    if images:
        parts = tuple(
            ("text", b.text) if b.kind is BlockKind.TEXT else ("image_url", "")
            for b in msg.blocks
            if b.kind in (BlockKind.TEXT, BlockKind.MEDIA)
        )
        out.append(br.BaseMsg(role, None, parts=parts, src=src))
    else:
        out.append(br.BaseMsg(role, "\n".join(texts), src=src))
    return out


def _edge_messages() -> list[Message]:
    image = Block(BlockKind.MEDIA, media_type="image/png", size=10)
    empty = Block(BlockKind.TEXT, text="")
    thinking = Block(BlockKind.THINKING, text="hmm")
    opaque = Block(BlockKind.OPAQUE, raw_type="redacted_thinking", size=5)

    def output(tool_id: str, text: str) -> Block:
        return Block(BlockKind.TOOL_RESULT, tool_id=tool_id, text=text)

    return [
        system("sys"),
        user("plain"),
        Message(Role.USER, (empty,)),
        Message(Role.USER, (image, Block(BlockKind.TEXT, text="look"), empty)),
        Message(Role.USER, (output("t1", "out"), image)),
        Message(Role.USER, (output("t1", "out"), empty)),
        results(("t1", "a"), ("t2", "b")),
        Message(Role.TOOL, (Block(BlockKind.TEXT, text="bare tool text"),)),
        Message(Role.TOOL, (output("t3", "x"), Block(BlockKind.TEXT, text="y"))),
        tool_result("t5", "as OpenAI", role=Role.TOOL),
        assistant("a", tool_use("t1", "bash", cmd="ls"), thinking="why"),
        Message(Role.ASSISTANT, (thinking, opaque, empty, image, tool_use("t9", "grep", q="é"))),
        Message(Role.ASSISTANT, ()),
        call("t4", "read", text="reading", path="/x"),
        Message(Role.SYSTEM, (image, Block(BlockKind.TEXT, text="s"))),
    ]


@cache
def _transcripts() -> list[tuple[Message, ...]]:
    out = [tuple(_edge_messages())]
    for folder in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
        for path in sorted(folder.iterdir())[:3]:
            if path.suffix not in (".json", ".jsonl", ".md", ".traj", ".yaml"):
                continue
            try:
                out.append(cli.load_file(path).messages)
            except Exception:  # a file of several conversations, or not a transcript
                continue
    out.append(synth_realistic.realistic_bench_conversation(CORPUS, messages=1500).messages)
    return out


@pytest.mark.parametrize(
    ("convert", "oracle"), [(pb.to_pico, pico_oracle), (br.to_base, base_oracle)]
)
def test_one_pass_rows_equal_the_per_kind_conversion(convert, oracle) -> None:  # type: ignore[no-untyped-def]
    seen = 0
    for messages in _transcripts():
        for i, msg in enumerate(messages):
            got, want = convert(i, msg), oracle(i, msg)
            assert got == want, (i, msg)
            # src (not compared by ==) and the per-row fields, one by one
            assert [repr(r) + repr(r.src) for r in got] == [repr(r) + repr(r.src) for r in want]
            seen += 1
    assert seen > 2000, "the corpus and realistic transcripts were read"
