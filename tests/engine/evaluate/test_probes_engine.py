"""probes.py / probe_scoring.py: probes from what a compaction removed, answers known by
rule, offline scores; on hand-built sessions and on real corpus replays."""

from __future__ import annotations

from pathlib import Path

from builders import assistant, call, system, tool_result, user

from ctxlab.engine import importers, replay
from ctxlab.engine.core.model import Message
from ctxlab.engine.core.records import Change, Event, Fate, StepRecord, StepTokens, Zones
from ctxlab.engine.evaluate.probes import haystack as probe_haystack
from ctxlab.engine.evaluate.probes import questions as probes
from ctxlab.engine.evaluate.probes import scoring as probe_scoring

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
ZONES = Zones(0, 0, 0, 0, 0, 0, 0, 1000, None)

MESSAGES: tuple[Message, ...] = (
    system("You are an agent."),
    user("Please add a retry to the fetcher in src/net/fetch.py and keep the tests green."),  # 1
    call("t1", "Bash", command="pytest -x tests/test_fetch.py"),  # 2
    tool_result("t1", "collected 3 items\nE   ImportError: cannot import name 'Backoff'\n1 failed"),
    assistant("Using a decorator doesn't work here because the client is sync, so I will use a loop instead of tenacity."),  # 4
    call("t2", "Edit", file_path="/repo/src/net/fetch.py", old_string="a", new_string="b"),  # 5
    tool_result("t2", "ok"),  # 6
    call("t3", "Write", file_path="/repo/src/net/backoff.py", content="x = 1"),  # 7
    tool_result("t3", "ok"),  # 8
    user("now also log each retry"),  # 9
    assistant("Done."),  # 10
)  # fmt: skip


def _step(index: int, source: int, ranges: tuple[tuple[int, int], ...], summary: int | None = None):
    return StepRecord(index, source, StepTokens(0, 0), ZONES, ranges, summary)


def _drop(step: int, indexes: range, fate: Fate = Fate.DROPPED, eid: int = 0) -> Event:
    return Event(eid, step, "drop", changes=tuple(Change(i, fate) for i in indexes))


def test_probes_of_a_drop_have_the_answers_known_by_rule() -> None:
    events = [_drop(1, range(1, 9))]
    found = probes.replay_probes(events, MESSAGES, [_step(1, 10, ((0, 1), (9, 11)))])
    by_question = {p.question: p for p in found}
    recall = by_question[
        "What was the error message when the agent ran `pytest -x tests/test_fetch.py`?"
    ]
    assert recall.kind == "recall" and recall.answers == (
        "E ImportError: cannot import name 'Backoff'",
    )
    assert recall.source == 3
    files = by_question["Which files were modified?"]
    assert files.answers == ("/repo/src/net/fetch.py", "/repo/src/net/backoff.py")
    assert by_question["Which command ran the tests?"].answers == ("pytest -x tests/test_fetch.py",)
    decision = by_question["Which approach was rejected or changed, and why?"]
    assert "instead of tenacity" in decision.answers[0] and decision.source == 4
    # the open task (message 9) was not touched: no continuation probe
    assert not [p for p in found if p.kind == "continuation"]
    assert [p.kind for p in found] == ["recall", "artifact", "artifact", "decision"]


def test_open_task_probe_when_the_latest_request_is_removed() -> None:
    events = [_drop(1, range(1, 9))]
    found = probes.replay_probes(events, MESSAGES, [_step(1, 10, ((0, 1), (9, 11)))])
    assert not [p for p in found if p.kind == "continuation"]
    events = [_drop(2, range(1, 10))]
    found = probes.replay_probes(events, MESSAGES, [_step(2, 11, ((0, 1), (10, 11)))])
    (task,) = [p for p in found if p.kind == "continuation"]
    assert task.answers == ("now also log each retry",) and task.source == 9


def test_same_input_same_probes_and_keys() -> None:
    events = [_drop(1, range(1, 9))]
    steps = [_step(1, 10, ((0, 1), (9, 11)))]
    first = probes.replay_probes(events, MESSAGES, steps)
    second = probes.replay_probes(list(events), tuple(MESSAGES), list(steps))
    assert first == second and len({p.key for p in first}) == len(first)


def test_offline_score_dropped_vs_summarised() -> None:
    events = [_drop(1, range(1, 9))]
    steps = [_step(1, 10, ((0, 1), (9, 11)))]
    found = probes.replay_probes(events, MESSAGES, steps)
    ctx = probe_scoring.replay_contexts(steps, events, {}, MESSAGES, [1])[1]
    scores = {p.key: probe_scoring.score_text(p, ctx) for p in found}
    assert all(s.verdict == "lost" and s.score == 0 for s in scores.values())
    # a summary that kept the path and the error but not the other file
    summary = (
        "Edited `src/net/fetch.py`. Tests failed: E   ImportError: cannot import name 'Backoff'"
    )
    steps = [_step(1, 10, ((0, 1), (9, 11)), summary=0)]
    events = [_drop(1, range(1, 9), Fate.SUMMARISED)]
    ctx = probe_scoring.replay_contexts(steps, events, {0: summary}, MESSAGES, [1])[1]
    by_kind = {p.question: probe_scoring.score_text(p, ctx) for p in found}
    assert by_kind["Which files were modified?"].score == 0.5  # net/fetch.py tail found
    assert by_kind["Which files were modified?"].verdict == "partial"
    recall = next(s for q, s in by_kind.items() if q.startswith("What was the error"))
    assert recall.score == 1.0 and recall.verdict == "recoverable"
    totals = probe_scoring.summarise(found, {k: s.score for k, s in scores.items()})
    assert totals["probes"] == len(found) and totals["score"] == 0.0
    assert totals["by_kind"]["continuation"] == {"probes": 0, "score": None}


