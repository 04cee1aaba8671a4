"""Claude scoring of probes through the real anthropic SDK against the local fake Messages
API (no key, no network): success (answers, judge, cost, the DB cache on a rerun), budget
refusal (clear message, nothing written), API failure (failed scores, run unaffected)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared fake
from fake_anthropic import MESSAGES, FakeAnthropic, Reply  # noqa: E402

from judge_app import services, shared_jobs  # noqa: E402
from judge_app.models import ProbeScore, ProbeSet  # noqa: E402

pytestmark = pytest.mark.django_db

SECRET = "sk-ant-test-judge-DO-NOT-LEAK-4242"
# One reply for every call: it answers the first recall probe, and judges 4/5.
REPLY = "E ValueError: bad token at column 07 (src/parse_0.py)\nSCORE: 4\nREASON: close enough"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=SECRET, default_reply=Reply.ok(REPLY)) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        yield server


def _run_snapshot(run: Any) -> tuple[Any, ...]:
    run.refresh_from_db()
    return (run.status, run.metrics, run.llm, run.finished_at, run.events.count())


def test_claude_scores_every_probe(auth_client: Any, fake: FakeAnthropic, qwen_run: Any) -> None:
    before = _run_snapshot(qwen_run)
    auth_client.get(f"/runs/{qwen_run.pk}/probes/")  # generates the probes
    row = ProbeSet.objects.get(run=qwen_run)
    probes = list(row.probes.order_by("seq"))
    judged = [p for p in probes if p.kind in ("continuation", "decision")]
    response = auth_client.post(
        f"/runs/{qwen_run.pk}/probes/claude/",
        {"budget_usd": "5", "model": "", "replicates": "1"},
        follow=True,
    )
    assert response.status_code == 200
    row.refresh_from_db()
    assert row.claude_status == "done", row.claude_message
    sent = fake.requests_to(MESSAGES)
    assert len(sent) == len(probes) + len(judged)  # one answer each + one judge call each
    first = sent[0].body
    assert (
        "<context>" in first["messages"][0]["content"]
        and "Question:" in first["messages"][0]["content"]
    )
    scores = {s.probe_id: s for s in ProbeScore.objects.filter(method="claude")}
    assert len(scores) == len(probes)
    for p in probes:
        s = scores[p.pk]
        assert s.error == "" and s.answer == REPLY and s.cost_usd > 0
        if p.kind in ("continuation", "decision"):
            assert s.score == 0.8 and s.detail["judge_reason"] == "close enough"
        else:  # contains: only the answer that holds the expected text scores
            expected = all(
                a.lower() in REPLY.lower() or a.split("/")[-1] in REPLY for a in p.answers
            )
            assert (s.score == 1.0) == expected, (p.question, p.answers, s.score)
    assert any(s.score == 1.0 for s in scores.values() if s.probe.kind == "recall")
    assert row.claude["calls"]["paid_calls"] == len(sent)
    assert row.claude["calls"]["cost_usd"] == pytest.approx(
        sum(s.cost_usd for s in scores.values())
    )
    assert _run_snapshot(qwen_run) == before  # the run is not touched
    data = auth_client.get(f"/runs/{qwen_run.pk}/probes/?format=json").json()
    assert data["claude"]["status"] == "done" and data["claude"]["summary"]["probes"] == len(probes)
    assert SECRET not in auth_client.get(f"/runs/{qwen_run.pk}/probes/").content.decode()
    # scoring again is served from the summary cache: no new request, free
    shared_jobs.request_claude(row, model=row.claude_model, budget_usd=services.Decimal("5"))
    assert len(fake.requests_to(MESSAGES)) == len(sent)
    assert all(s.cached and s.cost_usd == 0 for s in ProbeScore.objects.filter(method="claude"))


def test_budget_refusal_is_clear_and_writes_nothing(
    auth_client: Any, fake: FakeAnthropic, qwen_run: Any
) -> None:
    auth_client.get(f"/runs/{qwen_run.pk}/probes/")
    response = auth_client.post(
        f"/runs/{qwen_run.pk}/probes/claude/", {"budget_usd": "0.0001"}, follow=True
    )
    body = response.content.decode()
    assert "Refused" in body and "over the $0.00 budget" in body and "Nothing was sent" in body
    assert fake.requests_to(MESSAGES) == []
    row = ProbeSet.objects.get(run=qwen_run)
    assert row.claude_status == "none" and not ProbeScore.objects.filter(method="claude").exists()


def test_budget_reached_mid_scoring_stores_no_score(fake: FakeAnthropic, qwen_run: Any) -> None:
    row = services.probe_set(qwen_run)
    assert row is not None
    # past the estimate check: the cap is hit after the first paid call
    done = services.score_with_claude(row.pk, "claude-haiku-5-5", services.Decimal("0.000001"))
    assert done.claude_status == "refused" and "Stopped by the budget" in done.claude_message
    assert len(fake.requests_to(MESSAGES)) == 1
    assert not ProbeScore.objects.filter(method="claude").exists()


def test_api_failure_is_recorded_per_probe_and_the_run_is_unaffected(
    auth_client: Any, fake: FakeAnthropic, qwen_run: Any
) -> None:
    fake.default_reply = Reply.error(500, message="fake outage")
    before = _run_snapshot(qwen_run)
    auth_client.get(f"/runs/{qwen_run.pk}/probes/")
    auth_client.post(f"/runs/{qwen_run.pk}/probes/claude/", {"budget_usd": "5"})
    row = ProbeSet.objects.get(run=qwen_run)
    assert row.claude_status == "failed" and "probes failed" in row.claude_message
    scores = list(ProbeScore.objects.filter(method="claude"))
    assert len(scores) == row.probes.count()
    assert all(s.score is None and "fake outage" in s.error for s in scores)
    assert _run_snapshot(qwen_run) == before
    page = auth_client.get(f"/runs/{qwen_run.pk}/probes/").content.decode()
    assert "fake outage" in page and "failed" in page


def test_no_key_says_so(auth_client: Any, monkeypatch: pytest.MonkeyPatch, qwen_run: Any) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    auth_client.get(f"/runs/{qwen_run.pk}/probes/")
    body = auth_client.post(
        f"/runs/{qwen_run.pk}/probes/claude/", {"budget_usd": "5"}, follow=True
    ).content.decode()
    assert "ANTHROPIC_API_KEY" in body
    assert ProbeSet.objects.get(run=qwen_run).claude_status == "none"


def test_scoring_needs_post(auth_client: Any, qwen_run: Any) -> None:
    assert auth_client.get(f"/runs/{qwen_run.pk}/probes/claude/").status_code == 405


def test_scoring_runs_on_a_real_embedded_worker(
    celery_worker_embedded: Any, client: Any, user: Any, fake: FakeAnthropic
) -> None:
    from judge_testdata import QWENPAW, finished_run, import_session
    from waiting import wait_until

    run = finished_run(user, import_session(user), "qwenpaw", QWENPAW)
    client.force_login(user)
    client.get(f"/runs/{run.pk}/probes/")
    client.post(f"/runs/{run.pk}/probes/claude/", {"budget_usd": "5"})
    row = ProbeSet.objects.get(run=run)

    def scored() -> bool:
        row.refresh_from_db()
        return row.claude_status not in ("queued", "running")

    wait_until(scored, "the Claude scoring task to finish on the worker",
               seen=lambda: (row.claude_status, row.claude_message), interval=0.2)  # fmt: skip
    assert row.claude_status == "done", (row.claude_status, row.claude_message)
    assert row.claude_task_id
    assert (
        ProbeScore.objects.filter(probe__probe_set=row, method="claude").count()
        == row.probes.count()
    )


def test_a_lost_scoring_can_be_started_again(fake: FakeAnthropic, qwen_run: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    row = services.probe_set(qwen_run)
    assert row is not None
    ProbeSet.objects.filter(pk=row.pk).update(
        claude_status="running", claude_requested_at=timezone.now()
    )
    row.refresh_from_db()
    five = services.Decimal("5")
    assert "already under way" in shared_jobs.request_claude(
        row, model="claude-haiku-5-5", budget_usd=five
    )
    ProbeSet.objects.filter(pk=row.pk).update(
        claude_requested_at=timezone.now() - timedelta(minutes=shared_jobs.CLAUDE_STALE_MINUTES + 1)
    )
    row.refresh_from_db()
    assert shared_jobs.request_claude(row, model="claude-haiku-5-5", budget_usd=five) == ""
    row.refresh_from_db()
    assert row.claude_status == "done"
