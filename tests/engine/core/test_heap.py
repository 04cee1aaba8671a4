"""The replay's garbage-collector pause (ctxlab/engine/core/heap.py)."""

from __future__ import annotations

import functools
import gc
import threading
import types
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from builders import conv, cycle

from ctxlab.engine.core import heap
from ctxlab.engine.replay import Replay, run
from ctxlab.engine.strategies import LIBRARY, STRATEGIES
from ctxlab.engine.synth import realistic as synth_realistic

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
T = TypeVar("T")


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@pytest.fixture(autouse=True)
def _unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_freezes_the_existing_heap_and_gives_it_back():
    before = gc.get_freeze_count()
    assert before == 0
    with heap.existing_heap_frozen():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_cycles_made_inside_are_still_collected():
    with heap.existing_heap_frozen():
        ref = _cycle()
        gc.collect()
        assert ref() is None


def test_cycles_older_than_the_pause_wait_for_its_end():
    gc.disable()  # no automatic collection before the pause begins
    try:
        ref = _cycle()
        with heap.existing_heap_frozen():
            gc.collect()
            assert ref() is not None  # frozen: no collection looks at it
        gc.collect()
        assert ref() is None
    finally:
        gc.enable()


def test_survivors_of_a_full_collection_inside_join_the_frozen_heap():
    """So the next full collection traverses only newer objects (a replay's records grow
    with it: every full collection over all of them made long replays quadratic)."""
    with heap.existing_heap_frozen():
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        ref = weakref.ref(a)
        before = gc.get_freeze_count()
        gc.collect()
        assert gc.get_freeze_count() > before
        del a, b
        gc.collect()
        assert ref() is not None  # frozen after the first collection: waits for the end
    assert heap._refreeze not in gc.callbacks
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert ref() is None


def test_nested_pauses_share_one_freeze_and_an_error_still_ends_it():
    with heap.existing_heap_frozen():
        with pytest.raises(RuntimeError), heap.existing_heap_frozen():
            raise RuntimeError("inside")
        assert gc.get_freeze_count() > 0  # the outer pause still holds
    assert gc.get_freeze_count() == 0


def test_threads_end_the_freeze_when_the_last_one_leaves():
    inside, release = threading.Barrier(3), threading.Event()

    def work() -> None:
        with heap.existing_heap_frozen():
            inside.wait()
            release.wait()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert gc.get_freeze_count() > 0
    release.set()
    for t in threads:
        t.join()
    assert gc.get_freeze_count() == 0


def test_a_foreign_freeze_is_left_alone():
    gc.freeze()
    with heap.existing_heap_frozen():
        pass
    assert gc.get_freeze_count() > 0  # still frozen: not ours to undo


def test_replays_run_inside_a_pause_and_end_it():
    seen: list[int] = []
    conversation = conv(*cycle(3))

    class Spy(Replay):
        def __iter__(self):  # type: ignore[override]
            seen.append(gc.get_freeze_count())
            yield from super().__iter__()

    Spy(conversation, "qwenpaw").exhaust()
    result = run(conversation, "baseagent")
    assert seen and seen[0] > 0
    assert result.steps and gc.get_freeze_count() == 0


def test_a_pause_collects_less_often_and_gives_the_thresholds_back():
    own = (900, 11, 12)
    before = gc.get_threshold()
    gc.set_threshold(*own)
    try:
        with heap.existing_heap_frozen():
            assert gc.get_threshold() == heap.PAUSED_THRESHOLD
            with heap.existing_heap_frozen():  # nested: still paused
                assert gc.get_threshold() == heap.PAUSED_THRESHOLD
            assert gc.get_threshold() == heap.PAUSED_THRESHOLD
        assert gc.get_threshold() == own
        gc.freeze()  # a freeze made by someone else: the thresholds still come back
        with heap.existing_heap_frozen():
            assert gc.get_threshold() == heap.PAUSED_THRESHOLD
        assert gc.get_threshold() == own
    finally:
        gc.set_threshold(*before)


def test_what_a_pause_made_joins_the_oldest_generation_at_its_end():
    """Untraversed: left young, the first middle collection after the pause traversed all
    of a replay's survivors and found nothing (0.18 s at the end of a 40,000-message
    replay)."""
    with heap.existing_heap_frozen():
        made = [_Node() for _ in range(10)]
        young_inside = {id(o) for o in gc.get_objects(generation=0)}
        assert all(id(n) in young_inside for n in made)
    young = {id(o) for g in (0, 1) for o in gc.get_objects(generation=g)}
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert not any(id(n) in young for n in made)
    assert all(id(n) in oldest for n in made)
    ref = _cycle()  # and cyclic garbage is still found by the next full collection
    gc.collect()
    assert ref() is None


def test_survivors_of_a_young_collection_inside_join_the_frozen_heap():
    """Each object a replay keeps is traversed once, by the first collection that meets it."""
    with heap.existing_heap_frozen():
        kept = [_Node() for _ in range(10)]
        before = gc.get_freeze_count()
        gc.collect(0)
        assert gc.get_freeze_count() >= before + len(kept)
        assert not {id(o) for o in gc.get_objects(generation=1)} & {id(n) for n in kept}


@functools.cache
def _realistic():
    return synth_realistic.realistic_bench_conversation(CORPUS, messages=1_500, seed=3)


def _ours(obj: object) -> bool:
    """Made by ctxlab: an instance of its types, or its functions' frames and closures."""
    if isinstance(obj, types.FrameType):
        return "/ctxlab/" in obj.f_code.co_filename
    if isinstance(obj, types.FunctionType):
        return "/ctxlab/" in obj.__code__.co_filename
    return type(obj).__module__.startswith("ctxlab.")


def _garbage_after(act: Callable[[], T]) -> tuple[T, list[object]]:
    """``act()`` with the collector off, then one collection: what it returned and the
    objects of ctxlab among the garbage that collection found."""
    gc.collect()
    flags = gc.get_debug()
    gc.disable()
    try:
        value = act()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        return value, [o for o in gc.garbage if _ours(o)]
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
        gc.enable()


@pytest.mark.parametrize("name", [n for n in LIBRARY if n in STRATEGIES])
def test_a_replay_makes_no_cyclic_garbage_while_it_runs(name):
    """Why a pause may collect so rarely (``PAUSED_THRESHOLD``): while a replay runs, the
    collector finds nothing of it."""
    result, ours = _garbage_after(Replay(_realistic(), name).finish)
    assert result.steps
    assert not ours, ours[:5]


@pytest.mark.parametrize("name", [n for n in LIBRARY if n in STRATEGIES])
def test_a_dropped_replay_is_freed_by_reference_counting(name):
    """Dropped, a replay leaves no cyclic garbage (``ReplayContext.close``): its records are
    freed at once, not by the next full collection."""

    def replay_and_drop() -> tuple[int, bool]:
        job = Replay(_realistic(), name)
        steps = len(job.finish().steps)
        context = weakref.ref(job.ctx)
        del job
        return steps, context() is not None

    (steps, alive), ours = _garbage_after(replay_and_drop)
    assert steps
    assert not alive
    assert not ours, ours[:5]
