"""OpenHands condensers: the original's unit tests (tests/unit/memory/condenser/
test_condenser.py @ 156d0686) ported over the pure arithmetic, table tests of its edge cases,
and replays through the strategy, synthetic and a real corpus transcript."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ctxlab.engine import importers
from ctxlab.engine.core.model import Message
from ctxlab.engine.core.records import REMOVED_FATES, Fate, ReplayResult
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES
from ctxlab.engine.strategies import _openhands_condenser_rules as rules
from tests.engine.builders import assistant, call, conv, system, tool_result, user

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
NAME = "openhands_condenser"
SUMMARY = -2


# -- the original's RollingCondenserTestHarness, over event ids ------------------------------


def harness_views(
    n_events: int, forget: Callable[[list[int]], list[int]], max_size: int, summary_at: int | None
) -> Iterator[list[int]]:
    """Events 0..n-1 appended one by one; a condensation (when the view is longer than
    max_size) is appended instead of yielding a view, as the harness does."""
    history: list[int] = []
    forgotten: set[int] = set()
    offset: int | None = None
    for event in range(n_events):
        history.append(event)
        view = rules.from_events(history, forgotten, offset, SUMMARY)
        if rules.should_condense(len(view), max_size):
            gone = forget(view)
            assert gone, "the original's min() would raise"
            # CondensationAction forgets the id range min..max (contiguous in the view).
            forgotten.update(range(min(gone), max(gone) + 1))
            offset = summary_at if summary_at is not None else offset
            continue
        yield view


def expected_size(index: int, max_size: int) -> int:
    if index < max_size:
        return index + 1
    target_size = max_size // 2
    return ((index - max_size) % target_size) + target_size + 1


def expected_condensations(index: int, max_size: int) -> int:
    if index < max_size:
        return 0
    return ((index - max_size) // (max_size // 2)) + 1


def test_llm_summarizing_condenser_gives_expected_view_size() -> None:
    max_size, keep_first = 10, 1  # the constructor's default keep_first

    def forget(view: list[int]) -> list[int]:
        return rules.llm_summarizing_forgotten(view, keep_first, max_size, SUMMARY)

    for i, view in enumerate(harness_views(max_size * 10, forget, max_size, keep_first)):
        assert len(view) == expected_size(i, max_size)


def test_llm_summarizing_condenser_keeps_first_and_summary_events() -> None:
    max_size, keep_first = 10, 3
    calls = 0

    def forget(view: list[int]) -> list[int]:
        nonlocal calls
        calls += 1
        return rules.llm_summarizing_forgotten(view, keep_first, max_size, SUMMARY)

    events = list(range(max_size * 10))
    for i, view in enumerate(harness_views(len(events), forget, max_size, keep_first)):
        assert len(view) == expected_size(i, max_size)
        assert calls == expected_condensations(i, max_size)
        assert view[:keep_first] == events[: min(keep_first, i + 1)]
        if i > max_size:
            assert view[keep_first] == SUMMARY


def test_amortized_forgetting_condenser_gives_expected_view_size() -> None:
    max_size = 12

    def forget(view: list[int]) -> list[int]:
        return rules.amortized_forgotten(view, 0, max_size)

    for i, view in enumerate(harness_views(max_size * 10, forget, max_size, None)):
        assert len(view) == expected_size(i, max_size)


def test_amortized_forgetting_condenser_keeps_first_and_last_events() -> None:
    max_size, keep_first = 12, 4

    def forget(view: list[int]) -> list[int]:
        return rules.amortized_forgotten(view, keep_first, max_size)

    events = list(range(max_size * 10))
    seen = 0
    for i, view in enumerate(harness_views(len(events), forget, max_size, None)):
        assert len(view) == expected_size(i, max_size)
        assert view[-1] >= seen  # the newest event is always in the view
        seen = view[-1]
        assert view[:keep_first] == events[: min(keep_first, i + 1)]


@pytest.mark.parametrize(
    ("max_size", "keep_first", "message"),
    [
        (4, 2, "keep_first \\(2\\) must be less than half of max_size \\(4\\)"),
        (0, 1, "must be less than half"),  # checked first, as in the original
        (100, -1, "keep_first \\(-1\\) cannot be negative"),
    ],
)
def test_rolling_condenser_invalid_config(max_size: int, keep_first: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rules.check_rolling_config(max_size, keep_first)


def test_strategy_rejects_the_same_configs_for_rolling_condensers_only() -> None:
    cls = STRATEGIES[NAME]
    for kind in ("llm", "amortized"):
        with pytest.raises(ValueError, match="less than half of max_size"):
            cls({"condenser": kind, "max_size": 8, "keep_first": 4})
    assert cls({"condenser": "recent", "max_size": 8, "keep_first": 4}).keep_first == 4


def test_recent_events_condenser() -> None:
    events = [1, 2, 3, 4, 5]
    assert rules.recent_view(events, 1, len(events)) == events
    assert rules.recent_view(events, 1, 3) == [1, 4, 5]
    assert rules.recent_view(events, 1, 2) == [1, 5]
    assert rules.recent_view(events, 2, 3) == [1, 2, 5]


def test_recent_zero_tail_is_the_whole_view_quirk() -> None:
    # tail_length 0 -> view[-0:] is the whole view: nothing dropped (head sent twice).
    assert rules.recent_view([1, 2, 3], 2, 2) == [1, 2, 1, 2, 3]


def test_observation_masking_condenser_respects_attention_window() -> None:
    # Events 0..4, window 3: positions 0 and 1 are outside it.
    assert list(rules.masked_positions(5, 3)) == [0, 1]
    assert list(rules.masked_positions(2, 3)) == []


@pytest.mark.parametrize(
    ("content", "limit", "expected"),
    [
        ("abcdef", 10, "abcdef"),
        ("abcdef", 6, "abcdef"),
        ("abcdefgh", 4, "ab" + rules.TRUNCATED_NOTE + "gh"),
        ("abcdefgh", 5, "ab" + rules.TRUNCATED_NOTE + "gh"),
        ("abcdefgh", -1, "abcdefgh"),
    ],
)
def test_truncate_content(content: str, limit: int, expected: str) -> None:
    assert rules.truncate_content(content, limit) == expected


@pytest.mark.parametrize(
    ("view_size", "keep_first", "max_size", "summary", "forgotten"),
    [
        (11, 1, 10, False, list(range(1, 8))),  # tail 5 - 1 - 1 = 3: view[1:-3]
        (11, 3, 10, True, list(range(4, 10))),  # the previous summary at 3 stays
        (11, 4, 10, False, []),  # tail 0: view[4:-0] is empty, the original's min() raises
        (121, 4, 120, False, list(range(4, 66))),  # the app's default
    ],
)
def test_llm_summarizing_forgotten_slice(
    view_size: int, keep_first: int, max_size: int, summary: bool, forgotten: list[int]
) -> None:
    view = list(range(view_size))
    if summary:
        view[keep_first] = SUMMARY
    got = rules.llm_summarizing_forgotten(view, keep_first, max_size, SUMMARY)
    assert got == forgotten
    if got:
        kept = len(view) - len(got) - (1 if summary else 0)
        assert kept + 1 == max_size // 2  # + the new summary: the target size


def test_summary_prompt_is_the_pinned_text() -> None:
    digest = hashlib.sha256(rules.SUMMARY_PROMPT.encode()).hexdigest()
    assert digest == rules.SUMMARY_PROMPT_SHA256
    assert rules.SUMMARY_PROMPT.startswith("You are maintaining a context-aware state summary")


# -- the strategy ------------------------------------------------------------------------------


def tools_conv(k: int) -> object:
    msgs: list[Message] = [system(), user("fix the bug")]
    for i in range(k):
        msgs += [call(f"t{i}", "bash", cmd=f"c{i}"), tool_result(f"t{i}", f"out {i}\n" * 30)]
    msgs.append(assistant("done"))
    return conv(*msgs)


def test_registered_everywhere_with_origins() -> None:
    cls = STRATEGIES[NAME]
    assert NAME in LIBRARY and NAME not in PRESETS
    assert all(p.origin and p.help for p in cls.PARAMS)
    params = cls().params
    assert (params["condenser"], params["max_size"], params["keep_first"]) == ("llm", 120, 4)
    assert cls.window_params(50_000) == {"context_window": 50_000}


@pytest.mark.parametrize(("max_size", "keep_first"), [(10, 1), (10, 3), (20, 4), (12, 0)])
def test_llm_condensation_cuts_the_view_to_half(max_size: int, keep_first: int) -> None:
    res = run(tools_conv(30), NAME, params={"max_size": max_size, "keep_first": keep_first})
    events = [e for e in res.events if e.kind == "summarise"]
    assert len(events) >= 2 and len(res.summaries) == len(events)
    for n, event in enumerate(events):
        removed = [c for c in event.changes if c.fate is Fate.SUMMARISED]
        assert event.detail["view_size"] > max_size
        # The new view: what stayed + the one summary (the previous summary is replaced).
        previous = 1 if n else 0
        # keep_first 0 forgets the system message in the original; the replay keeps it.
        system_kept = 1 if keep_first == 0 else 0
        size = event.detail["view_size"] - len(removed) - previous + 1
        assert size == max_size // 2 + system_kept
        # The head (system prompt + keep_first - 1 messages) is never summarised.
        assert min(c.index for c in removed) >= keep_first
    # Each request after the first condensation carries the previous summary.
    assert "No events summarized" in res.summaries[0].input
    assert "<PREVIOUS SUMMARY>\nNo events summarized" not in res.summaries[1].input


def test_llm_tail_zero_is_the_originals_crash() -> None:
    res = run(tools_conv(12), NAME, params={"max_size": 10, "keep_first": 4})
    assert res.events and all(e.kind == "compact_failed" for e in res.events)
    assert "min()" in res.events[0].detail["error"]


def test_amortized_drops_without_summary() -> None:
    res = run(tools_conv(20), NAME, params={"condenser": "amortized", "max_size": 12})
    assert res.events and {e.kind for e in res.events} == {"drop"}
    assert not res.summaries
    for event in res.events:
        gone = len(event.changes)
        assert all(c.fate is Fate.DROPPED for c in event.changes)
        assert event.detail["view_size"] - gone == 12 // 2


def test_recent_keeps_first_and_newest() -> None:
    res = run(
        tools_conv(10), NAME, params={"condenser": "recent", "max_events": 6, "keep_first": 2}
    )
    assert res.events and {e.kind for e in res.events} == {"drop"}
    for event in res.events:
        assert event.detail["view_size"] - len(event.changes) == 6
    dropped = {c.index for e in res.events for c in e.changes}
    assert 1 not in dropped  # system + the task are the first two events


def test_observation_masking_masks_and_drops_the_unanswered_call() -> None:
    res = run(
        tools_conv(6), NAME, params={"condenser": "observation_masking", "attention_window": 4}
    )
    assert res.events and {e.kind for e in res.events} == {"prune"}
    pruned = [c for e in res.events for c in e.changes if c.fate is Fate.PRUNED]
    dropped = {c.index for e in res.events for c in e.changes if c.fate in REMOVED_FATES}
    assert pruned and all(c.message and c.message.text == "<MASKED>" for c in pruned)
    # Each masked observation's call (the message before it) left the request too.
    assert dropped == {c.index - 1 for c in pruned}


def corpus_replay(params: dict[str, object]) -> ReplayResult:
    name = "claude-code/agentcmd-full-session-four.jsonl"
    conversation = importers.parse((CORPUS / name).read_bytes(), name=name).conversations[0]
    return run(conversation, NAME, params=params)


def test_real_session_condenses_and_saves() -> None:
    full = corpus_replay({"max_size": 1000, "keep_first": 4})
    cut = corpus_replay({"max_size": 40, "keep_first": 4})
    assert not full.events
    assert [e.kind for e in cut.events] == ["summarise"]
    assert cut.steps[-1].tokens.strategy < full.steps[-1].tokens.strategy


# -- native config export ---------------------------------------------------------------------


def test_native_config_is_the_condenser_section_of_config_toml() -> None:
    import tomllib

    from ctxlab.engine.native_config import native_config

    default = native_config(NAME)
    assert default.filename == "config.toml" and not default.unexpressed
    assert tomllib.loads(default.text) == {
        "condenser": {
            "type": "llm",
            "llm_config": "condenser",
            "keep_first": 4,
            "max_size": 120,
            "max_event_length": 10_000,
        }
    }
    recent = native_config(NAME, {"condenser": "recent", "max_events": 30, "max_size": 50})
    assert tomllib.loads(recent.text)["condenser"] == {
        "type": "recent",
        "keep_first": 4,
        "max_events": 30,
    }
    assert recent.unexpressed == (("max_size", 50),)  # recent never reads max_size
