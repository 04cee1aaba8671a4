"""survival.py / instructions.py on synthetic sessions whose right answers are known."""

from __future__ import annotations

from builders import assistant, call, system, tool_result, tool_use, user

from ctxlab.engine.core.model import Conversation, Message, OriginalCompaction
from ctxlab.engine.core.records import (
    Change,
    Event,
    Fate,
    ReplayResult,
    StepRecord,
    StepTokens,
    SummaryRecord,
    Zones,
)
from ctxlab.engine.evaluate import survival

CLAUDE_MD = (
    "<system-reminder>\nContents of /repo/CLAUDE.md (project instructions, checked into the "
    "codebase):\n\nRun migrations with make migrate before serving the application.\n"
    "Format every Python change with ruff format before committing anything.\n"
    "</system-reminder>"
)
PREAMBLE = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)


def summary_message(text: str) -> Message:
    return user(PREAMBLE + text, flags=frozenset({"compact_summary"}))


def conversation(messages: list[Message], boundaries: list[int]) -> Conversation:
    compactions = tuple(
        OriginalCompaction(before_index=b, kind="compact_boundary", summary_index=b)
        for b in boundaries
    )
    return Conversation("c", "t", tuple(messages), compactions=compactions)


def test_original_counts_by_category_what_the_summary_and_reattached_files_keep() -> None:
    messages = [
        user(CLAUDE_MD),  # 0: project rules
        user("Never edit the generated files under src/gen. Please add retries to the fetcher."),
        call("t1", "Bash", command="pytest -q tests/test_fetch.py"),  # 2: command
        tool_result("t1", "E   KeyError: 'retries'\nFAILED tests/test_fetch.py::test_retry"),
        assistant("I'll use tenacity instead of a hand-written loop in src/fetch/client.py."),
        call(
            "t2",
            "TodoWrite",
            todos=[
                {"content": "Add retry decorator to fetch_page", "status": "completed"},
                {"content": "Document the retry budget in README", "status": "pending"},
            ],
        ),
        tool_result("t2", "ok"),
        # 7: the summary keeps the path and the decision, not the command or the error
        summary_message(
            "The user asked for retries in the fetcher. Decided to use tenacity rather than "
            "a hand-written loop in src/fetch/client.py. Next: the retry budget goes into "
            "the README documentation."
        ),
        user(CLAUDE_MD),  # 8: Claude Code re-attaches CLAUDE.md verbatim
        assistant("Continuing."),
    ]
    run = survival.analyse_original(conversation(messages, [7]))
    (comp,) = run.compactions
    counts = comp.counts
    assert counts["paths"][0] >= 2 and "src/fetch/client.py" not in comp.lost.get("paths", [])
    assert "tests/test_fetch.py" in comp.lost["paths"]
    assert counts["commands"] == [1, 0, 0]
    assert comp.lost["commands"] == ["pytest -q tests/test_fetch.py"]
    assert counts["errors"][1] == 0 and counts["errors"][0] >= 1
    assert counts["decisions"] == [1, 1, 1]  # paraphrased in the summary
    assert counts["open_tasks"] == [1, 1, 1]  # only the pending item is an open task
    statuses = {row["kind"]: row["status"] for row in comp.instructions}
    assert statuses["project_rules"] == "reattached"
    assert statuses["user_constraint"] == "dropped"  # "never edit ... src/gen": gone
    data = run.as_dict()
    assert data["categories"]["commands"]["share"] == 0.0
    assert [f["kind"] for f in data["findings"]] == ["instruction_dropped"]
    assert data["findings"][0]["label"].startswith("Never edit the generated files")


