"""shared_probes.py: one question set for runs of the same transcript, each question asked
of every run at the same request and scored against that run's context in force there."""

from __future__ import annotations

from builders import user
from test_probes_engine import CORPUS, MESSAGES, ZONES  # the same small session

from ctxlab.engine import importers, replay
from ctxlab.engine.core.records import Change, Event, Fate, StepRecord, StepTokens
from ctxlab.engine.evaluate.probes import questions as probes
from ctxlab.engine.evaluate.probes import scoring as probe_scoring
from ctxlab.engine.evaluate.probes import shared as shared_probes
from ctxlab.engine.evaluate.probes.haystack import ContextScorer


def _step(index: int, source: int, ranges: tuple[tuple[int, int], ...]) -> StepRecord:
    return StepRecord(index, source, StepTokens(0, 0), ZONES, ranges)


def _steps(dropped_from: int | None = None, drop: range = range(0)) -> list[StepRecord]:
    """One step per assistant call (source 2, 4, 5, 7, 10); from step ``dropped_from`` on,
    the messages in ``drop`` are out of context."""
    out = []
    for index, source in enumerate((2, 4, 5, 7, 10)):
        if dropped_from is not None and index >= dropped_from:
            ranges = tuple(r for r in ((0, drop.start), (drop.stop, source)) if r[0] < r[1])
        else:
            ranges = ((0, source),)
        out.append(_step(index, source, ranges))
    return out


def _run(
    name: str, steps: list[StepRecord], events: list[Event]
) -> tuple[shared_probes.RunProbes, list[StepRecord], list[Event]]:
    own = probes.replay_probes(events, MESSAGES, steps)
    positions = {s.index: s.source_index for s in steps}
    return shared_probes.RunProbes(name, own, positions), steps, events


def test_every_run_is_asked_the_union_and_a_run_that_kept_everything_scores_one() -> None:
    drop_early = [Event(0, 3, "drop", changes=tuple(Change(i, Fate.DROPPED) for i in range(1, 4)))]
    drop_late = [Event(0, 4, "drop", changes=tuple(Change(i, Fate.DROPPED) for i in range(1, 9)))]
    runs = {
        "early": _run("early", _steps(3, range(1, 4)), drop_early),
        "late": _run("late", _steps(4, range(1, 9)), drop_late),
        "keeps": _run("keeps", _steps(), []),
    }
    assert runs["keeps"][0].probes == []  # it removed nothing: no probe of its own
    shared = shared_probes.union(r[0] for r in runs.values())
    questions = {(p.kind, p.question, p.answers) for p in shared}
    own = [(p.kind, p.question, p.answers) for r in runs.values() for p in r[0].probes]
    assert questions == set(own) and len(shared) == len(questions) < len(own)  # deduplicated
    recall = next(p for p in shared if p.kind == "recall")
    # raised by both dropping runs; asked where the later one dropped it (step 4: source 10)
    assert {run for run, _ in recall.raised_by} == {"early", "late"}
    assert recall.position == 10
    tallies = {}
    for name, (_, steps, events) in runs.items():
        asked = shared_probes.score_run(shared, steps, events, {}, MESSAGES)
        assert set(asked) == {p.key for p in shared}  # the same questions for every run
        tallies[name] = shared_probes.tally(shared, asked)
        if name == "keeps":
            assert all(a.score is not None and a.score.score == 1.0 for a in asked.values())
        else:
            assert asked[recall.key].score is not None
            assert asked[recall.key].score.score == 0.0  # the error line is gone
    assert tallies["keeps"]["score"] == 1.0
    assert tallies["keeps"]["answered"] == tallies["keeps"]["asked"] == len(shared)
    assert tallies["late"]["score"] < tallies["early"]["score"] < 1.0
    assert tallies["early"]["by_kind"]["recall"] == {
        "questions": 1, "asked": 1, "answered": 0, "score": 0.0,
    }  # fmt: skip


