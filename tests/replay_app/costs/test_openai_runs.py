"""OpenAI-compatible summaries in stored runs, against the local fake server over real HTTP
(the real ``openai`` SDK, OPENAI_BASE_URL pointed at it): the service path the web form and
the Celery task use, the web form itself, the estimate, the budget cap, failures, the DB
cache, and both command lines."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: the shared fakes
from fake_openai import CHAT, RESPONSES, FakeOpenAI, Reply  # noqa: E402

from ctxlab.engine.core.spread import SPREAD_RULE  # noqa: E402
from replay_app.costs import run_budget  # noqa: E402
from replay_app.costs.run_budget import LLMOptions  # noqa: E402
from replay_app.models import Run, RunStatus, SummaryCache  # noqa: E402
from replay_app.runs import executor, services, textstore  # noqa: E402
from replay_app.runs.services import RunSpec  # noqa: E402

pytestmark = pytest.mark.django_db

SECRET = "sk-openai-web-DO-NOT-LEAK-5151"
QWEN = {"max_input_length": 3000, "language": "en"}  # 2 summaries on llm_transcript
SUMMARY = "## Goal\nfix the tests\n## Next Steps\n1. continue"
MODEL = "gpt-4o-mini"
CORPUS_FILE = "claude-code/agentcmd-full-session-four.jsonl"  # 2 qwenpaw summaries at 8000


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=SECRET, default_reply=Reply.ok(SUMMARY)) as server:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("CTXLAB_OPENAI_LOCAL", raising=False)
        yield server


@pytest.fixture
def remote(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake priced as a remote endpoint (it listens on loopback)."""
    monkeypatch.setenv("CTXLAB_OPENAI_LOCAL", "0")


def _run(user: Any, transcript: Any, *, budget: str | None = None, model: str = MODEL,
         api: str = "chat", stream: bool = False) -> Run:  # fmt: skip
    run = services.run_create(
        owner=user,
        transcript=transcript,
        spec=RunSpec(strategy="qwenpaw", params=QWEN),
        summarizer="openai",
        llm=LLMOptions(
            model=model,
            budget_usd=Decimal(budget) if budget is not None else None,
            api=api,
            stream=stream,
        ),  # fmt: skip
        enqueue=False,
    )
    return executor.run_execute(run=run)


def test_run_at_a_local_endpoint_stores_the_summaries_at_no_cost(
    fake: FakeOpenAI, user: Any, llm_transcript: Any
) -> None:
    run = _run(user, llm_transcript)
    assert run.status == RunStatus.DONE, run.error
    summaries = list(run.summaries.order_by("seq"))
    sent = fake.requests_to(CHAT)
    assert summaries and len(sent) == len(summaries)
    assert run.summarizer_model == MODEL and run.llm["local"] is True
    assert run.llm["provider"] == "openai" and run.llm["base_url"] == fake.base_url
    inputs = textstore.summary_inputs(llm_transcript.pk, summaries)
    for s, request in zip(summaries, sent, strict=True):
        assert s.output == SUMMARY and not s.usage_estimated and s.usage["cost_usd"] == 0
        system, user_turn = request.body["messages"]
        # the stored input is exactly what was sent: the strategy's own prompt
        assert inputs[s.seq] == f"[system]\n{system['content']}\n\n[user]\n{user_turn['content']}"
    assert (
        sent[0].body["messages"][0]["content"].startswith("You are a context compaction assistant.")
    )
    assert run.llm["calls"] == len(summaries) and run.llm["cost_usd"] == 0
    assert run.llm["estimate"]["note"] == "local endpoint: no cost per token"
    assert SECRET not in repr(Run.objects.filter(pk=run.pk).values().get())


