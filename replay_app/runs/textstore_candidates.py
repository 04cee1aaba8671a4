"""Which of a summary's source messages can occur in its input at all (``textstore``).

``TextWriter._spans`` looks for every source message's texts in the summary input, and a
message none of whose texts is there costs a search of the whole input per text form. A
summary of summaries lists every message behind them again (Aider's 640 summaries of a
20,000-message replay: 7.6 million indexes, about 35 µs each, over four minutes of the
worker's time), while its input shows only the newest of them.

A text form is only ever found where its first ``ANCHOR`` characters occur.
``SourcePrefixes`` maps those anchors of every message's forms (of ``ANCHOR`` characters
or more) to the messages; one pass over the input's positions then names the messages
that may match, and the others are left out without changing a piece: a message that
matches nowhere adds no span and moves neither the search hint nor the claimed
positions. (The whole anchor is the key: tool calls' JSON shares its first 32 characters
with thousands of others, ``{"command": ["bash", "-lc", ...``.) Used only when the indexes outnumber the
input's characters enough for that pass to be the cheaper (``worthwhile``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ctxlab.engine.core.model import Block, Message
from ctxlab.engine.core.records import SourceIndexes

CHARS_PER_INDEX = 64  # the pass pays off when len(input) < this x the indexes


def worthwhile(text: str, indexes: Sequence[int]) -> bool:
    return len(indexes) * CHARS_PER_INDEX > len(text)


class SourcePrefixes:
    """Each message's form prefixes (built once per writer, on first use)."""

    def __init__(
        self,
        messages: Sequence[Message],
        forms: Callable[[Block], tuple[str, ...]],
        anchor: int,
    ) -> None:
        self.anchor = anchor
        # anchor -> its message, or the list of them (a set each took 10x the room)
        self.owners: dict[str, int | list[int]] = {}
        owners = self.owners
        for i, message in enumerate(messages):
            for block in message.blocks:
                for text in forms(block):
                    if len(text) < anchor:
                        continue
                    key = text[:anchor]
                    had = owners.setdefault(key, i)
                    if isinstance(had, list):
                        had.append(i)
                    elif had != i:
                        owners[key] = [had, i]

    def candidates(self, text: str) -> set[int]:
        """The messages one of whose forms' anchors occurs in ``text``."""
        owners, n = self.owners, self.anchor
        found: set[int] = set()
        for p in range(len(text) - n + 1):
            hit = owners.get(text[p : p + n])
            if hit is None:
                continue
            if isinstance(hit, int):
                found.add(hit)
            else:
                found.update(hit)
        return found

    def may_match(self, text: str, indexes: Iterable[int]) -> list[int]:
        """``indexes`` in their order, without those that cannot match in ``text``."""
        found = self.candidates(text)
        if isinstance(indexes, SourceIndexes) and _ascending(indexes.runs):
            # ascending, each once: the candidates in order, without listing the runs
            return sorted(i for i in found if i in indexes)
        return [i for i in indexes if i in found]


def _ascending(runs: tuple[tuple[int, int], ...]) -> bool:
    return all(a[1] < b[0] for a, b in zip(runs, runs[1:], strict=False))
