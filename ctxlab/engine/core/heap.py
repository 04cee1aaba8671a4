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

While a pause lasts, each full collection's survivors are frozen too (``_refreeze``): the
replay's own records and state grow with it, and a full collection comes every ten
middle ones, so each traversed everything the replay had made so far (quadratic: at 40,000
messages 4-5 full collections took ~0.25-0.3 s, 2 at 20,000 took 0.06 s).

When the last pause ends, what it made joins the oldest generation with the rest
(``gc.freeze()`` then ``gc.unfreeze()``: two list splices, no traversal). Left young, it
would be traversed by the first middle collection after the thresholds come back, which
finds nothing: at 40,000 messages that was one 0.18 s collection right at the pause's end,
at 20,000 it fell later, so the replay's 2x-messages time read 2.22 where its work is 2.0.

A pause also collects less often (``PAUSED_THRESHOLD`` for the collector's thresholds,
restored at its end): a replay's garbage is freed by reference counting, so the young
collections every 700 allocations only cost (about 5 % of the five presets' replays on
the realistic 20,000-message transcript). At 500,000 a replay of 20,000 or 40,000 messages
makes no young collection at all (at 50,000 it made 7 and 15, each traversing the replay's
newest records: 0.09 and 0.21 s of vercel_prune_messages'); cyclic garbage made inside
waits at most that many allocations.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # pauses in progress; the freeze is ours while it is > 0
_foreign = False  # the heap was already frozen by someone else when our first pause began
PAUSED_THRESHOLD = (500_000, 50, 100)  # gc thresholds while a pause lasts (see above)
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
    """After a full collection inside a pause, its survivors join the frozen heap."""
    if phase == "stop" and info["generation"] == 2:
        gc.freeze()
