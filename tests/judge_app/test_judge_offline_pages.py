"""Probe pages over real stored runs: probes and offline scores generated at run end (or on
first view for a run without them), deterministic, owner-only, the JSON twin, the compare
table and its one chart."""

from __future__ import annotations

import json
from typing import Any

import pytest
from judge_testdata import QWENPAW, finished_run

from ctxlab.engine.core import catalogue
from judge_app import services
from judge_app.models import Probe, ProbeScore, ProbeSet

pytestmark = pytest.mark.django_db


def test_probe_page_generates_probes_and_offline_scores(auth_client: Any, qwen_run: Any) -> None:
    # the worker generated them when the run finished; a run without them (an older one)
    # has them generated on first view
    assert ProbeSet.objects.filter(run=qwen_run).count() == 1
    ProbeSet.objects.filter(run=qwen_run).delete()
    page = auth_client.get(f"/runs/{qwen_run.pk}/probes/")
    assert page.status_code == 200
    row = ProbeSet.objects.get(run=qwen_run)
    probes = list(row.probes.order_by("seq"))
    assert {p.kind for p in probes} == {"recall", "artifact", "continuation", "decision"}
    assert ProbeScore.objects.filter(probe__probe_set=row, method="offline").count() == len(probes)
    body = page.content.decode()
    assert "Which files were modified?" in body and "E ValueError: bad token at column 07" in body
    data = auth_client.get(f"/runs/{qwen_run.pk}/probes/?format=json").json()
    assert data["run"] == qwen_run.pk and len(data["probes"]) == len(probes)
    assert data["offline"]["probes"] == len(probes)
    scores = [p["offline"]["score"] for p in data["probes"]]
    assert data["offline"]["score"] == pytest.approx(sum(scores) / len(scores), abs=1e-4)
    by_kind = data["offline"]["by_kind"]
    assert sum(k["probes"] for k in by_kind.values()) == len(probes)
    first = data["probes"][0]
    assert set(first) >= {"question", "answers", "offline", "claude", "kind", "compaction"}
    assert first["claude"] is None and data["claude"]["status"] == "none"
    # a second view reuses the stored set
    auth_client.get(f"/runs/{qwen_run.pk}/probes/")
    assert ProbeSet.objects.filter(run=qwen_run).count() == 1
    assert Probe.objects.filter(probe_set__run=qwen_run).count() == len(probes)


def test_same_transcript_and_run_give_the_same_probes(
    user: Any, coding: Any, qwen_run: Any
) -> None:
    again = finished_run(user, coding, "qwenpaw", QWENPAW)
    first, second = services.probe_set(qwen_run), services.probe_set(again)
    assert first is not None and second is not None and first.pk != second.pk
    keys = lambda row: list(row.probes.order_by("seq").values_list("key", "question", "answers"))  # noqa: E731
    assert keys(first) == keys(second) and keys(first)
    assert first.offline == second.offline


def test_regenerated_after_a_retry(qwen_run: Any) -> None:
    row = services.probe_set(qwen_run)
    assert row is not None
    type(qwen_run).objects.filter(pk=qwen_run.pk).update(attempts=qwen_run.attempts + 1)
    qwen_run.refresh_from_db()
    again = services.probe_set(qwen_run)
    assert again is not None and again.pk != row.pk and again.attempts == qwen_run.attempts


def test_other_users_get_404(client: Any, other_user: Any, qwen_run: Any) -> None:
    client.force_login(other_user)
    assert client.get(f"/runs/{qwen_run.pk}/probes/").status_code == 404
    assert client.post(f"/runs/{qwen_run.pk}/probes/claude/").status_code == 404
    sets = list(ProbeSet.objects.values_list("pk", flat=True))  # the worker's, at run end
    assert client.get(f"/compare/probes/?runs={qwen_run.pk}&format=json").status_code == 404
    assert list(ProbeSet.objects.values_list("pk", flat=True)) == sets


