"""Issue 31 item 7: "What was lost" (``lost``) and "Fact survival" (``survival``) read one
rule for whether a fact survived a compaction. Seen on a Codex compaction: the user's
instructions, copied word for word into its summary, were listed as lost by one and
counted kept by the other (a summary is plain text: no instruction is *extracted* from
it, so an exact-fact lookup never finds one there)."""

from __future__ import annotations

from ctxlab.engine.core.model import Block, BlockKind, Message, Role
from ctxlab.engine.core.records import Change, Event, Fate, StepRecord, StepTokens, Zones
from ctxlab.engine.evaluate import lost, survival

ZONES = Zones(0, 0, 0, 0, 0, 0, 0, 0, None)
INSTRUCTIONS = (
    "Always run the tests with pytest -q before you commit.",
    "Never push directly to the main branch.",
)


def _text(role: Role, text: str) -> Message:
    return Message(role, (Block(BlockKind.TEXT, text=text),))


ORIGINALS = [
    _text(Role.USER, "Fix the parser in src/parse.py.\n" + "\n".join(INSTRUCTIONS)),
    _text(Role.ASSISTANT, "Reading src/parse.py now."),
    _text(Role.USER, "Also check tokens.py for the off-by-one."),
    _text(Role.ASSISTANT, "Done."),
]
# Codex's summary (handoff note): the instructions word for word, the path too.
SUMMARY = (
    "The user asked to fix the parser in src/parse.py. User rules: "
    + " ".join(INSTRUCTIONS)
    + " Then: check tokens.py."
)


def _replay() -> tuple[list[StepRecord], list[Event], dict[int, str]]:
    event = Event(
        id=1, step=2, kind="compact", messages=(0, 1),
        changes=(Change(0, Fate.SUMMARISED), Change(1, Fate.SUMMARISED)), summary_id=7,
    )  # fmt: skip
    steps = [
        StepRecord(0, 0, StepTokens(10, 10), ZONES, ((0, 1),)),
        StepRecord(1, 2, StepTokens(20, 20), ZONES, ((0, 3),)),
        StepRecord(2, 2, StepTokens(8, 8), ZONES, ((2, 3),), summary_id=7),
    ]
    return steps, [event], {7: SUMMARY}


def test_instructions_copied_into_the_summary_are_not_lost() -> None:
    steps, events, summaries = _replay()
    retention = lost.analyse_parts(steps, events, summaries, ORIGINALS)
    (loss,) = retention.events
    lost_values = {f.value for f in loss.lost}
    assert not lost_values & set(INSTRUCTIONS)
    assert loss.lost_count == 0 and retention.score == 1.0


def test_what_was_lost_and_fact_survival_agree_per_compaction() -> None:
    steps, events, summaries = _replay()
    retention, table = survival.analyse_replay_parts(steps, events, summaries, ORIGINALS)
    (loss,) = retention.events
    (comp,) = table.compactions
    kinds = {fact.kind for fact in loss.lost} | set(comp.lost)
    # every fact the retention list counts is a survival fact of the same category
    for kind in {"instructions", "paths"} | kinds:
        at_risk, survived, _ = comp.counts[kind]
        lost_here = sum(1 for f in loss.lost if f.kind == kind)
        assert at_risk - survived == lost_here, kind
        assert sorted(comp.lost.get(kind, [])) == sorted(
            f.value for f in loss.lost if f.kind == kind
        )
    assert comp.counts["instructions"][:2] == [3, 3]  # the parser request too (paraphrased)
    assert comp.counts["instructions"][2] == 3  # kept by the summary


def test_an_instruction_the_summary_left_out_is_lost_in_both() -> None:
    steps, events, _ = _replay()
    summaries = {7: "The user asked to fix the parser in src/parse.py."}
    retention, table = survival.analyse_replay_parts(steps, events, summaries, ORIGINALS)
    (loss,) = retention.events
    (comp,) = table.compactions
    assert {f.value for f in loss.lost if f.kind == "instructions"} == set(INSTRUCTIONS)
    assert sorted(comp.lost["instructions"]) == sorted(INSTRUCTIONS)
