"""``python -m ctxlab.engine replay --file``: the same JSON as ``manage.py replay --file``,
without Django."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SESSION = ROOT / "tests" / "data" / "corpus" / "claude-code" / "agentcmd-full-session.jsonl"
ARGS = ["--file", str(SESSION), "--strategy", "qwenpaw", "--set", "max_input_length=20000",
        "--json", "-", "--detail"]  # fmt: skip


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *command], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("strategy", ["qwenpaw", "copaw"])
def test_same_json_as_manage_py_replay(strategy: str) -> None:
    args = [a if a != "qwenpaw" else strategy for a in ARGS]
    engine = _run("-m", "ctxlab.engine", "replay", *args)
    django = _run("manage.py", "replay", *args)
    assert engine.returncode == 0, engine.stderr
    assert django.returncode == 0, django.stderr
    record = json.loads(engine.stdout)
    assert record == json.loads(django.stdout)
    assert record["strategy"] == strategy and record["steps"]
    assert record["events"] or strategy == "copaw"  # qwenpaw compacts at this window


def test_never_imports_django() -> None:
    code = (
        "import sys\nfrom ctxlab.engine.__main__ import main\n"
        f"main({['replay', *ARGS[:-3], '--json', '/dev/null']!r})\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'celery', 'channels')]\n"
        "assert not bad, bad\n"
    )
    done = _run("-c", code)
    assert done.returncode == 0, done.stderr
    assert "events by kind" in done.stdout


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    done = _run("-m", "ctxlab.engine", "replay", "--file", str(bad), "--strategy", "qwenpaw")
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr
    missing = _run("-m", "ctxlab.engine", "replay", "--file", str(tmp_path / "no.json"),
                   "--strategy", "qwenpaw")  # fmt: skip
    assert missing.returncode == 2 and "no.json" in missing.stderr
    unknown = _run("-m", "ctxlab.engine", "replay", "--file", str(SESSION), "--strategy", "nope")
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr


def test_list_strategies_matches_what_window_sets() -> None:
    from ctxlab.engine.budget import window_params
    from ctxlab.engine.strategies import STRATEGIES

    engine = _run("-m", "ctxlab.engine", "replay", "--list-strategies", "--json")
    django = _run("manage.py", "replay", "--list-strategies", "--json")
    assert engine.returncode == 0, engine.stderr
    assert django.returncode == 0, django.stderr
    rows = json.loads(engine.stdout)
    assert rows == json.loads(django.stdout)
    assert sorted(r["name"] for r in rows) == sorted(STRATEGIES)
    for row in rows:
        if row["window"] is None:  # a strategy without a window: --window refuses it
            assert row["follows"] == row["pins"] == [] and row["window_default"] is None
            continue
        # What the listing promises is what --window 150000 sets, no more, no less.
        listed = {row["window"], *(f["param"] for f in row["follows"])}
        pins = {p["param"]: p["value"] for p in row["pins"]}
        params = window_params(row["name"], 150_000)
        assert set(params) == listed | set(pins), row["name"]
        assert {k: params[k] for k in pins} == pins, row["name"]
        assert row["window_default"] == STRATEGIES[row["name"]]().params[row["window"]]

    table = _run("-m", "ctxlab.engine", "replay", "--list-strategies")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["strategy", "window", "parameter"]
    by_name = {line.split()[0]: line.split() for line in lines[1:]}
    assert set(by_name) == set(STRATEGIES)
    assert by_name["claude_code"][1:3] == ["context_window", "200,000"]
    assert "output_reserve" in by_name["claude_code"] and "0.1," in by_name["claude_code"]


def test_replay_without_a_source_says_what_it_needs() -> None:
    engine = _run("-m", "ctxlab.engine", "replay", "--strategy", "qwenpaw")
    assert engine.returncode == 2
    assert "--file PATH" in engine.stderr and "--list-strategies" in engine.stderr
