"""A transcript whose log reports no provider usage has no reported peak: in a suite's
results it is missing (as "—" on its transcript page), not a 0 that pulls the median of
"Peak reported usage" to half the real one (trial: a Gemini CLI session with 9,198 and
a SWE-agent trajectory without usage gave a median of 4,599)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from suite_testdata import import_chat

from sessions_app import services as session_services
from suites_app import configs, results, services

pytestmark = pytest.mark.django_db

GEMINI = (
    Path(settings.BASE_DIR)
    / "tests/data/corpus/gemini-cli/agentcmd-session-2025-10-27T19-55-981c87cb.json"
)


def test_a_transcript_without_usage_leaves_the_reported_peak_missing(user: Any) -> None:
    outcome = session_services.upload_import(owner=user, name=GEMINI.name, data=GEMINI.read_bytes())
    assert outcome.upload is not None
    gemini = outcome.upload.transcripts.get()
    assert gemini.reported_peak_context  # the log reports usage
    chat = import_chat(user, seed=1, turns=6, size=500)
    assert chat.reported_peak_context is None  # this one reports none
    suite = services.suite_create(
        owner=user, name="usage", transcripts=[gemini, chat],
        configs=configs.preset_configs(["qwenpaw"], window=3000), enqueue=False,
    )  # fmt: skip
    services.suite_enqueue(suite)  # eager Celery: runs here
    suite.refresh_from_db()
    built = results.build(suite)
    peaks = {it.transcript_id: it.summary.get("peak_reported") for it in suite.items.all()}
    assert peaks[chat.pk] == 0 and peaks[gemini.pk] > 0  # as the runs store them
    (config,) = built.configs
    stat = config.stats["peak_reported"]
    assert stat.n == 1 and stat.median == peaks[gemini.pk]
    column = [c.key for c in built.columns].index("peak_reported")
    cells = {r.item.transcript_id: r.values[column] for r in results.transcript_rows(suite, 0, built.columns)}  # fmt: skip
    assert cells == {gemini.pk: peaks[gemini.pk], chat.pk: None}


def test_the_transcript_page_says_its_reported_peak_holds_the_answer_too(
    user: Any, client: Any
) -> None:
    """The transcript's reported peak is a request plus its answer (12,120 on this session:
    8,653 in, 3,467 out); a run's "Peak reported usage" is the largest request alone
    (9,198). The transcript page says which, so the two never read as a disagreement."""
    from replay_app.runs import executor
    from replay_app.runs import services as run_services

    outcome = session_services.upload_import(owner=user, name=GEMINI.name, data=GEMINI.read_bytes())
    assert outcome.upload is not None
    gemini = outcome.upload.transcripts.get()
    spec = run_services.RunSpec(strategy="qwenpaw", params={})
    run = run_services.run_create(owner=user, transcript=gemini, spec=spec, enqueue=False)
    run = executor.run_execute(run=run)
    assert gemini.reported_peak_context == 12_120 and run.metrics["peak_reported"] == 9_198
    client.force_login(user)
    html = client.get(f"/transcripts/{gemini.pk}/").content.decode()
    assert "12,120" in html and 'id="reported-peak-note"' in html
    assert "a request and its answer" in html
