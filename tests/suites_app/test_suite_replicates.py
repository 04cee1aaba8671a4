"""Replicates in suites (issue 37): N runs of each transcript × configuration with a model
summariser, from ``manage.py suite create --replicates N`` and the form; the results (page,
JSON twin, CSV, report) show the replicates' spread and mark "best" only beyond it, by
``ctxlab.engine.core.spread.clear_lead``, the rule the run pages use."""

from __future__ import annotations

import csv
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

from replay_app.costs.run_budget import LLMOptions  # noqa: E402
from suites_app import report, results, services  # noqa: E402
from suites_app.configs import SuiteInputError, preset_configs  # noqa: E402
from suites_app.models import Suite  # noqa: E402

pytestmark = pytest.mark.django_db

SECRET = "sk-openai-replicates-7311"
SUMMARY = "## Goal\nfinish the change\n## Next Steps\n1. run the tests"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=SECRET, default_reply=Reply.ok(SUMMARY)) as server:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.delenv("CTXLAB_OPENAI_LOCAL", raising=False)
        yield server


def test_suite_command_makes_replicates_of_every_pair(user: Any, fake: FakeOpenAI) -> None:
    t = import_chat(user, seed=1, turns=10, size=3000)
    out = io.StringIO()
    call_command(
        "suite", "create", "reps", "--user", "alice", "--transcripts", str(t.pk),
        "--preset", "qwenpaw", "--preset", "codex", "--window", "6000",
        "--summarizer", "openai", "--model", "qwen3:8b", "--replicates", "3",
        "--json", stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    created = json.loads(out.getvalue())
    assert created["total"] == 6 and created["done"] == 6
    suite = Suite.objects.get(name="reps")
    assert suite.replicates == 3
    items = list(suite.items.select_related("run").order_by("config_index", "replicate"))
    assert [(i.config_index, i.replicate) for i in items] == [
        (c, r) for c in (0, 1) for r in range(3)
    ]
    assert len({i.key for i in items}) == 6  # one idempotent key per replicate
    for index in (0, 1):
        family = {i.run.llm["family"] for i in items if i.config_index == index}
        assert len(family) == 1  # the three replicates are one family
        assert sorted(i.run.llm["replicate"] for i in items if i.config_index == index) == [
            0, 1, 2
        ]  # fmt: skip
    assert fake.requests_to(CHAT)  # every replicate made its own calls
    page = results.build(suite).as_json()
    assert page["replicates"] == 3 and "spread" in page["best_rule"]
    spread = page["configurations"][0]["spread"]
    assert spread and all(s["n"] == 3 for s in spread.values())


def test_replicates_need_a_model_summariser(user: Any) -> None:
    t = import_chat(user, seed=1, turns=4)
    with pytest.raises(CommandError, match="replicates need a model summariser"):
        call_command(
            "suite", "create", "off", "--user", "alice", "--transcripts", str(t.pk),
            "--preset", "qwenpaw", "--replicates", "2", stdout=io.StringIO(),
        )  # fmt: skip
    with pytest.raises(SuiteInputError, match="replicates: 1 to 10"):
        services.suite_create(
            owner=user, name="many", transcripts=[t], configs=preset_configs(["qwenpaw"], window=None),
            summarizer="openai", replicates=11, enqueue=False,
        )  # fmt: skip
    assert not Suite.objects.exists()


def _suite_with(user: Any, values: dict[int, list[float]]) -> Suite:
    """A two-configuration suite of one transcript with 3 replicates, whose recorded
    retention per replicate is ``values[config_index]``."""
    t = import_chat(user, seed=2, turns=6)
    suite = services.suite_create(
        owner=user, name="spread", transcripts=[t], configs=preset_configs(["qwenpaw", "codex"], window=6000),
        summarizer="openai", llm=LLMOptions(model="qwen3:8b"), replicates=3, enqueue=False,
    )  # fmt: skip
    for item in suite.items.all():
        item.summary = {"retention": values[item.config_index][item.replicate]}
        item.status = "done"
        item.save(update_fields=["summary", "status"])
    return suite


def test_best_only_beyond_the_replicates_spread(user: Any, fake: FakeOpenAI) -> None:
    # qwenpaw's median (0.6) beats codex's (0.58), so the plain rule would call it best; its
    # replicates range over 0.4, wider than the 0.09 between the means: no best.
    suite = _suite_with(user, {0: [0.5, 0.9, 0.6], 1: [0.55, 0.6, 0.58]})
    page = results.build(suite)
    assert [c.median("retention") for c in page.configs] == [0.6, 0.58]
    assert all("retention" not in c.best for c in page.configs)
    spread = page.configs[0].spreads["retention"]
    assert (spread.n, spread.low, spread.high) == (3, 0.5, 0.9)
    data = page.as_json()["configurations"]
    assert data[0]["best"] == [] and data[0]["spread"]["retention"]["max"] == 0.9

    client = Client()
    client.force_login(user)
    html = client.get(f"/suites/{suite.pk}/").content.decode()
    assert "replicates 0.50–0.90" in html or "replicates 0.5–0.9" in html
    assert "With 3 replicates" in html
    assert "2 configurations × 1 transcript × 3 replicates = 6 runs" in html
    twin = client.get(f"/suites/{suite.pk}/?format=json").json()
    assert twin["configurations"][0]["spread"]["retention"]["min"] == 0.5
    assert twin["configurations"][0]["best"] == []
    rows = list(
        csv.DictReader(io.StringIO(client.get(f"/suites/{suite.pk}/?format=csv").content.decode()))
    )
    first = next(r for r in rows if r["configuration"] == page.configs[0].label)
    assert (first["best"], first["replicates"], first["spread min"], first["spread max"]) == (
        "False", "3", "0.5", "0.9"
    )  # fmt: skip
    shared = report.report_html(suite)
    assert "replicates 0.50–0.90" in shared or "replicates 0.5–0.9" in shared
    assert "1 transcript × 3 replicates" in shared


def test_best_marked_when_the_lead_is_beyond_the_spread(user: Any, fake: FakeOpenAI) -> None:
    suite = _suite_with(user, {0: [0.8, 0.82, 0.81], 1: [0.5, 0.52, 0.51]})
    page = results.build(suite)
    assert "retention" in page.configs[0].best and "retention" not in page.configs[1].best
    assert page.as_json()["configurations"][0]["best"] == ["retention"]
    (table,) = report.report_context(suite)["transcripts"]
    best = [(r["label"], r["cells"][0][1]) for r in table["rows"]]
    assert best == [("qwenpaw @6000 #1", False), ("qwenpaw @6000 #2", True), ("qwenpaw @6000 #3", False),
                    ("codex @6000 #1", False), ("codex @6000 #2", False), ("codex @6000 #3", False)]  # fmt: skip


def test_per_transcript_rows_follow_the_spread_rule(user: Any, fake: FakeOpenAI) -> None:
    suite = _suite_with(user, {0: [0.5, 0.9, 0.6], 1: [0.55, 0.6, 0.58]})
    (table,) = report.report_context(suite)["transcripts"]
    # qwenpaw #2's 0.9 is the plain best of the six runs, but not beyond the spread
    assert [r["cells"][0] for r in table["rows"]][1] == (0.9, False)
    assert not any(r["cells"][0][1] for r in table["rows"])
    client = Client()
    client.force_login(user)
    rows = client.get(f"/suites/{suite.pk}/configs/0/?format=json").json()["transcripts"]
    assert [(r["replicate"], r["values"]["retention"]) for r in rows] == [
        (0, 0.5), (1, 0.9), (2, 0.6)
    ]  # fmt: skip
    assert "replicate 3" in client.get(f"/suites/{suite.pk}/configs/0/").content.decode()


def test_suite_form_asks_for_replicates(user: Any, fake: FakeOpenAI) -> None:
    client = Client()
    client.force_login(user)
    assert 'name="replicates"' in client.get("/suites/new/").content.decode()
    t = import_chat(user, seed=3, turns=6)
    data = {"name": "web-reps", "summarizer": "offline", "max_attempts": "2",
            "transcripts": [t.pk], "presets": ["qwenpaw"], "replicates": "2"}  # fmt: skip
    refused = client.post("/suites/new/", data)
    assert refused.status_code == 200
    assert "Replicates need a model summariser" in refused.content.decode()
    response = client.post(
        "/suites/new/", {**data, "summarizer": "openai", "openai_model": "qwen3:8b"}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    suite = Suite.objects.get(owner=user, name="web-reps")
    assert suite.replicates == 2
    assert sorted(suite.items.values_list("replicate", flat=True)) == [0, 1]
