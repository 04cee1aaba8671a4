"""Vercel AI SDK pruneMessages (vercel/ai @ ed857f50).

Ported as tables from ``packages/ai/src/generate-text/prune-messages.test.ts``: reasoning
``all`` and ``before-last-message`` on fixture 1, toolCalls ``all``, ``before-last-message``
(fixtures 2 and the multi-turn AskUserQuestion fixture), ``before-last-2-messages`` and the
two-settings array form (one setting per run here: the tools list). Approval parts are not
in transcripts (not ported). Then: the replay's request view equals ``pruneMessages`` on the
whole history at every step (the incremental update is exact), on built sessions and on
every corpus transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import conv, system, user

from ctxlab.engine import cli
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.core.records import ReplayResult
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, STRATEGIES
from ctxlab.engine.strategies import vercel_prune_messages as vp

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def reasoning(text: str) -> Block:
    return Block(BlockKind.THINKING, text=text)


def text(t: str) -> Block:
    return Block(BlockKind.TEXT, text=t)


def tool_call(call_id: str, name: str) -> Block:
    return Block(BlockKind.TOOL_USE, tool_id=call_id, tool_name=name, tool_input={})


def tool_res(call_id: str, name: str, out: str) -> Block:
    return Block(BlockKind.TOOL_RESULT, tool_id=call_id, tool_name=name, text=out)


def asst(*blocks: Block) -> Message:
    return Message(Role.ASSISTANT, blocks)


def tool(*blocks: Block) -> Message:
    return Message(Role.USER, blocks)


FIXTURE_1 = [
    user("Weather in Tokyo and Busan?"),
    asst(reasoning("I need to get the weather in Tokyo and Busan."),
         tool_call("call-1", "get-weather-tool-1"), tool_call("call-2", "get-weather-tool-2")),
    tool(tool_res("call-1", "get-weather-tool-1", "sunny"),
         tool_res("call-2", "get-weather-tool-2", "Error: Fetching weather data failed")),
    asst(reasoning("I have got the weather in Tokyo and Busan."),
         text("The weather in Tokyo is sunny. I could not get the weather in Busan.")),
]  # fmt: skip
FIXTURE_2 = [
    user("Weather in Tokyo and Busan?"),
    asst(reasoning("I need to get the weather in Tokyo and Busan."),
         tool_call("call-1", "get-weather-tool-1"), tool_call("call-2", "get-weather-tool-2")),
]  # fmt: skip
MULTI_TURN = [
    user("ask me a question"),
    asst(text("What can i help you with"), tool_call("toolu_01P9", "AskUserQuestion")),
    tool(tool_res("toolu_01P9", "AskUserQuestion", "Something else")),
    asst(tool_call("toolu_01TM", "AskUserQuestion")),
    tool(tool_res("toolu_01TM", "AskUserQuestion", "Other - I'll describe it")),
    asst(text("What would you like to discuss or work on?")),
    user("never mind. lets end this conversation"),
    asst(text("ok, have a nice day")),
    user("thank you"),
]  # fmt: skip


def pruned(messages: list[Message], **options: Any) -> list[tuple[str, list[str]]]:
    """``pruneMessages`` on the fixture: each remaining message's role and parts."""
    entries = [e for i, m in enumerate(messages) for e in vp.entries_of(m, i)]
    opts = {"reasoning": "none", "tool_calls": "none", **options}
    changes = vp.prune(messages, entries, **opts)
    out = []
    for p, e in enumerate(entries):
        kept = changes.get(p, e.parts)
        if kept is None:
            continue
        blocks = messages[e.source].blocks
        out.append((e.role, [_part(blocks[q]) for q in kept]))
    return out


def _part(b: Block) -> str:
    kind = {BlockKind.THINKING: "reasoning", BlockKind.TOOL_USE: "tool-call",
            BlockKind.TOOL_RESULT: "tool-result"}.get(b.kind, "text")  # fmt: skip
    return f"{kind}:{b.tool_id}" if b.tool_id else kind


U, R, TXT = ("user", ["text"]), "reasoning", "text"


@pytest.mark.parametrize(
    ("messages", "options", "expected"),
    [
        (FIXTURE_1, {"reasoning": "all"}, [
            U, ("assistant", ["tool-call:call-1", "tool-call:call-2"]),
            ("tool", ["tool-result:call-1", "tool-result:call-2"]), ("assistant", [TXT])]),
        (FIXTURE_1, {"reasoning": "before-last-message"}, [
            U, ("assistant", ["tool-call:call-1", "tool-call:call-2"]),
            ("tool", ["tool-result:call-1", "tool-result:call-2"]), ("assistant", [R, TXT])]),
        (FIXTURE_1, {"tool_calls": "all"}, [U, ("assistant", [R]), ("assistant", [R, TXT])]),
        (FIXTURE_2, {"tool_calls": "before-last-message"}, [
            U, ("assistant", [R, "tool-call:call-1", "tool-call:call-2"])]),
        (MULTI_TURN, {"tool_calls": "before-last-message"}, [
            U, ("assistant", [TXT]), ("assistant", [TXT]), U, ("assistant", [TXT]), U]),
        (FIXTURE_1, {"tool_calls": "before-last-2-messages"}, [
            U, ("assistant", [R, "tool-call:call-1", "tool-call:call-2"]),
            ("tool", ["tool-result:call-1", "tool-result:call-2"]), ("assistant", [R, TXT])]),
        (FIXTURE_1, {"tool_calls": "all", "tools": frozenset({"get-weather-tool-1"})}, [
            U, ("assistant", [R, "tool-call:call-2"]), ("tool", ["tool-result:call-2"]),
            ("assistant", [R, TXT])]),
        (FIXTURE_1, {"tool_calls": "all", "empty_messages": "keep"}, [
            U, ("assistant", [R]), ("tool", []), ("assistant", [R, TXT])]),
        (FIXTURE_1, {"tool_calls": "before-last-0-messages"}, [  # 0 is falsy: nothing pruned
            U, ("assistant", [R, "tool-call:call-1", "tool-call:call-2"]),
            ("tool", ["tool-result:call-1", "tool-result:call-2"]), ("assistant", [R, TXT])]),
    ],
)  # fmt: skip
def test_prune_messages(messages: list[Message], options: dict[str, Any],
                        expected: list[tuple[str, list[str]]]) -> None:  # fmt: skip
    assert pruned(messages, **options) == expected


