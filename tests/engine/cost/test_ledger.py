from __future__ import annotations

from decimal import Decimal

import pytest

from ctxlab.engine.core.model import Usage
from ctxlab.engine.cost.ledger import CompactionMark, LedgerStep, build_ledger

D = Decimal
MODEL = "claude-haiku-4-5"  # $1/MTok input: 1 token = 1 µ$; read 0.1, write 1.25 (5m) / 2 (1h)
U = D("0.000001")  # one micro-dollar


def step(*items: tuple[str, int], out: int = 0, **kw: int) -> LedgerStep:
    return LedgerStep(
        keys=tuple(k for k, _ in items), tokens=tuple(t for _, t in items), output_tokens=out, **kw
    )


APPEND_RUN = [
    step(("sys", 1000), ("a", 200)),
    step(("sys", 1000), ("a", 200), ("b", 300)),
]


@pytest.mark.parametrize(
    ("ttl", "costs"),
    [("5m", [1500, 1200 * D("0.1") + 300 * D("1.25")]), ("1h", [2400, 120 + 300 * 2])],
    ids=["5m", "1h"],
)
def test_ledger_append_only_reads_previous_request(ttl: str, costs: list[Decimal]) -> None:
    led = build_ledger(APPEND_RUN, model=MODEL, ttl=ttl)
    s0, s1 = led.steps
    assert (s0.read_tokens, s0.write_tokens, s0.break_at) == (0, 1200, None)
    assert (s1.read_tokens, s1.write_tokens, s1.break_at, s1.invalidated_tokens) == (
        1200,
        300,
        None,
        0,
    )
    assert [s.cost for s in led.steps] == [c * U for c in costs]
    assert led.uncached_cost == (1200 + 1500) * U
    assert led.compactions == ()
    assert (led.read_tokens, led.write_tokens) == (1200, 1500)


def test_ledger_in_place_truncation_breaks_prefix_midway() -> None:
    run = [
        step(("sys", 1000), ("a", 5000)),
        step(("sys", 1000), ("a", 5000), ("b", 200), ("c", 100)),
        # a tool result deep in the history is truncated in place; d is new
        step(("sys", 1000), ("a'", 500), ("b", 200), ("c", 100), ("d", 100)),
        step(("sys", 1000), ("a'", 500), ("b", 200), ("c", 100), ("d", 100), ("e", 50)),
        step(("sys", 1000), ("a'", 500), ("b", 200), ("c", 100), ("d", 100), ("e", 50), ("f", 50)),
    ]
    led = build_ledger(run, model=MODEL, marks=[CompactionMark(2, "truncate")])
    s2 = led.steps[2]
    assert (s2.break_at, s2.read_tokens, s2.write_tokens, s2.invalidated_tokens) == (
        1,
        1000,
        900,
        5300,
    )
    assert s2.cost == (1000 * D("0.1") + 900 * D("1.25")) * U
    assert s2.uncached_cost == 1900 * U
    (c,) = led.compactions
    # removed 4500 (5000 → 500); rewritten: a' + b + c = 800; extra = 800×1.25 − 5300×0.1
    assert (c.removed_tokens, c.rewrite_tokens, c.invalidated_tokens) == (4500, 800, 5300)
    assert c.extra_cost == 470 * U
    assert c.saving_per_step == 450 * U
    assert (c.horizon_steps, c.tokens_saved_after) == (2, 9000)
    assert (c.steps_to_break_even, c.break_even_step) == (2, 4)
    assert c.label == "truncate"


