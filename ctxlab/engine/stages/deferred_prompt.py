"""A prompt message made when its text is first read, its size known before.

QwenPaw's and CoPaw's compactor user message holds every compacted message formatted
(megabytes on a long transcript). The offline summariser reads only its UTF-8 size (the
usage estimate, ``SummaryRequest.approx_input_tokens``) and answers from the request's
material; a model summariser reads the text, and makes it then. The strategy knows the size
from the parts (``agentscope.formatted_size``); the text is the one it would have made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.summary_request import PromptMessage


class DeferredPromptMessage(PromptMessage):
    """``PromptMessage(role, render())``, ``render`` called on the first read of ``text``;
    ``size`` must be the UTF-8 size of that text. Equal to, hashed and pickled as the
    ``PromptMessage`` it stands for."""

    __slots__ = ("_render", "_size", "_text")
    _render: Callable[[], str]
    _size: int
    _text: str | None

    def __init__(self, role: str, render: Callable[[], str], size: int) -> None:
        object.__setattr__(self, "role", role)
        object.__setattr__(self, "_render", render)
        object.__setattr__(self, "_size", size)
        object.__setattr__(self, "_text", None)

    @property
    def text(self) -> str:
        made: str | None = self._text
        if made is None:  # (kept: a model summariser reads it more than once)
            made = self._render()
            object.__setattr__(self, "_text", made)
        return made

    def utf8_size(self) -> int:
        return self._size

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PromptMessage):
            return (self.role, self.text) == (other.role, other.text)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.role, self.text))

    def __reduce__(self) -> tuple[Any, ...]:
        return PromptMessage, (self.role, self.text)
