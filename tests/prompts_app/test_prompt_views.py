"""The prompt editor's pages: versions per owner, replays beside the original prompt (with
the lab's edit reaching the summariser), the diff page, the export and the JSON twins."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest
from django.urls import reverse

from ctxlab.engine.strategies import _claude_code_rules, _codex_rules
from ctxlab.engine.summarize import prompt_edit
from prompts_app import services
from prompts_app.models import PromptVersion
from replay_app.models import Run, RunSummary

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _start(client: Any, strategy: str) -> PromptVersion:
    response = client.post(reverse("prompt-start"), {"strategy": strategy})
    assert response.status_code == 302
    return PromptVersion.objects.get(pk=int(response.url.rstrip("/").split("/")[-1]))


def test_start_begins_with_the_real_prompt_and_saving_makes_a_new_version(
    auth_client: Any, user: Any
) -> None:
    v1 = _start(auth_client, "codex")
    assert v1.number == 1 and v1.text == _codex_rules.PROMPT_GOAL and v1.owner == user
    assert _start(auth_client, "codex") == v1  # started once
    response = auth_client.post(
        reverse("prompt-save", args=[v1.pk]),
        {"text": "Summarise tightly.", "rules": "- src/app.py\n\nsrc/app.py\nerrors", "name": "t"},
    )
    v2 = PromptVersion.objects.get(owner=user, strategy="codex", number=2)
    assert response.url == v2.get_absolute_url()
    assert v2.parent == v1 and v2.rules == "src/app.py\nerrors"
    v1.refresh_from_db()
    assert v1.text == _codex_rules.PROMPT_GOAL  # a saved version never changes
    data = auth_client.get(v2.get_absolute_url(), {"format": "json"}).json()
    assert data["params"] == {
        "compact_prompt": prompt_edit.compose("Summarise tightly.", ["src/app.py", "errors"])
    }
    assert data["version"]["rules"] == ["src/app.py", "errors"]
    assert [v["number"] for v in data["versions"]] == [2, 1]


def test_instructions_only_where_the_agent_has_them(auth_client: Any, user: Any) -> None:
    v1 = _start(auth_client, "codex")
    response = auth_client.post(
        reverse("prompt-save", args=[v1.pk]), {"text": "x", "instructions": "focus"}
    )
    assert response.status_code == 400
    assert b"takes no custom instructions" in response.content
    assert PromptVersion.objects.filter(owner=user).count() == 1


def test_versions_are_private_to_their_owner(
    auth_client: Any, client: Any, user: Any, other_user: Any, transcript: Any
) -> None:
    theirs = services.version_start(owner=other_user, strategy="claude_code")
    mine = services.version_start(owner=user, strategy="claude_code")
    for name, args in (
        ("prompt-version", [theirs.pk]),
        ("prompt-export", [theirs.pk]),
        ("prompt-diff", [theirs.pk, mine.pk]),
        ("prompt-diff", [mine.pk, theirs.pk]),
    ):
        assert auth_client.get(reverse(name, args=args)).status_code == 404
    assert (
        auth_client.post(reverse("prompt-save", args=[theirs.pk]), {"text": "x"}).status_code == 404
    )
    replay = reverse("prompt-replay", args=[theirs.pk])
    assert auth_client.post(replay, {"transcript": transcript.pk}).status_code == 404
    listed = auth_client.get(reverse("prompt-list"), {"format": "json"}).json()
    assert [v["id"] for v in listed["versions"]] == [mine.pk]
    # and another user's transcript cannot be replayed with my version
    client.force_login(other_user)
    mine_replay = reverse("prompt-replay", args=[mine.pk])
    assert client.post(mine_replay, {"transcript": transcript.pk}).status_code == 404


def test_prompt_text_is_escaped_on_every_page(auth_client: Any, user: Any) -> None:
    v1 = _start(auth_client, "claude_code")
    auth_client.post(
        reverse("prompt-save", args=[v1.pk]),
        {"text": HOSTILE, "rules": HOSTILE, "instructions": HOSTILE, "name": HOSTILE},
    )
    v2 = PromptVersion.objects.get(owner=user, number=2)
    pages = [
        auth_client.get(reverse("prompt-list")),
        auth_client.get(v2.get_absolute_url()),
        auth_client.get(v1.get_absolute_url()),
        auth_client.get(reverse("prompt-diff", args=[v1.pk, v2.pk])),
    ]
    for page in pages:
        html = page.content.decode()
        assert page.status_code == 200
        assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in pages[3].content.decode()
    twin = auth_client.get(v2.get_absolute_url(), {"format": "json"}).json()
    assert twin["version"]["text"] == HOSTILE  # the JSON keeps the text as it is


def test_export_downloads_each_agents_file(auth_client: Any, user: Any) -> None:
    for strategy in prompt_edit.TARGETS:
        v1 = _start(auth_client, strategy)
        auth_client.post(
            reverse("prompt-save", args=[v1.pk]),
            {"text": v1.text + "\nKeep every failing test name.", "rules": "src/app.py"},
        )
        v2 = PromptVersion.objects.get(owner=user, strategy=strategy, number=2)
        response = auth_client.get(reverse("prompt-export", args=[v2.pk]))
        assert response.status_code == 200
        native = auth_client.get(reverse("prompt-export", args=[v2.pk]), {"format": "json"}).json()
        assert native["filename"] in response["Content-Disposition"]
        body = response.content.decode()
        if native["filename"].endswith(".json"):
            assert json.loads(body) == native["content"]
        elif native["filename"].endswith(".toml"):
            data = tomllib.loads(body)
            assert data["compact_prompt"].endswith("- src/app.py")
        else:
            assert body.startswith("# Compact Instructions\n")
        if strategy in ("codex", "roo_code"):
            assert native["unexpressed"] == []
        else:
            assert native["unexpressed"][-1]["param"] == "compaction prompt"


def _replay(client: Any, version: PromptVersion, transcript: Any, **extra: Any) -> Any:
    return client.post(
        reverse("prompt-replay", args=[version.pk]),
        {"transcript": transcript.pk, "summarizer": "offline", **extra},
    )


def test_replay_runs_both_versions_and_the_edit_reaches_the_summary(
    auth_client: Any, user: Any, transcript: Any, django_capture_on_commit_callbacks: Any
) -> None:
    v1 = _start(auth_client, "claude_code")
    edited = _claude_code_rules.BASE_COMPACT_PROMPT.replace("Your task is", "YOUR JOB is")
    auth_client.post(
        reverse("prompt-save", args=[v1.pk]),
        {"text": edited, "rules": "srv/app/f1", "instructions": "I"},
    )
    v2 = PromptVersion.objects.get(owner=user, number=2)
    with django_capture_on_commit_callbacks(execute=True):
        response = _replay(auth_client, v2, transcript, baseline=v1.pk, window=20000)
    assert response.status_code == 302
    runs = {r.llm["prompt_version"]: r for r in Run.objects.filter(owner=user)}
    assert set(runs) == {v1.pk, v2.pk}
    base, mine = runs[v1.pk], runs[v2.pk]
    assert base.status == mine.status == "done", (base.error, mine.error)
    assert base.group_id == mine.group_id
    assert "prompt_edit" not in base.llm and base.params["custom_instructions"] == ""
    assert mine.llm["prompt_edit"]["text"] == edited
    assert mine.params["custom_instructions"].startswith("I\n\n")
    first = RunSummary.objects.filter(run=mine).order_by("seq").first()
    plain = RunSummary.objects.filter(run=base).order_by("seq").first()
    assert first is not None and plain is not None
    assert prompt_edit.OFFLINE_RULES_HEADING in first.output
    assert prompt_edit.OFFLINE_RULES_HEADING not in plain.output
    page = auth_client.get(v2.get_absolute_url(), {"format": "json"}).json()
    (replay,) = page["replays"]
    assert replay["compare_url"].endswith(f"?runs={base.pk},{mine.pk}")
    numbers = {n["run"]: n for n in replay["runs"]}
    assert numbers[base.pk]["survival"] is not None
    assert numbers[base.pk]["compactions_total"] == sum(base.metrics["compactions"].values()) >= 1
    assert numbers[mine.pk]["survival"] > numbers[base.pk]["survival"]
    paths = [numbers[r.pk]["categories"]["paths"]["survived"] for r in (base, mine)]
    assert paths[1] > paths[0]
    assert numbers[mine.pk]["summary_output_tokens"] > numbers[base.pk]["summary_output_tokens"]
    html = auth_client.get(v2.get_absolute_url()).content.decode()
    assert f'data-run="{mine.pk}" data-status="done"' in html
    diff = auth_client.get(reverse("prompt-diff", args=[v1.pk, v2.pk]), {"format": "json"}).json()
    ops = {row["op"] for row in diff["prompt_diff"]}
    assert {"removed", "added", "same"} <= ops
    assert diff["rules_diff"] == [{"op": "added", "text": "srv/app/f1"}]
    assert diff["summary_diff"]["left"]["run"] == base.pk
    assert diff["summary_diff"]["right"]["run"] == mine.pk
    assert prompt_edit.OFFLINE_RULES_HEADING in diff["summary_diff"]["right"]["output"]
    compare = auth_client.get(replay["compare_url"])
    assert compare.status_code == 200


def test_replay_refuses_an_unknown_summarizer(auth_client: Any, user: Any, transcript: Any) -> None:
    v1 = _start(auth_client, "codex")
    response = _replay(auth_client, v1, transcript, summarizer="recorded")
    assert response.status_code == 400
    assert not Run.objects.filter(owner=user).exists()


def test_adopt_saves_the_native_setting_as_a_configuration(auth_client: Any, user: Any) -> None:
    from replay_app.models import StrategyConfig

    v1 = _start(auth_client, "codex")
    refused = auth_client.post(reverse("prompt-adopt", args=[v1.pk]))
    assert refused.status_code == 400 and not StrategyConfig.objects.exists()
    auth_client.post(reverse("prompt-save", args=[v1.pk]), {"text": "Short.", "rules": "a.py"})
    v2 = PromptVersion.objects.get(owner=user, number=2)
    response = auth_client.post(reverse("prompt-adopt", args=[v2.pk]))
    config = StrategyConfig.objects.get(owner=user)
    assert response.url == config.get_absolute_url()
    assert config.params == {"compact_prompt": prompt_edit.compose("Short.", ["a.py"])}
    assert config.name == "codex prompt v2"


def test_openai_replay_needs_a_model_name(
    auth_client: Any, user: Any, transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "openai" not in services.replay_summarizers():
        pytest.skip("no OpenAI-compatible summariser in this tree")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-prompts")
    v1 = _start(auth_client, "codex")
    response = _replay(auth_client, v1, transcript, summarizer="openai")
    assert response.status_code == 400
    assert b"needs a model name" in response.content
    assert not Run.objects.filter(owner=user).exists()


def test_suite_runs_both_versions_over_several_transcripts(
    auth_client: Any, user: Any, transcript: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from replay_testdata import agent_chat, import_transcript

    from suites_app.models import Suite

    second = import_transcript(user, agent_chat(turns=20, size=3000, seed=2), name="b.json")
    v1 = _start(auth_client, "opencode")
    auth_client.post(reverse("prompt-save", args=[v1.pk]), {"text": v1.text, "rules": "srv/app/f1"})
    v2 = PromptVersion.objects.get(owner=user, number=2)
    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(
            reverse("prompt-suite", args=[v2.pk]),
            {"transcripts": [transcript.pk, second.pk], "summarizer": "offline",
             "window": 12000, "name": "paths kept"},
        )  # fmt: skip
    suite = Suite.objects.get(owner=user)
    assert response.url == reverse("suite-detail", kwargs={"suite_id": suite.pk})
    assert suite.name == "paths kept" and len(suite.configs) == 2
    runs = Run.objects.filter(owner=user)
    assert runs.count() == 4
    tagged = sorted(r.llm["prompt_version"] for r in runs)
    assert tagged == [v1.pk, v1.pk, v2.pk, v2.pk]
    assert all(("prompt_edit" in r.llm) == (r.llm["prompt_version"] == v2.pk) for r in runs)
    assert all(r.status == "done" for r in runs), [(r.status, r.error) for r in runs]
    for run in runs:
        outputs = " ".join(run.summaries.values_list("output", flat=True))
        kept = prompt_edit.OFFLINE_RULES_HEADING in outputs
        assert run.summaries.exists() and kept == (run.llm["prompt_version"] == v2.pk), run.pk
    # another user's transcript is refused, and nothing is created
    other = auth_client.post(
        reverse("prompt-suite", args=[v2.pk]), {"transcripts": [transcript.pk, 999999]}
    )
    assert other.status_code == 400 and Suite.objects.count() == 1
