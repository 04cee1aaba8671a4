"""Keep the cyclic garbage collector off the heap that existed before a replay began.

A replay allocates many small objects while the conversation it reads (tens of thousands of
frozen messages and blocks), the token caches and the rest of the process sit in the oldest
generation. CPython runs a full collection each time the long-lived objects grow by a
quarter, and every full collection traverses all of them: in the replay benchmark that was
0.5 s of 4.4 s, and it never found anything (a replay makes no reference cycles).

``gc.freeze()`` moves every object that exists now into the permanent generation, which no
collection traverses; ``gc.unfreeze()`` moves them back into the oldest one. Reference
counting is untouched, so a frozen object that is released is freed at once; only cyclic
garbage older than the pause waits for the pause to end. Nested and concurrent pauses (the
embedded worker's threads) share one freeze: the first to enter freezes, the last to leave
unfreezes. A freeze made by someone else (a pre-forking server) is left alone.

While a pause lasts, the survivors of every collection are frozen too (``_refreeze``), so
each object the replay keeps is traversed once, by the young collection that first meets
it, and never again. Before, a full collection came every ten middle ones and traversed
everything the replay had made so far (quadratic: at 40,000 messages 4-5 of them took
~0.25-0.3 s), and middle ones traversed the young survivors again.

When the last pause ends, what it made joins the oldest generation with the rest
(``gc.freeze()`` then ``gc.unfreeze()``: two list splices, no traversal). Left young, it
would be traversed by the first middle collection after the thresholds come back, which
finds nothing: at 40,000 messages that was one 0.18 s collection right at the pause's end,
at 20,000 it fell later, so langchain_trim's 2x-messages time read 2.22 where its work is 2.

A pause also collects less often (``PAUSED_THRESHOLD`` for the collector's thresholds,
restored at its end): a replay's garbage is freed by reference counting, so the young
collections every 700 allocations only cost (about 5 % of the five presets' replays on
the realistic 20,000-message transcript). A young collection inside costs what it
traverses and finds nothing, so the threshold sits above what a replay of a long session
keeps: at 40,000 messages the most any strategy kept was ~573,000 new objects
(autogen_head_and_tail), so none collects at 20,000 or 40,000 (at 50,000, 7-19 young
collections took 0.07-0.19 s of each replay; at 500,000 a few strategies made none at
20,000 and one of 0.17 s at 40,000, a step in their 2x-messages time). A longer replay
collects every million net allocations, each traversing only what came since the last.
A replay makes no cyclic garbage while it runs (a collection with its result alive finds
none for any library strategy: tests/engine/core/test_heap.py), nor when it is dropped
(``ReplayContext.close``); what another thread makes inside a pause waits at most that
long.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # pauses in progress; the freeze is ours while it is > 0
_foreign = False  # the heap was already frozen by someone else when our first pause began
PAUSED_THRESHOLD = (1_000_000, 50, 100)  # gc thresholds while a pause lasts (see above)
_threshold: tuple[int, int, int] = gc.get_threshold()  # restored when the last pause ends


@contextmanager
def existing_heap_frozen() -> Iterator[None]:
    """Inside: collections skip every object that existed on entry."""
    global _depth, _foreign, _threshold
    with _lock:
        if _depth == 0:
            _threshold = gc.get_threshold()
            gc.set_threshold(*PAUSED_THRESHOLD)
            _foreign = gc.get_freeze_count() > 0
            if not _foreign:
                gc.freeze()
                gc.callbacks.append(_refreeze)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.set_threshold(*_threshold)
            if _depth == 0 and not _foreign:
                gc.callbacks.remove(_refreeze)
                gc.freeze()  # what the pause made joins the oldest generation untraversed
                gc.unfreeze()


def _refreeze(phase: str, info: dict[str, int]) -> None:
    """After any collection inside a pause, its survivors join the frozen heap."""
    if phase == "stop":
        gc.freeze()
