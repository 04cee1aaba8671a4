"""The one vocabulary: strategies emit only catalogued kinds, metrics count by category,
every metric key has a row, "best" is thrash-aware, docs/vocabulary.md is in step."""

from __future__ import annotations

from pathlib import Path

import pytest
from catalogue_runs import emitted_kinds, library_results

from ctxlab.engine.core import catalogue
from ctxlab.engine.core.catalogue import EVENT_ALIASES, EVENTS, FINDINGS, METRICS
from ctxlab.engine.core.findings import FINDING_KINDS
from ctxlab.engine.core.records import Change, Event, Fate, Finding, ReplayResult
from ctxlab.engine.evaluate.metrics import compute_metrics

DOC = Path(__file__).resolve().parents[3] / "docs" / "vocabulary.md"


def test_library_emits_only_catalogued_kinds_in_their_own_spelling() -> None:
    kinds = emitted_kinds()
    assert set(kinds) <= set(EVENTS), f"uncatalogued: {sorted(set(kinds) - set(EVENTS))}"
    assert not set(kinds) & set(EVENT_ALIASES), "strategies emit the catalogue spelling"
    # The runs exercise every category but info-only ones: the check is not vacuous.
    seen = {EVENTS[k].category for k in kinds}
    assert {"compaction", "restore", "repair", "failure", "skip"} <= seen


def test_library_findings_are_catalogued() -> None:
    kinds = {f.kind for *_, result in library_results() for f in result.findings}
    assert kinds and kinds <= set(FINDINGS)
    assert set(FINDING_KINDS) == set(FINDINGS)


def test_every_computed_metric_key_has_a_row() -> None:
    keys = {k for *_, result in library_results() for k in result.metrics}
    assert keys <= set(METRICS), f"no catalogue row: {sorted(keys - set(METRICS))}"


@pytest.mark.parametrize(
    ("kind", "category"),
    [
        pytest.param("prune_lifted", "restore", id="baseagent-lift-is-a-restore"),
        pytest.param("restore_request", "restore", id="picoclaw-restore"),
        pytest.param("trim_request", "compaction", id="alias-of-trim"),
        pytest.param("summarize", "compaction", id="alias-of-summarise"),
        pytest.param("drop_turns", "compaction", id="alias-of-drop"),
        pytest.param("summary_skipped", "skip", id="skipped-family"),
        pytest.param("sanitize", "repair", id="repair"),
        pytest.param("compact_failed", "failure", id="failure"),
        pytest.param("no_such_kind", None, id="unknown"),
    ],
)
def test_category_through_aliases(kind: str, category: str | None) -> None:
    assert catalogue.event_category(kind) == category


def test_aliases_never_shadow_a_kind() -> None:
    assert not set(EVENT_ALIASES) & set(EVENTS)
    assert set(EVENT_ALIASES.values()) <= set(EVENTS)


def _event(i: int, step: int, kind: str, fate: Fate | None, after: int = 0) -> Event:
    changes = (Change(i, fate),) if fate else ()
    return Event(i, step, kind, tokens_before=1000, tokens_after=after, changes=changes)


def test_restores_are_not_compactions_and_do_not_thrash() -> None:
    # prune at 1, its lifting at 2 (old and new spelling), prune again at 4: two compactions.
    events = [
        _event(0, 1, "prune", Fate.PRUNED, after=950),
        _event(1, 2, "restore_request", Fate.RESTORED, after=990),
        _event(2, 2, "prune_lifted", Fate.RESTORED, after=990),
        _event(3, 3, "sanitize", Fate.DROPPED, after=990),
        _event(4, 3, "summary_failed", None, after=990),
        _event(5, 4, "prune", Fate.PRUNED, after=950),
    ]
    result = ReplayResult("t", {}, "", "", 10, events=events)
    result.findings.append(Finding(1, "overflow"))
    m = compute_metrics(result, threshold=1000)
    assert m["compaction_count"] == 2
    assert m["compactions"] == {"prune": 2}
    assert m["restore_count"] == 2 and m["failure_count"] == 1
    assert m["events"]["restore_request"] == 2 and "prune_lifted" not in m["events"]
    # The second prune fires 3 steps after the first, still near the threshold: one thrash;
    # had the restores counted, firing and thrash would be higher.
    assert m["thrash"] == 1


