"""Semantic Kernel's reducers (semantic-kernel 1.45.0, the same history_reducer code as the
pinned commit b39d95a3) against semantic_kernel_truncation and
semantic_kernel_summarization: the same messages (one SK ``ChatMessageContent`` per entry of
``_chat_history.split``: function calls and results as ``FunctionCallContent`` /
``FunctionResultContent`` items, each result a ``TOOL`` message) are added to the original
reducer in order, ``reduce()`` is awaited where our replay reduces, and at every step the
original's history must hold exactly the messages our replay's request holds. For the
summariser, the messages the original hands its service must be the ones our request
summarises."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import cli
from ctxlab.engine.core.model import BlockKind, Conversation, Role
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import STRATEGIES
from ctxlab.engine.strategies import _chat_history as ch

pytest.importorskip("semantic_kernel", reason="semantic-kernel not installed (make conformance)")
from semantic_kernel.connectors.ai.chat_completion_client_base import (  # noqa: E402
    ChatCompletionClientBase,
)
from semantic_kernel.contents import (  # noqa: E402
    ChatMessageContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
)
from semantic_kernel.contents.history_reducer.chat_history_summarization_reducer import (  # noqa: E402
    ChatHistorySummarizationReducer,
)
from semantic_kernel.contents.history_reducer.chat_history_truncation_reducer import (  # noqa: E402
    ChatHistoryTruncationReducer,
)
from semantic_kernel.contents.utils.author_role import AuthorRole  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
FILES = sorted(
    p.relative_to(CORPUS).as_posix()
    for p in CORPUS.rglob("*")
    if p.is_file() and p.suffix not in {".md", ".tsv"} and not p.name.startswith(".")
)
ROLES = {"system": AuthorRole.SYSTEM, "user": AuthorRole.USER,
         "assistant": AuthorRole.ASSISTANT, "tool": AuthorRole.TOOL}  # fmt: skip
SETTINGS: tuple[dict[str, Any], ...] = (
    {},  # the sample's target 3, threshold 2, reduce before each user turn
    {"target_count": 12, "threshold_count": 4, "reduce_at": "call"},
    {"target_count": 5, "threshold_count": 0, "reduce_at": "call",
     "system_message_in_history": False},
)  # fmt: skip


class Echo:
    name = "echo"

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.requests.append(request)
        return SummaryResponse(text=f"SUMMARY {len(self.requests)}")


def sk_message(conversation: Conversation, entry: ch.Chat) -> ChatMessageContent:
    message = conversation.messages[entry.source]
    items: list[Any] = []
    for pos in entry.parts:
        b = message.blocks[pos]
        if b.kind is BlockKind.TOOL_USE:
            items.append(FunctionCallContent(id=b.tool_id, function_name=b.tool_name or "tool",
                                             arguments="{}"))  # fmt: skip
        elif b.kind is BlockKind.TOOL_RESULT:
            items.append(FunctionResultContent(id=b.tool_id, function_name=b.tool_name or "tool",
                                               result=b.text))  # fmt: skip
        elif b.text:
            items.append(TextContent(text=b.text))
    return ChatMessageContent(role=ROLES[entry.role], items=items)


def fake_service(summaries: list[list[ChatMessageContent]]) -> Any:
    """A chat service (a mock of the base class, as SK's own tests use) answering each
    summary request with a new summary message and keeping what it was sent."""
    from unittest.mock import AsyncMock, MagicMock

    async def answer(chat_history: Any, settings: Any) -> ChatMessageContent:
        summaries.append(list(chat_history.messages))
        return ChatMessageContent(role=AuthorRole.ASSISTANT, content=f"SUMMARY {len(summaries)}")

    service = MagicMock(spec=ChatCompletionClientBase)
    settings = MagicMock(spec=["instruction_role"], instruction_role=AuthorRole.SYSTEM)
    service.configure_mock(**{
        "get_prompt_execution_settings_from_settings.return_value": settings,
        "get_chat_message_content": AsyncMock(side_effect=answer),
    })  # fmt: skip
    return service


def compare(file: str, name: str, params: dict[str, Any]) -> int:
    conversation = cli.load_file(CORPUS / file)
    echo = Echo()
    result = run(conversation, name, params=params, summarizer=echo)
    p = STRATEGIES[name](params).params
    summaries: list[list[ChatMessageContent]] = []
    kwargs: dict[str, Any] = {"target_count": p["target_count"],
                              "threshold_count": p["threshold_count"]}  # fmt: skip
    if name == "semantic_kernel_summarization":
        reducer: Any = ChatHistorySummarizationReducer(
            service=fake_service(summaries), **kwargs,
            include_function_content_in_summary=p["include_function_content_in_summary"],
            use_single_summary=p["use_single_summary"],
        )  # fmt: skip
    else:
        reducer = ChatHistoryTruncationReducer(**kwargs)
    source_of: dict[int, int] = {}  # by id(): every message made stays alive (``made``)
    made: list[ChatMessageContent] = []
    msgs = conversation.messages
    if msgs and msgs[0].role is Role.SYSTEM and p["system_message_in_history"]:
        system = ChatMessageContent(role=AuthorRole.SYSTEM, content=msgs[0].text)
        reducer.messages.append(system)
        source_of[id(system)] = 0
    steps = {s.source_index: s for s in result.steps}
    turn_open = False
    checked = 0
    first = 1 if msgs and msgs[0].role is Role.SYSTEM else 0
    for i in range(first, len(msgs)):
        if i in steps:
            if p["reduce_at"] == "call" or turn_open:
                asyncio.run(reducer.reduce())
            turn_open = False
            theirs = {source_of[id(m)] for m in reducer.messages if id(m) in source_of} - {0}
            ours = set(steps[i].context_indexes) - {0}
            assert theirs == ours, (file, i)
            checked += 1
        for entry in ch.split(msgs[i], i):
            m = sk_message(conversation, entry)
            made.append(m)
            source_of[id(m)] = i
            reducer.messages.append(m)
        if entry.role == "user" and any(
            b.kind is not BlockKind.TOOL_RESULT for b in msgs[i].blocks
        ):
            turn_open = True
    if name == "semantic_kernel_summarization":
        assert len(summaries) == len(echo.requests), file
        for theirs_in, ours_req in zip(summaries, echo.requests, strict=True):
            # the messages summarised, in the order given (-1: an earlier summary), then the
            # instruction message
            assert [source_of.get(id(m), -1) for m in theirs_in[:-1]] == [
                m.index for m in ours_req.material
            ], file
            assert theirs_in[-1].content == ours_req.messages[-1].text
    return checked


@pytest.mark.parametrize("params", SETTINGS)
@pytest.mark.parametrize("name", ["semantic_kernel_truncation", "semantic_kernel_summarization"])
@pytest.mark.parametrize("file", FILES)
def test_same_kept_messages_as_the_original(file: str, name: str, params: dict[str, Any]) -> None:
    if name == "semantic_kernel_truncation" and "include_function_content_in_summary" in params:
        pytest.skip("a summariser option")
    assert compare(file, name, params) >= 0


@pytest.mark.parametrize("file", FILES[:12])
def test_summary_with_function_content_in_pairs(file: str) -> None:
    compare(file, "semantic_kernel_summarization",
            {"target_count": 8, "threshold_count": 2, "reduce_at": "call",
             "include_function_content_in_summary": True})  # fmt: skip
