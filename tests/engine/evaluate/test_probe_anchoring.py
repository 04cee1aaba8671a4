"""Recall answers anchored to the call they answered (``probe_haystack``): an error line
that other calls also printed counts only in its own message, or beside its call; own and
shared probes score alike. On hand-built sessions and the real Codex rollout in the
corpus, where every sandbox refusal reads the same."""

from __future__ import annotations

from builders import call, system, tool_result, user
from hypothesis import given, settings
from hypothesis import strategies as st
from test_probes_engine import CORPUS

from ctxlab.engine import importers, replay
from ctxlab.engine.budget import window_params
from ctxlab.engine.core.model import Conversation, Message, OriginalCompaction
from ctxlab.engine.core.records import ReplayResult
from ctxlab.engine.evaluate.lost import message_text
from ctxlab.engine.evaluate.probes import questions as probes
from ctxlab.engine.evaluate.probes import scoring as probe_scoring
from ctxlab.engine.evaluate.probes import shared as shared_probes
from ctxlab.engine.evaluate.probes.haystack import ContextScorer, original_scores, score_replay

DENIED = "error: sandbox denied exec"
MESSAGES: tuple[Message, ...] = (
    system("You are an agent."),
    user("Look around the repo."),  # 1
    call("a", "shell", command="rg Foo src"),  # 2
    tool_result("a", DENIED),  # 3
    call("b", "shell", command="sed -n 1,20p src/app.py"),  # 4
    tool_result("b", DENIED),  # 5
    call("c", "shell", command="cat README.md"),  # 6
    tool_result("c", "Traceback (most recent call last):\nKeyError: 'missing'"),  # 7
)
RG = probes.Probe(
    "rg", "recall", 0, 0, None, "What was the error message when the agent ran `rg Foo src`?",
    ("error: sandbox denied exec",), 3,
)  # fmt: skip
CAT = probes.Probe(
    "cat", "recall", 0, 0, None, "What was the error message when the agent ran `cat README.md`?",
    ("KeyError: missing",), 7,
)  # fmt: skip


def _scores(parts: list[Message | str], indexes: list[int | None]) -> dict[str, float]:
    scorer = ContextScorer(MESSAGES)
    return {
        p.key: s.score
        for p, s in zip((RG, CAT), scorer.score([RG, CAT], parts, indexes), strict=True)
    }


def test_an_error_other_calls_also_printed_counts_only_in_its_own_message() -> None:
    scorer = ContextScorer(MESSAGES)
    assert scorer.other_outputs(RG) == 1 and scorer.other_outputs(CAT) == 0
    # the rg output dropped, the identical sed output kept: containment would say found
    kept = [MESSAGES[i] for i in (0, 1, 4, 5)]
    assert probe_scoring.score_text(RG, "\n".join(m.text for m in kept)).score == 1.0
    assert _scores(kept, [0, 1, 4, 5])["rg"] == 0.0
    # its own output in context (in any version holding the line): found
    assert _scores([MESSAGES[3]], [3])["rg"] == 1.0


def test_an_ambiguous_answer_counts_beside_its_call_and_an_unambiguous_one_anywhere() -> None:
    summary_without_call = "Errors seen: error: sandbox denied exec."
    summary_with_call = "`rg Foo src` failed: error: sandbox denied exec."
    assert _scores([summary_without_call], [None])["rg"] == 0.0  # which call? cannot tell
    assert _scores([summary_with_call], [None])["rg"] == 1.0
    # the KeyError is printed once only: quoted anywhere, it is that call's
    assert _scores(["The read failed with KeyError: 'missing'."], [None])["cat"] == 1.0
    # without the transcript or part indexes the scorer is score_text's containment
    text = MESSAGES[5].text
    assert ContextScorer().score([RG], [MESSAGES[5]])[0].score == 1.0
    assert ContextScorer(MESSAGES).score([RG], [MESSAGES[5]])[0].score == 1.0
    assert probe_scoring.score_text(RG, text).score == 1.0


def _codex_runs() -> tuple[tuple[Message, ...], dict[str, ReplayResult]]:
    path = CORPUS / "codex-rollout"
    name = "agentcmd-rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl"
    conversation = importers.parse((path / name).read_bytes(), name=name).conversations[0]
    runs = {
        s: replay.run(conversation, s, params=window_params(s, 20_000, {}))
        for s in ("cowagent", "claude_code", "codex", "langchain_trim")
    }
    return conversation.messages, runs