def test_request_at_is_the_first_request_at_or_after_the_position() -> None:
    positions = [(2, 0), (4, 1), (4, 2), (7, 3)]
    assert shared_probes.request_at(positions, 0) == 0
    assert shared_probes.request_at(positions, 4) == 1  # the first of two at that position
    assert shared_probes.request_at(positions, 5) == 3  # none at 5: the next one
    assert shared_probes.request_at(positions, 8) is None  # the run made no request there


def test_a_run_without_a_request_there_is_not_asked() -> None:
    events = [Event(0, 4, "drop", changes=tuple(Change(i, Fate.DROPPED) for i in range(1, 9)))]
    full = _run("full", _steps(4, range(1, 9)), events)
    shared = shared_probes.union([full[0]])
    short = _steps()[:3]  # its replay ended at source 5, before the questions' position 10
    asked = shared_probes.score_run(shared, short, [], {}, MESSAGES)
    assert all(a.step is None and a.score is None for a in asked.values())
    tally = shared_probes.tally(shared, asked)
    assert tally["questions"] == len(shared) and tally["asked"] == 0 and tally["score"] is None


def test_union_is_deterministic_and_ordered_by_position() -> None:
    events = [Event(0, 3, "drop", changes=tuple(Change(i, Fate.DROPPED) for i in range(1, 4)))]
    a = _run("a", _steps(3, range(1, 4)), events)[0]
    b = _run("b", _steps(3, range(1, 4)), events)[0]
    first = shared_probes.union([a, b])
    assert first == shared_probes.union([a, b])
    assert [p.position for p in first] == sorted(p.position for p in first)
    assert all(len(p.raised_by) == 2 for p in first)


def test_context_scorer_gives_score_texts_scores_on_real_corpus_contexts() -> None:
    """Each message normalised once (``probe_haystack``) scores exactly as ``score_text``
    over the joined context, at every request a shared set asks at, for every run."""
    data = (
        CORPUS / "claude-code" / "sniffly-d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl"
    ).read_bytes()
    conversation = importers.parse(data, name="sniffly.jsonl").conversations[0]
    messages = conversation.messages
    results = {
        name: replay.run(conversation, name, params=params)
        for name, params in (
            ("qwenpaw", {"max_input_length": 20000}),
            ("observation_masking", {}),
            ("langchain_trim", {"max_tokens": 20000}),
        )
    }
    shared = shared_probes.union(
        shared_probes.RunProbes(
            name,
            probes.replay_probes(r.events, messages, r.steps),
            {s.index: s.source_index for s in r.steps},
        )
        for name, r in results.items()
    )
    assert len({p.kind for p in shared}) == 4
    scorer = ContextScorer()
    compared = 0
    for result in results.values():
        summaries = {s.id: s.output for s in result.summaries}
        positions = [(s.source_index, s.index) for s in result.steps]
        wanted = {shared_probes.request_at(positions, p.position) for p in shared} - {None}
        parts = dict(
            probe_scoring.iter_context_parts(
                result.steps, result.events, summaries, messages, wanted
            )
        )
        texts = probe_scoring.replay_contexts(
            result.steps, result.events, summaries, messages, wanted
        )
        for step in wanted:
            asked = [p.as_probe() for p in shared]
            expected = [probe_scoring.score_text(p, texts[step]) for p in asked]
            assert scorer.score(asked, parts[step]) == expected
            compared += len(asked)
    assert compared > 100


def test_context_scorer_strips_line_numbers_from_every_part_as_the_joined_text_does() -> None:
    numbered = user("     1→import os\n     2→x = 'KeyError: boom'")
    plain = user("12: 'Which' path\n  see src/a/b.py")
    asked = [
        probes.Probe("k1", "recall", 0, 0, None, "q", ("12: which path",), 0),
        probes.Probe("k2", "recall", 0, 0, None, "q", ("which path", "x = keyerror: boom"), 0),
        probes.Probe("k3", "decision", 0, 0, None, "q", ("import the path which",), 0),
    ]
    for parts in ([numbered, plain], [plain], ["", plain, "Summary: see c/d.py"]):
        text = "\n".join(p if isinstance(p, str) else p.text for p in parts)
        expected = [probe_scoring.score_text(p, text) for p in asked]
        assert ContextScorer().score(asked, parts) == expected
