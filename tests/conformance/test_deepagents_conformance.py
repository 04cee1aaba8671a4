"""LangChain deepagents' SummarizationMiddleware (deepagents 0.7.8 over langchain 1.5.2)
against deepagents_summarization.

The original middleware runs its own ``wrap_model_call`` before every model call of the
replay, on the same LangChain messages (ctxlab's replay mapping, ``_langchain_tokens``), with
the transcript's system prompt and tool schemas in the request, a fake chat model (its
profile's ``max_input_tokens``, the replay's provider, a fixed summary) and a backend that
keeps the files it is given. At every step the messages it hands the model must be the ones
our request holds; at every summarisation the summary call's prompt must be ours byte for
byte and the offloaded history file ours (timestamps aside)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conformance_common import CORPUS_FILES, kept_by_step, load, sample

from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role, Usage
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse
from ctxlab.engine.replay import call_starts, run
from ctxlab.engine.strategies import _langchain_tokens as lc
from ctxlab.engine.strategies import deepagents_summarization as ours

summ = pytest.importorskip(
    "deepagents.middleware.summarization", reason="deepagents not installed (make conformance)"
)
messages_mod = pytest.importorskip("langchain_core.messages")
chat_models = pytest.importorskip("langchain_core.language_models.chat_models")
outputs = pytest.importorskip("langchain_core.outputs")
types_mod = pytest.importorskip("langchain.agents.middleware.types")

SUMMARY = "## SESSION INTENT\nReplay the session.\n\n## NEXT STEPS\nNone"
STAMP = re.compile(r"^## Summarized at .*$", re.M)
PROMPTS: list[str] = []  # the summary calls the fake model answered


class FakeModel(chat_models.BaseChatModel):  # type: ignore[misc,name-defined]
    """Answers every call with SUMMARY and keeps the prompts it saw (in PROMPTS)."""

    @property
    def _llm_type(self) -> str:
        return "fake-replay"

    def _get_ls_params(self, stop: Any = None, **kwargs: Any) -> dict[str, Any]:
        return {"ls_provider": lc.REPLAY_PROVIDER, "ls_model_type": "chat"}

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:  # fmt: skip
        PROMPTS.append(messages[-1].text)
        message = messages_mod.AIMessage(SUMMARY)
        return outputs.ChatResult(generations=[outputs.ChatGeneration(message=message)])


class Result:
    def __init__(self, error: str | None = None) -> None:
        self.error = error


class Download:
    def __init__(self, content: bytes | None) -> None:
        self.content = content
        self.error = None if content is not None else "file_not_found"


class Backend:
    """The BackendProtocol calls the offload makes: download_files, write, edit."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def download_files(self, paths: list[str]) -> list[Download]:
        return [Download(self.files[p].encode() if p in self.files else None) for p in paths]

    def write(self, path: str, content: str) -> Result:
        self.files[path] = content
        return Result()

    def edit(self, path: str, old: str, new: str) -> Result:
        assert self.files.get(path) == old
        self.files[path] = new
        return Result()


class Echo:
    name = "echo"

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.requests.append(request)
        return SummaryResponse(text=SUMMARY)


def to_langchain(message: lc.LcMessage) -> Any:
    m = messages_mod
    content = message.content if isinstance(message.content, str) else list(message.content)
    if message.type == lc.AI:
        usage = None
        if message.total_tokens is not None:
            usage = {"input_tokens": message.total_tokens, "output_tokens": 0,
                     "total_tokens": message.total_tokens}  # fmt: skip
        return m.AIMessage(content=content, tool_calls=[dict(c) for c in message.tool_calls],
                           usage_metadata=usage,
                           response_metadata={"model_provider": message.model_provider})  # fmt: skip
    if message.type == lc.TOOL:
        return m.ToolMessage(content=content, tool_call_id=message.tool_call_id,
                             name=message.name or None)  # fmt: skip
    return m.HumanMessage(content=content)


