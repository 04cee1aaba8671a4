"""Which page process the front forwards a GET to (``PagePool.choose``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ctxlab.serving.page_pool import PagePool


@pytest.fixture
def pool() -> Iterator[PagePool]:
    made = PagePool(3)
    try:
        yield made
    finally:
        made.stop()  # no process started: removes its directory


def _listen(pool: PagePool, *indexes: int) -> None:
    for index in indexes:
        pool.sockets[index].touch()


def test_none_listening_means_the_front_answers(pool: PagePool) -> None:
    assert pool.choose() is None


def test_ties_go_round_so_every_process_meets_first_views(pool: PagePool) -> None:
    _listen(pool, 0, 1, 2)
    assert [pool.choose() for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_the_least_busy_wins_over_the_turn(pool: PagePool) -> None:
    _listen(pool, 0, 1, 2)
    pool.busy[:] = [0, 2, 1]
    assert [pool.choose() for _ in range(3)] == [0, 0, 0]
    pool.busy[:] = [1, 0, 1]
    assert pool.choose() == 1
    pool.busy[:] = [0, 0, 0]
    assert pool.choose() == 2  # the turn goes on after the last chosen


def test_a_process_not_listening_is_skipped(pool: PagePool) -> None:
    _listen(pool, 0, 2)
    assert [pool.choose() for _ in range(4)] == [0, 2, 0, 2]