def test_remote_run_is_priced_and_a_rerun_comes_from_the_db_cache(
    fake: FakeOpenAI, remote: None, user: Any, llm_transcript: Any
) -> None:
    first = _run(user, llm_transcript)
    assert first.status == RunStatus.DONE, first.error
    paid = len(fake.requests_to(CHAT))
    assert paid and SummaryCache.objects.count() == paid
    assert first.llm["local"] is False and first.llm["cost_usd"] > 0
    assert 0 < first.llm["cost_usd"] <= first.llm["estimate"]["cost_usd"]  # an upper bound
    second = _run(user, llm_transcript)
    assert len(fake.requests_to(CHAT)) == paid  # zero new HTTP requests
    assert second.llm["cache_hits"] == second.llm["calls"] and second.llm["cost_usd"] == 0


def test_budget_refuses_a_priced_run_before_any_request(
    fake: FakeOpenAI, remote: None, user: Any, llm_transcript: Any
) -> None:
    with pytest.raises(run_budget.BudgetError, match=r"estimated \$0\.\d+ for \d+ summary calls"):
        _run(user, llm_transcript, budget="0.000001")
    assert not Run.objects.exists() and fake.requests == []


def test_an_unpriced_remote_model_is_refused(
    fake: FakeOpenAI, remote: None, user: Any, llm_transcript: Any
) -> None:
    with pytest.raises(ValueError, match="no price known for model 'my-finetune'"):
        _run(user, llm_transcript, model="my-finetune")
    assert not Run.objects.exists()


def test_a_remote_endpoint_without_a_key_is_refused(
    fake: FakeOpenAI, remote: None, user: Any, llm_transcript: Any, monkeypatch: Any
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ValueError, match="needs OPENAI_API_KEY"):
        _run(user, llm_transcript)


@pytest.mark.parametrize(
    ("reply", "match"),
    [(Reply.error(500), "HTTP 500 server_error"), (Reply.malformed(), "malformed response")],
    ids=["500", "malformed"],
)
def test_failed_calls_take_the_strategy_failure_path(
    fake: FakeOpenAI, user: Any, llm_transcript: Any, reply: Reply, match: str
) -> None:
    fake.default_reply = reply
    run = _run(user, llm_transcript)
    assert run.status == RunStatus.DONE, run.error
    failed = list(run.events.filter(kind="summary_failed"))
    assert failed and all(match in e.detail["error"] for e in failed)
    assert run.llm["errors"] == run.llm["calls"] > 0 and SummaryCache.objects.count() == 0


def test_responses_api_streaming_run(fake: FakeOpenAI, user: Any, llm_transcript: Any) -> None:
    run = _run(user, llm_transcript, api="responses", stream=True)
    assert run.status == RunStatus.DONE, run.error
    sent = fake.requests_to(RESPONSES)
    assert sent and all(r.body["stream"] is True for r in sent)
    assert sent[0].body["instructions"].startswith("You are a context compaction assistant.")
    assert [s.output for s in run.summaries.all()] == [SUMMARY] * len(sent)