def test_instruction_kept_summarised_and_dropped_are_told_apart() -> None:
    constraint = "Always run the linter with ruff check before every commit in this repo."
    base = [
        user(constraint),
        assistant("Sure."),
        user("Fix the flaky upload test."),
        assistant("On it."),
    ]

    def status_after(summary: str, after: list[Message]) -> str:
        conv = conversation([*base, summary_message(summary), *after, assistant("ok")], [4])
        (comp,) = survival.analyse_original(conv).compactions
        (row,) = [r for r in comp.instructions if r["kind"] == "user_constraint"]
        return row["status"]

    assert status_after("The user wants the flaky upload test fixed.", []) == "dropped"
    assert (
        status_after("Rule: always run the linter (ruff check) before every commit.", [])
        == "summarised"
    )
    assert status_after("Fix the flaky upload test.", [user(constraint)]) == "reattached"


def test_a_fact_that_survives_summary_one_and_vanishes_in_summary_two_is_drift() -> None:
    messages = [
        user("Please fix the crash in /srv/app/config.yaml loading."),
        tool_result("t0", "ValueError in parse_config at /srv/app/config.yaml line 3"),
        assistant("Found it."),
        summary_message("Fixing parse_config; the bad file is /srv/app/config.yaml."),  # 3
        assistant("Next step."),
        user("Now make load_settings faster."),
        assistant("Working."),
        summary_message("Made load_settings faster; parse_config was fixed."),  # 7
        assistant("Done."),
    ]
    run = survival.analyse_original(conversation(messages, [3, 7]))
    first, second = run.compactions
    assert first.drift == [] and first.drift_count == 0
    assert ("paths", "/srv/app/config.yaml") in second.drift
    assert ("identifiers", "parse_config") not in second.drift
    data = run.as_dict()
    assert data["first_summary_facts"] == 2  # the path and parse_config
    assert data["first_summary_still_present"] == 1
    assert data["first_summary_persistence"] == 0.5
    assert data["drift_total"] == second.drift_count >= 1


def test_one_summary_has_no_persistence_yet() -> None:
    messages = [user("see /a/b/c.py"), summary_message("c.py at /a/b/c.py"), assistant("x")]
    data = survival.analyse_original(conversation(messages, [1])).as_dict()
    assert data["first_summary_persistence"] is None
    assert data["categories"]["paths"]["survived"] == 1


ZONES = Zones(0, 0, 0, 0, 0, 0, 0, 1000, None)

REPLAYED = (
    system("You are an agent. Never push to main without review."),  # 0
    user("Always use pnpm, never npm. Fix the build of web/app/page.tsx please."),  # 1
    call("t1", "Bash", command="pnpm build"),  # 2
    tool_result("t1", "error: Cannot find module 'left-pad' in web/app/page.tsx"),  # 3
    assistant("The fix is to vendor left-pad into web/lib/pad.ts rather than reinstalling."),
    user("ok go on"),  # 5
)


def step(index: int, ranges: tuple[tuple[int, int], ...], summary: int | None = None) -> StepRecord:
    return StepRecord(index, 0, StepTokens(0, 0), ZONES, ranges, summary)


def replay_result(
    events: list[Event], steps: list[StepRecord], summaries: list[str]
) -> ReplayResult:
    return ReplayResult(
        strategy="x", params={}, estimator="e", summarizer="s",
        message_count=len(REPLAYED), steps=steps, events=events,
        summaries=[SummaryRecord(i, 1, "", text) for i, text in enumerate(summaries)],
    )  # fmt: skip


def test_replay_summary_keeps_some_categories_and_drops_others() -> None:
    summarise = Event(
        0, 1, "summarise", (1, 2, 3, 4),
        changes=tuple(Change(i, Fate.SUMMARISED) for i in (1, 2, 3, 4)), summary_id=0,
    )  # fmt: skip
    summary = "Fixing web/app/page.tsx; decided to vendor left-pad into web/lib/pad.ts."
    res = replay_result([summarise], [step(0, ((0, 6),)), step(1, ((0, 1), (5, 6)), 0)], [summary])
    retention, run = survival.analyse_replay(res, REPLAYED)
    assert retention.at_risk > 0  # one pass gives the loss analysis too
    (comp,) = run.compactions
    assert comp.label == "summarise" and comp.step == 1 and comp.messages == 4
    assert comp.counts["paths"][:2] == [2, 2]
    assert comp.counts["commands"] == [1, 0, 0]
    assert comp.counts["decisions"] == [1, 1, 1]
    rows = {r["label"]: r["status"] for r in comp.instructions}
    assert rows["Always use pnpm, never npm."] == "dropped"
    assert "system prompt" not in rows  # the system message was not touched


