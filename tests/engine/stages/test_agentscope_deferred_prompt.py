"""QwenPaw's and CoPaw's compactor user message is made when read
(``stages.deferred_prompt``), its size summed from the formatted parts
(``agentscope.formatted_size``): the size equals the text's, the text equals the one made
eagerly (the formatted messages joined into ``user``), and a replay with the offline
summariser (which reads only the size) never makes it."""

from __future__ import annotations

import pickle

import pytest

from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.core.summary_request import PromptMessage, SummaryRequest, approx_tokens
from ctxlab.engine.replay import run
from ctxlab.engine.stages import agentscope, prompts
from ctxlab.engine.stages.deferred_prompt import DeferredPromptMessage
from tests.engine.stages.test_agentscope_format_inline import _messages
from tests.engine.stages.test_presets_remade_input import _conversation


def _multibyte() -> list[Message]:
    long = "é中😀\nline " * 400  # over both clips, multibyte, newlines QwenPaw flattens
    blocks = (
        Block(BlockKind.TEXT, text=long),
        Block(BlockKind.THINKING, text="想\n" * 700),
        Block(BlockKind.TOOL_USE, tool_id="m1", tool_name="写", tool_input={"内容": long}),
        Block(BlockKind.TOOL_RESULT, tool_id="m1", text=long),
        Block(BlockKind.MEDIA, media_type="image/png", text="http://x/é.png"),
    )
    return [Message(Role.ASSISTANT, blocks, timestamp="2025-01-02T03:04:05Z", name="机器人")]


@pytest.mark.parametrize(
    ("style", "thinking"), [("qwenpaw", True), ("qwenpaw", False), ("reme", False)]
)
def test_formatted_size_is_the_formatted_texts(style: str, thinking: bool) -> None:
    names = {"u1": "bash", "u2": "raw", "m1": "写"}
    multibyte = 0
    for message in [*_multibyte(), *_messages()]:
        text = agentscope.format_message(
            message, style=style, include_thinking=thinking, tool_names=names
        )
        size = agentscope.formatted_size(
            message, style=style, include_thinking=thinking, tool_names=names
        )
        assert size == len(text.encode("utf-8"))
        multibyte += not text.isascii()
    assert multibyte > 50


def _eager_user(
    user: object, messages: list[Message], style: str, thinking: bool, names: dict[str, str],
    previous: str, lang: str,
) -> str:  # fmt: skip
    history = "\n\n".join(
        agentscope.format_message(m, style=style, include_thinking=thinking, tool_names=names)
        for m in messages
    )
    assert callable(user)
    return str(user(history, previous, lang))


@pytest.mark.parametrize("previous", ["", "## Goal\n前一个摘要 é"])
@pytest.mark.parametrize(
    ("style", "user", "thinking"),
    [("qwenpaw", prompts.qwenpaw_user, True), ("reme", prompts.reme_user, False)],
)
@pytest.mark.parametrize("given_sizes", [True, False])
def test_compactor_call_user_message_equals_the_eager_one(
    style: str, user: object, thinking: bool, previous: str, given_sizes: bool
) -> None:
    messages = [*_multibyte(), *_messages()[:400]]
    names = {"u1": "bash", "u2": "raw", "m1": "写"}
    sizes = [
        agentscope.formatted_size(m, style=style, include_thinking=thinking, tool_names=names)
        for m in messages
    ]
    for lang in ("zh", "en"):
        request, remade = agentscope.compactor_call(
            strategy="s", lang=lang, system="系统 prompt", user=user,  # type: ignore[arg-type]
            messages=list(enumerate(messages)), previous=previous, style=style,
            include_thinking=thinking, tool_names=names, sizes=sizes if given_sizes else None,
        )  # fmt: skip
        (prompt,) = request.messages
        assert isinstance(prompt, DeferredPromptMessage)
        size = prompt.utf8_size()  # known before the text is made
        want = _eager_user(user, messages, style, thinking, names, previous, lang)
        assert prompt.text == want
        assert size == len(want.encode("utf-8"))
        eager = SummaryRequest("s", "系统 prompt", (PromptMessage("user", want),))
        assert request.approx_input_tokens() == eager.approx_input_tokens()
        assert request.input_text() == eager.input_text() == remade()


def test_deferred_message_renders_once_when_read_and_stands_for_its_prompt() -> None:
    calls: list[int] = []

    def render() -> str:
        calls.append(1)
        return "héllo"

    message = DeferredPromptMessage("user", render, 6)
    assert message.utf8_size() == 6 and not calls
    plain = PromptMessage("user", "héllo")
    assert message == plain and plain == message and hash(message) == hash(plain)
    assert message.text == "héllo" and message.text == "héllo"
    assert calls == [1]
    again = pickle.loads(pickle.dumps(message))
    assert type(again) is PromptMessage and again == plain
    assert message != PromptMessage("user", "hello")


@pytest.mark.parametrize(
    ("name", "params"),
    [("qwenpaw", {"max_input_length": 20_000}), ("copaw", {"max_input_length": 20_000})],
)
def test_offline_replay_never_makes_the_user_message(
    name: str, params: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []
    real = agentscope._compactor_user

    def spy(*args: object) -> str:
        text = real(*args)  # type: ignore[arg-type]
        made.append(text)
        return text

    monkeypatch.setattr(agentscope, "_compactor_user", spy)
    result = run(_conversation("realistic"), name, params=params)
    assert len(result.summaries) >= 3 and not made
    first = result.summaries[0].input  # the stored prompt is made when read
    assert len(made) == 1 and made[0] in first


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("qwenpaw", {"max_input_length": 20_000}),
        ("qwenpaw", {"max_input_length": 20_000, "compact_with_thinking_block": False}),
        ("copaw", {"max_input_length": 20_000}),
        ("copaw", {"max_input_length": 20_000, "token_counter": "bytes4"}),
    ],
)
@pytest.mark.parametrize("kind", ["realistic", "corpus"])
def test_the_usage_estimate_is_the_stored_prompts_size(
    name: str, params: dict[str, object], kind: str
) -> None:
    # the offline summariser's input estimate is approx_tokens of the text it was not
    # given: the size summed from the parts is the stored prompt's
    result = run(_conversation(kind), name, params=params)
    assert len(result.summaries) >= 3
    for record in result.summaries:
        assert record.input_tokens == approx_tokens(record.input)
