"""The summariser seam: prompt in, text and usage out.

Strategies build a ``SummaryRequest`` exactly as the original builds its summary call
(system prompt, messages, max output tokens) and hand it to an injected ``Summarizer``.
A summariser returns a ``SummaryResponse`` or raises ``SummarizerError``; either failure
(``error`` set, or the exception) sends the strategy down its own failure path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from ..core.model import Conversation

SummaryStyle = Literal["sections", "bullets", "plain"]
Slot = Literal[
    "note",
    "goal",
    "constraints",
    "done",
    "in_progress",
    "blocked",
    "decisions",
    "next",
    "critical",
    "none",
]


@dataclass(frozen=True, slots=True)
class PromptMessage:
    role: str  # "system" | "user" | "assistant"
    text: str

    def utf8_size(self) -> int:
        """UTF-8 bytes of ``text`` (a message made when read knows it before: see
        ``stages.deferred_prompt``)."""
        return _utf8_size(self.text)


@dataclass(frozen=True, slots=True)
class Section:
    """A heading the prompt asks for (exact text, e.g. ``## Goal``) and what fills it."""

    heading: str
    slot: Slot


@dataclass(frozen=True, slots=True)
class MaterialItem:
    """One compacted message as the summariser sees it (used by offline summarisers)."""

    role: str
    text: str
    index: int = -1  # source index


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    strategy: str
    system: str
    messages: tuple[PromptMessage, ...]
    max_output_tokens: int | None = None
    temperature: float | None = None
    language: str = "en"
    style: SummaryStyle = "sections"
    sections: tuple[Section, ...] = ()
    material: tuple[MaterialItem, ...] = ()
    previous_summary: str = ""
    purpose: str = "compact"  # compact | merge | memory ...
    # Where a replay made the request (set by ``ReplayContext.summarize``): the source
    # message about to be generated, in ``conversation``. None outside a replay.
    source_index: int | None = None
    conversation: Conversation | None = field(default=None, compare=False, repr=False)

    def input_text(self) -> str:
        """The exact input, rendered for storage and display."""
        parts = [f"[system]\n{self.system}"] if self.system else []
        parts.extend(f"[{m.role}]\n{m.text}" for m in self.messages)
        return "\n\n".join(parts)

    def approx_input_tokens(self) -> int:
        """``approx_tokens(self.input_text())`` without building the text: its UTF-8 size
        is the parts' sizes plus the headers and separators (an ASCII part's size is its
        length, known without encoding)."""
        size, parts = 0, 0
        if self.system:
            size, parts = len("[system]\n") + _utf8_size(self.system), 1
        for m in self.messages:
            size += 3 + _utf8_size(m.role) + m.utf8_size()  # "[" role "]\n" text
            parts += 1
        size += 2 * max(parts - 1, 0)  # "\n\n" between parts
        return -(-size // 4)


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


@dataclass(frozen=True, slots=True)
class SummaryUsage:
    input_tokens: int
    output_tokens: int
    estimated: bool = False  # True when counted locally rather than reported by a provider


@dataclass(frozen=True, slots=True)
class SummaryResponse:
    text: str
    usage: SummaryUsage | None = None
    error: str = ""
    model: str = ""


class SummarizerError(Exception):
    """The summary call failed (network, refusal, timeout ...)."""


class Summarizer(Protocol):
    name: str

    def summarize(self, request: SummaryRequest) -> SummaryResponse: ...


def approx_tokens(text: str) -> int:
    """ceil(utf8 bytes / 4): the local usage estimate for offline summaries."""
    return -(-len(text.encode("utf-8")) // 4)
