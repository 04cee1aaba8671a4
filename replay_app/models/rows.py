"""What a run stored while it executed: one row per step, event, summary, finding and
offloaded file (the engine's records, as rows)."""

from __future__ import annotations

from typing import Any

from django.db import models

from ctxlab.engine.core import codec
from ctxlab.engine.core.records import (
    Change,
    Event,
    Fate,
    Finding,
    SourceIndexes,
    StepRecord,
    StepTokens,
    SummaryRecord,
    Zones,
    event_json,
)
from replay_app.models.fields import IndexListField, PackedJSONField, ZonesField
from replay_app.models.runs import Run


class RunStep(models.Model):
    """One inference call as the strategy would have sent it: O(ranges), never O(context)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    source_index = models.PositiveIntegerField()
    tokens_strategy = models.PositiveBigIntegerField()
    tokens_reference = models.PositiveBigIntegerField()
    tokens_reported = models.PositiveBigIntegerField(null=True, blank=True)
    zones = ZonesField(default=dict)  # Zones.as_dict() (stored as a list of its values)
    context = models.JSONField(default=list)  # [[start, end), ...] source-index ranges
    context_len = models.PositiveIntegerField(default=0)  # messages in context
    summary_seq = models.IntegerField(null=True, blank=True)  # RunSummary.seq in force
    pending = models.JSONField(default=list)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="runstep_run_index")]

    @classmethod
    def from_record(cls, run: Run, record: StepRecord) -> RunStep:
        return cls(
            run=run,
            index=record.index,
            source_index=record.source_index,
            tokens_strategy=record.tokens.strategy,
            tokens_reference=record.tokens.reference,
            tokens_reported=record.tokens.reported,
            zones=record.zones.as_dict(),
            context=[list(r) for r in record.context],
            context_len=record.context_len,
            summary_seq=record.summary_id,
            pending=list(record.pending),
        )

    @property
    def ranges(self) -> tuple[tuple[int, int], ...]:
        return tuple((int(a), int(b)) for a, b in self.context)

    def to_record(self) -> StepRecord:
        """Without events/summaries/findings (those are rows of their own)."""
        return StepRecord(
            index=self.index,
            source_index=self.source_index,
            tokens=StepTokens(self.tokens_strategy, self.tokens_reference, self.tokens_reported),
            zones=Zones(**self.zones),
            context=self.ranges,
            summary_id=self.summary_seq,
            pending=tuple(self.pending),
        )


def change_to_dict(change: Change) -> dict[str, Any]:
    out: dict[str, Any] = {"index": change.index, "fate": change.fate.value}
    if change.reason:
        out["reason"] = change.reason
    if change.message is not None:
        out["message"] = codec.message_to_dict(change.message)
    if change.offload_path:
        out["offload_path"] = change.offload_path
    return out


def change_from_dict(data: dict[str, Any]) -> Change:
    message = data.get("message")
    return Change(
        index=int(data["index"]),
        fate=Fate(data["fate"]),
        reason=data.get("reason", ""),
        message=None if message is None else codec.message_from_dict(message),
        offload_path=data.get("offload_path", ""),
    )


# What a run stores of the engine's records: the field values of its rows (one rule for the
# models' ``from_*`` and the worker's rows, ``replay_app.runs.step_rows``), by field name;
# the fields not named keep their defaults.


def event_values(event: Event) -> dict[str, Any]:
    row = event_json(event, id_key="seq", summary_key="summary_seq")
    row["changes"] = [change_to_dict(c) for c in event.changes]
    return row


def summary_values(record: SummaryRecord, *, with_input: bool = True) -> dict[str, Any]:
    """``with_input=False``: the input left empty, unread (a rendered input is made when
    read: the worker stores it after the run is done, ``executor._analyse``)."""
    return {
        "seq": record.id,
        "step": record.step,
        "input": record.input if with_input else "",
        "output": record.output,
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
        "usage_estimated": record.usage_estimated,
        "error": record.error,
        "summarizer": record.summarizer,
        # Runs are stored as runs (``IndexListField``), never listed out here.
        "messages": (
            record.messages if isinstance(record.messages, SourceIndexes) else list(record.messages)
        ),
    }


def finding_values(record: Finding) -> dict[str, Any]:
    return {
        "step": record.step,
        "kind": record.kind,
        "messages": list(record.messages),
        "detail": dict(record.detail),
    }


class RunEvent(models.Model):
    """One action of the strategy, with the fates it set."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()  # Event.id: order within the run
    step = models.PositiveIntegerField()  # first step whose request reflects it
    kind = models.CharField(max_length=40)
    messages = models.JSONField(default=list)  # source indexes touched
    tokens_before = models.PositiveBigIntegerField(default=0)
    tokens_after = models.PositiveBigIntegerField(default=0)
    detail = models.JSONField(default=dict)
    changes = PackedJSONField(default=list)  # change_to_dict items (textstore: message@)
    summary_seq = models.IntegerField(null=True, blank=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runevent_run_seq")]
        indexes = [models.Index(fields=["run", "step"]), models.Index(fields=["run", "kind"])]

    @classmethod
    def from_event(cls, run: Run, event: Event) -> RunEvent:
        return cls(run=run, **event_values(event))

    def to_event(self) -> Event:
        """The engine's event from ``changes`` as they stand: modified messages stored by
        reference are read back by ``textstore.engine_events`` first."""
        changes = self.changes
        return Event(
            id=self.seq,
            step=self.step,
            kind=self.kind,
            messages=tuple(self.messages),
            tokens_before=self.tokens_before,
            tokens_after=self.tokens_after,
            detail=dict(self.detail),
            changes=tuple(change_from_dict(c) for c in changes),
            summary_id=self.summary_seq,
        )

    @property
    def fate_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for change in self.changes:
            out[change["fate"]] = out.get(change["fate"], 0) + 1
        return out


class RunSummary(models.Model):
    """One summariser call: the exact input and the output. The input is ``input_parts``
    (``replay_app.runs.textstore``: references into the transcript and stored texts; read it
    with ``textstore.summary_inputs``); rows written before that keep it in ``input``."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="summaries")
    seq = models.PositiveIntegerField()  # SummaryRecord.id
    step = models.PositiveIntegerField()
    input = models.TextField(blank=True)  # older rows only: newer ones use input_parts
    input_parts = PackedJSONField(default=list, blank=True)
    output = models.TextField()
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    usage_estimated = models.BooleanField(default=True)
    usage = models.JSONField(default=dict)  # provider usage / cost, when a real model ran
    error = models.TextField(blank=True)
    summarizer = models.CharField(max_length=100, blank=True)
    # Source indexes the summariser was shown (stored as runs when shorter).
    messages = IndexListField(default=list)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="runsummary_run_seq")]

    @classmethod
    def from_record(cls, run: Run, record: SummaryRecord) -> RunSummary:
        return cls(run=run, **summary_values(record))

    def to_record(self, input_text: str) -> SummaryRecord:
        """``input_text``: the resolved input (``textstore.summary_inputs``)."""
        return SummaryRecord(
            id=self.seq,
            step=self.step,
            input=input_text,
            output=self.output,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            usage_estimated=self.usage_estimated,
            error=self.error,
            summarizer=self.summarizer,
            messages=tuple(self.messages),
        )


class RunFinding(models.Model):
    """A broken invariant at one step."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="findings")
    step = models.PositiveIntegerField()
    kind = models.CharField(max_length=40)
    messages = models.JSONField(default=list)
    detail = models.JSONField(default=dict)

    class Meta:
        ordering = ["run", "step", "id"]
        indexes = [models.Index(fields=["run", "step"])]

    @classmethod
    def from_record(cls, run: Run, record: Finding) -> RunFinding:
        return cls(run=run, **finding_values(record))

    def to_record(self) -> Finding:
        return Finding(
            step=self.step, kind=self.kind, messages=tuple(self.messages), detail=dict(self.detail)
        )


class RunOffload(models.Model):
    """Full text a strategy offloaded to a file (the notice in context points to ``path``):
    ``text_parts`` (``replay_app.runs.textstore``, read with ``textstore.offload_texts``);
    rows written before that keep it in ``text``."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="offloads")
    path = models.TextField()
    text = models.TextField(blank=True)  # older rows only: newer ones use text_parts
    text_parts = PackedJSONField(default=list, blank=True)

    class Meta:
        ordering = ["run", "id"]
        indexes = [models.Index(fields=["run", "path"])]
