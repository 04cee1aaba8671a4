"""Strands Agents' conversation managers (strands-agents 1.40.0) against
strands_sliding_window and strands_summarizing.

The originals run inside a small driver that stands in for the agent loop as our replay
maps it (``agent.py``: ``apply_management`` when an invocation ends, i.e. before the next
user prompt; ``BeforeModelCallEvent`` hooks before every model call, retries included; a
request over ``context_window_limit`` by Strands' own estimator,
``strands.models.model._estimate_tokens_with_heuristic``, raises
``ContextWindowOverflowException``, ``reduce_context(e=...)`` then a retry). Everything the
managers decide (trim points, truncation, what is summarised) is the original's code; at
every step the messages of ``agent.messages`` must be the ones our request holds."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from conformance_common import CORPUS_FILES, kept_by_step, load

from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse
from ctxlab.engine.replay import call_starts, run
from ctxlab.engine.strategies import _agent_units as au

cm = pytest.importorskip(
    "strands.agent.conversation_manager", reason="strands-agents not installed (make conformance)"
)
heuristic = pytest.importorskip("strands.models.model")._estimate_tokens_with_heuristic
Overflow = pytest.importorskip("strands.types.exceptions").ContextWindowOverflowException

SUMMARY = "## Conversation Summary\n* Topic 1: what the conversation covered"
MAX_RETRIES = 100


def item(block: Block) -> dict[str, Any] | None:
    if block.kind is BlockKind.TEXT:
        return {"text": block.text}
    if block.kind is BlockKind.MEDIA and block.media_type.startswith("image"):
        fmt = block.media_type.split("/")[-1]
        return {"image": {"format": fmt, "source": {"bytes": b"\0" * block.size}}}
    return None


def content(message: Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in message.blocks:
        if b.kind is BlockKind.TEXT:
            out.append({"text": b.text})
        elif b.kind is BlockKind.THINKING:
            out.append({"reasoningContent": {"reasoningText": {"text": b.text}}})
        elif b.kind is BlockKind.TOOL_USE:
            value = b.tool_input if b.tool_input is not None else {}
            out.append({"toolUse": {"toolUseId": b.tool_id, "name": b.tool_name, "input": value}})
        elif b.kind is BlockKind.TOOL_RESULT:
            parts = b.parts or ((Block(BlockKind.TEXT, b.text),) if b.text else ())
            items = [i for i in (item(p) for p in parts) if i is not None]
            out.append({"toolResult": {"toolUseId": b.tool_id, "content": items,
                                       "status": "error" if b.is_error else "success"}})  # fmt: skip
    return out


class Driver:
    """The agent loop around a manager, over one conversation."""

    def __init__(
        self, manager: Any, conversation: Conversation, limit: int, *, summarizing: bool
    ) -> None:
        self.manager = manager
        self.summarizing = summarizing
        self.conversation = conversation
        self.limit = limit
        self.agent = SimpleNamespace(messages=[], model=SimpleNamespace(context_window_limit=limit))
        self.sources: dict[int, list[int]] = {}  # id(message dict) -> source indexes
        self.alive: list[dict[str, Any]] = []  # every dict made here: no id is reused
        first = conversation.messages[0] if conversation.messages else None
        self.system = first.text if first is not None and first.role is Role.SYSTEM else None
        self.tools = [{"name": t.name, "description": t.description,
                       "inputSchema": {"json": t.parameters}} for t in conversation.tools]  # fmt: skip

    def tokens(self) -> int:
        return int(heuristic(self.agent.messages, self.tools or None, self.system))

    def before_call(self) -> None:
        m = self.manager
        for _ in range(MAX_RETRIES):
            event = SimpleNamespace(agent=self.agent, projected_input_tokens=self.tokens())
            m._on_before_model_call_threshold(event)
            if hasattr(m, "_on_before_model_call"):
                m._on_before_model_call(event)
            tokens = self.tokens()
            if tokens <= self.limit:
                return
            try:
                m.reduce_context(self.agent, e=Overflow("overflow"))
            except Overflow:
                return
            if self.summarizing and self.tokens() >= tokens:
                return  # a summary that saved nothing: Strands retries for ever, we stop

    def kept(self) -> set[int]:
        return {i for msg in self.agent.messages for i in self.sources.get(id(msg), [])}

    def has_summary(self) -> bool:
        return any(id(msg) not in self.sources for msg in self.agent.messages)

    def replay(self) -> dict[int, tuple[set[int], bool]]:
        starts = set(call_starts(self.conversation.messages))
        units: list[au.Unit] = []
        out: dict[int, tuple[set[int], bool]] = {}
        calls = 0
        for i, message in enumerate(self.conversation.messages):
            if message.role is Role.SYSTEM and i == 0:
                continue
            if i in starts:
                calls += 1
                self.before_call()
                out[i] = (self.kept(), self.has_summary())
            last = units[-1] if units else None
            messages = self.agent.messages
            if last is not None and au.continues(last, message) and messages and \
                    self.sources.get(id(messages[-1]), [None])[-1] == last.sources[-1]:  # fmt: skip
                messages[-1]["content"].extend(content(message))
                self.sources[id(messages[-1])].append(i)
            else:
                if calls and message.role is not Role.ASSISTANT and not au.results_only(message):
                    self.manager.apply_management(self.agent)
                role = "assistant" if message.role is Role.ASSISTANT else "user"
                msg = {"role": role, "content": content(message)}
                messages.append(msg)
                self.alive.append(msg)
                self.sources[id(msg)] = [i]
            au.add(units, message, i)
        return out


class Echo:
    name = "echo"

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        return SummaryResponse(text=SUMMARY)


def fixed_summary(messages: list[Any], agent: Any) -> dict[str, Any]:
    """The original's ``_generate_summary``, its model call answered with SUMMARY (the
    request itself is checked apart)."""
    return {"role": "user", "content": [{"text": SUMMARY}]}


def proactive(params: dict[str, Any]) -> dict[str, float] | None:
    share = float(params.get("proactive_compression", 0.0))
    return {"compression_threshold": share} if share else None


def compare(name: str, manager: Any, params: dict[str, Any], file: str) -> None:
    conversation = load(file)
    limit = int(params.get("context_window_limit", 200_000))
    theirs = Driver(
        manager, conversation, limit, summarizing=name == "strands_summarizing"
    ).replay()
    result = run(conversation, name, params=params, summarizer=Echo())
    ours = dict(kept_by_step(result, conversation))
    summaries = {s.source_index: s.summary_id is not None for s in result.steps}
    assert set(ours) == set(theirs)
    for step, kept in ours.items():
        assert theirs[step][0] == kept, (file, step)
        assert theirs[step][1] == summaries[step], (file, step)


SLIDING = [
    {"window_size": 6, "context_window_limit": 3000},
    {"window_size": 10, "context_window_limit": 8000, "should_truncate_results": False},
    {"window_size": 4, "per_turn": 2, "context_window_limit": 5000},
    {"window_size": 40, "proactive_compression": 0.5, "context_window_limit": 6000},
    {"window_size": 0, "context_window_limit": 4000},
]


@pytest.mark.parametrize("file", CORPUS_FILES)
@pytest.mark.parametrize("params", SLIDING, ids=[str(i) for i in range(len(SLIDING))])
def test_sliding_window(file: str, params: dict[str, Any]) -> None:
    per_turn = int(params.get("per_turn", 0))
    manager = cm.SlidingWindowConversationManager(
        window_size=params["window_size"],
        should_truncate_results=params.get("should_truncate_results", True),
        per_turn=per_turn if per_turn > 1 else bool(per_turn),
        proactive_compression=proactive(params),
    )
    compare("strands_sliding_window", manager, params, file)


SUMMARIZING = [
    {"context_window_limit": 3000, "preserve_recent_messages": 4},
    {"context_window_limit": 8000},
    {"context_window_limit": 20000, "proactive_compression": 0.3, "summary_ratio": 0.5,
     "preserve_recent_messages": 2},
]  # fmt: skip


@pytest.mark.parametrize("file", CORPUS_FILES)
@pytest.mark.parametrize("params", SUMMARIZING, ids=[str(i) for i in range(len(SUMMARIZING))])
def test_summarizing(file: str, params: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    manager = cm.SummarizingConversationManager(
        summary_ratio=params.get("summary_ratio", 0.3),
        preserve_recent_messages=params.get("preserve_recent_messages", 10),
        proactive_compression=proactive(params),
    )
    monkeypatch.setattr(manager, "_generate_summary", fixed_summary)
    compare("strands_summarizing", manager, params, file)


def test_summary_request_is_the_originals() -> None:
    """The model call ``_generate_summary_with_model`` makes: system prompt and the last
    user message, as our request sends them."""
    from ctxlab.engine.strategies import strands_summarizing as ss

    sent: dict[str, Any] = {}

    class Model:
        def stream(self, messages: list[Any], tool_specs: Any = None,
                   system_prompt: str | None = None) -> Any:  # fmt: skip
            sent.update(messages=messages, system_prompt=system_prompt, tool_specs=tool_specs)
            raise RuntimeError("stop here")

    manager = cm.SummarizingConversationManager()
    agent = SimpleNamespace(model=Model())
    with pytest.raises(RuntimeError, match="stop here"):
        manager._generate_summary_with_model([{"role": "user", "content": [{"text": "hi"}]}],
                                             agent)  # fmt: skip
    assert sent["system_prompt"] == ss.DEFAULT_SUMMARIZATION_PROMPT
    assert sent["messages"][-1] == {"role": "user",
                                    "content": [{"text": ss.SUMMARIZE_REQUEST}]}  # fmt: skip
    assert sent["tool_specs"] is None
