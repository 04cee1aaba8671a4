"""lost.py: facts of removed/modified messages that nothing kept, on hand-built replays."""

from __future__ import annotations

import pytest
from builders import assistant, call, system, tool_result, user

from ctxlab.engine import replay
from ctxlab.engine.core.records import (
    Change,
    Event,
    Fate,
    ReplayResult,
    StepRecord,
    StepTokens,
    SummaryRecord,
    Zones,
)
from ctxlab.engine.evaluate.extract import KINDS
from ctxlab.engine.evaluate.lost import analyse, message_facts, message_text

ZONES = Zones(0, 0, 0, 0, 0, 0, 0, 1000, None)

MESSAGES = (
    system("You are an agent."),
    user("please fix src/app/main.py"),  # 1: path
    call("t1", "read", path="src/app/util.py"),  # 2: path only in the tool input
    tool_result("t1", "KeyError: no retries in parse_config after 1234 ms"),  # 3
    assistant("see https://example.org/docs and fix parse_config"),  # 4
    user("ok, continue"),  # 5
)


def step(index: int, ranges: tuple[tuple[int, int], ...], summary: int | None = None) -> StepRecord:
    return StepRecord(
        index=index,
        source_index=0,
        tokens=StepTokens(0, 0),
        zones=ZONES,
        context=ranges,
        summary_id=summary,
    )


def result(
    steps: list[StepRecord], events: list[Event], summaries: list[SummaryRecord] = ()
) -> ReplayResult:
    return ReplayResult(
        strategy="x",
        params={},
        estimator="e",
        summarizer="s",
        message_count=len(MESSAGES),
        steps=steps,
        events=events,
        summaries=list(summaries),
    )


def test_analyse_no_events_scores_none() -> None:
    retention = analyse(result([step(0, ((0, 6),))], []), MESSAGES)
    assert retention.events == ()
    assert retention.score is None
    assert retention.as_dict()["retention"] is None


def test_analyse_dropped_message_facts_are_lost() -> None:
    drop = Event(0, 1, "drop", (1,), changes=(Change(1, Fate.DROPPED),))
    res = result([step(0, ((0, 6),)), step(1, ((0, 1), (2, 6)))], [drop])
    retention = analyse(res, MESSAGES)
    (event,) = retention.events
    assert {(f.kind, f.value) for f in event.lost} == {
        ("instructions", "please fix src/app/main.py"),  # what the user asked, in their words
        ("paths", "src/app/main.py"),
    }
    assert event.lost[0].message == 1
    assert retention.score == 0.0


def test_analyse_fact_repeated_in_kept_message_is_retained() -> None:
    # parse_config (identifier) appears in 3 and 4; dropping 3 keeps it via 4.
    drop = Event(0, 1, "drop", (3,), changes=(Change(3, Fate.DROPPED),))
    res = result([step(0, ((0, 6),)), step(1, ((0, 3), (4, 6)))], [drop])
    (event,) = analyse(res, MESSAGES).events
    values = {f.value for f in event.lost}
    assert "parse_config" not in values
    assert "1234 ms" in values
    assert any("KeyError" in v for v in values)
    assert event.retained >= 1
    assert event.at_risk == event.retained + event.lost_count


def test_analyse_summary_keeps_facts() -> None:
    summary = SummaryRecord(0, 1, "in", "User wants src/app/main.py fixed; see src/app/util.py")
    summarise = Event(
        0,
        1,
        "summarise",
        (1, 2),
        changes=(Change(1, Fate.SUMMARISED), Change(2, Fate.SUMMARISED)),
        summary_id=0,
    )
    res = result([step(0, ((0, 6),)), step(1, ((0, 1), (3, 6)), summary=0)], [summarise], [summary])
    (event,) = analyse(res, MESSAGES).events
    values = {f.value for f in event.lost}
    assert "src/app/main.py" not in values
    assert "src/app/util.py" not in values
    assert event.messages == 2


def test_analyse_truncated_version_keeps_what_it_still_says() -> None:
    truncated = tool_result("t1", "KeyError: no retries in parse_config [truncated]")
    cut = Event(0, 1, "truncate", (3,), changes=(Change(3, Fate.TRUNCATED, message=truncated),))
    res = result([step(0, ((0, 6),)), step(1, ((0, 6),))], [cut])
    (event,) = analyse(res, MESSAGES).events
    values = {f.value for f in event.lost}
    assert "1234 ms" in values  # cut away
    assert "parse_config" not in values  # still in the truncated text (and in 4)


