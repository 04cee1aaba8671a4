"""A replay's offloaded files (``ReplayResult.offloads``): long texts kept compressed, read
back as they were written, and compared, copied and pickled as the dict they stand for."""

from __future__ import annotations

import copy
import pickle

from ctxlab.engine.core.packed import PACK_CHARS, PackedTexts
from ctxlab.engine.core.records import ReplayResult

LONG = "## Summarized at step 9\n<message role='tool'>é \ud800 ✓</message>\n" * 400


def test_long_texts_are_packed_and_read_back_whole() -> None:
    texts = PackedTexts()
    texts["/history.md#section-1"] = LONG
    texts["short.txt"] = "kept as given"
    assert len(LONG) >= PACK_CHARS
    assert isinstance(texts._packed["/history.md#section-1"], bytes)  # compressed
    assert len(texts._packed["/history.md#section-1"]) < len(LONG) // 10
    assert texts._packed["short.txt"] == "kept as given"
    assert texts["/history.md#section-1"] == LONG  # a lone surrogate too
    assert list(texts) == ["/history.md#section-1", "short.txt"] and len(texts) == 2
    assert "short.txt" in texts and texts.get("missing") is None


def test_they_compare_copy_and_pickle_as_the_dict_they_stand_for() -> None:
    texts = PackedTexts([("a", LONG), ("b", "x")])
    as_dict = {"a": LONG, "b": "x"}
    assert texts == as_dict and as_dict.__eq__(texts) is NotImplemented  # (then ours)
    assert dict.__eq__(as_dict, dict(texts))
    assert texts != {"a": LONG}
    assert pickle.loads(pickle.dumps(texts)) == texts
    assert copy.deepcopy(texts) == texts and dict(texts) == {"a": LONG, "b": "x"}
    del texts["b"]
    assert dict(texts) == {"a": LONG}


def test_a_replay_result_keeps_its_offloads_packed() -> None:
    result = ReplayResult(strategy="s", params={}, estimator="e", summarizer="m", message_count=0)
    assert isinstance(result.offloads, PackedTexts) and result.offloads == {}


def test_a_text_kept_as_it_is_is_not_packed() -> None:
    texts = PackedTexts()
    texts.keep("tool_results/a.txt", LONG)
    assert texts._packed["tool_results/a.txt"] is LONG  # (its conversation holds it)
    assert texts["tool_results/a.txt"] == LONG and texts == {"tool_results/a.txt": LONG}


def test_an_original_output_offloaded_whole_is_held_not_packed() -> None:
    """QwenPaw offloading an original message's very tool output: the offload holds that
    text (its conversation keeps it alive), no packed copy of it."""
    from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
    from ctxlab.engine.replay import run

    output = "line of a long tool output\n" * 3000
    conversation = Conversation(
        id="c",
        title="t",
        messages=(
            Message(role=Role.USER, blocks=(Block(BlockKind.TEXT, text="read it"),)),
            Message(
                role=Role.ASSISTANT,
                blocks=(Block(BlockKind.TOOL_USE, tool_id="t1", tool_name="read", tool_input={}),),
            ),
            Message(
                role=Role.TOOL,
                blocks=(Block(BlockKind.TOOL_RESULT, tool_id="t1", text=output),),
            ),
            Message(role=Role.ASSISTANT, blocks=(Block(BlockKind.TEXT, text="done"),)),
        ),
    )
    result = run(conversation, "qwenpaw")
    packed = result.offloads._packed  # type: ignore[attr-defined]
    assert len(packed) == 1
    assert next(iter(packed.values())) is conversation.messages[2].blocks[0].text
    assert list(result.offloads.values()) == [output]
