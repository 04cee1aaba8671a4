"""The worker's event, summary, finding and offload rows (``runs.step_rows.Inserts``: one
prepared INSERT per table and flush, values prepared by their fields) are stored as
``from_event`` / ``from_record`` + ``bulk_create`` store them: the same columns, the same
bytes in each column, in the same order, for real replays."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db.models import Model, TextField
from django.db.models.functions import Cast
from replay_testdata import FULL_SESSION_FOUR, import_transcript

from ctxlab.engine.core.records import SourceIndexes
from ctxlab.engine.replay import run as replay_run
from replay_app.models import RunEvent, RunFinding, RunOffload, RunSummary
from replay_app.runs import executor, services
from replay_app.runs.progress import _latest_events
from replay_app.runs.step_rows import Inserts, NewEvent, NewSummary, _Table, finding_row

pytestmark = pytest.mark.django_db

SESSION = FULL_SESSION_FOUR
MODELS: tuple[type[Model], ...] = (RunEvent, RunSummary, RunFinding, RunOffload)


def _new_run(transcript: Any, strategy: str) -> Any:
    return services.run_create(
        owner=transcript.owner,
        transcript=transcript,
        spec=services.RunSpec(strategy=strategy, window=12_000),
        enqueue=False,
    )


def _stored(model: type[Model], run: Any) -> list[tuple[Any, ...]]:
    """Every column but the keys, as the text the database holds, in id order."""
    names = [f.name for f in model._meta.concrete_fields if f.name not in ("id", "run")]
    casts = {f"t_{n}": Cast(n, TextField()) for n in names}
    rows = model.objects.filter(run=run).order_by("id").annotate(**casts)
    return list(rows.values_list(*casts))


@pytest.mark.parametrize("strategy", ["qwenpaw", "claude_code", "aider"])
def test_rows_are_stored_as_bulk_create_stores_them(user: Any, strategy: str) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    via_models, via_rows = _new_run(transcript, strategy), _new_run(transcript, strategy)
    result = replay_run(transcript.to_conversation(), strategy, params=via_models.params)

    def annotated(rows: list[Any]) -> list[Any]:  # as the costs annotate them
        for row in rows[:2]:
            if isinstance(row, RunSummary | NewSummary):
                row.usage = {"model": "m", "cost_usd": 0.25, "input_tokens": 7}
            else:
                row.detail["error"] = "summariser failed: ünïcode"
        return rows

    RunEvent.objects.bulk_create(
        annotated([RunEvent.from_event(via_models, e) for e in result.events])
    )
    RunSummary.objects.bulk_create(
        annotated([RunSummary.from_record(via_models, s) for s in result.summaries])
    )
    RunFinding.objects.bulk_create([RunFinding.from_record(via_models, f) for f in result.findings])
    RunOffload.objects.bulk_create(
        [RunOffload(run=via_models, path=p, text=t) for p, t in result.offloads.items()]
    )
    half = len(result.events) // 2  # two flushes, as the worker writes them
    events = annotated([NewEvent.of(e) for e in result.events])
    summaries = annotated([NewSummary.of(s) for s in result.summaries])
    findings = [finding_row(f) for f in result.findings]
    offloads = [(p, t, []) for p, t in result.offloads.items()]
    inserts = Inserts(via_rows)
    inserts.write(events[:half], summaries[:1], findings[:3], offloads[:1])
    inserts.write(events[half:], summaries[1:], findings[3:], offloads[1:])

    for model in MODELS:
        assert _stored(model, via_rows) == _stored(model, via_models), model.__name__
    assert len(_stored(RunEvent, via_rows)) == len(result.events) > 0
    if strategy == "qwenpaw":  # offloaded files, messages modified in the events' changes
        assert result.offloads and result.summaries and result.findings
    if strategy == "claude_code":
        assert len(result.summaries) > 10 and result.findings
    if strategy == "aider":  # summaries of summaries: their messages stored as runs
        assert any(isinstance(s.messages, SourceIndexes) for s in result.summaries)


def test_a_new_column_must_be_written_too() -> None:
    with pytest.raises(RuntimeError, match="RunEvent columns changed: \\['summary_seq'\\]"):
        _Table(RunEvent, ("seq", "step", "kind", "messages", "tokens_before", "tokens_after",
                          "detail", "changes"))  # fmt: skip


def test_progress_shows_the_events_as_stored(user: Any) -> None:
    """The latest events a flush announces are those the run's stored rows give."""
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    sent: list[dict[str, Any]] = []
    run = executor.run_execute(
        run=_new_run(transcript, "claude_code"), on_progress=sent.append, batch_steps=5
    )
    assert run.status == "done", run.error
    assert run.events_count > 20  # more than the latest ones shown, over several flushes
    done = [m for m in sent if m["status"] == "done"]
    assert done and done[0]["latest_events"] == _latest_events(run)


