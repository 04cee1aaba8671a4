"""The run form with an OpenAI-compatible model, in a real browser against the local fake
server (real HTTP, the real ``openai`` SDK in the served process's embedded worker): the
provider and model fields, the estimate saying a local endpoint costs nothing, the run, and
its page naming the summariser and the cost."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared fakes
from fake_openai import CHAT, FakeOpenAI, Reply  # noqa: E402
from waiting import wait_until  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

SESSION = (
    Path(__file__).resolve().parents[1]
    / "data/corpus/claude-code/agentcmd-full-session-four.jsonl"  # 2 qwenpaw summaries at 8000
)
SUMMARY = "## Goal\nkeep the failing test and src/app.py\n## Next Steps\n1. rerun pytest"


@pytest.fixture
def openai_fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """Started (and the environment set) before the server forks: it reads both."""
    with FakeOpenAI(default_reply=Reply.ok(SUMMARY)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.delenv("CTXLAB_OPENAI_LOCAL", raising=False)
        yield server


def test_run_form_with_an_openai_compatible_model(
    page: Any, openai_fake: FakeOpenAI, asgi_worker_server: Any, login: Any, screenshot: Any
) -> None:
    from django.contrib.auth import get_user_model

    from replay_app.models import Run
    from sessions_app import services

    base = asgi_worker_server.url
    login(base_url=base)
    user = get_user_model().objects.get(username="alice")
    outcome = services.upload_import(owner=user, name=SESSION.name, data=SESSION.read_bytes())
    assert outcome.upload is not None
    transcript = outcome.upload.transcripts.get()

    page.goto(f"{base}/runs/new/?transcript={transcript.pk}")
    assert "(local: no cost)" in page.locator("#openai-fields").inner_text()
    checked = page.locator("input[name=presets]:checked").evaluate_all(
        "boxes => boxes.map(b => b.value)"
    )
    for value in checked:
        page.uncheck(f"input[name=presets][value={value}]")
    page.check("input[name=presets][value=qwenpaw]")
    page.fill("#id_window", "8000")
    page.select_option("#id_summarizer", "openai")
    page.fill("#id_openai_model", "qwen3:8b")
    page.locator("#id_openai_model").dispatch_event("change")
    page.locator("#cost-estimate", has_text="local endpoint: no cost per token").wait_for()
    estimate = page.locator("#cost-estimate").inner_text()
    assert "OpenAI-compatible (qwen3:8b)" in estimate and "$0.0000" in estimate
    screenshot("run-form-openai")
    page.click("#start-runs")
    page.wait_for_url("**/runs/groups/*/")
    run = wait_until(
        lambda: Run.objects.filter(owner=user, status="done").first(),
        "the OpenAI-compatible run to finish",
        seen=lambda: list(Run.objects.values_list("status", "error")),
    )
    assert (run.summarizer, run.summarizer_model) == ("openai", "qwen3:8b")
    sent = openai_fake.requests_to(CHAT)
    assert len(sent) == run.summaries.count() > 0
    page.goto(f"{base}/runs/{run.pk}/")
    assert page.locator("#run-summarizer").inner_text() == "OpenAI-compatible (qwen3:8b)"
    assert "no cost per token" in page.locator("#run-llm-local").inner_text()
    assert page.errors == [], page.errors