def test_the_key_is_in_no_log_record(
    fake: FakeOpenAI, user: Any, llm_transcript: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake.queue(Reply.error(429))
    run = _run(user, llm_transcript)
    assert run.status == RunStatus.DONE and caplog.records
    assert SECRET not in "\n".join(f"{r.getMessage()} {r.__dict__!r}" for r in caplog.records)
    stored = [*Run.objects.values(), *SummaryCache.objects.values(), *run.summaries.values(),
              *run.events.values()]  # fmt: skip
    assert stored and SECRET not in repr(stored)


# --- the web form (Django test client; the Celery task eager, as the Claude tests) ------------


def test_web_form_starts_an_openai_run(
    fake: FakeOpenAI, user: Any, llm_transcript: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = Client()
    client.force_login(user)
    page = client.get("/runs/new/").content.decode()
    assert 'name="openai_model"' in page and fake.base_url in page
    assert "(local: no cost)" in page
    form = {"transcript": llm_transcript.pk, "presets": ["qwenpaw"], "summarizer": "openai",
            "openai_model": "qwen3:8b", "openai_api": "chat", "budget_usd": "1.00",
            "window": "3000"}  # fmt: skip
    estimate = client.get("/runs/new/estimate/", form | {"format": "json"}).json()
    (row,) = estimate["rows"]
    assert row["calls"] >= 1 and row["cost_usd"] == 0
    assert row["note"] == "local endpoint: no cost per token"
    html = client.get("/runs/new/estimate/", form).content.decode()
    assert "local endpoint: no cost per token" in html and "Endpoint http://127.0.0.1" in html
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/runs/new/", form)
    assert response.status_code == 302
    run = Run.objects.get(owner=user)
    assert (run.summarizer, run.summarizer_model, run.status) == ("openai", "qwen3:8b", "done")
    sent = fake.requests_to(CHAT)
    assert sent and {r.body["model"] for r in sent} == {"qwen3:8b"}
    detail = client.get(f"/runs/{run.pk}/?format=json").json()
    assert detail["cost"]["summarizer_label"] == "OpenAI-compatible (qwen3:8b)"
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert '<dd id="run-summarizer">OpenAI-compatible (qwen3:8b)</dd>' in page
    assert f"local endpoint ({fake.base_url}): no cost per token" in page


def test_web_form_needs_a_model_name(fake: FakeOpenAI, user: Any, llm_transcript: Any) -> None:
    client = Client()
    client.force_login(user)
    response = client.post(
        "/runs/new/",
        {"transcript": llm_transcript.pk, "presets": ["qwenpaw"], "summarizer": "openai"},
    )
    assert response.status_code == 400
    assert "Name the model the endpoint serves." in response.content.decode()
    assert not Run.objects.exists()


# --- the command lines -----------------------------------------------------------------------


def test_manage_replay_with_the_openai_summarizer(
    fake: FakeOpenAI, user: Any, llm_transcript: Any
) -> None:
    out = io.StringIO()
    call_command(
        "replay", "--transcript", str(llm_transcript.pk), "--strategy", "qwenpaw",
        "--set", "max_input_length=3000", "--summarizer", "openai", "--model", "qwen3:8b",
        "--json", "-", stdout=out,
    )  # fmt: skip
    record = json.loads(out.getvalue())
    assert record["llm"]["model"] == "qwen3:8b" and record["llm"]["calls"] >= 1
    sent = fake.requests_to(CHAT)
    assert len(sent) == record["llm"]["calls"] and sent[0].body["model"] == "qwen3:8b"
    again = io.StringIO()
    call_command(
        "replay", "--transcript", str(llm_transcript.pk), "--strategy", "qwenpaw",
        "--set", "max_input_length=3000", "--summarizer", "openai", "--model", "qwen3:8b",
        stdout=again,
    )  # fmt: skip
    assert len(fake.requests_to(CHAT)) == len(sent)  # the database cache answered
    assert "summariser OpenAI-compatible (qwen3:8b)" in again.getvalue()
    assert "$0 (local endpoint)" in again.getvalue()


def test_manage_replay_save_runs_through_the_service(
    fake: FakeOpenAI, user: Any, llm_transcript: Any
) -> None:
    out = io.StringIO()
    call_command(
        "replay", "--transcript", str(llm_transcript.pk), "--strategy", "qwenpaw",
        "--set", "max_input_length=3000", "--summarizer", "openai", "--model", "qwen3:8b",
        "--save", stdout=out,
    )  # fmt: skip
    run = Run.objects.get()
    assert (run.summarizer, run.summarizer_model, run.status) == ("openai", "qwen3:8b", "done")
    assert fake.requests_to(CHAT)


def test_engine_cli_with_the_openai_summarizer(fake: FakeOpenAI, tmp_path: Path) -> None:
    from ctxlab.engine.__main__ import main

    transcript = Path(__file__).resolve().parents[2] / "data" / "corpus" / CORPUS_FILE
    out = tmp_path / "out.json"
    code = main(["replay", "--file", str(transcript), "--strategy", "qwenpaw", "--window", "8000",
                 "--summarizer", "openai", "--model", "qwen3:8b", "--json", str(out)])  # fmt: skip
    assert code == 0
    record = json.loads(out.read_text())
    sent = fake.requests_to(CHAT)
    assert sent and record["llm"]["calls"] == len(sent) and record["llm"]["local"] is True
    for s, request in zip(record["summaries"], sent, strict=True):
        assert s["input"].startswith(f"[system]\n{request.body['messages'][0]['content']}")


# --- replicates ------------------------------------------------------------------------------


def test_replicates_are_separate_calls_and_the_compare_page_shows_their_spread(
    fake: FakeOpenAI, user: Any, llm_transcript: Any
) -> None:
    """Two configurations x 3 replicates: each replicate its own calls (not a cache hit of
    the first), the compare page and its JSON twin show each family's spread, and "best"
    follows the spread rule."""
    long, short = "## Goal\n" + "keep every path and error. " * 40, "## Goal\nok"
    # qwenpaw (first spec) gets long summaries with varied lengths, the second short ones
    fake.default_reply = Reply.ok(short)
    group = services.group_create(
        owner=user,
        transcript=llm_transcript,
        specs=[RunSpec(strategy="qwenpaw", params=QWEN),
               RunSpec(strategy="qwenpaw", params={**QWEN, "language": "zh"}, label="zh")],
        summarizer="openai",
        llm=LLMOptions(model=MODEL, replicates=3),
        enqueue=False,
    )  # fmt: skip
    runs = list(group.runs.order_by("pk"))
    assert [r.label for r in runs] == ["qwenpaw #1", "qwenpaw #2", "qwenpaw #3",
                                       "zh #1", "zh #2", "zh #3"]  # fmt: skip
    assert {r.llm["family"] for r in runs[:3]} != {r.llm["family"] for r in runs[3:]}
    for i, run in enumerate(runs[:3]):
        fake.queue(*[Reply.ok(long * (i + 1))] * 8)
        executor.run_execute(run=run)
        fake._replies.clear()
    for run in runs[3:]:
        executor.run_execute(run=run)
    calls = [Run.objects.get(pk=r.pk).llm for r in runs]
    assert all(c["cache_hits"] == 0 and c["calls"] > 0 for c in calls)  # no replicate reused
    assert len(fake.requests_to(CHAT)) == sum(c["calls"] for c in calls)
    client = Client()
    client.force_login(user)
    ids = ",".join(str(r.pk) for r in runs)
    data = client.get(f"/compare/?runs={ids}&format=json").json()
    html = client.get(f"/compare/?runs={ids}").content.decode()
    row = next(m for m in data["metrics"] if m["key"] == "summary_output_tokens")
    first, second = row["spreads"][0], row["spreads"][3]
    assert first["n"] == 3 and first["max"] > first["min"]  # the long replicates vary
    assert second["min"] == second["max"]  # the short ones do not
    assert "over 3 replicates" in html and 'class="small muted spread"' in html
    # 544, 1088, 1632 against 4, 4, 4: the means differ by 1084, less than the long family's
    # range (1088): no best, where the plain rule would have marked the three 4s
    assert row["values"][3:] == [4, 4, 4] and first["max"] - first["min"] > first["mean"] - 4
    assert row["best"] == [False] * 6
    assert SPREAD_RULE in data["best"]["rule"]
    csv_text = client.get(f"/compare/?runs={ids}&format=csv").content.decode()
    (spread_line,) = [line for line in csv_text.splitlines()
                      if line.startswith("summary_output_tokens spread,")]  # fmt: skip
    assert "544–1632, sd 544 over 3 replicates" in spread_line


def test_sweep_form_with_the_openai_summarizer(
    fake: FakeOpenAI, user: Any, llm_transcript: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = Client()
    client.force_login(user)
    assert 'name="openai_model"' in client.get("/runs/sweep/new/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/runs/sweep/new/",
            {"transcript": llm_transcript.pk, "base": "preset:qwenpaw",
             "param": "max_input_length", "values": "3000,4000", "summarizer": "openai",
             "openai_model": "qwen3:8b", "openai_api": "chat"},
        )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:3000]
    runs = list(Run.objects.filter(owner=user))
    assert len(runs) == 2 and {(r.summarizer, r.summarizer_model) for r in runs} == {
        ("openai", "qwen3:8b")
    }
    assert fake.requests_to(CHAT)
