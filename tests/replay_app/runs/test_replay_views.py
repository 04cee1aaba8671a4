"""Pages and JSON twins: strategies, runs, groups; owner isolation; cancel/retry POSTs."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client

from ctxlab.engine.strategies import LIBRARY as ENGINE_LIBRARY
from replay_app.configs import services as config_services
from replay_app.models import Run, RunGroup, RunStatus, StrategyConfig
from replay_app.runs import executor, services
from replay_app.runs.services import RunSpec

pytestmark = pytest.mark.django_db

PRESETS = ["qwenpaw", "copaw", "cowagent", "picoclaw", "baseagent"]
LIBRARY = list(ENGINE_LIBRARY)  # the seeds, then the provider strategies
assert LIBRARY[: len(PRESETS)] == PRESETS and "anthropic_edits" in LIBRARY


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- strategy configurations ----------------------------------------------------------


def test_strategy_list_shows_presets_and_json(auth_client: Client):
    page = auth_client.get("/strategies/")
    assert page.status_code == 200
    for name in LIBRARY:
        assert f"?preset={name}" in page.content.decode()
    data = auth_client.get("/strategies/?format=json").json()
    assert [p["name"] for p in data["presets"]] == LIBRARY
    assert data["configs"] == []


def test_strategy_list_shows_a_composition_as_its_stages(auth_client: Client, user: Any):
    stages = [{"stage": "clear_tool_results", "keep": 2}, {"stage": "summarise"}]
    config_services.config_create(
        owner=user, name="diet", strategy="custom", params={"stages": stages}
    )
    config_services.config_create(owner=user, name="<b>x</b>", strategy="qwenpaw",
                           params={"max_input_length": 20000})  # fmt: skip
    html = auth_client.get("/strategies/").content.decode()
    assert "stages=clear_tool_results → summarise" in html and "{&#x27;stage" not in html
    assert "max_input_length=20000" in html and "&lt;b&gt;x&lt;/b&gt;" in html


def test_strategy_create_form_shows_help_range_default(auth_client: Client):
    html = auth_client.get("/strategies/new/?preset=qwenpaw").content.decode()
    assert "compact_threshold_ratio" in html
    assert "Range: 0.1..0.9." in html
    assert "Default: 0.8." in html
    assert "context_compact_config.compact_threshold_ratio" in html  # origin


def _form_data(strategy: str, **overrides: Any) -> dict[str, Any]:
    from replay_app.configs.forms import StrategyConfigForm

    form = StrategyConfigForm(strategy=strategy, owner=None)
    data = {"strategy": strategy, "name": f"my {strategy}", "description": ""}
    for spec in form.specs:
        value = form.initial[spec.name]
        if spec.type == "bool":
            if value:
                data[spec.name] = "on"
        else:
            data[spec.name] = value
    data.update(overrides)
    return data


@pytest.mark.parametrize("strategy", PRESETS)
def test_strategy_create_defaults_round_trip(auth_client: Client, user: Any, strategy: str):
    response = auth_client.post("/strategies/new/", _form_data(strategy))
    assert response.status_code == 302, response.content.decode()[:2000]
    config = StrategyConfig.objects.get(owner=user)
    assert config.strategy == strategy
    assert config.params == {}  # nothing differs from the defaults


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("compact_threshold_ratio", "5", "compact_threshold_ratio=5.0 is out of range (0.1..0.9)"),
        ("pruning_recent_n", "abc", "pruning_recent_n=&#x27;abc&#x27; is not a valid int"),
        ("language", "fr", "is not allowed (one of &#x27;zh&#x27;, &#x27;en&#x27;)"),
        ("max_input_length", "", "max_input_length is required"),
    ],
    ids=["out-of-range", "not-a-number", "bad-choice", "empty"],
)
def test_strategy_create_error_beside_field(
    auth_client: Client, user: Any, field: str, value: str, message: str
):
    response = auth_client.post("/strategies/new/", _form_data("qwenpaw", **{field: value}))
    assert response.status_code == 400
    html = response.content.decode()
    start = html.index(f'id="field-{field}"')
    block = html[start : html.index("</div>", start)]
    assert message in block
    assert not StrategyConfig.objects.filter(owner=user).exists()


def test_strategy_edit_saves_changed_params_only(auth_client: Client, user: Any):
    config = config_services.config_create(owner=user, name="tight", strategy="qwenpaw")
    data = _form_data("qwenpaw", name="tight", compact_threshold_ratio="0.5")
    assert auth_client.post(f"/strategies/{config.pk}/", data).status_code == 302
    config.refresh_from_db()
    assert config.params == {"compact_threshold_ratio": 0.5}


def test_strategy_duplicate_name_error_beside_name(auth_client: Client, user: Any):
    config_services.config_create(owner=user, name="my qwenpaw", strategy="qwenpaw")
    response = auth_client.post("/strategies/new/", _form_data("qwenpaw"))
    assert response.status_code == 400
    html = response.content.decode()
    start = html.index('id="field-name"')
    assert "already have a configuration named" in html[start : html.index("</div>", start)]


def test_strategy_export_import_round_trip(auth_client: Client, user: Any):
    config = config_services.config_create(
        owner=user, name="aggressive", strategy="copaw", params={"memory_compact_ratio": 0.5}
    )
    exported = auth_client.get(f"/strategies/{config.pk}/export/")
    assert exported["Content-Disposition"].startswith("attachment")
    data = json.loads(exported.content)
    assert data["strategy"] == "copaw" and data["params"]["memory_compact_ratio"] == 0.5
    response = auth_client.post("/strategies/import/", {"text": exported.content.decode()})
    assert response.status_code == 302
    copy = StrategyConfig.objects.get(owner=user, name="aggressive (2)")
    assert copy.params == config.params
    assert config_services.config_export(copy)["params"] == data["params"]


def test_strategy_import_rejects_bad_params_readably(auth_client: Client, user: Any):
    bad = json.dumps({"strategy": "copaw", "params": {"memory_compact_ratio": 2}})
    response = auth_client.post("/strategies/import/", {"text": bad})
    assert response.status_code == 400
    assert "memory_compact_ratio=2" in response.content.decode()
    assert not StrategyConfig.objects.exists()


@pytest.mark.parametrize(
    ("strategy", "params", "filename", "path", "value"),
    [
        (
            "qwenpaw",
            {"compact_threshold_ratio": 0.6},
            "agent.json",
            [
                "running",
                "light_context_config",
                "context_compact_config",
                "compact_threshold_ratio",
            ],
            0.6,
        ),
        (
            "qwenpaw",
            {"pruning_recent_n": 4},
            "agent.json",
            ["running", "light_context_config", "tool_result_pruning_config", "pruning_recent_n"],
            4,
        ),
        (
            "copaw",
            {"memory_compact_ratio": 0.5},
            "config.json",
            ["agents", "running", "memory_compact_ratio"],
            0.5,
        ),
        ("copaw", {"language": "en"}, "config.json", ["agents", "language"], "en"),
        (
            "cowagent",
            {"agent_max_context_tokens": 30000},
            "config.json",
            ["agent_max_context_tokens"],
            30000,
        ),
        (
            "picoclaw",
            {"summarize_token_percent": 60},
            "config.json",
            ["agents", "defaults", "summarize_token_percent"],
            60,
        ),
        (
            "baseagent",
            {"prune_protect": 10000},
            "compaction.py",
            ["src/core/compaction.py", "PRUNE_PROTECT"],
            10000,
        ),
    ],
    ids=[
        "qwenpaw-compact",
        "qwenpaw-prune",
        "copaw-ratio",
        "copaw-language",
        "cowagent",
        "picoclaw",
        "baseagent",
    ],
)
def test_strategy_native_export_shape(
    auth_client: Client,
    user: Any,
    strategy: str,
    params: dict[str, Any],
    filename: str,
    path: list[str],
    value: Any,
):
    config = config_services.config_create(owner=user, name="x", strategy=strategy, params=params)
    data = auth_client.get(f"/strategies/{config.pk}/native/?format=json").json()
    assert data["filename"] == filename
    node = data["content"]
    for key in path:
        node = node[key]
    assert node == value
    download = auth_client.get(f"/strategies/{config.pk}/native/")
    assert filename in download["Content-Disposition"]
    if filename.endswith(".json"):
        assert json.loads(download.content) == data["content"]
    else:
        assert b"PRUNE_PROTECT = 10_000" in download.content


def test_strategy_other_user_gets_404(user: Any, other_user: Any):
    config = config_services.config_create(owner=user, name="mine", strategy="qwenpaw")
    bob = _client(other_user)
    for url in (
        f"/strategies/{config.pk}/",
        f"/strategies/{config.pk}/export/",
        f"/strategies/{config.pk}/native/",
    ):
        assert bob.get(url).status_code == 404
    assert bob.post(f"/strategies/{config.pk}/delete/").status_code == 404
    assert StrategyConfig.objects.filter(pk=config.pk).exists()


# --- runs ------------------------------------------------------------------------------


def test_run_create_form_starts_comparison_eagerly(
    auth_client: Client, user: Any, small_transcript: Any, django_capture_on_commit_callbacks: Any
):
    config = config_services.config_create(
        owner=user, name="tuned", strategy="picoclaw", params={"summarize_message_threshold": 4}
    )
    page = auth_client.get(f"/runs/new/?transcript={small_transcript.pk}")
    assert page.status_code == 200 and "tuned" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(
            "/runs/new/",
            {
                "transcript": small_transcript.pk,
                "presets": PRESETS,
                "configs": [config.pk],
                "summarizer": "offline",
            },
        )
    group = RunGroup.objects.get(owner=user)
    assert response.status_code == 302 and response["Location"] == f"/runs/groups/{group.pk}/"
    runs = list(group.runs.order_by("pk"))
    assert [r.label for r in runs] == [*PRESETS, "tuned"]
    assert {r.status for r in runs} == {RunStatus.DONE}
    assert runs[-1].params["summarize_message_threshold"] == 4
    html = auth_client.get(response["Location"]).content.decode()
    # every run finished (eager): nothing left to stream, so no socket is opened
    assert 'ws-connect="/ws/runs/groups/' not in html
    assert 'id="group-metrics"' in html
    data = auth_client.get(response["Location"] + "?format=json").json()
    assert [r["status"] for r in data["runs"]] == ["done"] * 6
    # the live page's results section alone (fetched in place once every run is done)
    part = auth_client.get(response["Location"] + "?fragment=results").content.decode()
    assert part.lstrip().startswith('<section class="panel" id="results">')
    assert 'id="group-metrics"' in part and "<html" not in part and "group-live" not in part


def test_run_form_offers_provider_strategies_unticked(
    auth_client: Client, user: Any, small_transcript: Any, django_capture_on_commit_callbacks: Any
):
    html = auth_client.get(f"/runs/new/?transcript={small_transcript.pk}").content.decode()
    boxes = dict(re.findall(r'name="presets" value="(\w+)" id="id_presets_\d+"( checked)?', html))
    assert boxes == {
        **dict.fromkeys(PRESETS, " checked"),
        **dict.fromkeys(LIBRARY[len(PRESETS) :], ""),
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(
            "/runs/new/",
            {"transcript": small_transcript.pk, "presets": ["anthropic_edits"],
             "summarizer": "offline"},
        )  # fmt: skip
    assert response.status_code == 302
    run = Run.objects.get(owner=user)
    assert (run.strategy, run.status) == ("anthropic_edits", RunStatus.DONE)
    assert run.params["trigger"] == 100_000


def test_run_create_form_requires_a_strategy(auth_client: Client, small_transcript: Any):
    response = auth_client.post(
        "/runs/new/", {"transcript": small_transcript.pk, "summarizer": "offline"}
    )
    assert response.status_code == 400
    assert "Choose at least one preset" in response.content.decode()
    assert not Run.objects.exists()


def _done_run(user: Any, transcript: Any, strategy: str = "qwenpaw") -> Run:
    run = services.run_create(
        owner=user, transcript=transcript, spec=RunSpec(strategy=strategy), enqueue=False
    )
    return executor.run_execute(run=run)


def test_run_detail_page_and_json_twin(auth_client: Client, user: Any, transcript: Any):
    run = _done_run(user, transcript)
    html = auth_client.get(f"/runs/{run.pk}/").content.decode()
    assert "ws-connect=" not in html  # a done run never changes: nothing to stream
    queued = services.run_create(
        owner=user, transcript=transcript, spec=RunSpec(strategy="qwenpaw"), enqueue=False
    )
    live = auth_client.get(f"/runs/{queued.pk}/").content.decode()
    assert f'ws-connect="/ws/runs/{queued.pk}/"' in live
    assert "Peak context (cl100k)" in html and 'id="run-events"' in html
    data = auth_client.get(f"/runs/{run.pk}/?format=json").json()
    assert data["status"] == "done" and data["metrics"] == run.metrics
    assert data["events"]["count"] == run.events_count
    assert len(data["events"]["items"]) == min(50, run.events_count)
    assert data["params"] == run.params


def test_run_detail_events_fragment_for_htmx(auth_client: Client, user: Any, transcript: Any):
    run = _done_run(user, transcript)
    response = auth_client.get(
        f"/runs/{run.pk}/?page=2", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-events"
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="run-events">')
    assert "Page 2 of" in html and "<h1>" not in html


def test_run_list_filters_and_json(
    auth_client: Client, user: Any, transcript: Any, small_transcript: Any
):
    done = _done_run(user, transcript)
    queued = services.run_create(
        owner=user, transcript=small_transcript, spec=RunSpec(strategy="copaw"), enqueue=False
    )
    data = auth_client.get("/runs/?format=json").json()
    assert [r["id"] for r in data["runs"]] == [queued.pk, done.pk]
    assert data["runs"][1]["metrics"]["peak_reference"] == done.metrics["peak_reference"]
    data = auth_client.get("/runs/?format=json&status=done").json()
    assert [r["id"] for r in data["runs"]] == [done.pk]
    data = auth_client.get(f"/runs/?format=json&transcript={small_transcript.pk}").json()
    assert [r["id"] for r in data["runs"]] == [queued.pk]
    html = auth_client.get("/runs/").content.decode()
    assert f"#{done.pk}" in html and "badge-queued" in html


def test_run_cancel_and_retry_posts(
    auth_client: Client, user: Any, small_transcript: Any, django_capture_on_commit_callbacks: Any
):
    run = services.run_create(
        owner=user, transcript=small_transcript, spec=RunSpec(strategy="qwenpaw"), enqueue=False
    )
    assert auth_client.get(f"/runs/{run.pk}/cancel/").status_code == 405
    response = auth_client.post(f"/runs/{run.pk}/cancel/")
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(f"/runs/{run.pk}/retry/")
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.attempts == 2


def test_run_csrf_required_for_cancel(user: Any, small_transcript: Any):
    run = services.run_create(
        owner=user, transcript=small_transcript, spec=RunSpec(strategy="qwenpaw"), enqueue=False
    )
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(f"/runs/{run.pk}/cancel/").status_code == 403


def test_run_pages_other_user_gets_404(user: Any, other_user: Any, small_transcript: Any):
    run = _done_run(user, small_transcript)
    group = services.group_create(
        owner=user, transcript=small_transcript, specs=[RunSpec(strategy="copaw")], enqueue=False
    )
    bob = _client(other_user)
    for url in (f"/runs/{run.pk}/", f"/runs/{run.pk}/?format=json", f"/runs/groups/{group.pk}/"):
        assert bob.get(url).status_code == 404
    for url in (f"/runs/{run.pk}/cancel/", f"/runs/{run.pk}/retry/"):
        assert bob.post(url).status_code == 404
    assert bob.get("/runs/?format=json").json()["runs"] == []
    page = bob.get(f"/runs/new/?transcript={small_transcript.pk}")
    assert small_transcript.title not in page.content.decode()


def test_run_list_page_load_reaps_stale_runs(auth_client: Client, user: Any, small_transcript: Any):
    from datetime import timedelta

    from django.utils import timezone

    run = services.run_create(
        owner=user, transcript=small_transcript, spec=RunSpec(strategy="qwenpaw"), enqueue=False
    )
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.RUNNING, heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    data = auth_client.get("/runs/?format=json").json()
    assert data["runs"][0]["status"] == "failed"
    assert data["runs"][0]["error"].startswith("worker stopped")
