"""Probe scoring with an OpenAI-compatible judge (the local fake server over real HTTP, the
real ``openai`` SDK, the Celery task eager), with replicates: 3 by default."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared fakes
from fake_openai import CHAT, FakeOpenAI, Reply  # noqa: E402

from judge_app.models import ProbeScore, ProbeSet  # noqa: E402

pytestmark = pytest.mark.django_db

SECRET = "sk-openai-judge-DO-NOT-LEAK-3131"
ANSWER = "The agent ran pytest and it failed with ModuleNotFoundError."


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=SECRET, default_reply=Reply.ok(ANSWER)) as server:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("CTXLAB_OPENAI_LOCAL", raising=False)
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        yield server


def test_openai_judge_scores_every_probe_three_times_and_shows_the_spread(
    auth_client: Any, fake: FakeOpenAI, qwen_run: Any
) -> None:
    page = auth_client.get(f"/runs/{qwen_run.pk}/probes/").content.decode()
    assert 'name="openai_model"' in page and 'value="3"' in page  # 3 replicates by default
    row = ProbeSet.objects.get(run=qwen_run)
    probes = list(row.probes.order_by("seq"))
    judged = [p for p in probes if p.kind in ("continuation", "decision")]
    assert probes and judged
    # the judge's score differs between replicates: 0.2, 0.6, 1.0 (SCORE 1, 3, 5)
    replies = []
    for score in (1, 3, 5):
        for p in probes:
            replies.append(Reply.ok(ANSWER))
            if p.kind in ("continuation", "decision"):
                replies.append(Reply.ok(f"SCORE: {score}\nREASON: replicate {score}"))
    fake.queue(*replies)
    response = auth_client.post(
        f"/runs/{qwen_run.pk}/probes/claude/",
        {"provider": "openai", "openai_model": "qwen3:8b", "budget_usd": "5"},
        follow=True,
    )
    assert response.status_code == 200
    row.refresh_from_db()
    assert row.claude_status == "done", row.claude_message
    assert row.claude_model == "openai:qwen3:8b"
    sent = fake.requests_to(CHAT)
    assert len(sent) == 3 * (len(probes) + len(judged))  # no replicate served from the cache
    assert {r.body["model"] for r in sent} == {"qwen3:8b"}
    assert row.claude["replicates"] == 3 and row.claude["judge"] == "OpenAI-compatible (qwen3:8b)"
    assert row.claude["calls"]["cost_usd"] == 0  # a local endpoint
    scores = {s.probe_id: s for s in ProbeScore.objects.filter(method="claude")}
    for p in judged:
        s = scores[p.pk]
        assert s.detail["replicates"] == [0.2, 0.6, 1.0] and s.score == pytest.approx(0.6)
        assert s.detail["spread"]["min"] == 0.2 and s.detail["spread"]["max"] == 1.0
    data = auth_client.get(f"/runs/{qwen_run.pk}/probes/?format=json").json()
    spread = data["claude"]["summary"]["spread"]
    assert spread["n"] == 3 and spread["max"] > spread["min"]
    html = auth_client.get(f"/runs/{qwen_run.pk}/probes/").content.decode()
    assert data["claude"]["summary"]["spread_text"] in html and "over 3 replicates" in html
    assert SECRET not in html and SECRET not in str(data)


def test_openai_judge_without_a_model_name_is_refused(
    auth_client: Any, fake: FakeOpenAI, qwen_run: Any
) -> None:
    auth_client.get(f"/runs/{qwen_run.pk}/probes/")
    response = auth_client.post(
        f"/runs/{qwen_run.pk}/probes/claude/",
        {"provider": "openai", "openai_model": " ", "budget_usd": "5"},
        follow=True,
    )
    assert "Name the model the OpenAI-compatible endpoint serves." in response.content.decode()
    assert fake.requests == []


def test_openai_judge_budget_refusal_at_a_priced_endpoint(
    auth_client: Any, fake: FakeOpenAI, qwen_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXLAB_OPENAI_LOCAL", "0")  # price the fake as a remote endpoint
    auth_client.get(f"/runs/{qwen_run.pk}/probes/")
    response = auth_client.post(
        f"/runs/{qwen_run.pk}/probes/claude/",
        {"provider": "openai", "openai_model": "gpt-4o-mini", "budget_usd": "0.000001"},
        follow=True,
    )
    text = response.content.decode()
    assert "x 3 replicates with openai:gpt-4o-mini would cost up to" in text
    assert fake.requests == [] and ProbeSet.objects.get(run=qwen_run).claude_status == "none"
