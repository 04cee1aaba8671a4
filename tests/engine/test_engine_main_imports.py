"""``python -m ctxlab.engine replay --help`` loads only what its parser needs: the strategies'
and summarisers' names. What a replay needs (importers, the replay, the budget, pricing) and
what only some paths use (yaml, xml.sax.saxutils's urllib.request, the summary gate's
evaluation) load in the functions that use them: each start of the CLI paid for them
(issue 33's ``engine_cli_start_s``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Run as ``python -m`` does, then list what is loaded.
HELP = """
import contextlib, io, json, runpy, sys
sys.argv = ["ctxlab.engine", "replay", "--help"]
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        runpy.run_module("ctxlab.engine", run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
print(json.dumps({"help": out.getvalue(), "modules": sorted(sys.modules)}))
"""

NOT_FOR_HELP = (
    "ctxlab.engine.importers",
    "ctxlab.engine.replay",
    "ctxlab.engine.budget",
    "ctxlab.engine.cost.pricing",
    "ctxlab.engine.evaluate.lost",
    "ctxlab.engine.evaluate.survival",
    "yaml",
    "urllib.request",
    "xml.sax.saxutils",
)


def test_replay_help_loads_only_the_parser_needs() -> None:
    done = subprocess.run(
        [sys.executable, "-c", HELP], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert "--strategy {" in seen["help"] and "--summarizer {" in seen["help"]
    loaded = set(seen["modules"])
    assert "ctxlab.engine.strategies" in loaded  # the names come from the registry itself
    assert not loaded.intersection(NOT_FOR_HELP), sorted(loaded.intersection(NOT_FOR_HELP))