def test_picoclaw_restores_on_a_corpus_session_are_not_counted() -> None:
    runs = [r for _, label, _, r in library_results() if label == "picoclaw"]
    restored = [r for r in runs if any(e.kind == "restore_request" for e in r.events)]
    assert restored, "the small-window picoclaw runs restore what their trims hid"
    for r in restored:
        compactions = [e for e in r.events if catalogue.is_compaction(e.kind)]
        assert r.metrics["compaction_count"] == len(compactions)
        assert r.metrics["restore_count"] == sum(e.kind == "restore_request" for e in r.events)
        assert "restore_request" not in r.metrics["compactions"]


def test_best_skips_pathological_runs_on_guarded_metrics() -> None:
    calm = {"steps": 100, "firing_per_100_steps": 95.0, "thrash": 3}
    busy = {"steps": 100, "firing_per_100_steps": 99.0, "thrash": 80}
    # The busy run has the smallest peak, but re-compacting near its threshold at 80 of
    # 100 steps is no "best"; the calm run's firing rate (tool results offloaded as they
    # arrive) does not disqualify it.
    assert catalogue.metric_best_flags("peak_reference", [900, 5000], [busy, calm]) == [
        False,
        True,
    ]
    # Thrash itself is judged as usual (lower is better; the calm run wins).
    assert catalogue.metric_best_flags("thrash", [80, 3], [busy, calm]) == [False, True]
    # Unguarded rule without run metrics: the plain lowest.
    assert catalogue.best_flags([900, 5000], "lower") == [True, False]
    # Every run pathological: no best at all rather than a busy one.
    assert catalogue.metric_best_flags("peak_reference", [900, 800], [busy, busy]) == [
        False,
        False,
    ]


@pytest.mark.parametrize(
    ("steps", "thrash", "expected"),
    [(100, 24, False), (100, 25, True), (0, 0, False), (8, 2, True)],
)
def test_pathological_limits(steps: int, thrash: int, expected: bool) -> None:
    metrics = {"steps": steps, "firing_per_100_steps": 99.0, "thrash": thrash}
    assert catalogue.pathological(metrics) is expected


def test_every_guarded_or_directed_metric_documents_its_best_rule() -> None:
    for row in METRICS.values():
        assert row.label and row.unit and row.meaning
        if row.guarded:
            assert row.better and "not eligible" in row.best_rule


def test_vocabulary_doc_is_generated_from_the_catalogue() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert text == catalogue.vocabulary_markdown(), (
        "regenerate: python -m ctxlab.engine.core.catalogue > docs/vocabulary.md"
    )
    for kind in [*EVENTS, *EVENT_ALIASES, *FINDINGS, *METRICS]:
        assert f"`{kind}`" in text


def test_a_run_over_its_window_wins_nothing_unless_every_run_overflows() -> None:
    fits = {"steps": 58, "thrash": 0, "overflow_steps": 0}
    over = {"steps": 58, "thrash": 0, "overflow_steps": 33}
    # A PicoClaw run that sat 33 steps over the window compacted once: fewest compactions,
    # but not the best; the runs that kept their requests in the window are judged instead.
    assert catalogue.metric_best_flags("compaction_count", [1, 3, 2], [over, fits, fits]) == [
        False,
        False,
        True,
    ]
    assert catalogue.metric_best_flags("retention", [0.9, 0.3], [over, fits]) == [False, True]
    # Steps in overflow itself is judged as usual.
    assert catalogue.metric_best_flags("overflow_steps", [33, 0], [over, fits]) == [False, True]
    # When every run overflows, they are compared among themselves.
    assert catalogue.metric_best_flags("compaction_count", [1, 3], [over, over]) == [True, False]
    assert "overflow" in catalogue.metric("compaction_count").best_rule
    assert "overflow" not in catalogue.metric("overflow_steps").best_rule
