"""A suite over real corpus sessions (Claude Code and Codex): the CLI picks them by format
filter, a window grid of two strategies' shared window runs, the results flag what they
should and the per-transcript rows hold each run's own numbers."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command

from replay_app.models import Run
from sessions_app import services as session_services
from suites_app import results
from suites_app.models import Suite

pytestmark = pytest.mark.django_db

CORPUS = Path(settings.BASE_DIR) / "tests" / "data" / "corpus"
FILES = (
    "claude-code/agentcmd-full-session.jsonl",
    "claude-code/agentcmd-full-session-two.jsonl",
    "codex-rollout/agentcmd-rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl",
)


def test_corpus_suite_by_format_filter(user: Any) -> None:
    for name in FILES:
        path = CORPUS / name
        outcome = session_services.upload_import(owner=user, name=path.name, data=path.read_bytes())
        assert outcome.error is None, outcome.error
    out = io.StringIO()
    call_command(
        "suite", "create", "corpus", "--user", "alice", "--format", "claude-code",
        "--grid-base", "claude_code", "--grid", "window=20000,60000", "--json", stdout=out,
        stderr=io.StringIO(),
    )  # fmt: skip
    created = json.loads(out.getvalue())
    suite = Suite.objects.get(pk=created["suite"])
    formats = set(suite.items.values_list("transcript__format", flat=True))
    assert formats == {"claude-code"}  # the Codex rollout is filtered out
    transcripts = suite.items.values("transcript").distinct().count()
    assert created["total"] == transcripts * 2 and created["done"] == created["total"]
    page = results.build(suite)
    small, large = sorted(page.configs, key=lambda c: c.config["window"])
    assert small.config["window"] == 20000 and large.config["window"] == 60000
    # A smaller window compacts at least as often on real sessions.
    assert small.median("compaction_count") >= large.median("compaction_count")
    rows = results.transcript_rows(suite, small.index, page.columns)
    peak = [c.key for c in page.columns].index("peak_strategy")
    for row in rows:
        run = Run.objects.get(pk=row.item.run_id)
        assert row.values[peak] == run.metrics["peak_strategy"]
        assert run.window == 20000
