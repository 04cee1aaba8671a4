"""Issue 31 item 8: why a compaction fired is the comparison that fired, with the numbers
that crossed. QwenPaw (and CoPaw, ReMe's check) compare the *history* with what the
threshold leaves after the system prompt and the summary; the label read the history and
the bare threshold instead, so its second summary said "context 16,326 < threshold 16,800"
while the events table said 17,110 -> 2,934."""

from __future__ import annotations

from builders import assistant, conv, system, user

from ctxlab.engine.core.catalogue import is_compaction, trigger_of
from ctxlab.engine.replay import run
from ctxlab.engine.strategies.copaw import CoPaw
from ctxlab.engine.strategies.qwenpaw import QwenPaw


def _session() -> object:
    turns = []
    for i in range(14):
        turns += [user(f"task {i}: " + "u" * 600), assistant(f"done {i}: " + "a" * 600)]
    return conv(system("You are QwenPaw. " + "s" * 400), *turns)


def _stated(strategy: object) -> list[tuple[str, object]]:
    result = run(_session(), strategy)  # type: ignore[arg-type]
    return [(trigger_of(e.kind, e.detail).words(), e) for e in result.events
            if is_compaction(e.kind) and e.summary_id is not None]  # fmt: skip


def test_qwenpaw_second_summary_states_the_comparison_that_fired() -> None:
    stated = _stated(QwenPaw({"max_input_length": 2048, "language": "en"}))
    assert len(stated) >= 2
    for words, event in stated:
        trigger = trigger_of(event.kind, event.detail)  # type: ignore[attr-defined]
        assert trigger.measured is not None and trigger.limit is not None
        assert trigger.measured >= trigger.limit, words  # it fired: never "<"
        assert "≥" in words and words.startswith("history ")
        detail = event.detail  # type: ignore[attr-defined]
        assert (
            trigger.limit
            == detail["threshold"] - detail["system_tokens"] - detail["summary_tokens"]
        )
    second = stated[1][1].detail  # type: ignore[attr-defined]
    assert second["summary_tokens"] > 0
    assert second["estimate"] < second["threshold"]  # what the label compared before: "<"
    assert f"summary {second['summary_tokens']:,} =" in stated[1][0]


def test_copaw_states_the_comparison_that_fired() -> None:
    stated = _stated(CoPaw({"max_input_length": 2048, "language": "en"}))
    assert stated
    for words, event in stated:
        trigger = trigger_of(event.kind, event.detail)  # type: ignore[attr-defined]
        assert trigger.measured is not None and trigger.limit is not None
        assert trigger.measured >= trigger.limit and "≥" in words, words


def test_a_kind_without_a_named_comparison_reads_its_usual_keys() -> None:
    trigger = trigger_of("compact", {"tokens": 27_410, "threshold": 26_214})
    assert trigger.words() == "context 27,410 ≥ threshold 26,214"
