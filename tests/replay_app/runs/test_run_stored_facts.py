"""Facts extracted once at import and read by every run's analysis (``sessions_app.facts``,
``replay_app.runs.survival.fact_index``), on a real Claude Code session: the stored facts
are the extractor's over the stored conversation, and a run analysed from them stores the
same retention and survival as the analysis that extracts everything again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from replay_testdata import import_transcript

from ctxlab.engine.evaluate import extract, survival
from ctxlab.engine.replay import run as replay_run
from replay_app.models import RunAnalysis
from replay_app.runs import executor, services
from replay_app.runs import survival as run_survival
from sessions_app import facts as stored_facts
from sessions_app.models import MessageFacts

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
SESSION = CORPUS / "claude-code" / "agentcmd-full-session-four.jsonl"
SPECS = (("qwenpaw", 12_000), ("claude_code", 20_000), ("baseagent", 12_000))


@pytest.fixture
def transcript(user: Any) -> Any:
    return import_transcript(user, SESSION.read_bytes(), name=SESSION.name)


def _fresh(transcript: Any) -> list[frozenset[tuple[str, str]]]:
    extract.clear_caches()
    return [extract.message_facts(m) for m in transcript.to_conversation().messages]


def test_import_stores_the_extractors_facts_of_every_message(transcript: Any) -> None:
    rows = list(MessageFacts.objects.filter(transcript=transcript))
    assert rows and {r.extractor for r in rows} == {extract.VERSION}
    assert sum(r.count for r in rows) == transcript.message_count > 50
    found = stored_facts.stored_facts(transcript.pk, transcript.message_count)
    assert found == _fresh(transcript)
    assert sum(len(f) for f in found) > 300  # a real session: many facts


def _analysis(run: Any) -> tuple[Any, Any]:
    row = RunAnalysis.objects.get(run=run)
    return row.retention, row.survival


def _extracting_again(transcript: Any, strategy: str, window: int) -> tuple[Any, Any]:
    """The analysis without stored facts: every message scanned again (the earlier path)."""
    extract.clear_caches()
    conversation = transcript.to_conversation()
    result = replay_run(conversation, strategy, params=_params(transcript, strategy, window))
    retention, table = survival.analyse_replay(result, conversation.messages)
    return json.loads(json.dumps(retention.as_dict())), json.loads(json.dumps(table.as_dict()))


def _params(transcript: Any, strategy: str, window: int) -> dict[str, Any]:
    run = services.run_create(
        owner=transcript.owner,
        transcript=transcript,
        spec=services.RunSpec(strategy=strategy, window=window),
        enqueue=False,
    )
    params = dict(run.params)
    run.delete()
    return params


@pytest.mark.parametrize(("strategy", "window"), SPECS)
def test_run_from_stored_facts_equals_extracting_again(
    transcript: Any, strategy: str, window: int
) -> None:
    run_survival.clear_fact_indexes()
    run = services.run_create(
        owner=transcript.owner,
        transcript=transcript,
        spec=services.RunSpec(strategy=strategy, window=window),
        enqueue=False,
    )
    run = executor.run_execute(run=run)
    assert run.status == "done", run.error
    retention, table = _analysis(run)
    assert retention["at_risk"] > 0 and table["compactions_count"] > 0
    assert (retention, table) == _extracting_again(transcript, strategy, window)


def test_missing_or_stale_facts_are_extracted_once_and_stored(transcript: Any) -> None:
    expected = _fresh(transcript)
    MessageFacts.objects.filter(transcript=transcript).update(extractor=extract.VERSION - 1)
    assert stored_facts.stored_facts(transcript.pk, transcript.message_count) is None
    run_survival.clear_fact_indexes()
    conversation = transcript.to_conversation()
    index = run_survival.fact_index(transcript, conversation.messages)
    assert [index.original(i) for i in range(len(expected))] == expected
    assert set(
        MessageFacts.objects.filter(transcript=transcript).values_list("extractor", flat=True)
    ) == {extract.VERSION}
    assert stored_facts.stored_facts(transcript.pk, transcript.message_count) == expected
    # unreadable bytes are not used either
    MessageFacts.objects.filter(transcript=transcript).update(data=b"not packed facts")
    assert stored_facts.stored_facts(transcript.pk, transcript.message_count) is None
    run_survival.clear_fact_indexes()
    index = run_survival.fact_index(transcript, conversation.messages)
    assert stored_facts.stored_facts(transcript.pk, transcript.message_count) == expected
    # a partial set (a chunk lost) is not used either
    MessageFacts.objects.filter(transcript=transcript, start=0).delete()
    assert stored_facts.stored_facts(transcript.pk, transcript.message_count) is None


def test_a_message_edited_alone_drops_the_stored_facts(transcript: Any) -> None:
    message = transcript.messages.get(index=1)
    message.preview = "edited"
    message.save()
    assert not MessageFacts.objects.filter(transcript=transcript).exists()


def test_runs_of_a_sweep_share_the_transcripts_facts_and_match(transcript: Any) -> None:
    run_survival.clear_fact_indexes()
    for window in (10_000, 14_000, 18_000):  # one process, one shared index
        run = services.run_create(
            owner=transcript.owner,
            transcript=transcript,
            spec=services.RunSpec(strategy="claude_code", window=window),
            enqueue=False,
        )
        run = executor.run_execute(run=run)
        assert run.status == "done", run.error
        assert _analysis(run) == _extracting_again(transcript, "claude_code", window)
    assert len(run_survival._INDEXES) == 1
    (shared,) = run_survival._INDEXES.values()
    assert {"instruction_sources", "extra_holders"} <= set(shared.per_transcript)
