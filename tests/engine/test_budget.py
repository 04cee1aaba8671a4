"""One model window for every strategy (ctxlab.engine.budget, Strategy.WINDOW)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab.engine import budget, cli
from ctxlab.engine.evaluate.metrics import compute_metrics
from ctxlab.engine.replay import run
from ctxlab.engine.strategies import LIBRARY, PRESETS, STRATEGIES, get_strategy_class
from ctxlab.engine.tokens.reference import reference_tokens

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
CLAUDE_CODE = sorted((CORPUS / "claude-code").glob("*.jsonl"))


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_declares_a_window_parameter(name: str) -> None:
    cls = get_strategy_class(name)
    names = {p.name for p in cls.PARAMS}
    assert cls.WINDOW in names
    assert set(cls.WINDOW_FOLLOWS) <= names
    # At the strategy's default window every follower keeps its default.
    defaults = {p.name: p.default for p in cls.PARAMS}
    if defaults[cls.WINDOW]:
        at_default = cls.window_params(defaults[cls.WINDOW])
        for follower in cls.WINDOW_FOLLOWS:
            assert at_default[follower] == defaults[follower], follower


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_window_sets_the_strategys_own_parameter_and_it_validates(name: str) -> None:
    params = budget.window_params(name, 32_000)
    cls = get_strategy_class(name)
    assert params[cls.WINDOW] == 32_000
    strategy = cls(params)  # validates: every derived value is in range
    assert strategy.params[cls.WINDOW] == 32_000


def test_followers_scale_with_the_window() -> None:
    p = budget.window_params("claude_code", 32_000)
    assert p == {
        "context_window": 32_000,
        "output_reserve": 3200,
        "autocompact_buffer_tokens": 2080,
    }
    assert budget.window_params("picoclaw", 32_000) == {
        "context_window": 32_000,
        "max_tokens": 8000,
    }
    assert budget.window_params("cowagent", 50_000)["agent_max_context_tokens"] == 45_000


def test_explicit_values_win_over_the_window() -> None:
    p = budget.window_params("baseagent", 64_000, {"output_token_max": 1000})
    assert p == {"model_context_limit": 64_000, "output_token_max": 1000}
    assert budget.window_params("qwenpaw", None, {"pruning_recent_n": 2}) == {"pruning_recent_n": 2}


@pytest.mark.parametrize("window", [10, 0, -5, True, 20_000_000])
def test_window_out_of_range_is_refused_with_the_parameter_named(window: object) -> None:
    with pytest.raises(ValueError, match="window"):
        budget.window_params("qwenpaw", window)  # type: ignore[arg-type]


def test_peak_request_is_the_history_before_the_largest_call() -> None:
    rows = [("system", 10), ("user", 100), ("assistant", 5), ("tool", 1000), ("assistant", 7),
            ("user", 50000)]  # fmt: skip
    assert budget.peak_request(rows) == 1115  # the trailing user message is in no request
    assert budget.peak_request([("user", 40), ("user", 2)]) == 42  # no call: everything


def test_suggested_windows_are_shares_of_the_peak_above_the_fixed_part() -> None:
    assert budget.fit_windows(budget.SentSize(messages_peak=70_000)) == [18_000, 35_000, 52_000]
    assert budget.fit_windows(budget.SentSize(messages_peak=1_500)) == [1_000]
    # Reported usage wins over the cl100k estimate of the messages.
    reported = budget.SentSize(messages_peak=43_000, reported_peak=69_824)
    assert budget.fit_windows(reported) == [17_000, 35_000, 52_000]
    # ~10k of tools around a small conversation: every window above the fixed part (the
    # shares of the whole peak gave 6,000 at 50 %, below it).
    tools = budget.SentSize(messages_peak=2_100, system=100, tools=9_900)
    assert tools.fixed == 10_000 and tools.peak == 12_000
    assert budget.fit_windows(tools) == [11_000]
    assert all(w > tools.fixed for w in budget.fit_windows(tools))


def test_advice_warns_below_the_fixed_part_and_counts_room() -> None:
    size = budget.SentSize(messages_peak=2_100, system=100, tools=9_900)
    assert budget.window_advice(size, window=6_000).below_fixed
    assert "= 10,000 cl100k tokens" in budget.window_advice(size, window=10_000).warning
    assert not budget.window_advice(size, window=10_001).below_fixed
    assert budget.window_advice(size).warning == ""


def test_sent_size_counts_system_and_tools_as_the_reference_does() -> None:
    path = CORPUS / "anthropic-messages" / "claude-trace-req34-request.json"
    conversation = cli.load_file(path)
    size = budget.sent_size(conversation)
    reference = reference_tokens(conversation)
    assert size.tools == reference.tools > 0
    assert size.messages_peak == budget.peak_reference_tokens(conversation)
    assert size.reported_peak is None and size.peak == size.messages_peak + size.tools


def _compactions(conversation: object, strategy: str, window: int) -> int:
    result = run(conversation, strategy, params=budget.window_params(strategy, window))  # type: ignore[arg-type]
    return int(compute_metrics(result, threshold=None)["compaction_count"])


def test_every_seed_compacts_at_half_the_peak_on_claude_code_sessions() -> None:
    """The issue's check: at a window of half the cl100k peak each seed fires. PicoClaw's
    own budget check runs only when a user turn starts (pipeline_setup.go); inside one long
    turn it fires when the provider rejects the request (pipeline_llm.go, simulated)."""
    checked = 0
    for path in CLAUDE_CODE:
        conversation = cli.load_file(path)
        window = budget.peak_reference_tokens(conversation) // 2
        if window < 1024:  # below every strategy's smallest window
            continue
        checked += 1
        for strategy in PRESETS:
            assert _compactions(conversation, strategy, window) >= 1, (path.name, strategy)
    assert checked >= 6


def test_cli_window_for_every_strategy(tmp_path: Path) -> None:
    """``replay --file F --strategy S --window 32000 --json OUT`` (the engine half)."""
    path = CORPUS / "claude-code" / "sniffly-d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"
    conversation = cli.load_file(path)
    for strategy in LIBRARY:
        result = cli.replay_conversation(conversation, strategy=strategy, window=32_000)
        record = json.loads(json.dumps(cli.result_to_json(result)))
        own = get_strategy_class(strategy).WINDOW
        assert record["params"][own] == 32_000, strategy
        assert record["steps"]
