"""A summary call's input, kept small until it is read (``SummaryRecord.input``).

A replay keeps every summary record until the run is stored, and the exact input of each
call used to be kept as one text: the compacted history joined, 4 bytes a character as
soon as one emoji is in it. Most of a long replay's memory (the replay_memory
bench). Here the input is kept as the request's parts and rendered when read, byte for
byte what ``SummaryRequest.input_text`` makes:

- a part shorter than ``PACK_CHARS`` is kept as it is (a short turn, often a text the
  replay holds anyway);
- a text the replay keeps anyway (a block text of a message the call reads, which
  ``message.text`` of a one-block message is) is kept as it is;
- a longer one is mostly made for this call alone (the history rendered into one user
  message, or one message rendered as the original sends it: codex, claude_code): it is
  kept as zlib-compressed UTF-8 (``surrogatepass``: a lone surrogate from a transcript's
  JSON round-trips), about 3x smaller than its UTF-8 (up to 4 bytes a character in a
  ``str``). Compressing costs ~0.01 s CPU a MB; the realistic 20k transcript's codex run
  compresses ~46 MiB of texts (4,096 chars: ratio 2.17 -> 1.87; 2,048 gave 1.81 for more CPU).
"""

from __future__ import annotations

from collections.abc import Container

from .packed import pack as _pack
from .packed import unpack as _unpack
from .summary_request import PromptMessage, SummaryRequest


class PackedInput:
    """``request.input_text()`` made on each call from the parts kept (see the module)."""

    __slots__ = ("_messages", "_strategy", "_system")

    def __init__(self, request: SummaryRequest, held: Container[int] = ()) -> None:
        """``held``: the ``id`` of each text the replay keeps anyway (the block texts of the
        messages the call reads); a part that is one of them is kept as it is: packing it saves no
        memory, and compressing every message a whole-history summariser sends (crush) was a
        third of its replay."""
        self._strategy = request.strategy
        self._system = _pack(request.system)
        self._messages = tuple(
            (m.role, m.text if id(m.text) in held else _pack(m.text)) for m in request.messages
        )

    def __call__(self) -> str:
        messages = tuple(PromptMessage(role, _unpack(text)) for role, text in self._messages)
        return SummaryRequest(self._strategy, _unpack(self._system), messages).input_text()

    def __getstate__(self) -> tuple[str, str | bytes, tuple[tuple[str, str | bytes], ...]]:
        return self._strategy, self._system, self._messages

    def __setstate__(
        self, state: tuple[str, str | bytes, tuple[tuple[str, str | bytes], ...]]
    ) -> None:
        self._strategy, self._system, self._messages = state
