"""The summariser's and fact scans' memos hold at most ``SCAN_MEMO_ENTRIES`` texts (8,192
held up to ~20 MiB apiece after a long replay), and still answer a text read again soon
from the memo."""

from __future__ import annotations

import random

from ctxlab.engine.evaluate import extract
from ctxlab.engine.evaluate.extract import SCAN_MEMO_ENTRIES
from ctxlab.engine.summarize import offline

MEMOS = (
    offline._first_line,
    offline._matching_lines,
    offline._fact_head,
    extract._part_facts,
    extract._part_urls_errors,
    extract._part_critical,
)


def _texts(n: int) -> list[str]:
    rng = random.Random(2)
    return [
        f"line {i}: we decided to use pytest, see src/m{i}.py\n" + "z" * rng.randint(900, 1100)
        for i in range(n)
    ]


def _read(text: str) -> None:
    offline._first_line(text)
    offline._matching_lines(text, offline.DECISION_RE)
    head = offline._fact_head(text[: offline.FACT_CHARS])
    extract._part_facts(head, 200)
    extract._part_urls_errors(head, 200)
    extract._part_critical(head, 200)


def test_the_scan_memos_are_bounded_and_hit_on_recent_texts() -> None:
    offline.clear_caches()
    texts = _texts(3 * SCAN_MEMO_ENTRIES)
    for text in texts:
        _read(text)
    for memo in MEMOS:
        assert memo.cache_info().currsize == SCAN_MEMO_ENTRIES, memo
    hits = [memo.cache_info().hits for memo in MEMOS]
    for text in texts[-SCAN_MEMO_ENTRIES // 2 :]:  # read again soon: from the memos
        _read(text)
    for memo, before in zip(MEMOS, hits, strict=True):
        assert memo.cache_info().hits - before == SCAN_MEMO_ENTRIES // 2, memo
    offline.clear_caches()
    assert all(memo.cache_info().currsize == 0 for memo in MEMOS)


def test_a_memoised_answer_is_the_functions() -> None:
    offline.clear_caches()
    for text in _texts(50):
        assert offline._first_line(text) == offline._first_line.__wrapped__(text)
        head = text[: offline.FACT_CHARS]
        assert offline._fact_head(head) == offline._fact_head.__wrapped__(head)
        assert extract._part_critical(head, 200) == extract._part_critical.__wrapped__(head, 200)