def test_replay_kept_tail_counts_as_survival_and_reattached_source_is_seen() -> None:
    messages = (*REPLAYED, user("Always use pnpm, never npm."))  # 6: the user repeats it
    drop = Event(0, 1, "drop", (1,), changes=(Change(1, Fate.DROPPED),))
    res = ReplayResult(
        strategy="x", params={}, estimator="e", summarizer="s", message_count=7,
        steps=[step(0, ((0, 7),)), step(1, ((0, 1), (2, 7)))], events=[drop],
    )  # fmt: skip
    _, run = survival.analyse_replay(res, messages)
    (comp,) = run.compactions
    assert comp.counts["paths"] == [1, 1, 0]  # web/app/page.tsx is still in message 3
    assert {r["status"] for r in comp.instructions if r["kind"] == "user_constraint"} == {
        "reattached"
    }


def test_non_compaction_events_are_not_counted() -> None:
    sanitize = Event(0, 1, "sanitize", (3,), changes=(Change(3, Fate.DROPPED),))
    res = replay_result([sanitize], [step(0, ((0, 6),)), step(1, ((0, 3), (4, 6)))], [])
    _, run = survival.analyse_replay(res, REPLAYED)
    assert run.compactions == [] and run.as_dict()["survival"] is None


def test_extra_facts_are_memoised_by_text() -> None:
    first = survival.extra_facts(assistant("We decided to go with SQLite rather than Postgres."))
    again = survival.extra_facts(assistant("We decided to go with SQLite rather than Postgres."))
    assert first == again == {("decisions", "We decided to go with SQLite rather than Postgres.")}
    assert survival.extra_facts(assistant("", tool_use("x", "TodoWrite", todos=[]))) == frozenset()


def test_every_category_is_catalogued() -> None:
    from ctxlab.engine.core import catalogue

    assert tuple(catalogue.FACT_CATEGORIES) == survival.CATEGORIES
    for kind in ("instruction_summarised", "instruction_dropped"):
        assert kind in catalogue.FINDINGS
    for key in ("survival", "first_summary_persistence", "drift_total", "instruction_losses"):
        assert catalogue.metric(key).meaning


def test_fact_memo_is_keyed_by_a_hash_and_keeps_no_text_alive() -> None:
    import gc
    import weakref

    from ctxlab.engine.core import textkeys
    from ctxlab.engine.evaluate import extract

    class Text(str):  # a str subclass can be weakly referenced
        __slots__ = ("__weakref__",)

    extract.clear_caches()
    text = Text("see /srv/app/settings.py and load_settings after 250 ms " * 50)
    ref = weakref.ref(text)
    found = extract.fact_set(text)
    assert ("paths", "/srv/app/settings.py") in found
    key = textkeys.text_key(str(text))
    assert key in extract._FACT_SETS.items and extract._FACT_SETS.chars == len(text)
    assert extract.fact_set(str(text)) is found  # an equal text is served from the memo
    del text
    gc.collect()
    assert ref() is None


def test_weighted_memo_evicts_by_the_weight_it_stands_for() -> None:
    from ctxlab.engine.core.lru import BoundedLRU

    memo = BoundedLRU[int](max_entries=100, max_chars=100)
    memo.set("a", 1, weight=60)
    memo.set("b", 2, weight=30)
    memo.set("c", 3, weight=30)  # 120 > 100: the least recently used goes
    assert list(memo.items) == ["b", "c"] and memo.chars == 60
    memo.set("d", 4)  # default weight: the key's length
    assert memo.chars == 61