def test_truncated_version_is_the_context_text() -> None:
    cut = tool_result("t1", "collected 3 items [... cut ...]")
    events = [Event(0, 1, "truncate", changes=(Change(3, Fate.TRUNCATED, message=cut),))]
    steps = [_step(1, 10, ((0, 11),))]
    found = probes.replay_probes(events, MESSAGES, steps)
    (recall,) = [p for p in found if p.kind == "recall"]
    ctx = probe_scoring.replay_contexts(steps, events, {}, MESSAGES, [1])[1]
    assert "[... cut ...]" in ctx and "ImportError" not in ctx
    assert probe_scoring.score_text(recall, ctx).verdict == "lost"


def test_decision_terms_score_a_reworded_summary() -> None:
    events = [_drop(1, range(1, 9))]
    (decision,) = [
        p for p in probes.replay_probes(events, MESSAGES, [_step(1, 10, ((0, 11),))])
        if p.kind == "decision"
    ]  # fmt: skip
    reworded = "Decorator approach fails (client is sync); a loop replaces tenacity."
    score = probe_scoring.score_text(decision, reworded)
    assert 0.4 <= score.score < 1 and "tenacity" in score.found and score.verdict != "lost"


def test_original_compactions_probe_what_the_boundary_replaced() -> None:
    messages = (*MESSAGES, user("summary of it all", flags=frozenset({"compact_summary"})))
    (compaction,) = probes.original_compactions(messages, [(11, 11)])
    assert [i for i, _ in compaction.touched] == list(range(11))
    found = probes.generate([compaction], messages)
    assert {p.kind for p in found} == {"recall", "artifact", "decision", "continuation"}


def test_judge_reply_parsing() -> None:
    assert probe_scoring.parse_judgement("SCORE: 4\nREASON: close") == (0.8, "close")
    assert probe_scoring.parse_judgement("**SCORE:** 5/5") == (1.0, "")
    try:
        probe_scoring.parse_judgement("I think it is fine")
    except ValueError as exc:
        assert "SCORE" in str(exc)
    else:
        raise AssertionError("no SCORE line must fail")


def test_real_corpus_replay_probes_are_deterministic_and_scored() -> None:
    data = (
        CORPUS / "claude-code" / "sniffly-d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"
    ).read_bytes()
    conversation = importers.parse(data, name="sniffly.jsonl").conversations[0]
    runs = []
    for _ in range(2):
        result = replay.run(conversation, "qwenpaw", params={"max_input_length": 20000})
        runs.append(probes.replay_probes(result.events, conversation.messages, result.steps))
    assert runs[0] == runs[1] and runs[0]
    kinds = {p.kind for p in runs[0]}
    assert set(probes.PROBE_KINDS) == kinds, kinds
    wanted = {p.step for p in runs[0]}
    summaries = {s.id: s.output for s in result.summaries}
    contexts = probe_scoring.replay_contexts(
        result.steps, result.events, summaries, conversation.messages, wanted
    )
    scores = [probe_scoring.score_text(p, contexts[p.step]) for p in runs[0]]
    assert all(0 <= s.score <= 1 for s in scores)
    assert len({s.verdict for s in scores}) >= 2  # some answers survive, some do not


def test_error_line_prefers_the_exception_line() -> None:
    output = "Traceback (most recent call last):\n  File 'x.py', line 1\nKeyError: 'retries'\n"
    assert probes.error_line(output) == "KeyError: 'retries'"
    assert probes.error_line("collected 2 items\n1 failed\n") == ""
    assert probes.error_line("error: could not compile `app`") == "error: could not compile `app`"


def test_original_scores_read_what_the_agent_saw_after_its_compaction() -> None:
    from ctxlab.engine.core.model import Conversation, OriginalCompaction

    summary = user("Summary: edited /repo/src/net/fetch.py", flags=frozenset({"compact_summary"}))
    messages = (*MESSAGES[:9], summary, user("go on"), assistant("ok"))
    conversation = Conversation(
        "t",
        "t",
        messages,
        compactions=(OriginalCompaction(9, "compact_boundary", "auto", None, 9),),
    )
    found, scores = probe_haystack.original_scores(conversation)
    by_question = {p.question: scores[p.key] for p in found}
    files = by_question["Which files were modified?"]
    assert files.found == ("/repo/src/net/fetch.py",) and files.score == 0.5
    recall = next(s for q, s in by_question.items() if q.startswith("What was the error"))
    assert recall.verdict == "lost"
    assert probe_scoring.original_context(messages, 9, 9).endswith("go on")