def test_codex_rollout_own_and_shared_recall_scores_agree_and_tell_calls_apart() -> None:
    messages, runs = _codex_runs()
    scorer = ContextScorer(messages)
    told_apart = 0
    for result in runs.values():
        steps, events = result.steps, result.events
        summaries = {s.id: s.output for s in result.summaries}
        own = probes.replay_probes(events, messages, steps)
        scores = score_replay(own, steps, events, summaries, messages, scorer)
        # the same questions as a shared set of this run alone: asked at the same requests
        positions = {s.index: s.source_index for s in steps}
        shared = shared_probes.union([shared_probes.RunProbes("r", own, positions)])
        asked = shared_probes.score_run(shared, steps, events, summaries, messages, scorer)
        by_question = {(p.kind, p.question, p.answers): p.key for p in shared}
        for p in own:
            other = asked[by_question[(p.kind, p.question, p.answers)]].score
            assert other is not None and other.score == scores[p.key].score, p.question
        texts = probe_scoring.replay_contexts(steps, events, summaries, messages, positions)
        for p in own:
            plain = probe_scoring.score_text(p, texts[p.step]).score
            if p.kind != "recall" or not scorer.other_outputs(p):
                assert scores[p.key].score == plain, p.question  # unchanged where unambiguous
            elif plain > scores[p.key].score:
                told_apart += 1
                step = next(s for s in steps if s.index == p.step)
                assert not any(a <= p.source < b for a, b in step.context)
    # summarised sandbox refusals: the same text kept from other calls no longer counts
    assert told_apart >= 4
    cowagent = runs["cowagent"]
    own = probes.replay_probes(cowagent.events, messages, cowagent.steps)
    recall = [p for p in own if p.kind == "recall"]
    assert recall and all("sandbox denied" in p.answers[0] for p in recall)
    assert all(scorer.other_outputs(p) > 10 for p in recall)


def test_original_compactions_are_scored_with_the_same_anchoring() -> None:
    def rg_score(summary_text: str) -> float:
        summary = user(summary_text, flags=frozenset({"compact_summary"}))
        messages = (*MESSAGES, summary, user("go on"))
        compaction = OriginalCompaction(9, "compact_boundary", "auto", None, 8)
        found, scores = original_scores(Conversation("t", "t", messages, compactions=(compaction,)))
        rg = next(p for p in found if probes.asked_about(p.question) == "rg Foo src")
        return scores[rg.key].score

    assert rg_score("Summary: `rg Foo src` failed: error: sandbox denied exec.") == 1.0
    # the same words beside another call: not the rg call's error
    assert rg_score("Summary: `sed -n 1,20p src/app.py` failed: error: sandbox denied exec.") == 0.0


def test_codex_rollout_a_refusal_a_run_removed_stays_lost_when_asked_later() -> None:
    """The defect this fixes: cowagent scored 0 on its own recall probes and 5 of 6 on
    the same questions asked later in the shared set, where other calls' refusals were."""
    messages, runs = _codex_runs()
    scorer = ContextScorer(messages)
    own, positions = {}, {}
    for name, result in runs.items():
        own[name] = probes.replay_probes(result.events, messages, result.steps)
        positions[name] = {s.index: s.source_index for s in result.steps}
    shared = shared_probes.union(shared_probes.RunProbes(n, own[n], positions[n]) for n in runs)
    cowagent = runs["cowagent"]
    summaries = {s.id: s.output for s in cowagent.summaries}
    mine = score_replay(own["cowagent"], cowagent.steps, cowagent.events, summaries, messages)
    asked = shared_probes.score_run(
        shared, cowagent.steps, cowagent.events, summaries, messages, scorer
    )
    key = {(p.kind, p.question, p.answers): p.key for p in shared}
    lost = [p for p in own["cowagent"] if p.kind == "recall" and mine[p.key].score == 0]
    assert len(lost) >= 2
    for p in lost:
        later = asked[key[(p.kind, p.question, p.answers)]]
        assert later.score is not None and later.score.score == 0.0, p.question
    assert shared_probes.tally(shared, asked)["by_kind"]["recall"]["answered"] < len(
        [p for p in shared if p.kind == "recall"]
    )


_ALPHABET = "ab1 2\n\t→:'\"`İﬁK."


@settings(max_examples=300, deadline=None)
@given(
    outputs=st.lists(st.text(alphabet=_ALPHABET, max_size=40), min_size=1, max_size=6),
    answer=st.text(alphabet=_ALPHABET, min_size=1, max_size=12),
    source=st.integers(min_value=0, max_value=5),
)
def test_other_outputs_prefilter_counts_what_testing_every_output_counts(
    outputs: list[str], answer: str, source: int
) -> None:
    """``ContextScorer`` counts the other outputs holding an answer only among those whose
    raw text holds the answer's longest word (``_may_hold``): the same count as normalising
    and testing every output, with line-number prefixes, quotes, ligatures and case folds."""
    messages = [system("s")]
    for i, text in enumerate(outputs):
        messages += [call(f"c{i}", "shell", command=f"cmd {i}"), tool_result(f"c{i}", text)]
    source = 2 + 2 * (source % len(outputs))  # a tool output's index
    needle = probe_scoring.normalise(answer)
    tail = probe_scoring._path_tail(needle)
    expected = sum(
        1
        for i, m in enumerate(messages)
        if m.tool_results and i != source
        for text in [probe_scoring.normalise(message_text(m))]
        if (needle and needle in text) or (tail and tail in text)
    )
    assert ContextScorer(messages)._others_holding(answer, source, messages) == expected