def test_sources_system_prompt_rules_skill_and_constraints_are_recognised() -> None:
    from ctxlab.engine.evaluate import instructions

    messages = [
        system("You are a careful agent. Never delete user data."),
        user(CLAUDE_MD),
        user("Base directory for this skill: /home/u/.claude/skills/pdf-forms\n\nFill forms."),
        user("# AGENTS.md instructions for /repo\n\nUse uv for every Python command."),
        user("Please use pnpm instead of npm for installs. Thanks!"),
        assistant("Always happy to help."),  # an assistant's words are not a source
    ]
    found = [(s.kind, s.label, s.message) for s in instructions.sources(messages)]
    assert found == [
        ("system_prompt", "system prompt", 0),
        ("project_rules", "/repo/CLAUDE.md", 1),
        ("skill", "skill pdf-forms", 2),
        ("project_rules", "AGENTS.md", 3),
        ("user_constraint", "Please use pnpm instead of npm for installs.", 4),
    ]


def test_a_dropped_system_prompt_is_a_finding() -> None:
    drop = Event(0, 1, "drop", (0, 1), changes=(Change(0, Fate.DROPPED), Change(1, Fate.DROPPED)))
    res = replay_result([drop], [step(0, ((0, 6),)), step(1, ((2, 6),))], [])
    _, run = survival.analyse_replay(res, REPLAYED)
    kinds = {(f["source"], f["kind"]) for f in run.findings()}
    assert ("system_prompt", "instruction_dropped") in kinds
    assert ("user_constraint", "instruction_dropped") in kinds


def test_risk_counted_without_sorting_every_fact_as_the_sorted_rule_counts() -> None:
    """``_count_risk`` (the worker's hot loop) gives what counting every fact at risk in
    sorted order gives: counts, and the first ``LOST_EXAMPLES`` lost values per category,
    categories in sorted order (more lost facts than examples in some, none in others)."""
    import random

    rng = random.Random(33)
    kinds = ["paths", "numbers", "identifiers", "errors", "instructions", "urls"]
    risk = {(rng.choice(kinds), f"v{rng.randrange(10_000):05d}"): 0 for _ in range(600)}
    risk.update({("commands", f"c{i}"): 0 for i in range(3)})  # fewer than the examples
    stayed_set = {f for f in risk if rng.random() < 0.4} | {("commands", "c1")}
    summary = frozenset(f for f in stayed_set if rng.random() < 0.5)
    words: frozenset[str] = frozenset()
    expected = survival.CompactionSurvival("k", 1, None, 3)
    for fact in sorted(risk):
        expected.count(
            fact, fact in stayed_set, survival.lost.kept_by_summary(fact, summary, words)
        )
    got = survival.CompactionSurvival("k", 1, None, 3)
    from ctxlab.engine.evaluate import lost

    verdicts = {
        f: lost.KEPT_BY_SUMMARY
        if f in stayed_set and lost.kept_by_summary(f, summary, words)
        else lost.IN_CONTEXT
        if f in stayed_set
        else lost.LOST
        for f in risk
    }  # lost's verdicts (``Settled.verdicts``)
    gone = [(f, src) for f, src in risk.items() if verdicts[f] == lost.LOST]
    kept = [f for f in risk if verdicts[f] == lost.KEPT_BY_SUMMARY]
    survival._count_risk(got, risk, gone, kept)  # as ``Settled.lost``, ``.kept_by_summary``
    assert got.as_dict() == expected.as_dict()
    assert list(got.lost) == list(expected.lost) == sorted(expected.lost)
    assert max(len(v) for v in got.lost.values()) == survival.LOST_EXAMPLES
    assert any(c[2] for c in got.counts.values())  # some kept by the summary