def test_analyse_second_event_sees_truncated_version_at_risk() -> None:
    # After a truncation, a later drop can only lose what the truncated version held.
    truncated = tool_result("t1", "[cut]")
    cut = Event(0, 1, "truncate", (3,), changes=(Change(3, Fate.TRUNCATED, message=truncated),))
    drop = Event(1, 2, "drop", (3,), changes=(Change(3, Fate.DROPPED),))
    steps = [step(0, ((0, 6),)), step(1, ((0, 6),)), step(2, ((0, 3), (4, 6)))]
    retention = analyse(result(steps, [cut, drop]), MESSAGES)
    first, second = retention.events
    assert first.at_risk > 0
    assert second.at_risk == len(message_facts(truncated))
    assert retention.at_risk == first.at_risk + second.at_risk


def test_analyse_pruned_then_restored_is_original_again() -> None:
    placeholder = tool_result("t1", "[pruned]")
    prune = Event(0, 1, "prune", (3,), changes=(Change(3, Fate.PRUNED, message=placeholder),))
    restore = Event(1, 2, "restore", (3,), changes=(Change(3, Fate.RESTORED),))
    drop = Event(2, 3, "drop", (4,), changes=(Change(4, Fate.DROPPED),))
    steps = [step(i, ((0, 6),)) for i in range(3)] + [step(3, ((0, 4), (5, 6)))]
    retention = analyse(result(steps, [prune, restore, drop]), MESSAGES)
    assert [e.kind for e in retention.events] == ["prune", "drop"]  # restore risks nothing
    drop_loss = retention.events[1]
    # parse_config lives on in 3, which is original again after the restore
    assert "parse_config" not in {f.value for f in drop_loss.lost}
    assert "https://example.org/docs" in {f.value for f in drop_loss.lost}


def test_analyse_same_step_events_judged_after_all_of_them() -> None:
    # Two events at one step: 3 dropped, then 4 dropped; parse_config was in both, so it is
    # lost for the first event too (nothing holds it in the step's request).
    a = Event(0, 1, "drop", (3,), changes=(Change(3, Fate.DROPPED),))
    b = Event(1, 1, "drop", (4,), changes=(Change(4, Fate.DROPPED),))
    res = result([step(0, ((0, 6),)), step(1, ((0, 3), (5, 6)))], [a, b])
    first, second = analyse(res, MESSAGES).events
    assert "parse_config" in {f.value for f in first.lost}
    assert "parse_config" in {f.value for f in second.lost}


@pytest.mark.parametrize(
    ("limit", "listed"),
    [pytest.param(1, 1, id="capped"), pytest.param(100, None, id="all")],
)
def test_analyse_limit_caps_listing_not_counts(limit: int, listed: int | None) -> None:
    drop = Event(0, 1, "drop", (3,), changes=(Change(3, Fate.DROPPED),))
    res = result([step(0, ((0, 6),)), step(1, ((0, 3), (4, 6)))], [drop])
    (event,) = analyse(res, MESSAGES, limit=limit).events
    assert event.lost_count >= 2
    assert len(event.lost) == (listed if listed is not None else event.lost_count)


def test_message_text_includes_tool_input() -> None:
    assert "src/app/util.py" in message_text(MESSAGES[2])


def test_analyse_real_replay_scores_between_zero_and_one() -> None:
    from builders import conv, cycle

    conversation = conv(system(), *cycle(30, size=900))
    res = replay.run(conversation, "cowagent", params={"agent_max_context_tokens": 3000})
    retention = analyse(res, conversation.messages)
    assert retention.events, "the small window should make cowagent compact"
    assert retention.score is not None
    assert 0.0 <= retention.score <= 1.0
    data = retention.as_dict()
    assert data["at_risk"] == sum(e["at_risk"] for e in data["events"])


def test_a_capped_listing_is_the_head_of_the_whole_one_on_a_real_replay() -> None:
    """The facts listed under a ``limit`` are the first ones of the whole sorted listing
    (kind, message, value): only the head is picked, never a different set."""
    from builders import conv, cycle

    conversation = conv(system(), *cycle(30, size=900))
    res = replay.run(conversation, "cowagent", params={"agent_max_context_tokens": 3000})
    whole = analyse(res, conversation.messages, limit=10**6)
    capped = analyse(res, conversation.messages, limit=3)
    assert any(e.lost_count > 3 for e in whole.events)
    for full, head in zip(whole.events, capped.events, strict=True):
        assert len(full.lost) == full.lost_count == head.lost_count
        assert head.lost == full.lost[:3]
        assert list(full.lost) == sorted(
            full.lost, key=lambda f: (KINDS.index(f.kind), f.message, f.value)
        )
