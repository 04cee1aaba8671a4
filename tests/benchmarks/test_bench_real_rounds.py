"""bench real's timing (``ctxlab/benchmarks/_real_timing.py``): every strategy measured the
same way in interleaved rounds, each replay from its own copy of the reference counts and
cold per-text caches, the median reported with its spread."""

from __future__ import annotations

import copy
import functools
import gc
import io
import sys
from pathlib import Path

import pytest

from ctxlab.benchmarks import _real_timing as timing
from ctxlab.engine import synth
from ctxlab.engine.core import lru
from ctxlab.engine.core.model import Conversation
from ctxlab.engine.replay import run as replay_run
from ctxlab.engine.strategies import LIBRARY, STRATEGIES, aider
from ctxlab.engine.tokens import qwen_tokens
from ctxlab.engine.tokens.cl100k import reference_counter
from ctxlab.engine.tokens.reference import ReferenceTokens

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"


@functools.cache
def _conversation(messages: int) -> Conversation:
    return synth.bench_conversation(CORPUS, messages=messages, seed=1)


def test_spread_reports_the_median_and_both_ends() -> None:
    spread = timing.Spread([2.3, 1.9, 2.0])
    assert spread.value == 2.0
    assert spread.text() == "2.000 min=1.900 max=2.300"


def test_scaling_of_fastest_divides_each_sizes_fastest_reading() -> None:
    got = timing.Rounds(at_20k={"s": [1.0, 1.4, 1.1]}, at_40k={"s": [2.9, 2.1, 2.3]})
    assert got.scaling("s").samples == [2.9, 2.1 / 1.4, 2.3 / 1.1]
    assert got.scaling_of_fastest("s") == 2.1  # 2.1 / 1.0: a slow round drops out


def test_a_replay_over_a_fork_leaves_the_counted_reference_as_it_was() -> None:
    conversation = _conversation(300)
    reference = ReferenceTokens(conversation)
    before = {k: copy.copy(v) for k, v in vars(reference).items()}
    fork = timing.fork_reference(reference, conversation)
    # observation masking rewrites the tool results before the last 10 turns and counts them
    forked = replay_run(conversation, "observation_masking", reference=fork)
    assert len(fork._memo) > len(before["_memo"])  # the replay counted modified texts ...
    for name, value in vars(reference).items():  # ... into its own copy only
        if isinstance(value, (dict, list, set, tuple, int)):
            assert value == before[name], name
    assert fork._messages is reference._messages  # the conversation is shared, not copied
    fresh = replay_run(conversation, "observation_masking", reference=ReferenceTokens(conversation))
    assert [s.tokens for s in forked.steps] == [s.tokens for s in fresh.steps]


def _engine_caches() -> dict[str, int]:
    """Sizes of every module-level per-call cache in the loaded engine modules."""
    found: dict[str, int] = {}
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("ctxlab.engine") or module is None:
            continue
        for attr, value in vars(module).items():
            if isinstance(value, functools._lru_cache_wrapper):
                found[f"{module_name}.{attr}"] = value.cache_info().currsize
            elif isinstance(value, lru.BoundedLRU):
                found[f"{module_name}.{attr}"] = len(value.items)
    return found


# Caches of configuration, not of texts: one entry whatever was replayed.
CONFIGURATION = {"_encoding", "reference_counter", "qwen_counter", "_fast_count", "_tokenizer",
                 "qwenpaw_constants", "reme_yaml", "compression_prompt", "load_rules",
                 "_pieces"}  # fmt: skip


def _clear_engine_caches() -> None:
    """Empty every cache ``_engine_caches`` sees, so that what is filled afterwards was
    filled by this test's replays (earlier tests in the process fill others: pricing,
    probes)."""
    for name in _engine_caches():
        module_name, attr = name.rsplit(".", 1)
        value = getattr(sys.modules[module_name], attr)
        if isinstance(value, functools._lru_cache_wrapper):
            value.cache_clear()
        else:
            value.items.clear()


def test_cold_caches_empties_every_per_text_cache_a_replay_fills() -> None:
    conversation = _conversation(1200)  # ~500K tokens: every strategy compacts by default
    _clear_engine_caches()
    for name in [n for n in LIBRARY if n in STRATEGIES]:
        replay_run(conversation, name)
    filled = {k for k, v in _engine_caches().items() if v}
    timing.cold_caches()
    left = {
        k for k, v in _engine_caches().items() if v and k.rsplit(".", 1)[1] not in CONFIGURATION
    }
    assert filled, "the replays filled some cache"
    assert not left, f"bench real would time these warm: {sorted(left)}"
    assert reference_counter().count.cache_info().currsize == 0  # type: ignore[attr-defined]
    assert qwen_tokens.qwen_counter().memoised() == 0


