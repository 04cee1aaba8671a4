"""Anthropic server-side compaction (compact_20260112): the trigger and its range from the
SDK types, the boundary as the API applies it, the recorded compaction block as the summary,
and the recorded pydantic-ai exchange replayed."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.core.records import Fate
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES
from ctxlab.engine.strategies.anthropic_server_compaction import (
    STAND_IN_PROMPT,
    compaction_text,
    without_compaction,
)
from tests.engine.builders import assistant, conv, system, user

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
CASSETTE = "api-cassettes/pydanticai-test_anthropic_compaction_end_to_end.yaml"
NAME = "anthropic_server_compaction"
WORDS = "the quick brown fox jumps over the lazy dog " * 1_200  # ~10,800 tokens


def long_conv(turns: int) -> object:
    msgs: list[Message] = [system()]
    for i in range(turns):
        msgs += [user(f"part {i}: {WORDS}"), assistant(f"noted {i}")]
    return conv(*msgs)


def block_message(summary: str, text: str) -> Message:
    return Message(
        Role.ASSISTANT,
        (
            Block(BlockKind.OPAQUE, text=summary, raw_type="compaction"),
            Block(BlockKind.TEXT, text=text),
        ),
        flags=frozenset({"compact_summary"}),
    )


def test_registered_with_the_sdk_defaults_and_range() -> None:
    cls = STRATEGIES[NAME]
    assert NAME in LIBRARY and NAME not in PRESETS
    assert all(p.origin and p.help for p in cls.PARAMS)
    params = cls().params
    assert params["trigger"] == 150_000 and params["pause_after_compaction"] is False
    with pytest.raises(ValueError, match="trigger"):
        cls({"trigger": 49_999})  # the API's minimum is 50,000
    assert cls.window_params(200_000) == {"context_window": 200_000, "trigger": 150_000}
    assert cls.window_params(60_000)["trigger"] == 50_000  # kept at the minimum


@pytest.mark.parametrize(("turns", "trigger", "compactions"), [(4, 50_000, 0), (6, 50_000, 1)])
def test_compacts_when_a_request_reaches_the_trigger(
    turns: int, trigger: int, compactions: int
) -> None:
    res = run(long_conv(turns), NAME, params={"trigger": trigger})
    events = [e for e in res.events if e.kind == "compact"]
    assert len(events) == compactions
    for event in events:
        assert event.tokens_before >= trigger > event.tokens_after
        # The whole conversation goes: the request is system + tools + the block.
        removed = {c.index for c in event.changes if c.fate is Fate.SUMMARISED}
        assert removed == set(range(1, 2 * (event.step + 1)))


def test_the_block_is_summarised_again_at_the_next_compaction() -> None:
    res = run(long_conv(12), NAME, params={"trigger": 50_000, "summary_source": "summariser"})
    events = [e for e in res.events if e.kind == "compact"]
    assert len(events) >= 2 and len(res.summaries) == len(events)
    # The second pass reads the first block (first in its messages) and only newer turns.
    first = res.summaries[0].output
    assert first and first[:40] in res.summaries[1].input
    second_removed = {c.index for c in events[1].changes}
    first_removed = {c.index for c in events[0].changes}
    assert not second_removed & first_removed


def test_instructions_replace_the_prompt() -> None:
    params = {"trigger": 50_000, "summary_source": "summariser", "instructions": "Keep names."}
    res = run(long_conv(6), NAME, params=params)
    assert res.summaries and res.summaries[0].input.rstrip().endswith("Keep names.")
    default = run(long_conv(6), NAME, params={"trigger": 50_000, "summary_source": "summariser"})
    assert default.summaries[0].input.rstrip().endswith(STAND_IN_PROMPT)


def test_recorded_block_is_the_summary_and_leaves_the_message() -> None:
    msgs: list[Message] = [system()]
    for i in range(4):  # ~43k: the request with the fifth part reaches 50k
        msgs += [user(f"part {i}: {WORDS}"), assistant(f"noted {i}")]
    msgs += [user(f"last: {WORDS}"), block_message("SERVER SUMMARY", "hello"), user("next?")]
    msgs.append(assistant("answer"))
    res = run(conv(*msgs), NAME, params={"trigger": 50_000})
    (compact,) = [e for e in res.events if e.kind == "compact"]
    assert compact.detail["summary_source"] == "recorded compaction block"
    assert not res.summaries  # no summariser call: the server's own summary
    (sanitize,) = [e for e in res.events if e.kind == "sanitize"]
    (change,) = sanitize.changes
    assert change.message is not None and change.message.text == "hello"


def test_block_helpers() -> None:
    msg = block_message("S", "t")
    assert compaction_text(msg) == "S"
    assert compaction_text(without_compaction(msg)) is None
    assert [b.text for b in without_compaction(msg).blocks] == ["t"]
    null_block = Message(Role.ASSISTANT, (Block(BlockKind.OPAQUE, raw_type="compaction"),))
    assert compaction_text(null_block) is None  # null content: the server's no-op


def test_recorded_exchange_replayed() -> None:
    conversation = importers.parse((CORPUS / CASSETTE).read_bytes(), name=CASSETTE).conversations[0]
    res = run(conversation, NAME, params={"trigger": 50_000})
    (compact,) = [e for e in res.events if e.kind == "compact"]
    # The API compacted the first request (55,196 Claude tokens); cl100k sees it over 50k too.
    assert compact.step == 0 and compact.tokens_before >= 50_000
    assert compact.detail["summary_source"] == "recorded compaction block"
    # After it the request is the system prompt + the summary: a few hundred tokens (the
    # API's message pass read 220), not 50k.
    assert all(step.tokens.strategy < 500 for step in res.steps)
    untouched = run(conversation, NAME)  # default trigger 150,000: never reached
    assert not [e for e in untouched.events if e.kind == "compact"]


def test_native_config_is_the_request_context_management() -> None:
    import json

    from ctxlab.engine.native_config import native_config

    default = native_config(NAME)
    assert json.loads(default.text) == {
        "edits": [
            {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 150000}}
        ]
    }
    tuned = native_config(
        NAME, {"trigger": 60_000, "instructions": "Keep names.", "pause_after_compaction": True}
    )
    (edit,) = tuned.content["edits"]
    assert edit["trigger"]["value"] == 60_000 and edit["instructions"] == "Keep names."
    assert edit["pause_after_compaction"] is True and not tuned.unexpressed
    assert native_config(NAME, {"summary_source": "summariser"}).unexpressed == (
        ("summary_source", "summariser"),
    )
