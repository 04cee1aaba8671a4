"""What reference counting keeps alive during a replay from stored counts: no dumped JSON
of a long tool input, no text made for a tool call, no copy of a modified text's head, and
every count the same as counting from scratch."""

from __future__ import annotations

import json

from ctxlab.engine.core.model import (
    INPUT_JSON_KEPT_MAX,
    Block,
    BlockKind,
    Conversation,
    Message,
    Role,
    input_json_unkept,
)
from ctxlab.engine.tokens.cl100k import _encoding, message_reference_tokens, reference_counter
from ctxlab.engine.tokens.reference import SPLIT_MIN, ReferenceTokens


def _count(text: str) -> int:
    return len(_encoding().encode_ordinary(text))


def _call(tool_id: str, tool_input: object, name: str = "Write") -> Block:
    return Block(BlockKind.TOOL_USE, tool_id=tool_id, tool_name=name, tool_input=tool_input)


def _body(lines: int, tag: str) -> str:
    return "".join(f"{tag} line {i}: déjà vu — 数据 {i * 7}\n" for i in range(lines))


def _conversation() -> Conversation:
    long_input = {"file_path": "/src/app.py", "content": _body(200, "code")}
    raw_input = "not json {\n" + _body(150, "raw")  # arguments that did not parse
    return Conversation(
        id="c",
        title="calls",
        messages=(
            Message(Role.USER, (Block(BlockKind.TEXT, text="write the files"),)),
            Message(
                Role.ASSISTANT,
                (_call("t1", long_input), _call("t2", {"command": "ls"}, "Bash")),
            ),
            Message(Role.ASSISTANT, (_call("t3", raw_input, "Edit"),)),
            Message(Role.TOOL, (Block(BlockKind.TOOL_RESULT, tool_id="t1", text="ok"),)),
        ),
    )


def _seeded(conversation: Conversation) -> ReferenceTokens:
    return ReferenceTokens(conversation, list(ReferenceTokens(conversation).per_message))


def test_input_json_is_json_dumps_and_the_reference_keeps_only_short_ones() -> None:
    conversation = _conversation()
    long_call, short_call = conversation.messages[1].blocks
    for block in (long_call, short_call):
        assert input_json_unkept(block) == json.dumps(block.tool_input, ensure_ascii=False)
    assert len(input_json_unkept(long_call)) >= INPUT_JSON_KEPT_MAX
    assert len(input_json_unkept(short_call)) < INPUT_JSON_KEPT_MAX
    assert input_json_unkept(short_call) is short_call.input_json  # kept on the first ask
    assert input_json_unkept(long_call) is not input_json_unkept(long_call)  # not kept
    assert long_call.input_json is long_call.input_json  # kept for the estimators' asks
    assert input_json_unkept(long_call) is long_call.input_json  # ... and then shared
    assert long_call.input_json == json.dumps(long_call.tool_input, ensure_ascii=False)
    raw = conversation.messages[2].blocks[0]
    assert raw.input_json is raw.tool_input is input_json_unkept(raw)  # its own JSON


def test_seeding_indexes_no_parsed_call_but_a_raw_one_with_newlines() -> None:
    conversation = _conversation()
    reference = _seeded(conversation)
    indexed = [text for heads in reference._by_head.values() for text, _ in heads]
    assert not any(text.startswith("Write ") for text in indexed)  # JSON: no newline
    raw = conversation.messages[2].blocks[0]
    assert f"Edit {raw.tool_input}" in indexed
    # a truncated copy of the raw call is counted exactly (from the stored message count)
    copy = f"Edit {raw.tool_input}"[:3000] + "\n[truncated]"
    assert reference.text(copy) == _count(copy)


def test_modified_messages_with_tool_calls_count_as_from_scratch_and_keep_no_call_text() -> None:
    conversation = _conversation()
    reference = _seeded(conversation)
    call = conversation.messages[1]
    modified = Message(Role.ASSISTANT, (Block(BlockKind.TEXT, text="note"), *call.blocks))
    expected = message_reference_tokens(modified)  # (through the shared counter's cache)
    counter = reference_counter()
    held = counter.count.cache_info().currsize
    for _ in range(2):
        assert reference.message_of(modified) == expected
    long_call = call.blocks[0]
    call_text = f"{long_call.tool_name} {long_call.input_json}"
    assert call_text not in reference._memo
    assert counter.count.cache_info().currsize == held  # nor the shared counter's cache
    raw_call = conversation.messages[2]
    assert reference.message_of(raw_call) == message_reference_tokens(raw_call)
    # a copy of the long call (another block, same input) is counted the same
    again = Block(
        BlockKind.TOOL_USE, tool_id="t9", tool_name="Write", tool_input=dict(long_call.tool_input)
    )
    assert reference.message_of(Message(Role.ASSISTANT, (again,))) == message_reference_tokens(
        Message(Role.ASSISTANT, (again,))
    )


def test_heads_of_modified_texts_are_counted_once_and_not_copied() -> None:
    reference = _seeded(_conversation())
    head = _body(120, "output")
    assert len(head) > SPLIT_MIN
    first, second = head + "[cut: see /tmp/a.txt]", head + "[cut: see /tmp/b.txt]"
    tokenized: list[str] = []
    count_distinct = reference._count_distinct

    def recording(texts: list[str]) -> list[int]:
        tokenized.extend(texts)
        return count_distinct(texts)

    reference._count_distinct = recording  # type: ignore[method-assign]
    assert reference.text(first) == _count(first)
    assert reference.text(second) == _count(second)
    assert tokenized == [head]  # the shared head once
    assert head not in reference._memo  # memoised by the text it was cut from
    # another text whose head has the same length but other content is not confused
    other = head.replace("output line 3:", "OUTPUT LINE 3:") + "[cut]"
    assert reference.text(other) == _count(other)