def test_rounds_measure_every_strategy_at_both_sizes_alternating_which_goes_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stored = timing.Stored.of(_conversation(200)), timing.Stored.of(_conversation(400))
    order: list[tuple[str, int]] = []
    real_worker = timing.worker_replay

    def spy(stored: timing.Stored, name: str) -> float:
        order.append((name, len(stored.columns["reference_tokens"])))
        return real_worker(stored, name)

    monkeypatch.setattr(timing, "worker_replay", spy)
    names = ["observation_masking", "langchain_trim"]
    out = io.StringIO()
    got = timing.measure(stored, names, out, rounds=2, extra_rounds=0, min_reading=0)
    assert order[2:] == [
        ("observation_masking", 200), ("observation_masking", 400),
        ("langchain_trim", 400), ("langchain_trim", 200),
        ("observation_masking", 400), ("observation_masking", 200),
        ("langchain_trim", 200), ("langchain_trim", 400),
    ]  # fmt: skip
    assert order[:2] == [(n, 200) for n in names]  # the untimed warm-up
    assert len(got.floor) == len(got.reference) == 2
    assert got.own_tokenizer == {"observation_masking": False, "langchain_trim": True}
    for name in names:
        assert all(t > 0 for t in got.at_20k[name] + got.at_40k[name] + got.memory[name])
        spread = got.floor_ratio(name)
        assert len(spread.samples) == 2
        assert min(spread.samples) <= spread.value <= max(spread.samples)
        # each round's ratio pairs that round's readings: the worker's path over the floor
        r = 1
        floor, _ = got.floor_of(name, r)
        assert spread.samples[r] == pytest.approx(got.at_20k[name][r] / floor)
        assert got.scaling(name).samples[r] == pytest.approx(
            got.at_40k[name][r] / got.at_20k[name][r]
        )
        memory = (got.reference[r] + got.memory[name][r]) / (got.floor[r] + got.own[name][r])
        assert got.memory_ratio(name).samples[r] == pytest.approx(memory)
    # a strategy counting with the reference has the tiktoken pass as its floor
    assert got.floor_of("observation_masking", 1) == (got.floor[1], "tiktoken")
    assert "round 2/2 done" in out.getvalue()
    assert "floor ratio max" in out.getvalue() and "scaling max" in out.getvalue()
    assert got.presets_ratio(names).samples[0] == pytest.approx(
        (got.at_20k[names[0]][0] + got.at_20k[names[1]][0]) / got.floor[0]
    )


