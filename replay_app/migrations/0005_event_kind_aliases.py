"""Stored runs speak the catalogue's vocabulary (ctxlab/engine/core/catalogue.py): event kinds
spelt the old way (``summarize``, ``drop_turns``, ``trim_request``, ``prune_lifted``, the
``*_skipped`` family ...) are renamed through ``EVENT_ALIASES``, and each run's event
metrics are counted again by category (a restore such as BaseAgent's lifted prune is no
longer a compaction, so compaction counts, firing rate and thrash can drop)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

BATCH = 500


def forwards(apps: Any, schema_editor: Any) -> None:
    from ctxlab.engine.core.catalogue import EVENT_ALIASES, canonical_event
    from ctxlab.engine.core.records import Event
    from ctxlab.engine.evaluate.metrics import event_metrics

    run_event = apps.get_model("replay_app", "RunEvent")
    run_model = apps.get_model("replay_app", "Run")
    analysis = apps.get_model("replay_app", "RunAnalysis")
    for old, new in EVENT_ALIASES.items():
        run_event.objects.filter(kind=old).update(kind=new)
    runs = run_model.objects.exclude(metrics={}).only("pk", "metrics").order_by("pk")
    for run in runs.iterator(chunk_size=BATCH):
        metrics = dict(run.metrics or {})
        if "steps" not in metrics or "events" not in metrics:
            continue  # not a finished replay's metrics
        rows = run_event.objects.filter(run_id=run.pk).order_by("seq")
        events = [
            Event(id=seq, step=step, kind=kind, tokens_before=before, tokens_after=after)
            for seq, step, kind, before, after in rows.values_list(
                "seq", "step", "kind", "tokens_before", "tokens_after"
            )
        ]
        metrics.update(
            event_metrics(events, steps=int(metrics["steps"]), threshold=metrics.get("threshold"))
        )
        if metrics != run.metrics:
            run.metrics = metrics
            run.save(update_fields=["metrics"])
    for row in analysis.objects.only("pk", "retention").iterator(chunk_size=BATCH):
        retention = row.retention or {}
        changed = False
        for item in retention.get("events") or []:
            kind = item.get("kind") if isinstance(item, dict) else None
            if isinstance(kind, str) and canonical_event(kind) != kind:
                item["kind"] = canonical_event(kind)
                changed = True
        if changed:
            row.save(update_fields=["retention"])


class Migration(migrations.Migration):
    dependencies = [
        ("replay_app", "0004_run_window"),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True),
    ]
