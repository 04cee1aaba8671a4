"""The catalogue names, per event kind, the detail keys holding the size a strategy
measured and the limit it compared it with (the compare page's trigger column reads them
from there, not by guessing). Every strategy in the library, replayed over real corpus
sessions, puts its numbers only under keys its event kinds declare."""

from __future__ import annotations

from catalogue_runs import library_results

from ctxlab.engine.core.catalogue import detail_number, event_kind

# Every key a strategy has used for a size or a limit (what the old guess looked for).
SIZE_WORDS = {"estimate", "tokens", "total_tokens", "reference", "current"}
LIMIT_WORDS = {"threshold", "budget", "limit", "window", "trigger"}


def _numbers(detail: dict[str, object], words: set[str]) -> set[str]:
    return {
        k for k, v in detail.items()
        if k in words and isinstance(v, int | float) and not isinstance(v, bool)
    }  # fmt: skip


def test_every_size_and_limit_an_event_carries_is_declared_for_its_kind() -> None:
    undeclared: set[tuple[str, str]] = set()
    read = 0
    for _, _, _, result in library_results():
        for event in result.events:
            found = event_kind(event.kind)
            assert found is not None, event.kind
            detail = dict(event.detail)
            undeclared |= {
                (found.kind, k)
                for k in _numbers(detail, SIZE_WORDS)
                if k not in found.measured_keys
            }
            undeclared |= {
                (found.kind, k) for k in _numbers(detail, LIMIT_WORDS) if k not in found.limit_keys
            }
            measured, key = detail_number(event.kind, detail)
            if measured is not None:
                read += 1
                assert detail[key] == measured
    assert not undeclared, sorted(undeclared)
    assert read > 0


def test_detail_number_reads_the_kind_own_keys_in_order() -> None:
    assert detail_number("compact", {"total_tokens": 9, "estimate": 7}) == (7, "estimate")
    assert detail_number("compact", {"limit": 5}, limit=True) == (5, "limit")
    assert detail_number("truncate", {"estimate": 7}) == (None, "")
    assert detail_number("compact", {"estimate": True}) == (None, "")  # a flag, not a size