def test_unfinished_run_has_no_probes_yet(auth_client: Any, qwen_run: Any) -> None:
    type(qwen_run).objects.filter(pk=qwen_run.pk).update(status="running")
    data = auth_client.get(f"/runs/{qwen_run.pk}/probes/?format=json").json()
    assert data["probes"] is None and data["status"] == "running"
    assert "has not finished" in auth_client.get(f"/runs/{qwen_run.pk}/probes/").content.decode()


def test_compare_probes_side_by_side_with_one_chart(
    auth_client: Any, qwen_run: Any, cow_run: Any
) -> None:
    url = f"/compare/probes/?runs={qwen_run.pk},{cow_run.pk}"
    data = auth_client.get(url + "&format=json").json()
    assert [r["run"] for r in data["runs"]] == [qwen_run.pk, cow_run.pk]
    for r in data["runs"]:
        assert r["probes"] > 0 and 0 <= r["offline"]["score"] <= 1
        tokens = r["tokens"]
        assert tokens["baseline"] > tokens["replayed"] > 0 and 0 < tokens["share"] < 1
        assert tokens["saved"] == tokens["baseline"] - tokens["replayed"]
        assert r["cost_usd"] == 0.0  # offline summaries cost nothing
        assert r["metrics"]["probe_score"] == r["offline"]["score"]
        assert r["metrics"]["tokens_saved"] == tokens["saved"]
        assert all(catalogue.metric(k) for k in r["metrics"])  # every key is catalogued
    page = auth_client.get(url)
    body = page.content.decode()
    assert page.status_code == 200 and body.count('data-plotly="probe-tradeoff-figure"') == 1
    assert catalogue.metric("probe_score_decision").label in body
    start = body.index('id="probe-tradeoff-figure">') + len('id="probe-tradeoff-figure">')
    figure = json.loads(body[start : body.index("</script>", start)])
    assert len(figure["data"]) == 2
    assert figure["data"][0]["y"] == [data["runs"][0]["offline"]["score"]]
    assert auth_client.get("/compare/probes/?runs=").status_code == 400
    too_many = auth_client.get("/compare/probes/?runs=1,2,3,4,5,6,7&format=json")
    assert too_many.status_code == 400
    assert too_many.json()["error"].startswith("7 runs given: compare at most 6")


def test_original_agent_row_beside_the_replays(auth_client: Any, user: Any) -> None:
    from pathlib import Path

    from judge_testdata import import_session

    session = Path(__file__).resolve().parents[1] / "data" / "recorded"
    data = (session / "claude-trace-req34-compacted.jsonl").read_bytes()
    transcript = import_session(user, data, name="req34.jsonl")
    run = finished_run(user, transcript, "langchain_trim", {"max_tokens": 6000})
    found = auth_client.get(f"/compare/probes/?runs={run.pk}&format=json").json()
    original = found["original"]
    # the real summary kept the edited file, the user's latest request and the to-do item
    assert original["run"] == "original" and original["probes"] == 3
    assert original["offline"]["by_kind"]["artifact"] == {"probes": 1, "score": 1.0}
    assert original["metrics"]["probe_score"] == 1.0 and original["tokens"] is None
    page = auth_client.get(f"/compare/probes/?runs={run.pk}").content.decode()
    assert 'data-probe-row="original"' in page and f'data-probe-row="{run.pk}"' in page


def test_compare_and_run_pages_show_the_probes(
    auth_client: Any, qwen_run: Any, cow_run: Any
) -> None:
    body = auth_client.get(f"/compare/?runs={qwen_run.pk},{cow_run.pk}").content.decode()
    assert body.count('id="probe-compare"') == 1
    assert body.count('data-plotly="probe-tradeoff-figure"') == 1
    assert f'data-probe-row="{qwen_run.pk}"' in body and f'data-probe-row="{cow_run.pk}"' in body
    run_page = auth_client.get(f"/runs/{qwen_run.pk}/").content.decode()
    assert f'href="/runs/{qwen_run.pk}/probes/"' in run_page