def test_tool_calls_values() -> None:
    assert [vp.keep_last(v) for v in ("none", "all", "before-last-message",
                                      "before-last-7-messages")] == [-1, None, 1, 7]  # fmt: skip
    with pytest.raises(ValueError, match="toolCalls"):
        STRATEGIES["vercel_prune_messages"]({"toolCalls": "before-last-x-messages"})


def test_registered_with_the_reference_page_defaults() -> None:
    assert "vercel_prune_messages" in LIBRARY
    params = {p.name: p.default for p in vp.VercelPruneMessagesStrategy.PARAMS}
    assert (params["reasoning"], params["toolCalls"], params["emptyMessages"]) == (
        "before-last-message", "before-last-2-messages", "remove")  # fmt: skip


# -- the replay's view is pruneMessages on the whole history, at every step --------------------


def views(res: ReplayResult) -> list[tuple[int, dict[int, tuple[Block, ...] | None]]]:
    """Per step: (source index, {source: blocks shown, None if left out}) for changed ones."""
    shown: dict[int, tuple[Block, ...] | None] = {}
    out = []
    for step in res.steps:
        for event in step.events:
            for change in event.changes:
                if change.fate.value == "dropped":
                    shown[change.index] = None
                elif change.fate.value == "restored":
                    shown.pop(change.index, None)
                elif change.message is not None:
                    shown[change.index] = change.message.blocks
        out.append((step.source_index, dict(shown)))
    return out


def expected_view(conv_: Conversation, upto: int, params: dict[str, Any],
                  turn_start: int) -> dict[int, tuple[Block, ...] | None]:  # fmt: skip
    """pruneMessages over the messages before ``turn_start`` (the last prune), the ones
    since shown whole."""
    s = vp.VercelPruneMessagesStrategy(params)
    msgs = conv_.messages
    first = 1 if msgs[0].role is Role.SYSTEM else 0
    entries = [e for i in range(first, turn_start) for e in vp.entries_of(msgs[i], i)]
    changes = vp.prune(msgs, entries, reasoning=s.params["reasoning"],
                       tool_calls=s.params["toolCalls"], tools=s.tools,
                       empty_messages=s.params["emptyMessages"])  # fmt: skip
    by_source: dict[int, list[int]] = {}
    for p, e in enumerate(entries):
        by_source.setdefault(e.source, []).append(p)
    out: dict[int, tuple[Block, ...] | None] = {}
    for src, ps in by_source.items():
        if not any(p in changes for p in ps):
            continue
        if all(changes.get(p, ...) is None for p in ps):
            out[src] = None
            continue
        kept = sorted(q for p in ps for q in (changes[p] if p in changes else entries[p].parts)
                      or ())  # fmt: skip
        out[src] = tuple(msgs[src].blocks[q] for q in kept)
    return out


def check_every_step(conv_: Conversation, params: dict[str, Any]) -> ReplayResult:
    res = run(conv_, "vercel_prune_messages", params=params)
    msgs = conv_.messages
    per_call = params.get("apply_at") == "call"
    last_prune = 0
    for source_index, shown in views(res):
        last = vp.entries_of(msgs[source_index - 1], 0)[-1] if source_index else None
        opens = last is not None and last.role == "user" and bool(last.parts)
        if per_call or opens:
            last_prune = source_index
        assert shown == expected_view(conv_, source_index, params, last_prune), source_index
    return res


SESSION = [system("sys"), *FIXTURE_1, user("next"), *MULTI_TURN[1:],
           asst(reasoning("think"), tool_call("z1", "Bash")), tool(tool_res("z1", "Bash", "ok")),
           asst(text("done")), user("more")]  # fmt: skip
CONFIGS = [
    {},
    {"apply_at": "call"},
    {"apply_at": "call", "toolCalls": "before-last-message", "reasoning": "all"},
    {"apply_at": "call", "toolCalls": "all", "emptyMessages": "keep"},
    {"apply_at": "call", "toolCalls": "before-last-3-messages", "tools": ["AskUserQuestion"]},
    {"apply_at": "call", "toolCalls": "none", "reasoning": "before-last-message"},
]


@pytest.mark.parametrize("params", CONFIGS)
def test_view_is_prune_messages_of_the_history_at_every_step(params: dict[str, Any]) -> None:
    res = check_every_step(conv(*SESSION), params)
    assert res.events or params.get("toolCalls") == "none"


CORPUS_FILES = sorted(
    p.relative_to(CORPUS).as_posix()
    for p in CORPUS.rglob("*")
    if p.is_file() and p.suffix not in {".md", ".tsv"} and not p.name.startswith(".")
)


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_replays_every_corpus_transcript(name: str) -> None:
    conversation = cli.load_file(CORPUS / name)
    for params in (CONFIGS[0], CONFIGS[2]):
        check_every_step(conversation, params)
