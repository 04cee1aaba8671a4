"""The stage builder with the summary quality gate: a fractional option, a choice, and a
composed configuration whose run records the gate's decisions."""

from __future__ import annotations

import json
import re
from typing import Any

from django.test import Client

from replay_app.models import Run, RunGroup, RunStatus, StrategyConfig

URL = "/strategies/stages/"
SUMMARISE = {"stage": "summarise", "keep_tokens": 300}
GATED = [SUMMARISE, {"stage": "summary_gate", "min_score": 1.0, "max_questions": 10,
                     "on_reject": "keep_original"}]  # fmt: skip


def posted(stages: Any, **extra: Any) -> dict[str, Any]:
    text = json.dumps(stages)
    return {"stages": text, "builder_base": text, **extra}


def stages_in(html: str) -> list[dict[str, Any]]:
    found = re.search(r'<textarea name="stages"[^>]*>(.*?)</textarea>', html, re.S)
    assert found, html[:2000]
    return json.loads(found.group(1).replace("&quot;", '"'))


def test_adding_the_gate_renders_its_number_range_and_choices(auth_client: Client) -> None:
    data = posted([SUMMARISE], builder="add", builder_kind="summary_gate")
    html = auth_client.post(URL, data).content.decode()
    assert stages_in(html)[-1] == {
        "stage": "summary_gate",
        "min_score": 0.6,
        "max_questions": 10,
        "on_reject": "accept_with_appendix",
    }
    score = re.search(r'<input id="id_stage-1-min_score"[^>]*>', html, re.S)
    assert score and 'step="any"' in score.group() and 'min="0.0"' in score.group()
    assert 'max="1.0"' in score.group()
    questions = re.search(r'<input id="id_stage-1-max_questions"[^>]*>', html, re.S)
    assert questions and 'step="1"' in questions.group() and 'max="200"' in questions.group()
    select = re.search(r'<select id="id_stage-1-on_reject".*?</select>', html, re.S)
    assert select, html
    assert re.findall(r'<option value="(\w+)"', select.group()) == [
        "accept_with_appendix",
        "retry",
        "keep_original",
    ]
    assert '<option value="accept_with_appendix" selected>' in select.group()
    assert 'for="id_stage-1-on_reject"' in html


def test_gate_inputs_update_the_json(auth_client: Client) -> None:
    base = [SUMMARISE, {"stage": "summary_gate"}]
    data = posted(base, **{"stage-1-min_score": "0.75", "stage-1-on_reject": "retry"})
    gate = stages_in(auth_client.post(URL, data).content.decode())[1]
    assert (gate["min_score"], gate["on_reject"]) == (0.75, "retry")
    whole = posted(base, **{"stage-1-min_score": "1"})
    assert stages_in(auth_client.post(URL, whole).content.decode())[1]["min_score"] == 1


def test_gate_values_out_of_range_show_the_engine_message(auth_client: Client) -> None:
    data = posted([SUMMARISE, {"stage": "summary_gate"}], **{"stage-1-min_score": "1.5"})
    html = auth_client.post(URL, data).content.decode()
    errors = html[html.index('id="stages-errors"') :][:400]
    assert "summary_gate option &#x27;min_score&#x27; must be &lt;= 1.0" in errors
    alone = auth_client.post(URL, posted([{"stage": "summary_gate"}])).content.decode()
    assert "summary_gate needs a summarise stage" in alone


def form(stages: Any) -> dict[str, Any]:
    return {
        "strategy": "custom", "name": "gated", "description": "", "window": "1024",
        "threshold_ratio": "0.5", "token_estimator": "bytes/4 half-up", **posted(stages),
    }  # fmt: skip


def test_a_gated_config_runs_and_its_run_shows_the_gate(
    auth_client: Client, user: Any, small_transcript: Any, django_capture_on_commit_callbacks: Any
) -> None:
    assert auth_client.post("/strategies/new/", form(GATED)).status_code == 302
    config = StrategyConfig.objects.get(owner=user, name="gated")
    assert config.params["stages"] == GATED
    with django_capture_on_commit_callbacks(execute=True):
        auth_client.post(
            "/runs/new/",
            {"transcript": small_transcript.pk, "configs": [config.pk], "summarizer": "offline"},
        )
    run = Run.objects.get(group=RunGroup.objects.get(owner=user))
    assert (run.strategy, run.status) == ("custom", RunStatus.DONE)
    rejected = run.metrics["events"].get("summary_rejected", 0)
    assert rejected >= 1 and "summarise" not in run.metrics["events"]
    html = auth_client.get(f"/runs/{run.pk}/?kind=summary_rejected").content.decode()
    assert "Summary rejected" in html
    assert re.search(r"summary rejected: \d+ of \d+ facts missing", html)