def test_ledger_compaction_with_summary_call() -> None:
    run = [
        step(("sys", 1000), ("a", 200), ("b", 300)),
        step(("sys", 1000), ("S1", 100), ("c", 50), appended_tokens=50),
        step(("sys", 1000), ("S1", 100), ("c", 50), ("d", 10)),
    ]
    mark = CompactionMark(1, "summarize", summary_usage=Usage(input_uncached=2000, output=100))
    led = build_ledger(run, model=MODEL, marks=[mark])
    (c,) = led.compactions
    assert (c.invalidated_tokens, c.removed_tokens, c.rewrite_tokens) == (500, 400, 100)
    assert c.summary_cost == 2500 * U  # 2000×$1 + 100×$5 per MTok
    assert c.extra_cost == (125 - 50 + 2500) * U
    assert c.steps_to_break_even == 65  # ceil(2575 / 40)
    assert c.break_even_step is None  # only 1 later step in the run
    assert led.summary_cost == 2500 * U
    assert led.total_cost == led.request_cost + 2500 * U


def test_ledger_infers_appended_tail_when_not_given() -> None:
    run = [
        step(("sys", 1000), ("a", 200), ("b", 300)),
        step(("sys", 1000), ("b", 300), ("c", 50)),  # 'a' dropped; b survives, c is new
    ]
    (c,) = build_ledger(run, model=MODEL).compactions
    assert c.label == "prefix_break"  # marks=None: every break is reported
    assert (c.removed_tokens, c.invalidated_tokens, c.rewrite_tokens) == (200, 500, 300)


def test_ledger_summary_model_priced_separately() -> None:
    run = [step(("s", 10)), step(("t", 10))]
    mark = CompactionMark(1, summary_usage=Usage(output=1_000_000), summary_model="claude-opus-4-1")
    (c,) = build_ledger(run, model=MODEL, marks=[mark]).compactions
    assert c.summary_cost == D(75)


def test_ledger_min_cacheable_tokens_charges_plain_input() -> None:
    run = [step(("sys", 500)), step(("sys", 500), ("a", 600)), step(("sys", 500), ("a", 600))]
    led = build_ledger(run, model=MODEL, min_cacheable_tokens=1024)
    assert [(s.read_tokens, s.write_tokens, s.uncached_tokens) for s in led.steps] == [
        (0, 0, 500),
        (0, 1100, 0),  # the first step cached nothing, so nothing can be read
        (1100, 0, 0),
    ]


def test_ledger_long_prompt_tier_applies_per_request() -> None:
    run = [step(("big", 150_000))]
    led = build_ledger(run, model="claude-haiku-5-5")
    assert led.steps[0].cost == 150_000 * D("0.625") * U  # 1.25 × the $0.50 high tier


class CountingKey:
    calls = 0

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        CountingKey.calls += 1
        return isinstance(other, CountingKey) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


