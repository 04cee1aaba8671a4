"""``textmemo.TextMemo``: the summariser's and fact scans' memos, bounded by the characters
of the texts they hold (an entry-bounded ``lru_cache`` held 8,192 texts of any size)."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

from ctxlab.engine import extract, summarizers
from ctxlab.engine.textmemo import SCAN_MEMO_CHARS, TextMemo


def _counting(calls: list[str]) -> Callable[..., str]:
    def upper(text: str, *rest: object) -> str:
        calls.append(text)
        return text.upper() + "".join(map(str, rest))

    return upper


def test_results_are_the_functions_and_repeats_are_not_recomputed() -> None:
    calls: list[str] = []
    memo = TextMemo(_counting(calls), max_chars=100)
    assert memo("abc") == "ABC"
    assert memo("abc") == "ABC"
    assert memo("abc", 2) == "ABC2"  # other arguments: another entry
    assert calls == ["abc", "abc"]


def test_held_characters_stay_within_the_bound_least_recent_first_out() -> None:
    calls: list[str] = []
    memo = TextMemo(_counting(calls), max_chars=10)
    for text in ("aaaa", "bbbb", "cc"):  # 10 characters: all held
        memo(text)
    memo("aaaa")  # now the most recent
    memo("dddd")  # 14 > 10: the least recently used ("bbbb") goes
    assert len(memo) == 3
    calls.clear()
    memo("aaaa"), memo("cc"), memo("dddd")
    assert calls == []
    memo("bbbb")
    assert calls == ["bbbb"]


def test_a_text_longer_than_the_bound_is_computed_not_held() -> None:
    calls: list[str] = []
    memo = TextMemo(_counting(calls), max_chars=10)
    memo("short")
    assert memo("x" * 11) == "X" * 11
    assert len(memo) == 1  # the short one was not evicted for it
    memo("x" * 11)
    assert calls.count("x" * 11) == 2


def test_random_use_never_passes_the_bound_and_always_answers_right() -> None:
    rng = random.Random(5)
    memo = TextMemo(lambda text: len(text), max_chars=500)
    texts = ["y" * rng.randint(1, 120) + str(i) for i in range(200)]
    for _ in range(5000):
        text = rng.choice(texts)
        assert memo(text) == len(text)
        assert sum(len(k) for k in memo._items) <= 500
        assert memo._chars == sum(len(k) for k in memo._items)


def test_threads_share_one_consistent_memo() -> None:
    memo = TextMemo(lambda text: text[::-1], max_chars=300)
    texts = [f"text {i} " * (i % 7 + 1) for i in range(100)]
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(3000):
                text = rng.choice(texts)
                assert memo(text) == text[::-1]
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert memo._chars == sum(len(k) for k in memo._items) <= 300


def test_the_summariser_and_fact_memos_are_bounded_by_characters() -> None:
    summarizers.clear_caches()
    rng = random.Random(2)
    # 12,000 distinct texts of ~1,000 characters: an 8,192-entry memo held ~8 M characters
    for i in range(12_000):
        text = f"line {i}: we decided to use pytest\n" + "z" * rng.randint(900, 1100)
        summarizers._first_line(text)
        summarizers._matching_lines(text, summarizers.DECISION_RE)
        summarizers._fact_head(text[: summarizers.FACT_CHARS])
        extract._part_critical(text, 200)
    for memo in (
        summarizers._first_line,
        summarizers._matching_lines,
        summarizers._fact_head,
        extract._part_critical,
    ):
        held = memo._chars
        assert 0 < held <= SCAN_MEMO_CHARS
    summarizers.clear_caches()
    assert len(summarizers._first_line) == len(extract._part_critical) == 0
