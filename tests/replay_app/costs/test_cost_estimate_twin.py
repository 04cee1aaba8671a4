"""The run form's cost estimate (/runs/new/estimate/) renders one context and serialises
that same context as its JSON twin: values set only while building it show in both."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from replay_app.configs import services as config_services
from replay_app.costs import llm, run_budget

pytestmark = pytest.mark.django_db

MARK = "label-set-on-the-estimate"


def test_cost_estimate_and_json_twin_read_one_object(
    auth_client: Any, llm_transcript: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = config_services.config_create(
        owner=llm_transcript.owner, name="small qwenpaw", strategy="qwenpaw",
        params={"max_input_length": 3000, "language": "en"},
    )  # fmt: skip
    estimate = run_budget.llm_estimate

    def marked(**kwargs: Any) -> Any:
        return dataclasses.replace(estimate(**kwargs), label=MARK, calls=4321)

    monkeypatch.setattr(run_budget, "llm_estimate", marked)
    monkeypatch.setattr(llm, "model_label", lambda model: "Model-set-on-the-estimate")
    url = "/runs/new/estimate/"
    query = {"transcript": llm_transcript.pk, "configs": config.pk, "summarizer": "anthropic"}
    html = auth_client.get(url, query).content.decode()
    data = auth_client.get(url, {**query, "format": "json"}).json()
    assert [(r["label"], r["calls"]) for r in data["rows"]] == [(MARK, 4321)]
    assert data["calls"] == 4321 and data["model_label"] == "Model-set-on-the-estimate"
    assert f"<td>{MARK}</td>" in html and "Estimate for Model-set-on-the-estimate" in html
    assert '<th class="num">4321</th>' in html  # the total calls row
    monkeypatch.undo()
    plain = auth_client.get(url, {**query, "format": "json"}).json()
    assert [r["label"] for r in plain["rows"]] == ["small qwenpaw"] and plain["calls"] != 4321
