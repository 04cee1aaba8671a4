"""The pages speak the catalogue's vocabulary: metric rows from the one table, event and
finding kinds as labels (never a raw uncatalogued kind), old stored kinds migrated, and a
sweep's "best" never crowning a run that re-compacts at nearly every step."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.test import Client

from ctxlab.engine.core.catalogue import EVENTS, FINDINGS, METRICS
from replay_app.compare import overview
from replay_app.display import vocabulary
from replay_app.models import Run, RunEvent, RunStatus
from replay_app.runs import executor, services
from replay_app.runs.pages import run_page
from replay_app.sweeps import sweep
from replay_app.templatetags import vocabulary_tags

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("replay_app.migrations.0005_event_kind_aliases")


def test_every_page_metric_has_a_catalogue_row() -> None:
    keys = {*vocabulary.RUN_KEYS, *vocabulary.COMPARE_KEYS, *vocabulary.SWEEP_KEYS,
            *vocabulary.SWEEP_COST_KEYS}  # fmt: skip
    assert keys <= set(METRICS)
    # The tables are the catalogue's rows, not copies.
    for key, label, hint in run_page.METRICS:
        assert (label, hint) == (METRICS[key].label, METRICS[key].meaning)
    for key, label, better, hint in overview.METRICS:
        assert (label, better, hint) == (METRICS[key].label, METRICS[key].better,
                                         METRICS[key].meaning)  # fmt: skip
    for column in (*sweep.COLUMNS, *sweep.COST_COLUMNS):
        assert column.label == METRICS[column.key].label
        assert column.better == METRICS[column.key].better


def test_overflow_counts_sit_side_by_side_with_their_meanings() -> None:
    keys = [key for key, _, _ in run_page.METRICS]
    at = keys.index("overflow_steps")
    assert keys[at + 1 : at + 3] == ["overflow_steps_strategy", "overflow_flags"]
    assert "never saw" in METRICS["overflow_flags"].meaning
    assert "reference tokenizer" in METRICS["overflow_steps"].meaning
    # each overflow count names the count it uses (issue 31, item 11)
    assert METRICS["overflow_steps"].label == "Steps in overflow (cl100k)"
    assert METRICS["overflow_steps_strategy"].label == "Steps in overflow (own estimate)"
    assert "as the strategy counts it" in METRICS["overflow_steps_strategy"].meaning


@pytest.mark.parametrize(
    ("kind", "label"),
    [
        ("summarise", "Summarised"),
        ("summarize", "Summarised"),  # an old spelling reads as its kind
        ("prune_lifted", "Restored (request view)"),
        ("<b>made_up</b>", "<b>made_up</b> (uncatalogued)"),
    ],
)
def test_event_labels(kind: str, label: str) -> None:
    assert vocabulary_tags.event_label(kind) == label


def test_finding_labels_carry_their_meaning() -> None:
    for kind, row in FINDINGS.items():
        assert vocabulary_tags.finding_label(kind) == row.label
        assert vocabulary_tags.finding_meaning(kind) == row.meaning


def _run(user: Any, transcript: Any, **kw: Any) -> Run:
    fields: dict[str, Any] = {
        "owner": user, "transcript": transcript, "label": "baseagent", "strategy": "baseagent",
        "params": {}, "status": RunStatus.DONE,
    }  # fmt: skip
    fields.update(kw)
    return Run.objects.create(**fields)


def test_migration_renames_old_kinds_and_recounts_by_category(
    user: Any, small_transcript: Any
) -> None:
    # A run stored before the catalogue: BaseAgent's lifted prune counted as a compaction.
    old = {"prune": 2, "prune_lifted": 1, "summarize": 1}
    run = _run(
        user, small_transcript,
        metrics={"steps": 10, "threshold": 1000, "events": old, "compactions": old,
                 "compaction_count": 4, "firing_per_100_steps": 40.0, "thrash": 3,
                 "peak_reference": 5},
    )  # fmt: skip
    for seq, (step, kind, after) in enumerate(
        [(1, "prune", 950), (2, "prune_lifted", 990), (4, "prune", 950), (8, "summarize", 100)]
    ):
        RunEvent.objects.create(run=run, seq=seq, step=step, kind=kind, tokens_after=after)
    MIGRATION.forwards(apps, None)
    assert sorted(run.events.values_list("kind", flat=True)) == [
        "prune", "prune", "restore_request", "summarise"
    ]  # fmt: skip
    run.refresh_from_db()
    m = run.metrics
    assert m["events"] == {"prune": 2, "restore_request": 1, "summarise": 1}
    assert m["compactions"] == {"prune": 2, "summarise": 1}
    assert m["compaction_count"] == 3 and m["restore_count"] == 1
    assert m["firing_per_100_steps"] == 30.0  # steps 1, 4, 8 of 10
    assert m["thrash"] == 1  # step 4 fires 3 steps after step 1 near the threshold
    assert m["peak_reference"] == 5  # other metrics untouched


def test_run_page_shows_labels_not_raw_kinds(
    auth_client: Client, user: Any, small_transcript: Any
) -> None:
    run = _run(
        user, small_transcript,
        metrics={"steps": 3, "events": {"summarise": 1, "made_up": 1},
                 "compactions": {"summarise": 1}, "findings": {"overflow": 1}},
    )  # fmt: skip
    RunEvent.objects.create(run=run, seq=0, step=1, kind="summarise", tokens_after=10)
    RunEvent.objects.create(run=run, seq=1, step=2, kind="made_up", tokens_after=10)
    html = auth_client.get(f"/runs/{run.pk}/").content.decode()
    events = html[html.index('id="run-events"') :]
    assert (
        ">Summarised</span>" in events
        and f'title="compaction: {EVENTS["summarise"].meaning}"' in events
    )
    assert ">made_up (uncatalogued)</span>" in events
    assert ">summarise</span>" not in events
    metrics = html[
        html.index('id="run-metrics"') : html.index("</section>", html.index('id="run-metrics"'))
    ]
    assert "Summarised 1" in metrics and "Request over the window 1" in metrics


def _sweep_run(pk: int, value: int, **metrics: Any) -> Run:
    return Run(
        pk=pk, strategy="qwenpaw", summarizer="offline", label=f"max_input_length={value}",
        params={"max_input_length": value, "compact_threshold_ratio": 0.8},
        status=RunStatus.DONE, metrics=metrics,
    )  # fmt: skip


def test_sweep_best_never_crowns_a_run_that_compacts_at_nearly_every_step() -> None:
    busy = _sweep_run(1, 8000, steps=100, peak_reference=3000, input_tokens_total=9000,
                      firing_per_100_steps=98.0, thrash=90, compaction_count=98)  # fmt: skip
    calm = _sweep_run(2, 32000, steps=100, peak_reference=20000, input_tokens_total=50000,
                      firing_per_100_steps=60.0, thrash=2, compaction_count=60)  # fmt: skip
    roomy = _sweep_run(3, 128000, steps=100, peak_reference=60000, input_tokens_total=90000,
                       firing_per_100_steps=55.0, thrash=0, compaction_count=55)  # fmt: skip
    found = sweep.detect([busy, calm, roomy])
    assert found is not None
    best = {c.key: [r.run.pk for r in found.rows if r.best[i]] for i, c in enumerate(found.columns)}
    # The busy setting's small peak and input total are not "best"; the calm one's are.
    assert best["peak_reference"] == [2] and best["input_tokens_total"] == [2]
    # Thrash and firing are judged on their own: the roomy setting fires least.
    assert best["thrash"] == [3] and best["firing_per_100_steps"] == [3]
    column = next(c for c in found.columns if c.key == "peak_reference")
    assert "not eligible" in column.best_rule


# Template expressions that print a ``kind`` of another vocabulary: custom-strategy stage
# names, fact categories, the importer's names for the original's own compactions.
OTHER_VOCABULARIES = {"row.kind", "f.kind", "row.original_kind"}


def test_no_template_prints_a_raw_event_or_finding_kind() -> None:
    """Text nodes show event and finding kinds through the label filters (attributes such as
    data-kind keep the code, for scripts and tests)."""
    templates = Path(settings.BASE_DIR) / "replay_app" / "templates"
    raw = re.compile(r'(?<![="])\{\{ *([\w.]*kind) *\}\}')
    found = [
        f"{path.relative_to(templates)}: {match.group(1)}"
        for path in templates.rglob("*.html")
        for match in raw.finditer(path.read_text(encoding="utf-8"))
        if match.group(1) not in OTHER_VOCABULARIES
    ]
    assert not found


def test_a_stored_runs_metric_keys_all_have_catalogue_rows(user: Any, small_transcript: Any):
    """The whole path (engine metrics + cost ledger + ground truth + whatever the service
    adds) over a real run: every key it stores has a row, and its page shows labels only."""
    run = services.run_create(
        owner=user, transcript=small_transcript,
        spec=services.RunSpec(
            strategy="qwenpaw", params={"max_input_length": 1024, "pruning_old_msg_max_bytes": 200}
        ),
        enqueue=False,
    )  # fmt: skip
    run = executor.run_execute(run=run, batch_steps=7)
    assert run.status == RunStatus.DONE, run.error
    assert run.metrics["events"], "the small window makes qwenpaw act"
    assert set(run.metrics) <= set(METRICS), sorted(set(run.metrics) - set(METRICS))
    assert set(run.metrics["events"]) <= set(EVENTS)


def test_run_json_carries_the_metric_table(
    auth_client: Client, user: Any, small_transcript: Any
) -> None:
    run = _run(user, small_transcript, metrics={"steps": 3, "overflow_steps": 1})
    rows = auth_client.get(f"/runs/{run.pk}/?format=json").json()["metric_rows"]
    assert [r["key"] for r in rows] == list(vocabulary.RUN_KEYS)
    by_key = {r["key"]: r for r in rows}
    row = METRICS["overflow_steps"]
    assert by_key["overflow_steps"] == {
        "key": "overflow_steps", "label": row.label, "unit": row.unit, "better": row.better,
        "help": row.meaning, "best_rule": row.best_rule, "value": 1,
    }  # fmt: skip
