"""The custom strategy's stage builder: the list entry, the builder endpoint (htmx) and
its no-JavaScript path through the form, and a composed configuration run end to end."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client

from replay_app.configs import services as config_services
from replay_app.models import Run, RunGroup, RunStatus, StrategyConfig

URL = "/strategies/stages/"
TWO_STAGES = [
    {"stage": "truncate_tool_results", "max_bytes": 200, "keep_recent": 0},
    {"stage": "clear_tool_results", "keep": 1, "placeholder": "[cleared]"},
]


def posted(stages: Any, **extra: Any) -> dict[str, Any]:
    """A builder post: the textarea and the base the inputs were rendered from."""
    text = stages if isinstance(stages, str) else json.dumps(stages)
    return {"stages": text, "builder_base": text, **extra}


def stages_in(html: str) -> list[dict[str, Any]]:
    found = re.search(r'<textarea name="stages"[^>]*>(.*?)</textarea>', html, re.S)
    assert found, html[:2000]
    return json.loads(found.group(1).replace("&quot;", '"'))


def kinds_in(html: str) -> list[str]:
    return re.findall(r'<li class="stage" id="stage-\d+" data-kind="(\w+)"', html)


def test_strategy_list_offers_composing(auth_client: Client):
    html = auth_client.get("/strategies/").content.decode()
    entry = html[html.index('id="compose-custom"') :]
    assert 'href="/strategies/new/?preset=custom"' in entry
    assert html.index("<h2>Presets</h2>") < html.index('id="compose-custom"')


def test_custom_form_renders_the_builder(auth_client: Client):
    html = auth_client.get("/strategies/new/?preset=custom").content.decode()
    assert 'id="stage-builder"' in html and f'hx-post="{URL}"' in html
    assert kinds_in(html) == ["summarise"]
    assert 'for="id_stage-0-keep_tokens"' in html  # every option input has a label
    assert stages_in(html) == [{"stage": "summarise", "keep_tokens": 8000}]
    assert "<script" not in html.split('id="stage-builder"')[1].split("</form>")[0]


def test_builder_adds_a_stage_with_its_defaults(auth_client: Client):
    data = posted(TWO_STAGES, builder="add", builder_kind="prune_tool_outputs")
    html = auth_client.post(URL, data).content.decode()
    assert "<html" not in html and html.lstrip().startswith('<div id="stage-builder"')
    assert kinds_in(html) == ["truncate_tool_results", "clear_tool_results", "prune_tool_outputs"]
    assert stages_in(html)[-1] == {
        "stage": "prune_tool_outputs", "protect_turns": 2, "protect_tokens": 40000,
        "minimum_tokens": 20000, "placeholder": "[Old tool result content cleared]",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("action", "kinds"),
    [
        ("remove:0", ["clear_tool_results"]),
        ("up:1", ["clear_tool_results", "truncate_tool_results"]),
        ("down:0", ["clear_tool_results", "truncate_tool_results"]),
        ("up:0", ["truncate_tool_results", "clear_tool_results"]),  # already first
        ("down:1", ["truncate_tool_results", "clear_tool_results"]),  # already last
        ("remove:9", ["truncate_tool_results", "clear_tool_results"]),  # no such stage
    ],
)
def test_builder_removes_and_moves(auth_client: Client, action: str, kinds: list[str]):
    html = auth_client.post(URL, posted(TWO_STAGES, builder=action)).content.decode()
    assert kinds_in(html) == kinds
    assert [s["stage"] for s in stages_in(html)] == kinds


def test_builder_inputs_update_the_json_unless_it_was_edited(auth_client: Client):
    data = posted(TWO_STAGES, **{"stage-1-keep": "5", "stage-0-max_bytes": "900"})
    stages = stages_in(auth_client.post(URL, data).content.decode())
    assert (stages[0]["max_bytes"], stages[1]["keep"]) == (900, 5)
    edited = {**data, "stages": json.dumps(TWO_STAGES[:1])}  # hand-edited: the JSON wins
    assert stages_in(auth_client.post(URL, edited).content.decode()) == TWO_STAGES[:1]


def test_builder_shows_bad_json_and_engine_errors(auth_client: Client):
    response = auth_client.post(URL, posted('[{"stage": "summarise",'))
    html = response.content.decode()
    assert response.status_code == 200  # htmx swaps the builder with its message
    assert "stages: not valid JSON" in html and "Fix the JSON below" in html
    assert "[{&quot;stage&quot;: &quot;summarise&quot;,</textarea>" in html  # kept as typed
    bad = auth_client.post(URL, posted(TWO_STAGES, **{"stage-1-keep": "-1"})).content.decode()
    errors = bad[bad.index('id="stages-errors"') : bad.index("</div>", bad.index("stages-errors"))]
    assert "clear_tool_results option &#x27;keep&#x27; must be &gt;= 0" in errors


def test_builder_survives_stages_it_cannot_show(auth_client: Client):
    html = auth_client.post(URL, posted([3, {"stage": ["x"]}, TWO_STAGES[1]])).content.decode()
    assert "stages: unknown stage 3" in html
    assert re.findall(r'id="stage-(\d+)" data-kind="(\w+)"', html) == [("2", "clear_tool_results")]


def test_builder_of_a_config_is_its_owners(auth_client: Client, user: Any, other_user: Any):
    mine = config_services.config_create(owner=user, name="mine", strategy="custom")
    theirs = config_services.config_create(owner=other_user, name="theirs", strategy="custom")
    preset = config_services.config_create(owner=user, name="q", strategy="qwenpaw")
    assert auth_client.post(f"/strategies/{mine.pk}/stages/", posted(TWO_STAGES)).status_code == 200
    assert auth_client.post(f"/strategies/{theirs.pk}/stages/", posted([])).status_code == 404
    assert auth_client.post(f"/strategies/{preset.pk}/stages/", posted([])).status_code == 404
    html = auth_client.get(f"/strategies/{mine.pk}/").content.decode()
    assert f'hx-post="/strategies/{mine.pk}/stages/"' in html
    assert auth_client.get(f"/strategies/{mine.pk}/native/").status_code == 404  # no original


def test_builder_needs_csrf_login_and_post(user: Any, client: Client):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post(URL, posted(TWO_STAGES)).status_code == 403
    assert client.post(URL, posted(TWO_STAGES)).status_code == 302  # to the login page
    strict_get = Client()
    strict_get.force_login(user)
    assert strict_get.get(URL).status_code == 405


def form(stages: Any, **extra: Any) -> dict[str, Any]:
    return {
        "strategy": "custom", "name": "composed", "description": "", "window": "1024",
        "threshold_ratio": "0.05", "token_estimator": "bytes/4 half-up",
        **posted(stages), **extra,
    }  # fmt: skip


def test_builder_buttons_work_without_javascript(auth_client: Client, user: Any):
    response = auth_client.post("/strategies/new/", form(TWO_STAGES, builder="up:1"))
    html = response.content.decode()
    assert response.status_code == 200 and 'value="composed"' in html
    assert kinds_in(html) == ["clear_tool_results", "truncate_tool_results"]
    assert not StrategyConfig.objects.filter(owner=user).exists()  # a builder step saves nothing


def test_saving_bad_stages_shows_the_engine_message_beside_the_field(
    auth_client: Client, user: Any
):
    bad = [{"stage": "prune_tool_outputs", "protect_turns": "two"}]
    response = auth_client.post("/strategies/new/", form(bad))
    assert response.status_code == 400
    html = response.content.decode()
    block = html[html.index('id="stages-errors"') :][:600]
    assert "prune_tool_outputs option &#x27;protect_turns&#x27; must be an integer" in block
    assert not StrategyConfig.objects.filter(owner=user).exists()


def test_saving_applies_unsynced_option_inputs(auth_client: Client, user: Any):
    response = auth_client.post("/strategies/new/", form(TWO_STAGES, **{"stage-1-keep": "2"}))
    assert response.status_code == 302
    config = StrategyConfig.objects.get(owner=user)
    assert config.params["stages"][1]["keep"] == 2


def test_composed_config_runs_end_to_end(
    auth_client: Client, user: Any, small_transcript: Any, django_capture_on_commit_callbacks: Any
):
    response = auth_client.post("/strategies/new/", form(TWO_STAGES))
    assert response.status_code == 302, response.content.decode()[:2000]
    config = StrategyConfig.objects.get(owner=user, name="composed")
    assert config.strategy == "custom" and config.params["stages"] == TWO_STAGES
    page = auth_client.get(f"/runs/new/?transcript={small_transcript.pk}").content.decode()
    assert f'name="configs" value="{config.pk}"' in page
    with django_capture_on_commit_callbacks(execute=True):
        started = auth_client.post(
            "/runs/new/",
            {"transcript": small_transcript.pk, "configs": [config.pk], "summarizer": "offline"},
        )
    group = RunGroup.objects.get(owner=user)
    assert started.status_code == 302 and started["Location"] == f"/runs/groups/{group.pk}/"
    run = Run.objects.get(group=group)
    assert (run.label, run.strategy, run.status) == ("composed", "custom", RunStatus.DONE)
    assert {"truncate", "clear_tool_uses"} <= set(run.metrics["events"])
    detail = auth_client.get(f"/runs/{run.pk}/?format=json").json()
    assert detail["status"] == "done"


def test_editing_a_composed_config(auth_client: Client, user: Any):
    config = config_services.config_create(
        owner=user, name="composed", strategy="custom", params={"stages": TWO_STAGES}
    )
    url = f"/strategies/{config.pk}/"
    step = auth_client.post(url, form(TWO_STAGES, builder="remove:0"))
    assert step.status_code == 200 and kinds_in(step.content.decode()) == ["clear_tool_results"]
    config.refresh_from_db()
    assert config.params["stages"] == TWO_STAGES  # a builder step saves nothing
    assert auth_client.post(url, form(TWO_STAGES[1:])).status_code == 302
    config.refresh_from_db()
    assert config.params["stages"] == TWO_STAGES[1:]