def test_ledger_unchanged_prefix_hint_skips_comparisons() -> None:
    # equal-but-distinct key objects force real __eq__ calls when compared
    n = 200
    steps = [
        LedgerStep(
            keys=tuple(CountingKey(f"m{j}") for j in range(i + 1)),
            tokens=(10,) * (i + 1),
            unchanged_prefix=i,
        )
        for i in range(n)
    ]
    CountingKey.calls = 0
    hinted = build_ledger(steps, model=MODEL)
    assert CountingKey.calls == 0
    unhinted = build_ledger([LedgerStep(s.keys, s.tokens) for s in steps], model=MODEL)
    assert CountingKey.calls > 0
    assert hinted.steps == unhinted.steps
    assert hinted.read_tokens == sum(10 * i for i in range(n))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"steps": [LedgerStep(("a",), (1, 2))]}, "1 keys but 2"),
        ({"steps": APPEND_RUN, "marks": [CompactionMark(5)]}, "mark at step 5"),
        ({"steps": APPEND_RUN, "ttl": "10m"}, "TTL"),
    ],
    ids=["length-mismatch", "mark-out-of-range", "bad-ttl"],
)
def test_ledger_rejects_bad_input(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_ledger(model=MODEL, **kwargs)  # type: ignore[arg-type]


def test_ledger_as_dict_is_json_ready() -> None:
    import json

    led = build_ledger(APPEND_RUN, model=MODEL)
    data = json.loads(json.dumps(led.as_dict()))
    assert data["totals"]["request_cost"] == pytest.approx(0.001995)
    assert data["steps"][1]["read_tokens"] == 1200


def test_ledger_tail_steps_equal_full_steps() -> None:
    full = [
        step(("sys", 1000), ("a", 200)),
        step(("sys", 1000), ("a", 200), ("b", 300)),
        step(("sys", 1000), ("S", 50), ("b", 300), ("c", 10)),
        step(("sys", 1000), ("S", 50), ("b", 300), ("c", 10), ("d", 5)),
    ]
    tails = [
        full[0],
        LedgerStep(("b",), (300,), tail_from=2),  # pure append
        LedgerStep(("S", "b", "c"), (50, 300, 10), tail_from=1),  # changed after position 1
        LedgerStep(("d",), (5,), tail_from=4),
    ]
    a = build_ledger(full, model=MODEL)
    b = build_ledger(tails, model=MODEL)
    assert a.steps == b.steps and a.compactions == b.compactions
    assert b.steps[2].break_at == 1


def test_ledger_tail_from_beyond_previous_is_an_error() -> None:
    with pytest.raises(ValueError, match="tail_from 5"):
        build_ledger([APPEND_RUN[0], LedgerStep(("x",), (1,), tail_from=5)], model=MODEL)


def _naive_steps(records: list, conversation, reference) -> list[LedgerStep]:  # type: ignore[no-untyped-def]
    """Every request materialised in full (the slow, obvious way)."""
    from ctxlab.engine.core.records import REMOVED_FATES, Fate

    versions: dict[int, tuple[int, int]] = {}
    sizes: dict[int, int] = {}
    out = []
    for rec in records:
        for s in rec.summaries:
            sizes[s.id] = reference.text(s.output) + 4
        for ev in rec.events:
            for ch in ev.changes:
                if ch.fate is Fate.RESTORED:
                    versions.pop(ch.index, None)
                elif ch.message is not None and ch.fate not in REMOVED_FATES:
                    versions[ch.index] = (ev.id, reference.message_of(ch.message))
        items = [(("tools",), reference.tools)] if reference.tools else []
        idx = rec.context_indexes
        for i in idx:
            v = versions.get(i)
            items.append(((i, v[0]), v[1]) if v else ((i, 0), reference.message(i)))
        if rec.summary_id is not None:  # right after the tools and the system prompt
            at = len(items) - len(idx) + (1 if idx and idx[0] == 0 else 0)
            items.insert(at, (("summary", rec.summary_id), sizes[rec.summary_id]))
        msg = conversation.messages[rec.source_index]
        out_tokens = msg.usage.output if msg.usage else reference.message(rec.source_index)
        out.append(step(*items, out=out_tokens))  # type: ignore[arg-type]
    return out


def test_ledger_from_records_matches_full_materialisation() -> None:
    from builders import conv, cycle, system

    from ctxlab.engine.cost.ledger import ledger_from_records
    from ctxlab.engine.replay import run
    from ctxlab.engine.tokens.reference import reference_tokens

    conversation = conv(system("You are a careful coding agent."), *cycle(40, size=5000))
    result = run(conversation, "qwenpaw", params={"max_input_length": 12000})
    kinds = {e.kind for e in result.events}
    assert len(kinds) >= 2, kinds  # the replay really changed its context
    reference = reference_tokens(conversation)
    led = ledger_from_records(
        result.steps, conversation=conversation, reference=reference,
        model=MODEL, summary_model="claude-haiku-4-5",
    )  # fmt: skip
    naive = build_ledger(_naive_steps(result.steps, conversation, reference), model=MODEL)
    assert led.steps == naive.steps
    breaks = [s.index for s in led.steps if s.break_at is not None]
    assert breaks and {c.step for c in led.compactions} >= set(breaks)
    summaries = [s for s in result.summaries if not s.error]
    if summaries:
        assert led.summary_cost > 0
