"""The probe page, the probe comparison and the after-effects page each render the one
dict they serialise as their JSON twin: values set only while building it show in both."""

from __future__ import annotations

from typing import Any

import pytest
from judge_testdata import compacted_session, import_session

from ctxlab.engine.evaluate import aftereffects
from judge_app import pages

pytestmark = pytest.mark.django_db

MARK = "value-set-on-the-page-object"


def test_probe_page_and_json_twin_read_one_object(
    auth_client: Any, qwen_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = pages.run_probes_data

    def marked(*args: Any) -> dict[str, Any]:
        data = build(*args)
        data["probes"] = data["probes"][:1]
        data["probes"][0]["question"] = MARK
        return data

    monkeypatch.setattr(pages, "run_probes_data", marked)
    url = f"/runs/{qwen_run.pk}/probes/"
    html = auth_client.get(url).content.decode()
    data = auth_client.get(url, {"format": "json"}).json()
    assert [p["question"] for p in data["probes"]] == [MARK]
    assert f'<td class="probe-question">{MARK}</td>' in html and html.count("<tr data-kind=") == 1
    monkeypatch.undo()
    plain = auth_client.get(url, {"format": "json"}).json()
    assert len(plain["probes"]) > 1 and MARK not in str(plain)


def test_compare_probes_and_json_twin_read_one_object(
    auth_client: Any, qwen_run: Any, cow_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = pages.compare_data

    def marked(runs: Any) -> dict[str, Any]:
        data = build(runs)
        data["runs"] = data["runs"][1:]
        data["runs"][0]["label"] = MARK
        return data

    monkeypatch.setattr(pages, "compare_data", marked)
    url = f"/compare/probes/?runs={qwen_run.pk},{cow_run.pk}"
    html = auth_client.get(url).content.decode()
    data = auth_client.get(url + "&format=json").json()
    assert [(r["run"], r["label"]) for r in data["runs"]] == [(cow_run.pk, MARK)]
    assert f'data-probe-row="{cow_run.pk}"' in html and f">{MARK}</a>" in html
    assert f'data-probe-row="{qwen_run.pk}"' not in html


def test_aftereffects_page_and_json_twin_read_one_object(
    auth_client: Any, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript = import_session(user, compacted_session(), name="compacted.jsonl")
    build = aftereffects.report

    def marked(*args: Any, **kwargs: Any) -> dict[str, Any]:
        report = build(*args, **kwargs)
        report["compactions"][0]["files_reread"] = [MARK]
        report["summary"]["files_reread"] = 17
        return report

    monkeypatch.setattr(aftereffects, "report", marked)
    url = f"/transcripts/{transcript.pk}/aftereffects/"
    html = auth_client.get(url).content.decode()
    data = auth_client.get(url, {"format": "json"}).json()
    assert data["compactions"][0]["files_reread"] == [MARK]
    assert data["summary"]["files_reread"] == 17
    assert f'<span class="mono small">{MARK}</span>' in html and "17 files re-read" in html
