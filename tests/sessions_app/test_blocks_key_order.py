"""What the agent sent comes back from the database in its own key order, on SQLite and on
PostgreSQL (``sessions_app/json_text.py``): jsonb sorted an object's keys (shorter first),
so a tool input such as ``{"file_path", "old_string", "new_string"}`` read back as
``{"file_path", "new_string", "old_string"}`` and strategies serialising it saw another
text. Run against PostgreSQL with ``DATABASE_URL=postgres://...`` (the CI's second leg)."""

from __future__ import annotations

import dataclasses
import html
import json
from pathlib import Path
from typing import Any

import pytest
from django.core import serializers
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from ctxlab.engine import importers
from ctxlab.engine.core import codec
from ctxlab.engine.core.model import Block, Conversation
from ctxlab.engine.replay import run as replay_run
from sessions_app import secrets_glue, services
from sessions_app.json_text import dumps
from sessions_app.models import Transcript

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
# A real Claude Code session (MIT, see tests/data/corpus/MANIFEST.tsv): its Edit calls'
# inputs are {"file_path", "old_string", "new_string"}, not in jsonb's order.
SESSION = CORPUS / "claude-code" / "agentcmd-full-session-four.jsonl"
# A captured Anthropic request with tool definitions (JSON schemas: "type" before
# "properties", "required" after: not in jsonb's order either).
REQUEST = CORPUS / "anthropic-messages" / "claude-trace-req34-request.json"


def _jsonb_order(value: Any) -> Any:
    """``value`` with every object's keys as jsonb returns them (shorter first, then bytes)."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        return {k: _jsonb_order(value[k]) for k in keys}
    if isinstance(value, list):
        return [_jsonb_order(v) for v in value]
    return value


def _import(owner: Any, path: Path) -> tuple[Transcript, Conversation]:
    outcome = services.upload_import(owner=owner, name=path.name, data=path.read_bytes())
    assert outcome.ok, outcome.error
    (parsed,) = importers.parse(path.read_bytes(), name=path.name).conversations
    masked, _ = secrets_glue.mask_conversation(parsed)  # what the import stores
    return outcome.upload.transcripts.get(), masked


def _texts(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)  # order-sensitive, unlike == on dicts


def _tool_inputs(messages: tuple[Any, ...]) -> list[Any]:
    return [b.tool_input for m in messages for b in m.blocks if isinstance(b.tool_input, dict)]


@pytest.mark.django_db
def test_tool_inputs_read_back_in_the_agents_order(alice: Any, alice_client: Client) -> None:
    transcript, parsed = _import(alice, SESSION)
    inputs = _tool_inputs(parsed.messages)
    reordered = [i for i in inputs if list(i) != list(_jsonb_order(i))]
    assert len(reordered) >= 10, "the session must show the difference jsonb makes"

    # The engine's view (replays, the worker, probes) ...
    stored = transcript.to_conversation()
    assert [_texts(codec.blocks_to_list(m.blocks)) for m in stored.messages] == [
        _texts(codec.blocks_to_list(m.blocks)) for m in parsed.messages
    ]
    assert [b.input_json for m in stored.messages for b in m.blocks] == [
        b.input_json for m in parsed.messages for b in m.blocks
    ]
    # ... the rows as pages, search and run views read them ...
    rows = list(transcript.messages.order_by("index").values_list("blocks", flat=True))
    assert [_texts(r) for r in rows] == [
        _texts(codec.blocks_to_list(m.blocks)) for m in parsed.messages
    ]
    # ... and the JSON twin a client downloads.
    twin = alice_client.get(
        transcript.get_absolute_url(), {"format": "json", "per_page": 200}
    ).json()
    twin_inputs = [
        b["tool_input"]
        for m in twin["messages"]
        for b in m["blocks"]
        if isinstance(b.get("tool_input"), dict)
    ]
    assert [list(i) for i in twin_inputs] == [list(i) for i in inputs]


@pytest.mark.django_db
def test_tool_definitions_keep_their_order(alice: Any) -> None:
    transcript, parsed = _import(alice, REQUEST)
    schemas = [t.parameters for t in parsed.tools if isinstance(t.parameters, dict)]
    assert any(json.dumps(s) != json.dumps(_jsonb_order(s)) for s in schemas)
    transcript.refresh_from_db()
    assert json.dumps(transcript.tools) == json.dumps([codec.tool_to_dict(t) for t in parsed.tools])
    assert transcript.to_conversation().tools == parsed.tools
    assert [json.dumps(t.parameters) for t in transcript.to_conversation().tools] == [
        json.dumps(t.parameters) for t in parsed.tools
    ]


# CoPaw formats tool inputs with their keys in order (its summary input changes with a
# reordering; QwenPaw's counts too). PicoClaw marshals them as Go does, keys sorted, so
# its records must match whatever the order: checked as a preset that must not drift.
PRESETS = [
    ("copaw", {"max_input_length": 12_000}),
    ("qwenpaw", {"max_input_length": 12_000}),
    ("picoclaw", {"context_window": 16_000}),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("strategy", "params"), PRESETS, ids=[p[0] for p in PRESETS])
def test_replay_from_rows_equals_replay_of_the_file(
    alice: Any, strategy: str, params: dict[str, Any]
) -> None:
    transcript, parsed = _import(alice, SESSION)
    from_file = replay_run(parsed, strategy, params=params)
    from_rows = replay_run(transcript.to_conversation(), strategy, params=params)
    assert from_file.events, "the replay must compact for the comparison to mean anything"
    assert [s.tokens for s in from_rows.steps] == [s.tokens for s in from_file.steps]
    assert from_rows.steps == from_file.steps
    assert [s.input for s in from_rows.summaries] == [s.input for s in from_file.summaries]


def test_a_reordered_copy_would_be_caught() -> None:
    """The comparisons above see a jsonb-style reordering: CoPaw's summary input differs."""
    (parsed,) = importers.parse(SESSION.read_bytes(), name=SESSION.name).conversations
    sorted_copy = dataclasses.replace(
        parsed,
        messages=tuple(
            dataclasses.replace(m, blocks=tuple(_sorted_block(b) for b in m.blocks))
            for m in parsed.messages
        ),
    )
    params = dict(PRESETS[0][1])
    original = replay_run(parsed, "copaw", params=params)
    reordered = replay_run(sorted_copy, "copaw", params=params)
    assert [s.input for s in original.summaries] != [s.input for s in reordered.summaries]


