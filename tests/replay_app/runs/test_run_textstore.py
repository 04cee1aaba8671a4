"""Run texts by content hash (replay_app.runs.textstore): summary inputs, modified message
texts and offloaded files stored once, read back exactly, kept while a run uses them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.db.models import TextField
from django.db.models.functions import Cast
from inspect_helpers import make_run

from ctxlab.engine.core.model import Block, BlockKind, Role
from ctxlab.engine.core.model import Message as EngineMessage
from ctxlab.engine.replay import run as replay_run
from replay_app.models import Run, RunEvent, RunOffload, RunStep, RunSummary, RunText, StoredText
from replay_app.models import change_to_dict as stored_change
from replay_app.models.fields import OPTIONAL_ZONE_KEYS, ORDERED, ZONE_KEYS
from replay_app.runs import run_size, services, textstore
from sessions_app.models import Message

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]


@pytest.fixture
def short_inline(monkeypatch: Any) -> None:
    """Literals over 100 characters go to StoredText (the test transcript has few long
    literals; the sharing rules are the same at any limit)."""
    monkeypatch.setattr(textstore, "INLINE_MAX", 100)


def _engine(run: Run) -> Any:
    return replay_run(run.transcript.to_conversation(), run.strategy, params=run.params)


def _stored_texts() -> dict[str, str]:
    return dict(StoredText.objects.values_list("key", "text"))


def _changes_with_messages(result: Any) -> dict[tuple[int, int], dict[str, Any]]:
    return {
        (event.id, change.index): stored_change(change)
        for event in result.events
        for change in event.changes
        if change.message is not None
    }


@pytest.mark.parametrize("strategy", ["qwenpaw", "cowagent", "copaw"])
@pytest.mark.usefixtures("short_inline")
def test_stored_run_reads_back_exactly(user: Any, transcript: Any, strategy: str) -> None:
    run = make_run(user, transcript, strategy)
    engine = _engine(run)
    stored = textstore.replay_result(run)
    assert [s.input for s in stored.summaries] == [s.input for s in engine.summaries]
    assert stored.offloads == dict(engine.offloads)
    assert _changes_with_messages(stored) == _changes_with_messages(engine)
    # ... though nothing was copied inline
    assert not RunSummary.objects.filter(run=run).exclude(input="").exists()
    assert not RunOffload.objects.filter(run=run).exclude(text="").exists()
    for changes in RunEvent.objects.filter(run=run).values_list("changes", flat=True):
        assert all("message" not in c for c in changes)


def test_summary_inputs_are_mostly_references(user: Any, transcript: Any) -> None:
    run = make_run(user, transcript, "copaw")  # it shows the summariser whole tool outputs
    inputs = sum(len(s.input) for s in _engine(run).summaries)
    assert inputs > 0
    refs = [p for parts in run.summaries.values_list("input_parts", flat=True) for p in parts]
    assert any(isinstance(p, list) for p in refs)  # transcript slices
    literal = sum(len(p) for p in refs if isinstance(p, str))
    literal += sum(len(_stored_texts()[p["h"]]) for p in refs if isinstance(p, dict))
    assert literal < inputs / 2, (literal, inputs)


@pytest.mark.usefixtures("short_inline")
def test_two_runs_store_shared_texts_once(user: Any, transcript: Any) -> None:
    first = make_run(user, transcript, "qwenpaw")
    texts = _stored_texts()
    assert texts  # the summary prompts at least
    second = make_run(user, transcript, "qwenpaw")
    assert _stored_texts() == texts  # the same texts: no new row
    assert set(RunText.objects.filter(run=first).values_list("text_id", flat=True)) == set(texts)
    assert set(RunText.objects.filter(run=second).values_list("text_id", flat=True)) == set(texts)
    for key, text in texts.items():
        assert key == textstore.text_key(text)


@pytest.mark.usefixtures("short_inline")
def test_deleting_one_run_keeps_the_others_texts(
    user: Any, transcript: Any, django_capture_on_commit_callbacks: Any
) -> None:
    first = make_run(user, transcript, "cowagent")
    second = make_run(user, transcript, "cowagent")
    expected = [s.input for s in _engine(second).summaries]
    assert expected
    keys = set(_stored_texts())
    with django_capture_on_commit_callbacks(execute=True):
        first.delete()
    assert set(_stored_texts()) == keys
    assert [
        s.input for s in textstore.replay_result(Run.objects.get(pk=second.pk)).summaries
    ] == expected
    with django_capture_on_commit_callbacks(execute=True):
        second.delete()
    assert StoredText.objects.count() == 0 and RunText.objects.count() == 0


@pytest.mark.usefixtures("short_inline")
def test_text_used_by_another_strategy_survives(
    user: Any, transcript: Any, django_capture_on_commit_callbacks: Any
) -> None:
    qwen = make_run(user, transcript, "qwenpaw")
    cow = make_run(user, transcript, "cowagent")
    cow_keys = set(RunText.objects.filter(run=cow).values_list("text_id", flat=True))
    assert cow_keys
    with django_capture_on_commit_callbacks(execute=True):
        qwen.delete()
    assert cow_keys <= set(_stored_texts())
    assert not set(_stored_texts()) - cow_keys  # qwenpaw's own texts went with it


@pytest.mark.usefixtures("short_inline")
def test_retry_unlinks_the_old_attempt(
    user: Any, transcript: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = make_run(user, transcript, "qwenpaw")
    assert StoredText.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        services._delete_rows(run)
    assert RunText.objects.filter(run=run).count() == 0
    assert StoredText.objects.count() == 0


@pytest.mark.usefixtures("short_inline")
def test_older_rows_with_inline_texts_still_read(user: Any, transcript: Any) -> None:
    """Rows written before the text store keep their texts inline."""
    run = make_run(user, transcript, "qwenpaw")
    engine = _engine(run)
    for record in engine.summaries:
        RunSummary.objects.filter(run=run, seq=record.id).update(input=record.input, input_parts=[])
    for path, text in engine.offloads.items():
        RunOffload.objects.filter(run=run, path=path).update(text=text, text_parts=[])
    for event in engine.events:
        RunEvent.objects.filter(run=run, seq=event.id).update(
            changes=[stored_change(c) for c in event.changes]
        )
    RunText.objects.filter(run=run).delete()
    StoredText.objects.all().delete()
    stored = textstore.replay_result(Run.objects.get(pk=run.pk))
    assert [s.input for s in stored.summaries] == [s.input for s in engine.summaries]
    assert stored.offloads == dict(engine.offloads)
    assert _changes_with_messages(stored) == _changes_with_messages(engine)


def test_a_reimported_message_reads_as_gone_not_wrong(user: Any, transcript: Any) -> None:
    run = make_run(user, transcript, "copaw")
    summary = run.summaries.order_by("seq").first()
    assert summary is not None
    index = next(p[0] for p in summary.input_parts if isinstance(p, list))
    message = Message.objects.get(transcript=transcript, index=index)
    message.blocks = [{**b, "text": "rewritten " + b.get("text", "")} for b in message.blocks]
    message.save()
    text = textstore.summary_input(RunSummary.objects.get(pk=summary.pk))
    assert textstore.STALE.format(index=index) in text
    assert "rewritten " not in text


def test_encode_prefix_and_literals(user: Any, transcript: Any) -> None:
    run = make_run(user, transcript, "cowagent")
    messages = transcript.to_conversation().messages
    index, block = next(
        (i, j)
        for i, m in enumerate(messages)
        for j, b in enumerate(m.blocks)
        if len(textstore.source_text(b)) > textstore.INLINE_MAX + 500
    )
    source = textstore.source_text(messages[index].blocks[block])
    writer = textstore.TextWriter(run, messages)
    note = "\n[truncated: " + "x" * textstore.INLINE_MAX + "]"
    text = "head " + source[:500] + note
    parts = writer.encode(text, [index])
    assert parts[0] == "head "
    assert parts[1][:4] == [index, block, 0, 500]
    assert parts[2] == {"h": textstore.text_key(note)}
    writer.write()
    reader = textstore._Reader(transcript.pk)
    reader.need(parts)
    reader.load()
    assert reader.text(parts) == text


@pytest.mark.usefixtures("short_inline")
def test_run_size_counts_the_linked_texts(user: Any, transcript: Any) -> None:
    run = make_run(user, transcript, "cowagent")
    sizes = run_size.run_bytes_by_table(run)
    linked = StoredText.objects.filter(links__run=run)
    expected = sum(len(t.encode()) for t in linked.values_list("text", flat=True))
    assert sizes["storedtext"] >= expected > 0
    assert sizes["runstep"] > 0 and sizes["runsummary"] > 0
    assert run_size.run_bytes(run) == sum(sizes.values())


def test_encode_other_forms_of_a_tool_call(user: Any, transcript: Any) -> None:
    """A tool call printed as a Python literal, a text with its newlines flattened."""
    run = make_run(user, transcript, "cowagent")
    call = Block(BlockKind.TOOL_USE, tool_id="c1", tool_name="Write",
                 tool_input={"file_path": "/srv/a.py", "content": "x = 1\n" * 40})  # fmt: skip
    result = Block(BlockKind.TOOL_RESULT, tool_id="c1", text="line\n" * 40)
    messages = (EngineMessage(Role.ASSISTANT, (call,)), EngineMessage(Role.TOOL, (result,)))
    writer = textstore.TextWriter(run, messages)
    text = f"[tool_call Write] {call.tool_input!r}\n[tool] {result.text.replace(chr(10), ' ')}"
    parts = writer.encode(text, [0, 1])
    literal = repr(call.tool_input)
    flat = result.text.replace("\n", " ")
    assert parts == [
        "[tool_call Write] ", [0, 0, 0, len(literal), textstore._crc(literal), 1],
        "\n[tool] ", [1, 0, 0, len(flat), textstore._crc(flat), 2],
    ]  # fmt: skip
    reader = textstore._Reader(transcript.pk)
    reader.blocks = {0: (call,), 1: (result,)}
    assert reader.text(parts) == text


def test_long_json_columns_are_stored_packed(user: Any, transcript: Any) -> None:
    run = make_run(user, transcript, "qwenpaw")
    event = RunEvent.objects.filter(run=run).order_by("-id").first()
    assert event is not None
    big = [{"index": i, "fate": "dropped", "reason": "over the budget"} for i in range(500)]
    RunEvent.objects.filter(pk=event.pk).update(changes=big)
    raw = RunEvent.objects.filter(pk=event.pk).values_list(Cast("changes", TextField()), flat=True)
    assert len(raw[0]) * 5 < len(json.dumps(big))  # compressed in the column
    assert RunEvent.objects.get(pk=event.pk).changes == big
    assert RunEvent.objects.filter(pk=event.pk).values_list("changes", flat=True)[0] == big
    RunEvent.objects.filter(pk=event.pk).update(changes=big[:1])  # short: not packed
    raw = RunEvent.objects.filter(pk=event.pk).values_list(Cast("changes", TextField()), flat=True)
    if connection.vendor == "postgresql":  # keys jsonb would sort: kept as the JSON text
        assert json.loads(raw[0]) == ORDERED + json.dumps(big[:1], separators=(",", ":"))
    else:
        assert json.loads(raw[0]) == big[:1]


def test_short_json_values_keep_their_key_order(user: Any, transcript: Any) -> None:
    """A modified tool input's keys read back in the agent's order on either backend
    (PostgreSQL's jsonb would give them sorted, shorter keys first)."""
    run = make_run(user, transcript, "qwenpaw")
    event = RunEvent.objects.filter(run=run).order_by("-id").first()
    assert event is not None
    unsorted = {"timeout": 30, "command": "ls -la", "description": "list", "id": 1}
    changes = [{"index": 3, "fate": "truncated", "message": {"tool_input": unsorted}}]
    RunEvent.objects.filter(pk=event.pk).update(changes=changes)
    for back in (
        RunEvent.objects.get(pk=event.pk).changes,
        RunEvent.objects.filter(pk=event.pk).values_list("changes", flat=True)[0],
    ):
        assert json.dumps(back) == json.dumps(changes)  # == on dicts ignores key order
    flat = [1, "two", None]  # nothing to order: stored as plain JSON everywhere
    RunEvent.objects.filter(pk=event.pk).update(changes=flat)
    raw = RunEvent.objects.filter(pk=event.pk).values_list(Cast("changes", TextField()), flat=True)
    assert json.loads(raw[0]) == flat


def test_step_zones_stored_as_a_list_read_as_the_dict(user: Any, transcript: Any) -> None:
    run = make_run(user, transcript, "qwenpaw")
    step = RunStep.objects.filter(run=run).order_by("index").last()
    assert step is not None
    # every key of Zones.as_dict(), in order (a zero optional zone left out, as it writes)
    assert tuple(step.zones) == tuple(k for k in ZONE_KEYS if k not in OPTIONAL_ZONE_KEYS)
    raw = RunStep.objects.filter(pk=step.pk).values_list(Cast("zones", TextField()), flat=True)
    assert json.loads(raw[0]) == [step.zones.get(k, 0) for k in ZONE_KEYS]
    assert RunStep.objects.filter(pk=step.pk).values_list("zones", flat=True)[0] == step.zones
    odd = {"system": 1, "window": 9}  # not a whole Zones dict: kept as it is
    RunStep.objects.filter(pk=step.pk).update(zones=odd)
    assert RunStep.objects.get(pk=step.pk).zones == odd


def test_encode_out_of_order_and_cut_in_the_middle(user: Any, transcript: Any) -> None:
    run = make_run(user, transcript, "cowagent")
    texts = [f"message {k}: " + " ".join(f"w{k}x{n}" for n in range(200)) for k in range(3)]
    messages = tuple(EngineMessage(Role.USER, (Block(BlockKind.TEXT, text=t),)) for t in texts)
    writer = textstore.TextWriter(run, messages)
    head, tail = texts[2][:300], texts[2][-300:]
    text = f"[b] {texts[1]}\n[a] {texts[0]}\n[c] {head}\n...cut...\n{tail}"
    parts = writer.encode(text, [0, 1, 2])  # the order they are given in is not the text's
    slices = [p[:4] for p in parts if isinstance(p, list)]
    assert slices == [
        [1, 0, 0, len(texts[1])], [0, 0, 0, len(texts[0])],
        [2, 0, 0, 300], [2, 0, len(texts[2]) - 300, len(texts[2])],
    ]  # fmt: skip
    reader = textstore._Reader(transcript.pk)
    reader.blocks = {k: m.blocks for k, m in enumerate(messages)}
    assert reader.text(parts) == text


@pytest.mark.usefixtures("short_inline")
def test_deleting_the_transcript_takes_its_runs_texts(
    user: Any, transcript: Any, django_capture_on_commit_callbacks: Any
) -> None:
    make_run(user, transcript, "qwenpaw")
    make_run(user, transcript, "cowagent")
    assert StoredText.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        transcript.upload.delete()  # cascades to the transcript and its runs
    assert not Run.objects.exists()
    assert StoredText.objects.count() == 0 and RunText.objects.count() == 0


def test_step_zones_with_context_not_in_the_file_round_trip(user: Any, transcript: Any) -> None:
    run = make_run(user, transcript, "qwenpaw")
    step = RunStep.objects.filter(run=run).order_by("index").last()
    assert step is not None
    zones = {**step.zones, "not_in_file": 61_234}
    RunStep.objects.filter(pk=step.pk).update(zones=zones)
    raw = RunStep.objects.filter(pk=step.pk).values_list(Cast("zones", TextField()), flat=True)
    assert json.loads(raw[0])[-1] == 61_234  # stored in the list, at the end
    assert RunStep.objects.get(pk=step.pk).zones == zones