class Driver:
    """The agent loop as the replay maps it: before each call, the original's
    ``wrap_model_call`` over the state's messages so far; its state update applied."""

    def __init__(self, conversation: Conversation, params: dict[str, Any]) -> None:
        self.conversation = conversation
        self.model = FakeModel(profile={"max_input_tokens": params["max_input_tokens"]})
        PROMPTS.clear()
        self.backend = Backend()
        strategy = ours.DeepAgentsSummarizationStrategy(params)
        trim = params.get("trim_tokens_to_summarize", 0) or None
        self.mw = summ.SummarizationMiddleware(
            model=self.model, backend=self.backend, trigger=_tuples(params["trigger"]),
            keep=tuple(params["keep"]), trim_tokens_to_summarize=trim,
            truncate_args_settings=_truncate(params["truncate_args_settings"]),
        )  # fmt: skip
        assert strategy.clauses == self.mw._lc_helper._trigger_clauses
        system = conversation.messages[0] if conversation.messages else None
        self.system = (
            messages_mod.SystemMessage(system.text)
            if system is not None and system.role.value == "system" and system.text
            else None
        )
        self.tools = [ours.tool_dict(t) for t in conversation.tools]
        self.state: dict[str, Any] = {"messages": [],
                                      "_summarization_session_id": ours.SESSION_ID}  # fmt: skip
        self.sources: dict[str, int] = {}  # LangChain message id -> source index
        self.tool_names: dict[str, str] = {}

    def append(self, index: int) -> None:
        message = self.conversation.messages[index]
        for block in message.blocks:
            if block.kind.value == "tool_use" and block.tool_id:
                self.tool_names[block.tool_id] = block.tool_name
        for k, item in enumerate(lc.to_lc_messages(message, index, tool_names=self.tool_names)):
            converted = to_langchain(item)
            converted.id = f"{index}.{k}"  # kept by the argument truncation's model_copy
            self.sources[converted.id] = index
            self.state["messages"].append(converted)

    def call(self) -> set[int]:
        seen: list[Any] = []

        def handler(request: Any) -> Any:
            seen.extend(request.messages)
            return types_mod.ModelResponse(result=[messages_mod.AIMessage("ok")])

        request = types_mod.ModelRequest(
            model=self.model, messages=list(self.state["messages"]),
            system_message=self.system, tools=self.tools, state=self.state,
        )  # fmt: skip
        response = self.mw.wrap_model_call(request, handler)
        if isinstance(response, types_mod.ExtendedModelResponse):
            self.state.update(response.command.update)
        return {self.sources[m.id] for m in seen if m.id in self.sources}


def _tuples(value: Any) -> Any:
    if isinstance(value, list) and value and isinstance(value[0], str):
        return tuple(value)
    if isinstance(value, list):
        return [_tuples(v) for v in value]
    return value


def _truncate(value: Any) -> Any:
    if value is None:
        return None
    return {k: tuple(v) if isinstance(v, list) else v for k, v in value.items()}


def compare(file: str | Conversation, params: dict[str, Any], most: int = 40) -> int:
    """Replays ``file`` both ways; returns how many summarisations happened."""
    conversation = load(file) if isinstance(file, str) else file
    echo = Echo()
    result = run(conversation, ours.DeepAgentsSummarizationStrategy.name, params=params,
                 summarizer=echo)  # fmt: skip
    driver = Driver(conversation, params)
    first = 1 if driver.system is not None else 0
    ours_kept = dict(kept_by_step(result, conversation))
    starts = call_starts(conversation.messages)
    checked = sample(sorted(ours_kept), most)
    appended = first
    for start in starts:
        if start not in ours_kept:
            continue
        while appended < start:
            driver.append(appended)
            appended += 1
        theirs = driver.call()
        if start in checked or PROMPTS:
            assert theirs == ours_kept[start], (file, start, sorted(theirs ^ ours_kept[start]))
    # The summary calls: the same prompts, in order.
    assert [r.messages[0].text for r in echo.requests] == PROMPTS
    # The offloaded history: the same sections, timestamps aside.
    theirs_file = driver.backend.files.get(ours.HISTORY_PATH, "")
    sections = (ours.history_section(k + 1) for k in range(len(result.offloads)))
    ours_file = "".join(result.offloads[path] for path in sections)
    assert STAMP.sub("## Summarized at", theirs_file) == STAMP.sub("## Summarized at", ours_file)
    return len(PROMPTS)


SMALL = {"max_input_tokens": 12000, "trigger": ["fraction", 0.5], "keep": ["fraction", 0.1],
         "truncate_args_settings": {"trigger": ["fraction", 0.5], "keep": ["fraction", 0.1]}}  # fmt: skip
PARAMS: list[dict[str, Any]] = [
    SMALL,
    {**SMALL, "trigger": ["tokens", 4000], "keep": ["messages", 6],
     "truncate_args_settings": {"trigger": ["messages", 20], "keep": ["messages", 20]}},
    {**SMALL, "trigger": [{"tokens": 3000, "messages": 12}, ["messages", 40]],
     "keep": ["tokens", 1500], "trim_tokens_to_summarize": 800},
]  # fmt: skip


@pytest.mark.parametrize("params", PARAMS, ids=["fraction", "tokens-messages", "clauses-trim"])
@pytest.mark.parametrize("file", CORPUS_FILES)
def test_same_kept_set_prompt_and_offload(file: str, params: dict[str, Any]) -> None:
    compare(file, params)


def test_the_corpus_summarises() -> None:
    # Not vacuous: the small windows make the original summarise on the real sessions.
    total = sum(compare(f, SMALL) for f in CORPUS_FILES[:6])
    assert total > 0