def _sorted_block(block: Block) -> Block:
    return codec.block_from_dict(_jsonb_order(codec.block_to_dict(block)))


BEFORE = ("sessions_app", "0005_message_reference_tables")


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_every_row(alice: Any) -> None:
    """Rows stored as JSON (jsonb on PostgreSQL) before the migration read back as the same
    value after it; only SQLite's kept their key order (documented in the migration)."""
    blocks = [{"kind": "tool_use", "tool_id": "t1", "tool_name": "Edit",
               "tool_input": {"file_path": "a.py", "old_string": "x", "new_string": "é"}}]  # fmt: skip
    tools = [{"name": "Edit", "parameters": {"type": "object", "properties": {}}}]
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    try:
        old = executor.loader.project_state([BEFORE]).apps
        upload = old.get_model("sessions_app", "Upload").objects.create(
            owner_id=alice.pk, name="f", format="x", size=1, sha256="0", data=b"",
            importer_version="1",
        )  # fmt: skip
        transcript = old.get_model("sessions_app", "Transcript").objects.create(
            owner_id=alice.pk, upload=upload, position=0, format="x", tools=tools
        )
        old.get_model("sessions_app", "Message").objects.create(
            transcript=transcript, index=0, role="assistant", blocks=blocks
        )
    finally:  # back to the latest schema whatever happened
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    stored = Transcript.objects.get(pk=transcript.pk)
    assert stored.tools == tools
    assert stored.messages.get().blocks == blocks
    assert stored.to_conversation().messages[0].blocks == codec.blocks_from_list(blocks)
    if connection.vendor == "sqlite":  # the text it held: the order as written
        assert _texts(stored.messages.get().blocks) == _texts(blocks)


@pytest.mark.django_db
def test_the_stored_text_is_compact_ascii_json(alice: Any) -> None:
    """One text on both backends: a lone surrogate or NUL (untrusted input) stays
    storable on PostgreSQL, and the search's ASCII pre-selection reads the same inside."""
    transcript, parsed = _import(alice, SESSION)
    with connection.cursor() as cursor:
        cursor.execute(
            'SELECT blocks FROM sessions_app_message WHERE transcript_id = %s ORDER BY "index"',
            [transcript.pk],
        )
        texts = [row[0] for row in cursor.fetchall()]
    assert len(texts) == len(parsed.messages) and all(
        t.isascii() and t == dumps(json.loads(t)) for t in texts
    )


@pytest.mark.django_db
def test_dumpdata_and_loaddata_keep_the_value(alice: Any) -> None:
    """Django's serialisers (dumpdata/loaddata) carry the value, not its Python repr."""
    transcript, _ = _import(alice, SESSION)
    rows = list(transcript.messages.order_by("index")[:8])
    text = serializers.serialize("json", rows)
    loaded = [d.object for d in serializers.deserialize("json", text)]
    assert [_texts(m.blocks) for m in loaded] == [_texts(m.blocks) for m in rows]
    assert any(isinstance(b.get("tool_input"), dict) for m in loaded for b in m.blocks)


@pytest.mark.django_db
def test_the_admin_edits_blocks_as_json(admin_client: Client, alice: Any) -> None:
    """The admin's form shows a row's JSON (not a Python repr); its field cleans the posted
    text back to the value, in order."""
    transcript, _ = _import(alice, SESSION)
    row = next(
        m
        for m in transcript.messages.order_by("index")
        if any(isinstance(b.get("tool_input"), dict) for b in m.blocks)
    )
    url = f"/admin/sessions_app/message/{row.pk}/change/"
    page = admin_client.get(url).content.decode()
    assert html.escape(json.dumps(row.blocks, ensure_ascii=False)) in page
    original = _texts(row.blocks)
    field = type(row)._meta.get_field("blocks").formfield()
    edited = field.clean(field.prepare_value(row.blocks))  # what a save posts back
    row.blocks = edited
    row.full_clean(validate_unique=False, exclude=["flags", "secrets"])  # [] is "blank" there
    row.save(update_fields=["blocks"])
    row_after = type(row).objects.get(pk=row.pk)
    assert _texts(row_after.blocks) == original
