"""The run form with Claude (model, budget, estimate preview, key checks), the run page's
cost / ledger / ground-truth sections and JSON twins, compare rows, and the CLI — all
against the local fake Messages API over real HTTP."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the shared fake
from fake_anthropic import COUNT_TOKENS, MESSAGES, FakeAnthropic, Reply  # noqa: E402
from replay_testdata import agent_chat, import_transcript  # noqa: E402

from replay_app.configs import services as config_services
from replay_app.costs.run_budget import LLMOptions
from replay_app.models import Run, RunGroup, RunStatus, StrategyConfig, SummaryCache  # noqa: E402
from replay_app.runs import executor, services
from replay_app.runs.services import RunSpec

pytestmark = pytest.mark.django_db

SECRET = "sk-ant-test-views-DO-NOT-LEAK-9191"
SUMMARY = "## Goal\nfix the tests\n## Next Steps\n1. continue"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=SECRET, default_reply=Reply.ok(SUMMARY)) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        yield server


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)


def _configs(owner: Any) -> list[int]:
    """Small-window configs, so each run summarises on the test transcript."""
    out = []
    for strategy in ("qwenpaw", "copaw"):
        config = StrategyConfig.objects.filter(owner=owner, name=f"small {strategy}").first()
        if config is None:
            config = config_services.config_create(
                owner=owner, name=f"small {strategy}", strategy=strategy,
                params={"max_input_length": 3000, "language": "en"},
            )  # fmt: skip
        out.append(config.pk)
    return out


def _post(client: Client, transcript: Any, capture: Any, **extra: Any) -> Any:
    data = {
        "transcript": transcript.pk,
        "configs": _configs(transcript.owner),
        "summarizer": "anthropic",
        "model": "claude-haiku-5-5",
        "budget_usd": "5.00",
        **extra,
    }
    with capture(execute=True):
        return client.post("/runs/new/", data)


def test_costs_form_offers_claude_models_and_budget(auth_client: Client, fake: FakeAnthropic):
    html = auth_client.get("/runs/new/").content.decode()
    assert 'value="anthropic"' in html and "Claude (Anthropic API)" in html
    assert 'value="claude-haiku-5-5" selected' in html  # the default: a current Haiku
    assert 'name="budget_usd"' in html and 'value="5.00"' in html
    assert 'hx-get="/runs/new/estimate/"' in html and 'id="cost-estimate"' in html
    assert SECRET not in html


def test_costs_form_without_key_explains_and_refuses(
    auth_client: Client, no_key: None, llm_transcript: Any,
    django_capture_on_commit_callbacks: Any,
):  # fmt: skip
    assert 'id="no-key-note"' in auth_client.get("/runs/new/").content.decode()
    response = _post(auth_client, llm_transcript, django_capture_on_commit_callbacks)
    assert response.status_code == 400
    assert "ANTHROPIC_API_KEY in the server&#x27;s environment" in response.content.decode()
    assert not Run.objects.exists()


def test_costs_form_run_with_claude_stores_usage_cost_and_ledger(
    auth_client: Client, user: Any, fake: FakeAnthropic, llm_transcript: Any,
    django_capture_on_commit_callbacks: Any,
):  # fmt: skip
    response = _post(auth_client, llm_transcript, django_capture_on_commit_callbacks)
    assert response.status_code == 302, response.content.decode()[:3000]
    runs = list(RunGroup.objects.get(owner=user).runs.order_by("pk"))
    assert {r.status for r in runs} == {RunStatus.DONE}
    run = runs[0]
    assert run.summarizer == "anthropic" and run.summarizer_model == "claude-haiku-5-5"
    assert run.llm["paid_calls"] >= 1 and run.llm["cost_usd"] > 0
    html = auth_client.get(f"/runs/{run.pk}/").content.decode()
    assert "Claude (claude-haiku-5-5)" in html
    for section in ('id="run-cost"', 'id="run-ledger"', 'id="ledger-compactions"',
                    'data-metric="ledger_total_cost"', 'class="summary-cost"'):  # fmt: skip
        assert section in html, section
    assert SECRET not in html
    data = auth_client.get(f"/runs/{run.pk}/?format=json").json()
    assert data["cost"]["summarizer_label"] == "Claude (claude-haiku-5-5)"
    assert data["cost"]["llm"]["cost_usd"] == pytest.approx(run.llm["cost_usd"])
    ledger = data["cost"]["ledger"]
    assert ledger["totals"]["summary_cost"] == pytest.approx(run.llm["cost_usd"])
    assert ledger["compactions"][0]["invalidated_tokens"] >= 0
    assert {"read", "write", "cost"} <= set(ledger["steps"])
    assert all(s["usage"]["cost_usd"] > 0 for s in data["summaries"] if not s["error"])
    assert data["metrics"]["ledger_total_cost"] > 0
    assert SECRET not in json.dumps(data)


def test_costs_rerun_from_the_web_pays_nothing(
    auth_client: Client, user: Any, fake: FakeAnthropic, llm_transcript: Any,
    django_capture_on_commit_callbacks: Any,
):  # fmt: skip
    _post(auth_client, llm_transcript, django_capture_on_commit_callbacks)
    paid = len(fake.requests_to(MESSAGES))
    assert paid and SummaryCache.objects.count() == paid
    _post(auth_client, llm_transcript, django_capture_on_commit_callbacks)
    assert len(fake.requests_to(MESSAGES)) == paid  # zero HTTP requests the second time
    latest = RunGroup.objects.filter(owner=user).order_by("-pk").first()
    assert latest is not None
    assert all(r.llm["cost_usd"] == 0 and r.llm["cache_hits"] == r.llm["calls"]
               for r in latest.runs.all())  # fmt: skip


def test_costs_budget_refusal_shows_error_beside_the_field(
    auth_client: Client, fake: FakeAnthropic, llm_transcript: Any,
    django_capture_on_commit_callbacks: Any,
):  # fmt: skip
    response = _post(
        auth_client, llm_transcript, django_capture_on_commit_callbacks, budget_usd="0.00"
    )
    html = response.content.decode()
    assert response.status_code == 400
    assert "summary calls is above the $0.00 budget per run" in html
    field = html.index('name="budget_usd"')
    assert field < html.index("budget per run", field) < html.index('name="exact_counts"')
    assert not Run.objects.exists() and not RunGroup.objects.exists()
    assert fake.requests == []


def test_costs_budget_above_the_server_cap_is_refused(
    auth_client: Client, fake: FakeAnthropic, llm_transcript: Any,
    django_capture_on_commit_callbacks: Any,
):  # fmt: skip
    response = _post(
        auth_client, llm_transcript, django_capture_on_commit_callbacks, budget_usd="50"
    )
    assert response.status_code == 400 and "At most $5.00 per run" in response.content.decode()


def test_costs_estimate_preview_shows_calls_and_cost(
    auth_client: Client, fake: FakeAnthropic, llm_transcript: Any
):
    a, b = _configs(llm_transcript.owner)
    url = (
        f"/runs/new/estimate/?transcript={llm_transcript.pk}&configs={a}&configs={b}"
        "&summarizer=anthropic&model=claude-haiku-5-5&budget_usd=5"
    )
    response = auth_client.get(url, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and 'id="cost-estimate"' in html
    assert "Claude Haiku 5.5" in html and "small qwenpaw" in html and "small copaw" in html
    data = auth_client.get(url + "&format=json").json()
    assert sorted(r["label"] for r in data["rows"]) == ["small copaw", "small qwenpaw"]
    assert all(r["calls"] >= 1 and r["cost_usd"] > 0 for r in data["rows"])
    assert data["total"] == pytest.approx(sum(r["cost_usd"] for r in data["rows"]))
    over = auth_client.get(url.replace("budget_usd=5", "budget_usd=0")).content.decode()
    assert "over budget" in over
    offline = auth_client.get(url.replace("anthropic", "offline")).content.decode()
    assert "cost nothing" in offline
    assert fake.requests == []  # the estimate never calls the API


def test_costs_estimate_other_users_transcript_is_ignored(
    fake: FakeAnthropic, other_user: Any, llm_transcript: Any
):
    client = Client()
    client.force_login(other_user)
    data = client.get(
        f"/runs/new/estimate/?transcript={llm_transcript.pk}&presets=qwenpaw"
        "&summarizer=anthropic&format=json"
    ).json()
    assert data["rows"] == []


def test_costs_compare_page_has_ledger_rows(
    auth_client: Client, user: Any, fake: FakeAnthropic, llm_transcript: Any,
    django_capture_on_commit_callbacks: Any,
):  # fmt: skip
    _post(auth_client, llm_transcript, django_capture_on_commit_callbacks)
    ids = ",".join(str(r.pk) for r in Run.objects.order_by("pk"))
    html = auth_client.get(f"/compare/?runs={ids}").content.decode()
    assert "Compaction extra $" in html and "Summary calls $" in html
    data = auth_client.get(f"/compare/?runs={ids}&format=json").json()
    rows = {m["key"]: m for m in data["metrics"]}
    assert all(v > 0 for v in rows["ledger_total_cost"]["values"])
    assert all(v > 0 for v in rows["llm_cost_usd"]["values"])


def test_costs_exact_counts_curve_and_cache(
    user: Any, fake: FakeAnthropic, llm_transcript: Any, auth_client: Client
):
    def make() -> Run:
        run = services.run_create(
            owner=user, transcript=llm_transcript, spec=RunSpec(strategy="qwenpaw"),
            llm=LLMOptions(exact_counts=True), enqueue=False,
        )  # fmt: skip
        return executor.run_execute(run=run)

    run = make()
    assert run.status == RunStatus.DONE, run.error
    exact = run.ground_truth["exact"]
    assert len(exact) == run.steps.count() and exact[-1] > exact[0] > 0
    counted = len(fake.requests_to(COUNT_TOKENS))
    assert counted >= 3
    again = make()
    assert again.ground_truth["exact"] == exact
    assert len(fake.requests_to(COUNT_TOKENS)) == counted  # cached in the database
    html = auth_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-ground-truth"' in html and "exact count_tokens" in html


def test_costs_calibration_band_and_overflow_flags_from_reported_usage(user: Any) -> None:
    from dataclasses import replace

    from ctxlab.engine.core.model import Role, Usage
    from ctxlab.engine.replay import Replay
    from ctxlab.engine.replay import run as replay
    from replay_app.costs import run_costs

    conv = import_transcript(user, agent_chat(turns=12, size=3000)).to_conversation()
    # every call reports ≈ 1.1 × its reference size + 30 (+ noise): a known tokenizer ratio
    sizes = {s.source_index: s.tokens.reference for s in replay(conv, "qwenpaw").steps}
    msgs = [
        replace(m, usage=Usage(input_uncached=int(sizes[i] * 1.1) + 30 + i % 7))
        if i in sizes and m.role is Role.ASSISTANT
        else m
        for i, m in enumerate(conv.messages)
    ]
    conv2 = replace(conv, messages=tuple(msgs))
    job = Replay(conv2, "picoclaw", params={"context_window": 9000, "max_tokens": 500})
    job.exhaust()
    truth = run_costs.ground_truth_json(job.result.steps, conv2)
    cal = truth["calibration"]
    assert cal is not None and cal["pairs_used"] >= 5 and cal["band"]["n"] > 0
    from ctxlab.engine.cost.calibration import request_sizes

    # compare where the replayed request is still the original's (reported applies)
    reported = [r.reported for r in request_sizes(job.result.steps, conv2)]
    untouched = [(e, r) for e, r in zip(truth["estimate"], reported, strict=True) if r]
    assert untouched and all(abs(e - r) <= 0.05 * r + 50 for e, r in untouched)
    assert len(truth["estimate"]) == len(truth["low"]) == len(job.result.steps)
    assert all(lo <= e <= hi for lo, e, hi in zip(truth["low"], truth["estimate"],
                                                   truth["high"], strict=True))  # fmt: skip
    for flag in truth["flags"]:
        assert flag["strategy_tokens"] <= flag["limit"] < flag["high"]


def test_costs_cli_replay_file_with_claude(
    fake: FakeAnthropic, tmp_path: Path, llm_transcript: Any
) -> None:
    path = tmp_path / "llm.json"
    path.write_bytes(agent_chat(turns=8, size=3000))
    argv = ["replay", "--file", str(path), "--strategy", "qwenpaw", "--summarizer", "anthropic",
            "--model", "claude-haiku-5-5", "--set", "max_input_length=3000",
            "--set", "language=en"]  # fmt: skip
    out = StringIO()
    call_command(*argv, "--json", "-", stdout=out)
    data = json.loads(out.getvalue())
    paid = len(fake.requests_to(MESSAGES))
    assert paid == len(data["summaries"]) >= 1
    assert data["summaries"][0]["output"] == SUMMARY
    assert data["llm"]["cost_usd"] > 0 and data["llm"]["model"] == "claude-haiku-5-5"
    out = StringIO()
    call_command(*argv, stdout=out)
    text = out.getvalue()
    assert len(fake.requests_to(MESSAGES)) == paid  # the DB cache: the rerun is free
    assert "Claude (claude-haiku-5-5)" in text and "cache hits" in text
    assert SECRET not in text
