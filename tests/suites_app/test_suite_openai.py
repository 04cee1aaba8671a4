"""A suite summarised by an OpenAI-compatible endpoint (the local fake over real HTTP, the
real ``openai`` SDK): from ``manage.py suite`` and from the web form, end to end."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from suite_testdata import import_chat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared fakes
from fake_openai import CHAT, FakeOpenAI, Reply  # noqa: E402

from suites_app import services  # noqa: E402
from suites_app.models import Suite  # noqa: E402

pytestmark = pytest.mark.django_db

SECRET = "sk-openai-suite-DO-NOT-LEAK-2727"
SUMMARY = "## Goal\nfinish the change\n## Next Steps\n1. run the tests"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=SECRET, default_reply=Reply.ok(SUMMARY)) as server:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("CTXLAB_OPENAI_LOCAL", raising=False)
        yield server


def _runs_of(suite: Suite) -> list[Any]:
    return [item.run for item in suite.items.select_related("run").order_by("pk")]


def test_suite_command_with_the_openai_summarizer(user: Any, fake: FakeOpenAI) -> None:
    ts = [import_chat(user, seed=s, turns=10, size=3000) for s in (1, 2)]
    out = io.StringIO()
    call_command(
        "suite", "create", "oa", "--user", "alice", "--transcripts", f"{ts[0].pk},{ts[1].pk}",
        "--preset", "qwenpaw", "--window", "6000", "--summarizer", "openai",
        "--model", "qwen3:8b", "--json", stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    created = json.loads(out.getvalue())
    assert created["total"] == 2 and created["done"] == 2
    runs = _runs_of(Suite.objects.get(name="oa"))
    assert {(r.summarizer, r.summarizer_model, r.status) for r in runs} == {
        ("openai", "qwen3:8b", "done")
    }
    sent = fake.requests_to(CHAT)
    assert sent and len(sent) == sum(r.llm["calls"] for r in runs)
    assert {r.body["model"] for r in sent} == {"qwen3:8b"}
    assert all(s.output == SUMMARY for r in runs for s in r.summaries.all())


def test_suite_command_needs_a_model(user: Any, fake: FakeOpenAI) -> None:
    t = import_chat(user, seed=1, turns=4)
    with pytest.raises(CommandError, match="needs --model NAME"):
        call_command(
            "suite", "create", "oa", "--user", "alice", "--transcripts", str(t.pk),
            "--preset", "qwenpaw", "--summarizer", "openai", stdout=io.StringIO(),
        )  # fmt: skip


def test_suite_form_with_the_openai_summarizer(user: Any, fake: FakeOpenAI) -> None:
    client = Client()
    client.force_login(user)
    assert 'name="openai_model"' in client.get("/suites/new/").content.decode()
    ts = [import_chat(user, seed=s, turns=10, size=3000) for s in (1, 2)]
    data = {"name": "web-oa", "summarizer": "openai", "openai_model": "", "max_attempts": "2",
            "transcripts": [t.pk for t in ts], "presets": ["qwenpaw"], "window": "6000"}  # fmt: skip
    refused = client.post("/suites/new/", data)
    assert refused.status_code == 200 and "Name the model the endpoint serves." in (
        refused.content.decode()
    )
    response = client.post("/suites/new/", {**data, "openai_model": "qwen3:8b"})
    assert response.status_code == 302, response.content.decode()[:2000]
    suite = Suite.objects.get(owner=user, name="web-oa")
    services.suite_enqueue(suite)  # eager Celery: the on-commit never comes in a test
    runs = _runs_of(suite)
    for r in runs:
        r.refresh_from_db()
    assert {(r.summarizer, r.summarizer_model, r.status) for r in runs} == {
        ("openai", "qwen3:8b", "done")
    }
    assert fake.requests_to(CHAT)
    page = client.get(f"/suites/{suite.pk}/").content.decode()
    assert "summariser openai" in page and SECRET not in page