def test_batches_grow_after_the_first_two(user: Any) -> None:
    """Progress comes after ``batch_steps`` steps twice, then in batches doubling up to
    ``BATCH_GROWTH`` times that (fewer transactions for a long replay)."""
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    sent: list[dict[str, Any]] = []
    run = executor.run_execute(
        run=_new_run(transcript, "claude_code"),
        on_progress=sent.append,
        batch_steps=1,
        batch_seconds=3600,  # by size only
    )
    assert run.status == "done", run.error
    done = [m["steps_done"] for m in sent if m["status"] == "running"]
    batches = [b - a for a, b in zip(done, done[1:], strict=False) if b > a]
    cap = executor.BATCH_GROWTH
    expected = [1, 1, 2, 4, *[cap] * ((run.steps_total - 8) // cap)]
    assert run.steps_total > 8 + 2 * cap
    assert batches[: len(expected)] == expected
    assert done[-1] == run.steps_total


# JSON values as a run's rows hold them: short and long (packed), non-ASCII, floats,
# strings alone (an already packed value), nested, empty, None.
_JSON_VALUES: list[Any] = [
    None, [], {}, "", "packed:abc", "ünï \"q\" \n", 0, 1.5, -2, True, [1, 2.25, None, False],
    {"index": 3, "fate": "kept", "reason": "ü"},
    [{"index": i, "fate": "summarised", "reason": "compacted into the summary"} for i in range(40)],
    [{"message@": {"blocks": [{"text": "ünïcode ✓ " * 60, "n": 1e-7}]}}],
    [{"k": "x" * 380}], [{"k": "\u2028" * 500}],
]  # fmt: skip


@pytest.mark.parametrize(
    ("model", "name"),
    [(RunEvent, "changes"), (RunEvent, "detail"), (RunEvent, "messages"),
     (RunSummary, "input_parts"), (RunSummary, "usage"), (RunOffload, "text_parts")],
)  # fmt: skip
def test_json_columns_are_prepared_as_their_fields_prepare_them(
    model: type[Model], name: str
) -> None:
    """The writer's JSON preparers (C encoders made once, ``_packed_json``) send the same
    text as the field's ``get_db_prep_save`` (``PackedJSONField``: packed or not)."""
    from django.db import connection

    from replay_app.runs.step_rows import _preparer

    column = model._meta.get_field(name)
    prepare = _preparer(column, connection)  # type: ignore[arg-type]
    for value in _JSON_VALUES:
        assert _sent(prepare(value)) == _sent(column.get_db_prep_save(value, connection)), value


def _sent(prepared: Any) -> Any:
    """What goes to the database: PostgreSQL's JSON wrappers (psycopg ``Jsonb``, without
    equality) as the text they dump."""
    if hasattr(prepared, "obj") and hasattr(prepared, "dumps"):
        return type(prepared).__name__, (prepared.dumps or json.dumps)(prepared.obj)
    return prepared
