"""AG2 ``MessageTokenLimiter``: messages cut to a per-message and a total token budget.

Sources in ``_ag2`` (ag2ai/ag2 @ 70badeefcefcefca9a52b5f43636a616a7952fee,
``autogen/agentchat/contrib/capabilities/transforms.py`` ``MessageTokenLimiter``):

- ``min_tokens``: while the messages' content tokens (``count_text_tokens``, summed) are
  below it, nothing changes.
- Newest to oldest: a message whose content is not text (``None``: an assistant turn made
  only of tool calls) is kept and not counted; otherwise, when ``max_tokens - processed -
  max_tokens_per_message < 0`` the message is cut to ``max_tokens - processed`` tokens,
  kept, and every older message is left out; else it is cut to ``max_tokens_per_message``
  tokens (``tiktoken.encoding_for_model(model)``: encode, keep the first n, decode) and its
  tokens added.
- ``None`` for a limit means ``sys.maxsize``: with ``max_tokens_per_message`` unset, the
  first counted message already fails the test, so only the newest message is kept (cut to
  ``max_tokens``); with both unset, the second counted message ends the walk (the
  original's arithmetic, kept: ``-1`` here stands for ``None``).
- A stored ``tool`` message's content is cut and counted, but the request is built from its
  ``tool_responses`` (``conversable_agent._generate_oai_reply_from_client``): the results
  are sent whole. Only user and assistant texts are shown cut (PRUNED).
- ``_validate_max_tokens``: a limit over the model's (``get_max_token_limit``, 4,096 for
  the default ``gpt-3.5-turbo-0613``) is capped to it.
- Counting: ``token_count_utils.count_token`` on the content, ``gpt-3.5-turbo-0613`` (the
  default ``model``): cl100k_base, the lab's reference tokenizer (``encode_ordinary``:
  the original's ``encode`` raises on special-token text instead).

Defaults: the ``agentchat_transform_messages`` notebook's "Handling Long Contexts" setup
(``MessageTokenLimiter(max_tokens=1000, max_tokens_per_message=50, min_tokens=500)``).
``filter_dict`` / ``exclude_filter`` select messages by their fields (name, role):
not modelled. Tests ported: ``test_transforms.py``'s ``test_message_token_limiter_*``
cases as a table (``tests/engine/strategies/test_ag2.py``).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.model import Block, BlockKind, Message
from ..core.params import Param
from ..core.strategy import ReferenceEstimator, Strategy
from ..tokens.cl100k import PER_MESSAGE_OVERHEAD, _encoding
from . import _ag2
from . import _chat_history as ch

if TYPE_CHECKING:
    from ..core.context_view import ContextView

_ORIGIN = "transforms.MessageTokenLimiter"
# token_count_utils.get_max_token_limit("gpt-3.5-turbo-0613"), the default model's: a limit
# set above it is capped to it ("Capping it to 4096", _validate_max_tokens).
MODEL_MAX_TOKENS = 4096


def limit(value: int) -> int:
    """A limit parameter: -1 stands for None (``sys.maxsize``); a set one is capped at the
    default model's limit."""
    return sys.maxsize if value < 0 else min(value, MODEL_MAX_TOKENS)


def content_of(message: Message) -> str | None:
    """The AG2 message's ``content``: tool results joined by blank lines (a ``tool``
    message), the text blocks joined, or None for an assistant turn without text."""
    entry = ch.whole(message, -1)
    if entry.role == "tool":
        return "\n\n".join(b.text for b in message.blocks if b.kind is BlockKind.TOOL_RESULT)
    texts = [b.text for b in message.blocks if b.kind is BlockKind.TEXT]
    if not texts and entry.role == "assistant":
        return None
    return "".join(texts)


def truncate_tokens(text: str, n_tokens: int) -> str:
    """``_truncate_tokens``: the first ``n_tokens`` tokens, decoded.

    Only a head of the text is encoded: tiktoken splits a text into pieces with its
    pattern before encoding each piece alone, and every piece of a head but its last is a
    piece of the whole text (a piece's match reads at most one character past its end), so
    the head less its last piece encodes to the first tokens of the whole. The head doubles
    until those hold ``n_tokens`` tokens."""
    enc = _encoding()
    if n_tokens <= 0:
        return ""
    size = 8 * n_tokens + 64
    while size < len(text):
        pieces = _pieces().findall(text[:size])
        head = "".join(pieces[:-1])
        tokens = enc.encode_ordinary(head)
        if len(tokens) > n_tokens:
            return str(enc.decode(tokens[:n_tokens]))
        size *= 2
    tokens = enc.encode_ordinary(text)
    if n_tokens >= len(tokens):
        return text
    return str(enc.decode(tokens[:n_tokens]))


@functools.cache
def _pieces() -> Any:
    """tiktoken's pre-tokenisation pattern of cl100k_base."""
    import regex  # type: ignore[import-untyped]  # tiktoken's own dependency

    return regex.compile(_encoding()._pat_str)


def walk(
    contents: list[str | None],
    tokens: list[int],
    max_tokens: int,
    per_message: int,
    capped_tokens: Callable[[int], int],
    *,
    floor: int = 0,
) -> tuple[int, dict[int, int]]:
    """``apply_transform``'s walk, newest first, down to ``floor``: (the oldest position
    kept, {position: tokens it is cut to} for the messages cut). ``tokens[p]`` counts
    ``contents[p]``, ``capped_tokens(p)`` its first ``per_message`` tokens re-counted."""
    processed = 0
    cut: dict[int, int] = {}
    for p in range(len(contents) - 1, floor - 1, -1):
        if contents[p] is None:
            continue
        if max_tokens - processed - per_message < 0:
            keep = max_tokens - processed
            if keep < tokens[p]:
                cut[p] = keep
            return p, cut
        if per_message < tokens[p]:
            cut[p] = per_message
            processed += capped_tokens(p)
        else:
            processed += tokens[p]
    return floor, cut


