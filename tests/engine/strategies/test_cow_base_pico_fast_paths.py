"""CowAgent, BaseAgent and PicoClaw hot paths (issue 33) give what the plain code gives:
the inlined estimators, the positional builders, the single text pass of a flush and the
under-the-cap shortcut of middle_out_truncate."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from ctxlab.engine.core.model import Block, BlockKind, Message, Role, SourcePos, Usage
from ctxlab.engine.core.summary_request import MaterialItem, PromptMessage
from ctxlab.engine.strategies import _baseagent_rules as ba
from ctxlab.engine.strategies import _cowagent_rules as cow
from ctxlab.engine.strategies import _picoclaw_budget as pb
from ctxlab.engine.strategies import baseagent

TEXTS = ("", "plain ascii text", "中文混合 text ✓", "x" * 1001, "\U0001f600 emoji")


def _blocks() -> tuple[Block, ...]:
    out: list[Block] = []
    for t in TEXTS:
        out.append(Block(BlockKind.TEXT, text=t))
        out.append(Block(BlockKind.TOOL_RESULT, text=t, tool_id="r"))
    out.append(Block(BlockKind.TOOL_USE, tool_id="u", tool_name="Bash", tool_input={"c": "ls 中"}))
    out.append(Block(BlockKind.THINKING, text="hmm"))
    out.append(Block(BlockKind.MEDIA, media_type="image/png", size=10))
    return tuple(out)


@pytest.mark.parametrize("n", range(len(_blocks()) + 1))
def test_cowagent_estimate_message_is_the_sum_of_estimate_block(n: int) -> None:
    blocks = _blocks()[:n]
    msg = Message(Role.USER, blocks)
    expected = max(1, sum(cow.estimate_block(b) for b in blocks))
    assert cow.estimate_message(msg) == expected


def test_cowagent_to_cow_row_is_the_dataclass_row() -> None:
    msg = Message(Role.TOOL, (Block(BlockKind.TOOL_RESULT, text="out", tool_id="t"),), name="x")
    row = cow.to_cow(7, msg)
    assert row == cow.CowMsg(7, replace(msg, role=Role.USER))
    assert row.members == () and row.sources == (7,)
    with pytest.raises(AttributeError):
        row.src = 8  # type: ignore[misc]  # still frozen


def test_cowagent_flush_texts_are_each_kept_rows_text() -> None:
    rows = [
        cow.to_cow(0, Message(Role.USER, (Block(BlockKind.TEXT, text="a"),))),
        cow.to_cow(1, Message(Role.ASSISTANT, (Block(BlockKind.TOOL_USE, tool_id="t"),))),
        cow.to_cow(2, Message(Role.ASSISTANT, (Block(BlockKind.TEXT, text="b"),) * 2)),
        cow.to_cow(3, Message(Role.USER, (Block(BlockKind.TEXT, text="a"),))),  # seen
    ]
    texts: list[str] = []
    kept = cow.dedupe_for_flush(rows, set(), texts)
    assert [r.src for r in kept] == [0, 2]
    assert texts == [cow.text_of(r.msg) for r in kept] == ["a", "b\nb"]
    assert cow.format_for_summary(kept, texts) == cow.format_for_summary(kept)


def test_baseagent_placeholder_equals_dataclass_replace() -> None:
    # every field set to a non-default value, so a field order mistake shows
    values = {f.name: f for f in fields(Block)}
    assert list(values) == [
        "kind", "text", "tool_id", "tool_name", "tool_input", "is_error", "media_type",
        "size", "raw_type", "parts", "data",
    ]  # fmt: skip
    part = Block(BlockKind.TEXT, text="p")
    full = Block(
        BlockKind.TOOL_RESULT, "out", "t1", "Bash", {"a": 1}, True, "text/plain", 3, "raw",
        (part,), "ZGF0YQ==",
    )  # fmt: skip
    other = Block(BlockKind.TOOL_RESULT, text="keep", tool_id="t2")
    msg = Message(
        Role.USER, (full, other), SourcePos("f.jsonl", 3, 4), "2026-01-01T00:00:00Z", "m",
        Usage(input_uncached=5), "id1", "n", frozenset({"meta"}),
    )  # fmt: skip
    got = baseagent._placeholder(msg, {"t1"})
    want = replace(msg, blocks=(replace(full, text=ba.PRUNE_MARKER, parts=()), other))
    assert got == want
    assert got.blocks[1] is other
    assert [getattr(got, f.name) for f in fields(Message)] == [
        getattr(want, f.name) for f in fields(Message)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "x" * 10_000,  # ASCII at the cap: 10,000 bytes // 4 = 2,500
        "x" * 10_003,  # still 2,500
        "x" * 10_004,  # 2,501: cut
        "é" * 2_500,  # 5,000 bytes: kept by the char bound
        "é" * 5_001,  # 10,002 bytes: kept after encoding
        "é" * 5_002,  # 10,004 bytes: cut
        "\U0001f600" * 2_501,  # 10,004 bytes: cut
    ],
)
def test_baseagent_middle_out_truncate_shortcut_agrees_with_bytes(text: str) -> None:
    out = ba.middle_out_truncate(text, 2_500)
    over = len(text.encode("utf-8")) // 4 > 2_500
    assert (out != text) is over
    if not over:
        assert out is text


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ({"a": [1, "x", None, True, {"b": [[]]}]}, True),
        ({"a": [1, [2, [3.5]]]}, False),  # a float deep in lists
        ({"a": {1: "x"}}, False),  # a non-str key one level down
        ([{"a": (1, 2)}], False),  # a tuple inside
        ({"a": 2**70}, True),
    ],
)
def test_picoclaw_plain_walk(value: object, plain: bool) -> None:
    assert pb._plain(value) is plain
    assert pb.go_json_marshal(value) == pb.go_json_marshal(pb._normalise(value))


def test_cowagent_with_blocks_is_replace() -> None:
    msg = Message(
        Role.USER, (Block(BlockKind.TEXT, text="a"),), SourcePos("f", 3), "2025-01-01T00:00:00Z",
        "m", Usage(1, 2), "id-1", "name", frozenset({"meta"}),
    )  # fmt: skip
    blocks = (Block(BlockKind.TEXT, text="b"), Block(BlockKind.TOOL_RESULT, text="r", tool_id="t"))
    made = cow.with_blocks(msg, blocks)
    assert made == replace(msg, blocks=blocks)
    assert [getattr(made, f.name) for f in fields(Message)] == [
        getattr(replace(msg, blocks=blocks), f.name) for f in fields(Message)
    ]


@pytest.mark.parametrize("text", ["", " ", "\n\t", "\u3000\x1c\x85", "\u2028", " x ", "中"])
def test_cowagent_flush_skips_exactly_the_texts_strip_empties(text: str) -> None:
    rows = [cow.to_cow(0, Message(Role.USER, (Block(BlockKind.TEXT, text=text),)))]
    kept = cow.dedupe_for_flush(rows, set())
    assert bool(kept) == bool(text.strip())


def test_cowagent_flush_dedupes_by_text_across_flushes() -> None:
    seen: set[str] = set()

    def row(i: int, text: str) -> cow.CowMsg:
        return cow.to_cow(i, Message(Role.USER, (Block(BlockKind.TEXT, text=text),)))

    assert [r.src for r in cow.dedupe_for_flush([row(0, "a"), row(1, "b")], seen)] == [0, 1]
    assert [
        r.src for r in cow.dedupe_for_flush([row(2, "b"), row(3, "a "), row(4, "a")], seen)
    ] == [3]


@pytest.mark.parametrize("calls", [0, 1, 2])
def test_baseagent_prompt_rows_are_the_dataclass_values(calls: int) -> None:
    tool_calls = tuple(ba.BaseToolCall(f"c{n}", "Bash", f"{{'n': {n}}}") for n in range(calls))
    for row in (
        ba.BaseMsg("assistant", "body", tool_calls=tool_calls),
        ba.BaseMsg("assistant", None, tool_calls=tool_calls),
        ba.BaseMsg("user", None, parts=(("text", "a"), ("image_url", ""), ("text", "b"))),
    ):
        body = row.content if isinstance(row.content, str) else "\n".join(t for _, t in row.parts)
        calls_text = "".join(f"\n[tool_call Bash] {{'n': {n}}}" for n in range(calls))
        expected = PromptMessage(row.role, (body or "") + (calls_text if row.tool_calls else ""))
        made = baseagent._prompt(row)
        assert made == expected and type(made) is PromptMessage
    item = baseagent._new_material("user", "t", 4)
    assert item == MaterialItem("user", "t", 4) and type(item) is MaterialItem
