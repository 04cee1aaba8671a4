"""manage.py suite: create/run/status/results with JSON for scripts, and its errors."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from suite_testdata import import_chat

from suites_app.models import Suite

pytestmark = pytest.mark.django_db


def _call(*args: str) -> Any:
    out = io.StringIO()
    call_command("suite", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_create_runs_and_reports(user: Any) -> None:
    ts = [import_chat(user, seed=s, turns=6) for s in (1, 2)]
    created = json.loads(_call(
        "create", "cli", "--user", "alice", "--transcripts", f"{ts[0].pk},{ts[1].pk}",
        "--grid-base", "qwenpaw", "--grid", "max_input_length=6000,20000",
        "--grid", "compact_threshold_ratio=0.5,0.8", "--json",
    ))  # fmt: skip
    assert created["total"] == 8 and created["done"] == 8 and created["finished"]
    status = json.loads(_call("status", "cli", "--user", "alice", "--json"))
    assert status["remaining"] == 0
    data = json.loads(_call("results", "cli", "--user", "alice", "--json"))
    assert data["heatmap"]["x"] == "max_input_length"
    assert len(data["configurations"]) == 4
    text = _call("results", "cli", "--user", "alice")
    assert "max_input_length=6000 compact_threshold_ratio=0.5" in text
    rows = list(csv.DictReader(io.StringIO(_call("results", "cli", "--user", "alice", "--csv"))))
    assert {r["metric"] for r in rows} >= {"peak_reference", "compaction_count"}
    # Running again redoes nothing.
    again = json.loads(_call("run", "cli", "--user", "alice", "--json"))
    assert again["done"] == 8
    assert Suite.objects.get(name="cli").items.filter(run__attempts=1).count() == 8


def test_filter_selects_transcripts(user: Any) -> None:
    import_chat(user, seed=1, turns=2)
    big = import_chat(user, seed=2, turns=30)
    out = json.loads(_call(
        "create", "f", "--user", "alice", "--min-messages", "40", "--preset", "qwenpaw",
        "--no-run", "--json",
    ))  # fmt: skip
    assert out["total"] == 1 and out["queued"] == 1
    assert Suite.objects.get(name="f").items.get().transcript_id == big.pk


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--preset", "qwenpaw"], "choose at least one transcript"),
        (["--all-transcripts", "--grid", "x=1"], "--grid needs --grid-base"),
        (["--all-transcripts", "--grid-base", "qwenpaw"], "the grid is empty"),
        (
            ["--all-transcripts", "--grid-base", "qwenpaw", "--grid", "nope=1,2"],
            "unknown parameter 'nope'",
        ),
        (["--all-transcripts", "--preset", "nosuch"], "unknown strategy 'nosuch'"),
        (["--transcripts", "999999", "--preset", "qwenpaw"], "no transcript(s) [999999]"),
    ],
)
def test_bad_input_errors(user: Any, args: list[str], message: str) -> None:
    import_chat(user, seed=1, turns=2)
    with pytest.raises(CommandError) as err:
        _call("create", "bad", "--user", "alice", *args)
    assert message in str(err.value)
    assert not Suite.objects.exists()


def test_unknown_suite(user: Any) -> None:
    with pytest.raises(CommandError, match="has no suite 'nope'"):
        _call("status", "nope", "--user", "alice")


def test_report_subcommand_writes_the_suite_report(
    user: Any, other_user: Any, tmp_path: Any, monkeypatch: Any
) -> None:
    from datetime import UTC, datetime

    from suites_app import report

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return datetime(2026, 11, 25, 12, 0, tzinfo=tz or UTC)

    monkeypatch.setattr(report, "datetime", Frozen)  # both files say the same "generated"
    ts = [import_chat(user, seed=s, turns=6) for s in (1, 2)]
    _call("create", "rep", "--user", "alice", "--transcripts", f"{ts[0].pk},{ts[1].pk}",
          "--preset", "qwenpaw", "--preset", "codex")  # fmt: skip
    suite = Suite.objects.get(name="rep")
    mine, theirs = tmp_path / "suite.html", tmp_path / "report.html"
    said = _call("report", "rep", "--user", "alice", "--out", str(mine))
    assert said == f"wrote {mine} ({mine.stat().st_size:,} bytes)\n"
    call_command("report", suite="rep", user="alice", out=str(theirs), stdout=io.StringIO())
    text = mine.read_text(encoding="utf-8")
    assert text == theirs.read_text(encoding="utf-8")  # the same file as report --suite
    assert "<h2>Leaderboard</h2>" in text and "codex" in text
    # By id, to stdout, and as JSON for scripts.
    assert _call("report", str(suite.pk), "--user", "alice", "--out", "-") == text
    monkeypatch.chdir(tmp_path)
    data = json.loads(_call("report", str(suite.pk), "--user", "alice", "--json"))
    assert data == {
        "suite": suite.pk,
        "path": f"ctxlab-suite-{suite.pk}.html",
        "bytes": (tmp_path / f"ctxlab-suite-{suite.pk}.html").stat().st_size,
    }
    with pytest.raises(CommandError, match="has no suite 'rep'"):
        _call("report", "rep", "--user", other_user.username, "--out", str(mine))
    with pytest.raises(CommandError, match="cannot write"):
        _call("report", "rep", "--user", "alice", "--out", str(tmp_path / "no" / "such.html"))
