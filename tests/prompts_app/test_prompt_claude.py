"""Prompt versions replayed with Claude (the local fake Messages API) and an OpenAI-compatible
endpoint (the local fake chat completions server), over real HTTP with the real SDKs: what
the fake receives is the version's prompt, byte for byte, and the original
prompt for the run beside it; the cost of each run is on the version page."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared fake
from fake_anthropic import MESSAGES, FakeAnthropic, Reply  # noqa: E402

from ctxlab.engine.strategies import _claude_code_rules, _codex_rules  # noqa: E402
from ctxlab.engine.summarize import prompt_edit  # noqa: E402
from prompts_app import services  # noqa: E402
from replay_app.models import Run  # noqa: E402

pytestmark = pytest.mark.django_db

KEY = "sk-ant-test-prompts-DO-NOT-LEAK-4242"
SUMMARY = "## Goal\nfix the tests\n## Next Steps\n1. continue"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=KEY, default_reply=Reply.ok(SUMMARY)) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
        yield server


def _last_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def _replay(client: Any, version: Any, transcript: Any, capture: Any, window: int) -> list[Run]:
    with capture(execute=True):
        response = client.post(
            reverse("prompt-replay", args=[version.pk]),
            {"transcript": transcript.pk, "summarizer": "anthropic", "window": window},
        )
    assert response.status_code == 302, response.content[:500]
    runs = list(Run.objects.filter(owner=version.owner).order_by("pk"))
    for run in runs:
        assert run.status == "done", run.error
    return runs


def test_codex_compact_prompt_is_what_claude_receives(
    fake: FakeAnthropic, auth_client: Any, user: Any, transcript: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    v1 = services.version_start(owner=user, strategy="codex")
    v2 = services.version_save(
        owner=user, parent=v1, text="Summarise <briefly>.", rules="src/m3.py"
    )
    base, mine = _replay(auth_client, v2, transcript, django_capture_on_commit_callbacks, 12000)
    sent = [_last_user_text(r.body) for r in fake.requests_to(MESSAGES)]
    composed = prompt_edit.compose("Summarise <briefly>.", ["src/m3.py"])
    assert sent.count(_codex_rules.PROMPT_GOAL) == base.summaries.count() >= 1
    assert sent.count(composed) == mine.summaries.count() >= 1
    assert len(sent) == base.summaries.count() + mine.summaries.count()
    # Claude's answers are kept as they are: no offline extraction for a model
    assert all(s.output == SUMMARY for s in mine.summaries.all())
    page = auth_client.get(v2.get_absolute_url(), {"format": "json"}).json()
    costs = [n["cost_usd"] for n in page["replays"][0]["runs"]]
    assert all(c is not None and c > 0 for c in costs)
    assert KEY not in auth_client.get(v2.get_absolute_url()).content.decode()


def test_claude_code_lab_edit_reaches_claude(
    fake: FakeAnthropic, auth_client: Any, user: Any, transcript: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    base_text = _claude_code_rules.BASE_COMPACT_PROMPT
    edited = base_text.replace("Your task is", "YOUR JOB is")
    v1 = services.version_start(owner=user, strategy="claude_code")
    v2 = services.version_save(owner=user, parent=v1, text=edited, instructions="keep tests")
    base, mine = _replay(auth_client, v2, transcript, django_capture_on_commit_callbacks, 20000)
    sent = [_last_user_text(r.body) for r in fake.requests_to(MESSAGES)]
    original = [t for t in sent if base_text in t]
    changed = [t for t in sent if edited in t]
    assert len(original) == base.summaries.count() >= 1
    assert len(changed) == mine.summaries.count() >= 1
    assert all("Additional Instructions:\nkeep tests" in t for t in changed)
    assert not any("keep tests" in t for t in original)


def test_codex_version_through_the_openai_compatible_summariser(
    auth_client: Any, user: Any, transcript: Any, monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    """The same version through an OpenAI-compatible endpoint (the local fake): the
    original prompt and the version's, byte for byte, as the last chat message."""
    if "openai" not in services.replay_summarizers():
        pytest.skip("no OpenAI-compatible summariser in this tree")
    from fake_openai import CHAT, FakeOpenAI
    from fake_openai import Reply as OpenAIReply

    key = "sk-openai-prompts-DO-NOT-LEAK-9191"
    v1 = services.version_start(owner=user, strategy="codex")
    v2 = services.version_save(owner=user, parent=v1, text="Summarise, keep <paths>.")
    with FakeOpenAI(api_key=key, default_reply=OpenAIReply.ok(SUMMARY)) as server:
        monkeypatch.setenv("OPENAI_API_KEY", key)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        with django_capture_on_commit_callbacks(execute=True):
            response = auth_client.post(
                reverse("prompt-replay", args=[v2.pk]),
                {"transcript": transcript.pk, "summarizer": "openai", "model": "gpt-4o-mini",
                 "window": 12000},
            )  # fmt: skip
        assert response.status_code == 302, response.content[:500]
        sent = [r.body["messages"][-1]["content"] for r in server.requests_to(CHAT)]
    base, mine = Run.objects.filter(owner=user).order_by("pk")
    assert base.status == mine.status == "done", (base.error, mine.error)
    assert sent.count(_codex_rules.PROMPT_GOAL) == base.summaries.count() >= 1
    assert sent.count("Summarise, keep <paths>.") == mine.summaries.count() >= 1
    assert mine.summarizer_model == "gpt-4o-mini"