def test_no_decoded_conversation_is_held_while_a_worker_path_replay_is_timed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A heap holding other decoded conversations slowed the larger replays by 10-15 % (the
    # host's memory system), so the timing holds none, as a worker holds none but its run's.
    stored = (
        timing.Stored.of(synth.bench_conversation(CORPUS, messages=250, seed=2)),
        timing.Stored.of(synth.bench_conversation(CORPUS, messages=500, seed=2)),
    )
    gc.collect()
    # other tests' conversations (cached, any size) stay alive: only new ones count, and
    # those are held here so no new one can take an old one's id
    before = [o for o in gc.get_objects() if isinstance(o, Conversation)]
    old = {id(o) for o in before}
    held: list[int] = []

    def spy(s: timing.Stored, name: str) -> float:
        held.append(sum(1 for o in gc.get_objects()
                        if isinstance(o, Conversation) and id(o) not in old))  # fmt: skip
        return 1.0

    monkeypatch.setattr(timing, "worker_replay", spy)
    got = timing.measure(
        stored, ["observation_masking"], io.StringIO(), rounds=3, extra_rounds=0, min_reading=0
    )
    assert len(held) == 1 + 3 * 2  # the warm-up, then both sizes in each round
    assert held == [0] * len(held)
    assert len(got.floor) == len(got.memory["observation_masking"]) == 3  # read in between


def test_strategies_near_the_scaling_goal_are_judged_by_their_confirmation_rounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stored = timing.Stored.of(_conversation(200)), timing.Stored.of(_conversation(400))
    # langchain_trim reads 2.3x in its first rounds, observation_masking 1.9x
    seconds = {("langchain_trim", 200): 1.0, ("langchain_trim", 400): 2.3,
               ("observation_masking", 200): 1.0, ("observation_masking", 400): 1.9}  # fmt: skip
    order: list[tuple[str, int]] = []

    def fake(stored: timing.Stored, name: str) -> float:
        size = len(stored.columns["reference_tokens"])
        order.append((name, size))
        if len(order) > 2 + 3 * 4 and size == 400:
            return 2.0  # the extra rounds read 2.0x: the median moves to them
        return seconds[name, size]

    monkeypatch.setattr(timing, "worker_replay", fake)
    names = ["observation_masking", "langchain_trim"]
    out = io.StringIO()
    got = timing.measure(stored, names, out, rounds=3, extra_rounds=4, min_reading=0)
    assert got.near_goal(names) == ["langchain_trim"]
    extra = order[2 + 3 * 4 :]
    # both sizes back to back, which goes first alternating (round 4 is the 4th in a row)
    lt = "langchain_trim"
    assert extra == [(lt, 400), (lt, 200), (lt, 200), (lt, 400)] * 2
    # judged by the rounds after the choice alone: the first ones were chosen for reading high
    assert got.scaling("langchain_trim").samples == [2.0] * 4
    assert got.first_scaling("langchain_trim").samples == [2.3] * 3
    assert got.scaling_of_fastest("langchain_trim") == 2.0
    assert got.scaling("observation_masking").samples == [1.9] * 3  # far from the line
    assert got.floor_ratio("langchain_trim").samples == pytest.approx(
        [1.0 / got.floor_of("langchain_trim", r)[0] for r in range(3)]
    )  # the floor ratios keep their own rounds
    assert "4 confirmation rounds of the 1 strategies near the scaling goal" in out.getvalue()
    assert "langchain_trim x2.000 min=2.000 max=2.000 (first 2.300)" in out.getvalue()


def test_a_short_replay_is_read_as_the_mean_of_enough_replays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A 0.4 s replay is read as the mean of 4 (>= 1.5 s), the same count at both sizes and
    # in the confirmation rounds; a 2 s one once.
    stored = timing.Stored.of(_conversation(200)), timing.Stored.of(_conversation(400))
    base = {("short", 200): 0.4, ("short", 400): 0.9, ("long", 200): 2.0, ("long", 400): 4.4}
    calls: dict[tuple[str, int], int] = {}

    def fake(s: timing.Stored, name: str) -> float:
        key = (name, len(s.columns["reference_tokens"]))
        calls[key] = calls.get(key, 0) + 1
        # every other call of a size reads 0.1 s more: a reading averages them
        return base[key] + (0.1 if calls[key] % 2 else 0.0)

    monkeypatch.setattr(timing, "worker_replay", fake)
    monkeypatch.setattr(timing, "make_strategy", lambda name: object())
    monkeypatch.setattr(timing, "_in_memory_passes", lambda one, names, got: _fill(got, names))
    got = timing.measure(stored, ["short", "long"], io.StringIO(), rounds=3, extra_rounds=2)
    assert got.repeats == {"short": 3, "long": 1}  # warm-up 0.5 s: ceil(1.5 / 0.5)
    assert calls[("short", 400)] == 3 * 3 + 2 * 3 and calls[("short", 200)] == 1 + 3 * 3 + 2 * 3
    assert calls[("long", 400)] == 3 + 2 and calls[("long", 200)] == 1 + 3 + 2
    assert got.at_20k["short"] == pytest.approx([0.4 + 0.1 / 3, 0.4 + 0.2 / 3, 0.4 + 0.1 / 3])
    assert got.near_goal(["short", "long"]) == ["short", "long"]
    assert len(got.more_40k["short"]) == 2
    assert [timing.repeats_for(t) for t in (0.0, 0.2, 0.75, 1.5, 9.0)] == [1, 8, 2, 1, 1]


def _fill(got: timing.Rounds, names: list[str]) -> None:
    got.floor.append(1.0)
    got.reference.append(1.0)
    for name in names:
        got.memory.setdefault(name, []).append(1.0)
        got.own.setdefault(name, []).append(1.0)


def test_the_worker_path_replays_a_fresh_decode_of_the_stored_conversation() -> None:
    conversation = _conversation(300)
    stored = timing.Stored.of(conversation)
    first, second = stored.decode(), stored.decode()
    assert first == conversation and first is not conversation
    assert first.messages[5] is not second.messages[5]  # no object shared between replays
    assert stored.columns["reference_tokens"] == ReferenceTokens(conversation).per_message
    fresh = replay_run(first, "observation_masking")
    kept = replay_run(conversation, "observation_masking")
    assert [s.tokens for s in fresh.steps] == [s.tokens for s in kept.steps]
    assert timing.worker_replay(stored, "observation_masking") > 0


def test_the_floor_counts_each_distinct_text_once() -> None:
    conversation = _conversation(300)
    texts = timing.block_texts(conversation)
    assert len(set(texts)) < len(texts)  # the bench transcript repeats texts
    encode = reference_counter().count
    _, tokens = timing.floor_pass(conversation)
    assert tokens == sum(encode(t) for t in set(texts))


def test_the_worker_path_replays_aider_from_its_stored_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As the worker: Aider's count of each original message comes from the import's
    # (``Stored.columns``), only what the replay writes (summaries, "Ok.") is counted.
    conversation = _conversation(300)
    stored = timing.Stored.of(conversation)
    assert stored.columns["aider_tokens"] == aider.stored_counts(conversation.messages)
    asked: list[str] = []
    real = aider.AiderStrategy.count_dict

    def spy(self: aider.AiderStrategy, role: str, content: str) -> int:
        asked.append(content)
        return real(self, role, content)

    monkeypatch.setattr(aider.AiderStrategy, "count_dict", spy)
    timing.worker_replay(stored, "aider")
    originals = {aider.content_of(m) for m in conversation.messages}
    assert not [c for c in asked if c in originals]
