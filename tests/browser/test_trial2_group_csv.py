"""A new user's trial on a real Anthropic Messages request body (claude-trace): a comparison
of seven strategies, more than the compare page's six, downloads its whole results table
as CSV from the group page, and every integer in it is the one the page shows."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared helpers
from replay_testdata import import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

REQUEST = (
    Path(__file__).resolve().parents[1]
    / "data/corpus/anthropic-messages/claude-trace-req34-request.json"
)
PRESETS = ["qwenpaw", "copaw", "cowagent", "picoclaw", "baseagent", "aider", "claude_code"]


def _group(username: str) -> Any:
    from django.contrib.auth import get_user_model

    from replay_app.models import RunStatus
    from replay_app.runs import executor, services
    from replay_app.runs.services import RunSpec

    user = get_user_model().objects.get(username=username)
    transcript = import_transcript(user, REQUEST.read_bytes(), name=REQUEST.name)
    specs = [RunSpec(strategy=name, window=8000) for name in PRESETS]
    group = services.group_create(owner=user, transcript=transcript, specs=specs, enqueue=False)
    for run in group.runs.all():
        assert executor.run_execute(run=run).status == RunStatus.DONE
    return group


def test_group_results_download_as_csv_with_every_run(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    login()
    group = _group("alice")
    page.goto(f"{live_server.url}/runs/groups/{group.pk}/")
    with page.expect_download() as info:
        page.click("#group-csv-link")
    rows = list(csv.reader(io.StringIO(Path(info.value.path()).read_text())))
    rows = [row for row in rows if not row[0].startswith("# ")]  # header notes (best rule)
    runs = list(group.runs.order_by("pk"))
    assert rows[0] == ["metric", "better", *[f"run {r.pk} {r.label}" for r in runs]]
    assert len(rows[0]) == 2 + len(PRESETS) > 2 + 6
    by_key = {row[0]: row[2:] for row in rows[1:]}
    compared = 0
    for key in ("steps", "peak_strategy", "compaction_count", "tokens_removed"):
        shown = page.locator(f"#group-metrics tr[data-metric={key}] td").all_inner_texts()
        assert [int(v.replace(",", "")) for v in shown] == [int(v) for v in by_key[key]]
        assert by_key[key] == [str(r.metrics[key]) for r in runs]
        compared += 1
    assert compared == 4 and any(int(v) > 0 for v in by_key["compaction_count"])
    screenshot("group")
    assert page.errors == []


def test_group_csv_waits_for_every_run(client: Any, django_user_model: Any) -> None:
    from replay_app.runs import services
    from replay_app.runs.services import RunSpec

    user = django_user_model.objects.create_user(username="bob", password="pw-bob-12345")
    transcript = import_transcript(user, REQUEST.read_bytes(), name=REQUEST.name)
    group = services.group_create(
        owner=user, transcript=transcript, specs=[RunSpec(strategy="aider")], enqueue=False
    )
    client.force_login(user)
    response = client.get(f"/runs/groups/{group.pk}/?format=csv")
    assert response.status_code == 409
    assert "every run has finished" in response.content.decode()