@dataclass(slots=True)
class _State:
    sources: list[int] = field(default_factory=list)
    contents: list[str | None] = field(default_factory=list)
    tool: list[bool] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    total: int = 0
    oldest: int = 0  # positions below it are left out already
    shown: dict[int, int] = field(default_factory=dict)  # position -> tokens kept (cut ones)
    capped: dict[int, int] = field(default_factory=dict)  # position -> tokens once capped
    heads: dict[int, str] = field(default_factory=dict)  # position -> its capped text
    view: dict[int, Any] = field(default_factory=dict)


class AG2TokenLimiterStrategy(ReferenceEstimator, Strategy):
    name: ClassVar[str] = "ag2_token_limiter"
    label: ClassVar[str] = "AG2 TransformMessages: MessageTokenLimiter"
    description: ClassVar[str] = (
        "AG2's MessageTokenLimiter transform (TransformMessages capability): before every "
        "reply, once the messages hold min_tokens, each message's text is cut to "
        "max_tokens_per_message and, newest first, messages are kept until max_tokens "
        "(the last one cut to fit); the stored history keeps everything."
    )
    estimator: ClassVar[str] = "tiktoken cl100k (gpt-3.5-turbo-0613) on each message's content"
    WINDOW = "context_window"
    State: ClassVar[type[Any]] = _State
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("max_tokens", 1000, "Tokens kept over all messages (-1: None; capped at 4,096, "
              "the default model's limit).", min=-1,
              origin=f"{_ORIGIN}(max_tokens=...)"),
        Param("max_tokens_per_message", 50, "Tokens kept of each message (-1: None).",
              min=-1, origin=f"{_ORIGIN}(max_tokens_per_message=...)"),
        Param("min_tokens", 500, "Transform only once the messages hold this many tokens "
              "(0: always; at most max_tokens).", min=0,
              origin=f"{_ORIGIN}(min_tokens=...)"),
        Param("context_window", 128_000, "Model context window (overflow findings only).",
              min=1_000, origin="model context window"),
    )  # fmt: skip

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        p = self.params
        self.max_tokens = limit(int(p["max_tokens"]))
        self.per_message = limit(int(p["max_tokens_per_message"]))
        self.min_tokens = int(p["min_tokens"])
        if int(p["max_tokens"]) >= 0 and self.min_tokens > self.max_tokens:
            raise ValueError("min_tokens must not be more than max_tokens.")

    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_window"])

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        message = ctx.original(index)
        content = content_of(message)
        st.sources.append(index)
        st.contents.append(content)
        st.tool.append(ch.whole(message, index).role == "tool")
        blocks = message.blocks
        if len(blocks) == 1 and blocks[0].kind in (BlockKind.TEXT, BlockKind.TOOL_RESULT):
            # the content is the block's text: its count is the message's stored one
            n = ctx.reference.message_of(message) - PER_MESSAGE_OVERHEAD if content else 0
        else:
            n = ctx.reference.text(content) if content else 0
        st.tokens.append(n)
        st.total += n

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        if self.min_tokens and st.total < self.min_tokens:
            return
        capped = st.capped

        def capped_tokens(p: int) -> int:
            value = capped.get(p)
            if value is None:
                head = truncate_tokens(st.contents[p] or "", self.per_message)
                st.heads[p] = head
                value = capped[p] = ctx.reference.text(head)
            return value

        oldest, cut = walk(st.contents, st.tokens, self.max_tokens, self.per_message,
                           capped_tokens, floor=st.oldest)  # fmt: skip
        changed: list[int] = []
        desired: dict[int, Any] = {}
        for p in range(st.oldest, oldest):
            s = st.sources[p]
            changed.append(s)
            desired[s] = None
            st.shown.pop(p, None)
            st.capped.pop(p, None)
            st.heads.pop(p, None)
        for p in [p for p in st.shown if p not in cut]:  # cut before, whole now
            del st.shown[p]
            changed.append(st.sources[p])
        for p, keep in cut.items():
            if st.tool[p] or st.shown.get(p) == keep:
                continue
            st.shown[p] = keep
            s = st.sources[p]
            changed.append(s)
            # cut to max_tokens_per_message: the text the walk capped it to already
            head = st.heads.get(p) if keep == self.per_message else None
            if head is None:
                head = truncate_tokens(st.contents[p] or "", keep)
            desired[s] = self._cut(ctx.original(s), head)
        st.oldest = oldest
        if not changed:
            return
        _ag2.apply_view(
            ctx, st.view, desired, sorted(changed), "trim",
            "MessageTokenLimiter: messages cut to max_tokens_per_message, the oldest left "
            "out past max_tokens (request view)",
            {"max_tokens": int(self.params["max_tokens"]),
             "max_tokens_per_message": int(self.params["max_tokens_per_message"]),
             "content_tokens": st.total, "kept_from": oldest},
        )  # fmt: skip

    @staticmethod
    def _cut(original: Message, text: str) -> Message:
        """The message with its text replaced by ``text`` (the first tokens of its content)."""
        blocks: list[Block] = []
        placed = False
        for b in original.blocks:
            if b.kind is BlockKind.TEXT:
                if not placed:
                    blocks.append(replace(b, text=text, parts=()))
                    placed = True
                continue
            blocks.append(b)
        return replace(original, blocks=tuple(blocks))


STRATEGY = AG2TokenLimiterStrategy
