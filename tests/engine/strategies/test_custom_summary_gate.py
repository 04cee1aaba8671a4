"""The custom strategy's summary quality gate over a real corpus session.

The offline (extractive) summary of agentcmd-full-session keeps 3 of the 10 facts the gate
asks at step 6 (its Critical Context lists other paths than the ones asked), so the gate
rejects it; each ``on_reject`` then acts as documented.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from builders import plain

from ctxlab.engine import cli
from ctxlab.engine.core.catalogue import NOTE_KEY, OFFLINE_OUTCOME_NOTE
from ctxlab.engine.core.records import Event, Fate, ReplayResult
from ctxlab.engine.core.summary_request import SummaryRequest, SummaryResponse
from ctxlab.engine.evaluate import lost
from ctxlab.engine.replay import run
from ctxlab.engine.stages import summary_gate
from ctxlab.engine.strategies.custom import Custom

SESSION = (
    Path(__file__).resolve().parents[2]
    / "data"
    / "corpus"
    / "claude-code"
    / "agentcmd-full-session.jsonl"
)
CONVERSATION = cli.load_file(SESSION)
SUMMARISE = {"stage": "summarise", "keep_tokens": 1500}


def replay(summarizer: Any = None, **gate: object) -> ReplayResult:
    stages: list[dict[str, object]] = [SUMMARISE]
    if gate:
        stages.append({"stage": "summary_gate", **gate})
    return run(CONVERSATION, Custom({"window": 8000, "stages": stages}), summarizer=summarizer)


def gate_events(result: ReplayResult) -> list[Event]:
    return [e for e in result.events if e.kind in ("summary_checked", "summary_rejected")]


def test_without_a_gate_the_offline_summary_is_applied_once() -> None:
    result = replay()
    assert result.metrics["events"] == {"summarise": 1}
    assert not gate_events(result)


def test_accept_with_appendix_appends_the_missed_facts_and_the_analysis_sees_them() -> None:
    result = replay(on_reject="accept_with_appendix")
    rejected, summarised = result.events
    assert (rejected.kind, summarised.kind) == ("summary_rejected", "summarise")
    assert rejected.step == summarised.step == 6
    assert rejected.detail["reason"] == "summary rejected: 7 of 10 facts missing"
    assert rejected.detail["score"] == 0.3
    assert rejected.detail["min_score"] == 0.6
    assert rejected.detail["outcome"] == "the 7 missed facts appended verbatim to the summary"
    assert rejected.detail[NOTE_KEY] == OFFLINE_OUTCOME_NOTE
    assert rejected.messages == summarised.messages
    assert result.metrics["events"] == {"summarise": 1, "summary_rejected": 1}
    # the one summary the request carries ends with the appendix, every missed fact in it
    (summary,) = result.summaries
    assert summarised.summary_id == summary.id
    head, appendix = summary.output.split("\n\n" + summary_gate.APPENDIX_HEADING + "\n")
    missed = rejected.detail["missed"]
    assert len(missed) == 7
    for fact in missed:
        assert fact["value"] in appendix
        assert fact["value"] not in head or fact["kind"] == "numbers"
    # "What was lost" reads the summary with its appendix: the missed facts are retained
    gated = lost.analyse(result, CONVERSATION.messages)
    plain_run = lost.analyse(replay(), CONVERSATION.messages)
    assert gated.at_risk == plain_run.at_risk
    assert gated.retained > plain_run.retained
    lost_values = {f.value for e in gated.events for f in e.lost}
    assert not lost_values & {f["value"] for f in missed}


def test_keep_original_does_not_compact_while_the_summary_misses_facts() -> None:
    result = replay(on_reject="keep_original")
    events = gate_events(result)
    assert [e.kind for e in result.events] == ["summary_rejected"] * 4
    assert [e.step for e in events] == [6, 7, 8, 9]
    assert [e.detail["reason"] for e in events] == [
        "summary rejected: 7 of 10 facts missing",
        "summary rejected: 7 of 10 facts missing",
        "summary rejected: 7 of 10 facts missing",
        "summary rejected: 9 of 10 facts missing",
    ]
    assert all(
        e.detail["outcome"] == "original messages kept: not compacted this time" for e in events
    )
    assert not any(c.fate is Fate.SUMMARISED for e in result.events for c in e.changes)
    assert len(result.summaries) == 4  # each call is still made and recorded
    assert result.metrics["events"] == {"summary_rejected": 4}


def test_retry_asks_again_with_the_missed_facts_as_must_keep() -> None:
    result = replay(on_reject="retry")
    first, second = gate_events(result)[:2]
    assert first.detail["outcome"] == "asked again with the 7 missed facts as must-keep"
    assert "retry" not in first.detail
    assert second.detail["retry"] is True
    # the offline summariser reads the messages, not the request's words: the same summary,
    # rejected again, so the original is kept
    assert (
        second.detail["outcome"]
        == "rejected again: original messages kept, not compacted this time"
    )
    assert second.summary_id == first.summary_id + 1
    retried = result.summaries[second.summary_id]
    assert retried.output == result.summaries[first.summary_id].output
    assert summary_gate.MUST_KEEP_HEADING in retried.input
    assert summary_gate.MUST_KEEP_HEADING not in result.summaries[first.summary_id].input
    for fact in first.detail["missed"]:
        assert f"- {fact['kind']}: " in retried.input
        assert fact["value"] in retried.input
    assert not any(e.kind == "summarise" for e in result.events)
    assert result.metrics["events"] == {"summary_rejected": 8}
    assert len(result.summaries) == 8


class Obedient:
    """The offline text, plus, when the request says what it must keep, those facts."""

    name = "obedient"

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        text = request.messages[-1].text
        kept = ""
        if summary_gate.MUST_KEEP_HEADING in text:
            lines = text.split(summary_gate.MUST_KEEP_HEADING, 1)[1].splitlines()
            kept = "\n".join(re.sub(r"^- \w+: ", "", line) for line in lines if line)
        return SummaryResponse(text=f"Summary of the work so far.\n{kept}")


def test_retry_applies_the_retried_summary_when_it_passes() -> None:
    result = replay(Obedient(), on_reject="retry", min_score=0.9)
    rejected, checked, summarised = result.events
    assert (rejected.kind, checked.kind, summarised.kind) == (
        "summary_rejected",
        "summary_checked",
        "summarise",
    )
    assert checked.detail["retry"] is True
    assert checked.detail["missing"] == 0
    assert checked.detail["reason"].startswith("summary checked: 0 of ")
    assert summarised.summary_id == checked.summary_id == rejected.summary_id + 1
    assert NOTE_KEY not in checked.detail  # not the offline summariser's outcome


def test_a_passing_summary_is_applied_unchanged() -> None:
    gated = replay(min_score=0.0)
    plain_run = replay()
    (checked,) = gate_events(gated)
    assert checked.kind == "summary_checked"
    assert checked.detail["reason"] == "summary checked: 7 of 10 facts missing"
    assert [s.output for s in gated.summaries] == [s.output for s in plain_run.summaries]
    # the same requests at every step: the gate only added its event
    assert [plain((s.tokens, s.context, s.summary_id)) for s in gated.steps] == [
        plain((s.tokens, s.context, s.summary_id)) for s in plain_run.steps
    ]
    assert [e.kind for e in gated.events] == ["summary_checked", "summarise"]


def test_the_gate_is_deterministic() -> None:
    for on_reject in summary_gate.ON_REJECT:
        first, again = replay(on_reject=on_reject), replay(on_reject=on_reject)
        assert plain(first.events) == plain(again.events)
        assert [s.output for s in first.summaries] == [s.output for s in again.summaries]


def test_max_questions_bounds_what_is_asked() -> None:
    (rejected,) = gate_events(replay(max_questions=4, min_score=1.0))
    assert rejected.detail["asked"] == 4
    assert rejected.detail["reason"].endswith(f"{rejected.detail['missing']} of 4 facts missing")