def test_prompt_is_the_originals() -> None:
    assert ours.DEEPAGENTS_SUMMARY_PROMPT == summ.DEEPAGENTS_DEFAULT_SUMMARY_PROMPT


def test_defaults_are_create_deep_agents() -> None:
    model = FakeModel(profile={"max_input_tokens": 200_000})
    defaults = summ.compute_summarization_defaults(model)
    params = ours.DeepAgentsSummarizationStrategy().params
    assert tuple(params["trigger"]) == defaults["trigger"]
    assert tuple(params["keep"]) == defaults["keep"]
    assert {k: tuple(v) for k, v in params["truncate_args_settings"].items()} == dict(
        defaults["truncate_args_settings"]
    )


@pytest.mark.parametrize("reported", [0, 2999, 3000, 6000])
def test_compact_tool_gate_is_the_originals(reported: int) -> None:
    mw = summ.SummarizationMiddleware(model=FakeModel(profile={"max_input_tokens": 10000}),
                                      backend=Backend(), trigger=("tokens", 6000))  # fmt: skip
    tool = summ.SummarizationToolMiddleware(mw)
    m = messages_mod
    usage = {"input_tokens": reported, "output_tokens": 0, "total_tokens": reported}
    history = [m.HumanMessage("hi"),
               m.AIMessage("a", usage_metadata=usage,
                           response_metadata={"model_provider": lc.REPLAY_PROVIDER})]  # fmt: skip
    strategy = ours.DeepAgentsSummarizationStrategy({"trigger": ["tokens", 6000]})
    state = strategy.State()
    state.messages = [lc.LcMessage(lc.HUMAN, "hi"),
                      lc.LcMessage(lc.AI, "a", total_tokens=reported,
                                   model_provider=lc.REPLAY_PROVIDER)]  # fmt: skip
    state.last_ai = state.messages[-1]
    assert (strategy.compact_eligible(state) is not None) == tool._is_eligible_for_compaction(
        history
    )


TOOLS_FILE = "anthropic-messages/claude-trace-req34-request.json"  # a 534-token tool schema


@pytest.mark.parametrize("trigger", range(4000, 10800, 250))
def test_system_prompt_and_tool_schemas_count(trigger: int) -> None:
    # Triggers every 250 tokens over the session's growth: some fire one call earlier
    # because the tool schema and the system prompt count with the messages.
    assert load(TOOLS_FILE).tools
    compare(TOOLS_FILE, {**SMALL, "max_input_tokens": 200_000, "trigger": ["tokens", trigger],
                         "keep": ["messages", 4], "truncate_args_settings": None})  # fmt: skip


def written_session(turns: int) -> Conversation:
    """A deep agent writing files: write_file / edit_file calls with long arguments."""
    out: list[Message] = [Message(Role.SYSTEM, (Block(BlockKind.TEXT, text="You write."),))]
    for k in range(turns):
        name = "write_file" if k % 2 else "edit_file"
        args = {"file_path": f"/src/m{k}.py", "content": f"x = {k}\n" * (300 + 40 * k),
                "mode": "w"}  # fmt: skip
        use = Block(BlockKind.TOOL_USE, tool_id=f"c{k}", tool_name=name, tool_input=args)
        seen = 400 * (k + 1)
        out += [
            Message(Role.USER, (Block(BlockKind.TEXT, text=f"write module {k}"),)),
            Message(Role.ASSISTANT, (Block(BlockKind.TEXT, text="ok"), use),
                    usage=Usage(input_uncached=seen)),
            Message(Role.USER, (Block(BlockKind.TOOL_RESULT, tool_id=f"c{k}", text="done"),)),
            Message(Role.ASSISTANT, (Block(BlockKind.TEXT, text=f"wrote {k}"),),
                    usage=Usage(input_uncached=seen + 10)),
        ]  # fmt: skip
    return Conversation(id="w", title="written", messages=tuple(out))


@pytest.mark.parametrize(
    "settings",
    [
        {"trigger": ["messages", 12], "keep": ["messages", 6], "max_length": 500},
        {"trigger": ["tokens", 5000], "keep": ["tokens", 3000]},
        {"trigger": ["fraction", 0.3], "keep": ["fraction", 0.1],
         "truncation_text": "[cut]"},
    ],
)  # fmt: skip
def test_argument_truncation(settings: dict[str, Any]) -> None:
    params = {**SMALL, "max_input_tokens": 30_000, "trigger": ["tokens", 20_000],
              "keep": ["messages", 8], "truncate_args_settings": settings}  # fmt: skip
    compare(written_session(14), params, most=100)
    # Summaries after the clipping: their prompts and the offload hold the clipped calls.
    assert compare(written_session(14), {**params, "trigger": ["messages", 30]}, most=100)
