"""Claude summaries in stored runs, against the local fake Messages API over real HTTP (the
real SDK, ANTHROPIC_BASE_URL pointed at it): usage/cost per summary and per run, the DB
summary cache (a rerun makes zero requests), errors on events, budget cap, estimate."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the shared fake
from fake_anthropic import MESSAGES, FakeAnthropic, Reply  # noqa: E402

from replay_app.costs import llm, run_budget, run_costs
from replay_app.costs.run_budget import LLMOptions
from replay_app.models import Run, RunStatus, SummaryCache  # noqa: E402
from replay_app.runs import executor, services
from replay_app.runs.services import RunSpec

pytestmark = pytest.mark.django_db

SECRET = "sk-ant-test-web-DO-NOT-LEAK-7777"
QWEN = {"max_input_length": 3000, "language": "en"}  # 2 summaries on llm_transcript
SUMMARY = "## Goal\nfix the tests\n## Next Steps\n1. continue"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=SECRET, default_reply=Reply.ok(SUMMARY)) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        yield server


def _run(user: Any, transcript: Any, *, strategy: str = "qwenpaw", params: Any = None,
         budget: str | None = None, model: str = "", exact: bool = False) -> Run:  # fmt: skip
    run = services.run_create(
        owner=user,
        transcript=transcript,
        spec=RunSpec(strategy=strategy, params=QWEN if params is None else params),
        summarizer="anthropic",
        llm=LLMOptions(
            model=model,
            budget_usd=Decimal(budget) if budget is not None else None,
            exact_counts=exact,
        ),
        enqueue=False,
    )
    return executor.run_execute(run=run)


def test_llm_run_stores_usage_and_cost_per_summary_and_run(
    fake: FakeAnthropic, user: Any, llm_transcript: Any
) -> None:
    run = _run(user, llm_transcript)
    assert run.status == RunStatus.DONE, run.error
    summaries = list(run.summaries.order_by("seq"))
    sent = fake.requests_to(MESSAGES)
    assert summaries and len(sent) == len(summaries)
    assert sent[0].body["model"] == llm.default_model() == run.summarizer_model
    for s in summaries:
        assert s.output == SUMMARY and not s.usage_estimated
        assert s.usage["usage"]["input_tokens"] > 0 and s.usage["cost_usd"] > 0
        assert s.usage["cached"] is False
    total = sum(s.usage["cost_usd"] for s in summaries)
    assert run.llm["calls"] == len(summaries) and run.llm["paid_calls"] == len(summaries)
    assert run.llm["cost_usd"] == pytest.approx(total)
    assert run.metrics["llm_cost_usd"] == pytest.approx(total, abs=1e-6)
    assert run.llm["estimate"]["calls"] >= 1  # the pre-run estimate is kept on the run
    # the ledger was computed at run end and charges the summary calls to compactions
    assert run.ledger["totals"]["summary_cost"] == pytest.approx(total)
    assert run.ledger["compactions"] and len(run.ledger["steps"]["read"]) == run.steps.count()
    assert SECRET not in repr(Run.objects.filter(pk=run.pk).values().get())


def test_llm_rerun_is_served_from_the_db_cache(
    fake: FakeAnthropic, user: Any, llm_transcript: Any
) -> None:
    first = _run(user, llm_transcript)
    paid = len(fake.requests_to(MESSAGES))
    assert paid and SummaryCache.objects.count() == paid
    second = _run(user, llm_transcript)
    assert len(fake.requests_to(MESSAGES)) == paid  # zero new HTTP requests
    assert second.llm["cache_hits"] == second.llm["calls"] == first.llm["calls"]
    assert second.llm["cost_usd"] == 0 and second.metrics["llm_cost_usd"] == 0
    assert [s.output for s in second.summaries.order_by("seq")] == [
        s.output for s in first.summaries.order_by("seq")
    ]
    assert all(s.usage["cached"] for s in second.summaries.all())


@pytest.mark.parametrize(
    ("replies", "match"),
    [
        ([Reply.error(500)], "HTTP 500 api_error"),
        ([Reply.error(429)], "HTTP 429 rate_limit_error"),
        ([Reply.error(529)], "HTTP 529 overloaded_error"),
    ],
    ids=["500", "429", "529"],
)
def test_llm_failed_call_takes_failure_path_and_event_records_error(
    fake: FakeAnthropic, user: Any, llm_transcript: Any, replies: list[Reply], match: str
) -> None:
    fake.default_reply = replies[0]
    run = _run(user, llm_transcript)
    assert run.status == RunStatus.DONE, run.error
    failed = list(run.events.filter(kind="summary_failed"))
    assert failed and all(match in e.detail["error"] for e in failed)
    assert all(match in s.error and s.output == "" for s in run.summaries.all())
    assert run.llm["errors"] == run.llm["calls"] > 0 and run.llm["cost_usd"] == 0
    assert SummaryCache.objects.count() == 0  # failures are never cached
    # 3 attempts per call (the SDK's 2 retries)
    assert len(fake.requests_to(MESSAGES)) == 3 * run.summaries.count()


def test_llm_retry_then_success_is_paid_once(
    fake: FakeAnthropic, user: Any, llm_transcript: Any
) -> None:
    fake.queue(Reply.error(429), Reply.error(500))
    run = _run(user, llm_transcript)
    first = run.summaries.order_by("seq").first()
    assert first is not None and first.output == SUMMARY and not first.error
    assert len(fake.requests_to(MESSAGES)) == run.summaries.count() + 2


def test_llm_timeout_takes_failure_path(
    fake: FakeAnthropic, user: Any, llm_transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = llm.make_anthropic

    def quick(*, model: str | None = None) -> Any:
        summ = real(model=model)
        summ.timeout, summ.max_retries = 0.3, 0
        return summ

    monkeypatch.setattr(llm, "make_anthropic", quick)
    fake.default_reply = Reply.hang(5)
    run = _run(user, llm_transcript)
    assert run.status == RunStatus.DONE, run.error
    event = run.events.filter(kind="summary_failed").first()
    assert event is not None and "timeout" in event.detail["error"]


def test_llm_budget_refuses_to_start_above_the_estimate(
    fake: FakeAnthropic, user: Any, llm_transcript: Any
) -> None:
    with pytest.raises(run_budget.BudgetError, match=r"estimated \$0\.\d+ for \d+ summary calls"):
        _run(user, llm_transcript, budget="0.000001")
    assert not Run.objects.exists() and fake.requests == []


def test_llm_budget_stops_paying_mid_run(
    fake: FakeAnthropic, user: Any, llm_transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the estimate passes, but real spend reaches the cap: later calls fail instead of paying
    monkeypatch.setattr(services, "llm_check", lambda **kw: {"budget_usd": 1e-9})
    run = _run(user, llm_transcript)
    assert len(fake.requests_to(MESSAGES)) == 1
    assert run.llm["refused_by_budget"] == run.llm["calls"] - 1 >= 1
    assert "budget" in run.summaries.order_by("seq")[1].error


def test_llm_without_key_refuses_clearly(
    user: Any, llm_transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        _run(user, llm_transcript)
    assert not Run.objects.exists()


def test_llm_estimate_counts_the_calls_an_offline_dry_run_makes(llm_transcript: Any) -> None:
    from ctxlab.engine.replay import run as replay

    conv = llm_transcript.to_conversation()
    est = run_costs.estimate(conv, strategy="qwenpaw", params=QWEN, model="claude-haiku-5-5")
    offline = replay(conv, "qwenpaw", params=QWEN)
    assert est.calls == len(offline.summaries) >= 1
    assert est.input_tokens > 0 and est.cost_usd > 0 and not est.error
    pricier = run_costs.estimate(conv, strategy="qwenpaw", params=QWEN, model="claude-opus-5-5")
    assert pricier.calls == est.calls and pricier.cost_usd > est.cost_usd
