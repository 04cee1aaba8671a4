"""Reference-tokenizer counts for one conversation, computed once and shared.

Every preset replayed over the same conversation reuses the same per-message counts
(``reference_tokens(conversation)`` memoises the last few conversations), so the
tiktoken cost of a comparison is paid once, in one batched pass.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict

from .model import BlockKind, Conversation, Message
from .tokens import MEDIA_TOKENS, PER_MESSAGE_OVERHEAD, block_text, reference_counter


class ReferenceTokens:
    """Per-message cl100k counts (same rule as ``tokens.message_reference_tokens``)."""

    def __init__(self, conversation: Conversation) -> None:
        counter = reference_counter()
        self._count = counter.count
        texts: list[str] = []
        owners: list[int] = []
        base = [PER_MESSAGE_OVERHEAD] * len(conversation.messages)
        for i, msg in enumerate(conversation.messages):
            for block in msg.blocks:
                if block.kind is BlockKind.MEDIA:
                    base[i] += MEDIA_TOKENS
                else:
                    text = block_text(block)
                    if text:
                        texts.append(text)
                        owners.append(i)
        # One tiktoken pass over the distinct texts (a transcript repeats file contents,
        # prompts and tool outputs); the counts stay here for recounting modified messages.
        distinct = list(dict.fromkeys(texts))
        self._memo: dict[str, int] = dict(
            zip(distinct, counter.count_distinct(distinct), strict=True)
        )
        memo = self._memo
        for owner, text in zip(owners, texts, strict=True):
            base[owner] += memo[text]
        self.per_message = base
        tools = conversation.tools
        self.tools = (
            counter.count(
                json.dumps(
                    [
                        {"name": t.name, "description": t.description, "parameters": t.parameters}
                        for t in tools
                    ],
                    ensure_ascii=False,
                )
            )
            if tools
            else 0
        )

    def message(self, index: int) -> int:
        return self.per_message[index]

    def message_of(self, message: Message) -> int:
        """Count a modified message (texts memoised by the shared counter)."""
        total = PER_MESSAGE_OVERHEAD
        for block in message.blocks:
            if block.kind is BlockKind.MEDIA:
                total += MEDIA_TOKENS
            else:
                total += self.text(block_text(block))
        return total

    def text(self, text: str) -> int:
        if not text:
            return 0
        value = self._memo.get(text)
        if value is not None:
            return value
        cut = safe_split(text) if len(text) > SPLIT_MIN else 0
        if cut:
            # A modified text is mostly an earlier text (a truncated output, a notice with
            # a unique path at the end): its head is counted once and memoised.
            head = text[:cut]
            counted = self._memo.get(head)
            if counted is None:
                counted = self._memo[head] = self._count(head)
            value = counted + self._count(text[cut:])
        else:
            value = self._count(text)
        self._memo[text] = value
        return value


SPLIT_MIN = 512  # characters; shorter texts are counted whole


def safe_split(text: str) -> int:
    r"""The last position ``q`` after a newline whose next character is not whitespace, or 0.

    cl100k's pre-tokenizer then has a chunk boundary at ``q`` and chunks ``text[:q]`` the
    same way alone: the whitespace run ending in that newline is one chunk either way
    (``\s*[\r\n]`` in the whole, ``\s++$`` alone; a punctuation run takes its trailing
    newlines in both), nothing looks behind and the only lookahead stays inside a run. So
    ``count(text) == count(text[:q]) + count(text[q:])`` exactly."""
    k = text.rfind("\n", 0, len(text) - 1)
    while k > 0:
        if not text[k + 1].isspace():  # str.isspace covers every regex \s character
            return k + 1
        k = text.rfind("\n", 0, k)
    return 0


_CACHE: OrderedDict[int, tuple[Conversation, ReferenceTokens]] = OrderedDict()
_LOCK = threading.Lock()
_KEEP = 4


def reference_tokens(conversation: Conversation) -> ReferenceTokens:
    """The (memoised) reference counts of ``conversation``."""
    key = id(conversation)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is conversation:
            _CACHE.move_to_end(key)
            return hit[1]
    value = ReferenceTokens(conversation)
    with _LOCK:
        _CACHE[key] = (conversation, value)
        while len(_CACHE) > _KEEP:
            _CACHE.popitem(last=False)
    return value
