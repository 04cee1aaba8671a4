"""What the pages say about the events that set fates: each event's kind, its own reason
(or the kind), the trigger in words ('context 27,410 ≥ threshold 26,214') and each change's
own reason. Read from the same stored changes as the fate log, in the same pass
(``fatelog``): a finished run's changes are unpacked once for both."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ctxlab.engine.core.catalogue import Trigger, trigger_of


@dataclass(frozen=True, slots=True)
class EventWords:
    """One event that set fates: ``reason(index)`` is what a message's cell says of it."""

    kind: str
    why: str  # the event's own reason, or its kind
    trigger: str
    # each change's own reason with the sorted indexes of the messages it was given to
    # (a run's ~20,000 changes say one of a few reasons: a dict per index was ~2 MB a run)
    reasons: tuple[tuple[str, array[int]], ...]
    said: str  # the words of a change without its own reason

    def reason(self, index: int) -> str:
        for text, indexes in self.reasons:
            at = bisect_left(indexes, index)
            if at < len(indexes) and indexes[at] == index:
                return f"{text}; {self.trigger}" if self.trigger else text
        return self.said


class Collector:
    """``add`` each stored event (in seq order); ``words``: every fate-setting one by seq."""

    def __init__(self) -> None:
        self.words: dict[int, EventWords] = {}
        self._texts: dict[str, str] = {}  # one copy of each repeated reason

    def add(
        self,
        seq: int,
        kind: str,
        detail: Mapping[str, Any] | None,
        changes: Iterable[Mapping[str, Any]],
        tokens_before: int | None,
    ) -> None:
        reasons: dict[int, str] = {}
        texts = self._texts
        touched = False
        for change in changes:
            touched = True
            index, text = int(change["index"]), str(change.get("reason") or "")
            if text:
                reasons[index] = texts.setdefault(text, text)
            else:  # a later change of the same message without one: the event's own
                reasons.pop(index, None)
        if not touched:  # sets no fate: no cell ever names it
            return
        given: dict[str, list[int]] = {}
        for index, text in reasons.items():
            given.setdefault(text, []).append(index)
        grouped = tuple((text, array("q", sorted(indexes))) for text, indexes in given.items())
        detail = detail or {}
        fired = trigger_of(kind, detail)
        if fired.measured is None:
            fired = Trigger(tokens_before or None, fired.limit, "context", fired.limit_name)
        why, trigger = str(detail.get("reason") or kind), fired.words()
        said = f"{why}; {trigger}" if trigger else why
        self.words[seq] = EventWords(kind, why, trigger, grouped, said)
