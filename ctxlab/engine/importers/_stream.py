"""Importing without holding a whole file's messages at once.

``importers.stream`` gives a ``StreamedFile``: conversations whose messages come one at a
time, so a caller can store them in batches (the web import does). Formats that can be
read that way define ``stream(data, *, name) -> StreamedFile | None`` (None: this file's
shape cannot be streamed); every other file is parsed whole and handed out the same way.
What ``importers.parse`` adds around a format's parser (the title rule, tool results with
unknown ids, text a database cannot store) is applied here message by message, so the
stored result is the same either way (tests compare the two).

Protocol: consume each conversation's ``messages`` to the end, then call its ``finish()``
(the conversation's other fields, ``messages=()``); after the last conversation call the
file's ``finish()`` (its warnings).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..core.model import Conversation, ImportWarning, Message, ParsedFile
from ._common import WarningTally
from ._kit import TitleFinder, is_junk_title


@dataclass(slots=True)
class ConversationStream:
    messages: Iterator[Message]
    finish: Callable[[], Conversation]  # after ``messages`` is exhausted; messages=()


@dataclass(slots=True)
class StreamedFile:
    format: str
    conversations: Iterator[ConversationStream]
    finish: Callable[[], tuple[ImportWarning, ...]]  # after every conversation


def stream_of(conversation: Conversation) -> ConversationStream:
    """A conversation already built whole, handed out as a stream: its messages, then the
    conversation without them."""
    return ConversationStream(
        iter(conversation.messages), lambda: replace(conversation, messages=())
    )


def from_parsed(parsed: ParsedFile) -> StreamedFile:
    """A file parsed whole, handed out as a stream (no memory saved, one store path)."""
    streams = (stream_of(conversation) for conversation in parsed.conversations)
    return StreamedFile(parsed.format, streams, lambda: parsed.warnings)


class ToolResultCheck:
    """``importers.unknown_tool_results`` over a stream: results whose id no call of their
    conversation has (a call later in the conversation still counts, as in the whole-file
    check), in message order."""

    def __init__(self) -> None:
        self._tally = WarningTally()
        self._calls: set[str] = set()
        self._pending: list[tuple[str, str]] = []  # (where, id) not yet matched by a call

    def feed(self, message: Message) -> None:
        self._calls.update(b.tool_id for b in message.tool_uses)
        for block in message.tool_results:
            if block.tool_id and block.tool_id not in self._calls:
                self._pending.append((str(message.source), block.tool_id))

    def end_conversation(self) -> None:
        for where, tool_id in self._pending:
            if tool_id not in self._calls:
                self._tally.add(
                    "tool result for a call id no tool call has",
                    f"{where}: {tool_id[:60]!r}",
                    code="tool-result-unknown-id",
                )
        self._calls, self._pending = set(), []

    def warnings(self) -> tuple[ImportWarning, ...]:
        return self._tally.freeze()


class TextCleaner:
    """``importers._safe_text`` one value at a time: unpaired surrogates become U+FFFD and
    NULs ``shown_as``, counted in messages and warnings (not in titles or tool lists)."""

    def __init__(self, unsafe: re.Pattern[str], shown_as: str) -> None:
        self._unsafe, self._shown_as = unsafe, shown_as
        self.nuls = self.surrogates = 0
        self._counting = True

    def _swap(self, match: re.Match[str]) -> str:
        if match.group() == "\x00":
            self.nuls += self._counting
            return self._shown_as
        self.surrogates += self._counting
        return "\ufffd"

    def _clean(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._unsafe.sub(self._swap, value)
        if isinstance(value, list):
            return [self._clean(v) for v in value]
        if isinstance(value, dict):
            return {self._clean(k): self._clean(v) for k, v in value.items()}
        return value

    def message(self, message: Message) -> Message:
        from ..core import codec

        before = self.nuls + self.surrogates
        cleaned = self._clean(codec.message_to_dict(message))
        if self.nuls + self.surrogates == before:
            return message
        return codec.message_from_dict(cleaned)

    def conversation(self, conversation: Conversation) -> Conversation:
        from ..core import codec

        self._counting = False
        try:
            plain = self._clean(codec.conversation_to_dict(conversation))
        finally:
            self._counting = True
        return codec.conversation_from_dict(plain)

    def warnings(self, warnings: tuple[ImportWarning, ...]) -> tuple[ImportWarning, ...]:
        from ..core import codec

        cleaned = [codec.warning_from_dict(self._clean(codec.warning_to_dict(w))) for w in warnings]
        if self.surrogates:
            cleaned.append(
                ImportWarning(
                    "unpaired UTF-16 surrogate(s) shown as U+FFFD",
                    count=self.surrogates,
                    code="lone-surrogate",
                )
            )
        if self.nuls:
            cleaned.append(
                ImportWarning(
                    f"NUL character(s) shown as {self._shown_as}",
                    count=self.nuls,
                    code="nul-character",
                )
            )
        return tuple(cleaned)


def finished_stream(
    streamed: StreamedFile,
    *,
    name: str,
    guard: Callable[[Callable[[], Any]], Any],
    extra_warnings: Callable[[], tuple[ImportWarning, ...]],
    cleaner: TextCleaner | None,
) -> StreamedFile:
    """``streamed`` with what ``importers.parse`` adds: ``guard`` runs each step of the
    format's parser (its notes collected, its errors located), the title rule, the tool
    result check and the text cleaning."""
    check = ToolResultCheck()

    def messages(stream: ConversationStream, finder: TitleFinder) -> Iterator[Message]:
        while True:
            message = guard(lambda: next(stream.messages, None))
            if message is None:
                return
            check.feed(message)
            finder.feed(message)
            yield message if cleaner is None else cleaner.message(message)

    def finish(stream: ConversationStream, finder: TitleFinder) -> Conversation:
        conversation: Conversation = guard(stream.finish)
        check.end_conversation()
        if is_junk_title(conversation.title):
            fallback = conversation.id or name or "conversation"
            conversation = replace(conversation, title=finder.title(fallback))
        return conversation if cleaner is None else cleaner.conversation(conversation)

    def conversations() -> Iterator[ConversationStream]:
        while True:
            stream = guard(lambda: next(streamed.conversations, None))
            if stream is None:
                return
            finder = TitleFinder()
            yield ConversationStream(
                messages(stream, finder),
                lambda stream=stream, finder=finder: finish(stream, finder),  # type: ignore[misc]
            )

    def warnings() -> tuple[ImportWarning, ...]:
        found = (*guard(streamed.finish), *extra_warnings(), *check.warnings())
        return found if cleaner is None else cleaner.warnings(found)

    return StreamedFile(streamed.format, conversations(), warnings)
