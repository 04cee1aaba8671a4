"""The compare-probes page's shared question set, on a real corpus Claude Code session
(sniffly, 124 messages) replayed by four strategies at a 20,000-token window and by one
whose window holds the whole session (it keeps everything)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from judge_testdata import import_session

from judge_app import services
from judge_app.models import ProbeSet
from replay_app.runs.executor import run_execute
from replay_app.runs.services import RunSpec, run_create
from sessions_app.models import Transcript

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
SNIFFLY = CORPUS / "claude-code" / "sniffly-d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"
COMPACTING = ("claude_code", "qwenpaw", "codex", "langchain_trim")

pytestmark = pytest.mark.django_db


def _run(user: Any, transcript: Transcript, strategy: str, window: int) -> Any:
    run = run_create(owner=user, transcript=transcript,
                     spec=RunSpec(strategy=strategy, window=window), enqueue=False)  # fmt: skip
    run = run_execute(run=run)
    assert run.status == "done", run.error
    return run


@pytest.fixture
def sniffly_runs(user: Any) -> dict[str, Any]:
    transcript = import_session(user, SNIFFLY.read_bytes(), name=SNIFFLY.name)
    runs = {s: _run(user, transcript, s, 20_000) for s in COMPACTING}
    runs["keeps"] = _run(user, transcript, "qwenpaw", 1_000_000)
    return runs


def _shared(client: Any, runs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    ids = ",".join(str(r.pk) for r in runs.values())
    page = client.get(f"/compare/probes/?runs={ids}")
    assert page.status_code == 200
    twin = client.get(f"/compare/probes/?runs={ids}&format=json")
    assert twin.status_code == 200
    return page.content.decode(), twin.json()["shared"]


def test_every_run_is_asked_the_same_questions(
    auth_client: Any, sniffly_runs: dict[str, Any]
) -> None:
    _, shared = _shared(auth_client, sniffly_runs)
    ids = [r.pk for r in sniffly_runs.values()]
    assert shared["available"] and shared["questions"] == len(shared["probes"]) >= 10
    # the union of the runs' own probes, one per (kind, question, answers)
    own = {
        (p.kind, p.question, tuple(p.answers))
        for r in sniffly_runs.values()
        for p in services.probe_set(r).probes.all()
    }
    assert {(p["kind"], p["question"], tuple(p["answers"])) for p in shared["probes"]} == own
    assert sniffly_runs["keeps"].probe_set.probes.count() == 0  # it removed nothing itself
    for probe in shared["probes"]:
        assert [c["run"] for c in probe["runs"]] == ids
        assert all(c["verdict"] in ("recoverable", "partial", "lost") for c in probe["runs"])
    for row in shared["runs"]:
        assert row["questions"] == row["asked"] == shared["questions"]
        assert {k: v["questions"] for k, v in row["by_kind"].items()} == shared["by_kind"]
    # kinds the strategies' own probes lacked are asked of them now
    assert sum(1 for k in shared["by_kind"].values() if k) >= 3


def test_kept_everything_scores_one_and_a_drop_scores_lower(
    auth_client: Any, sniffly_runs: dict[str, Any]
) -> None:
    _, shared = _shared(auth_client, sniffly_runs)
    rows = {r["run"]: r for r in shared["runs"]}
    keeps = rows[sniffly_runs["keeps"].pk]
    assert keeps["score"] == 1.0 and keeps["answered"] == keeps["asked"] == shared["questions"]
    trim = sniffly_runs["langchain_trim"].pk
    raised_by_trim = [p for p in shared["probes"] if trim in {o["run"] for o in p["raised_by"]}]
    assert raised_by_trim  # it dropped messages, so it raised questions about them
    for probe in raised_by_trim:
        cells = {c["run"]: c for c in probe["runs"]}
        assert cells[sniffly_runs["keeps"].pk]["score"] == 1.0
        assert cells[trim]["score"] < 1.0, probe["question"]
    assert rows[trim]["score"] < min(
        rows[sniffly_runs[s].pk]["score"] for s in ("claude_code", "qwenpaw", "codex")
    )


def test_page_and_json_agree_and_later_views_read_stored_scores(
    auth_client: Any, sniffly_runs: dict[str, Any], monkeypatch: Any
) -> None:
    page, shared = _shared(auth_client, sniffly_runs)
    for row in shared["runs"]:
        found = re.search(
            rf'data-shared-run="{row["run"]}">.*?data-testid="shared-answered">(\d+) / (\d+)<'
            r'.*?data-testid="shared-score">([0-9.]+)<',
            page,
            re.DOTALL,
        )
        assert found, row["run"]
        assert (int(found[1]), int(found[2])) == (row["answered"], row["asked"])
        assert float(found[3]) == pytest.approx(row["score"], abs=0.005)
    assert page.count('<tr data-kind="') == shared["questions"]  # one row per question
    for probe in shared["probes"]:
        assert f'data-key="{probe["key"]}"' in page
    stored = ProbeSet.objects.get(run=sniffly_runs["codex"]).shared
    assert len(stored["scores"]) == shared["questions"]

    # scored once: a later view reads the stored scores, never the transcript again
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the shared set re-read the transcript")

    monkeypatch.setattr(Transcript, "to_conversation", refuse)
    again = _shared(auth_client, sniffly_runs)[1]
    assert again == shared


def test_runs_of_different_transcripts_say_why(auth_client: Any, user: Any, qwen_run: Any) -> None:
    other = import_session(user, SNIFFLY.read_bytes(), name=SNIFFLY.name)
    run = _run(user, other, "qwenpaw", 20_000)
    body = auth_client.get(f"/compare/probes/?runs={qwen_run.pk},{run.pk}&format=json").json()
    assert body["shared"]["available"] is False
    assert "different transcripts" in body["shared"]["reason"]
    page = auth_client.get(f"/compare/probes/?runs={qwen_run.pk},{run.pk}").content.decode()
    assert "different transcripts" in page


def test_an_unfinished_run_is_listed_but_not_asked(
    auth_client: Any, qwen_run: Any, cow_run: Any
) -> None:
    from replay_app.models import Run

    Run.objects.filter(pk=cow_run.pk).update(status="running")
    ids = f"{qwen_run.pk},{cow_run.pk}"
    shared = auth_client.get(f"/compare/probes/?runs={ids}&format=json").json()["shared"]
    rows = {r["run"]: r for r in shared["runs"]}
    assert rows[cow_run.pk]["asked"] is None and rows[cow_run.pk]["status"] == "running"
    assert rows[qwen_run.pk]["asked"] == shared["questions"] > 0
    # only the finished run's own probes make the set
    assert all({o["run"] for o in p["raised_by"]} == {qwen_run.pk} for p in shared["probes"])
    assert all(c["verdict"] is None for p in shared["probes"] for c in p["runs"][1:])
    page = auth_client.get(f"/compare/probes/?runs={ids}").content.decode()
    assert "not finished (running)" in page
