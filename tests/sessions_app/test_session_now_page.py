"""The original session, now (issue 38): the page and its JSON twin read one page object,
the zones are the engine's through the replay pages' zone model, the forecast is the
engine's, other users get 404, and the websocket follows the transcript's growth group."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.test import Client
from django.urls import reverse

from ctxlab.asgi import application
from ctxlab.engine import cli
from ctxlab.engine.evaluate.session_now import forecast, session_now
from sessions_app import services, session_now_page
from sessions_app.models import Transcript
from tests.waiting import Communicator

DATA = Path(__file__).resolve().parents[1] / "data"
# Claude Code 2.1.14: a microcompact, then an auto compact_boundary (preTokens 155,068)
SESSION = DATA / "agreement" / "entireio-cli" / "76" / "62d755ef9f" / "2" / "full.jsonl"
HEADERS = [(b"origin", b"http://localhost"), (b"host", b"localhost")]


def _import(owner: Any, lines: int | None = None) -> Transcript:
    data = SESSION.read_bytes()
    if lines is not None:
        data = b"\n".join(data.splitlines()[:lines]) + b"\n"
    outcome = services.upload_import(owner=owner, name="session.jsonl", data=data)
    assert outcome.ok, outcome.error
    return Transcript.objects.get(pk=outcome.conversations[0].transcript_id or 0)


@pytest.mark.django_db
def test_page_and_twin_show_the_engines_zones_and_forecast(
    alice: Any, alice_client: Client
) -> None:
    transcript = _import(alice, 135)  # after the microcompact, before the auto-compact
    url = reverse("transcript-now", args=[transcript.pk])
    data = alice_client.get(url, {"format": "json"}).json()
    html = alice_client.get(url).content.decode()
    engine = session_now(cli.load_file(SESSION, format="claude-code"), "claude-code")
    assert data["agent"]["agent"] == "claude_code" and data["agent"]["threshold"] == 155_000
    assert data["following_latest"] and data["step"] == data["steps"] - 1
    zones = data["zones"]
    assert zones["origin"] == "original" and zones["threshold"] == 155_000
    labels = {z["key"]: z["label"] for z in zones["zones"]}
    assert labels["output_reserve"] == "Auto-compact buffer"
    assert labels["system"] == "System prompt" and {"system", "tools"} <= set(labels)
    notes = {z["key"]: z["note"] for z in zones["zones"]}
    assert notes["system"] == notes["tools"] == "not in transcript"  # never drawn as fact
    assert zones["request"] == zones["reported"]  # the zones add up to the reported usage
    # the same step of the whole session, through the engine directly
    same = engine.steps[data["step"]]
    assert same.zones["compactable"] == next(
        z["tokens"] for z in zones["zones"] if z["key"] == "compactable"
    )
    turns = data["forecast"]["turns_to_auto_compact"]
    assert turns["turns"] == forecast(engine, same).turns.turns and turns["turns"] >= 1
    assert data["forecast"]["facts_at_risk"]["paths"] > 0
    # the HTML shows the same figures
    assert 'id="now-live"' in html and f'data-turns="{turns["turns"]}"' in html
    assert 'ws-connect="/ws/transcripts/' in html
    assert "Auto-compact buffer" in html and "not in transcript" in html
    assert "System prompt + tools: the first reported usage" not in html  # a continued file
    assert 'id="now-overhead-note"' in html


@pytest.mark.django_db
def test_a_chosen_step_is_not_followed_live_and_marks_the_agents_compaction(
    alice: Any, alice_client: Client
) -> None:
    transcript = _import(alice)
    url = reverse("transcript-now", args=[transcript.pk])
    whole = alice_client.get(url, {"format": "json"}).json()
    (auto,) = [c for c in whole["agent_compactions"] if c["kind"] == "compact_boundary"]
    step = auto["first_step_after"]
    data = alice_client.get(url, {"format": "json", "step": step}).json()
    html = alice_client.get(url, {"step": step}).content.decode()
    assert not data["following_latest"] and data["step"] == step
    assert data["step_message"] >= auto["before_message"]
    summary = next(z for z in data["zones"]["zones"] if z["key"] == "summary")
    assert summary["tokens"] > 0  # the agent's own summary, its own zone
    assert 'id="now-compacted"' in html and "ws-connect" not in html


@pytest.mark.django_db
def test_page_and_twin_read_one_object(
    alice: Any, alice_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript = _import(alice, 135)
    build = session_now_page.session_now_page
    mark = "value-set-on-the-page-object"

    def marked(t: Transcript, step: int | None) -> session_now_page.SessionNowPage:
        page = build(t, step)
        assert page.forecast is not None
        page.recent = [session_now_page.RecentMessage(7, "user", mark, "")]
        page.overhead_note = "note-" + mark
        return page

    monkeypatch.setattr(session_now_page, "session_now_page", marked)
    url = reverse("transcript-now", args=[transcript.pk])
    data = alice_client.get(url, {"format": "json"}).json()
    html = alice_client.get(url).content.decode()
    assert data["recent_messages"] == [{"index": 7, "role": "user", "text": mark, "tool": ""}]
    assert data["fixed_part_note"] == "note-" + mark
    assert mark in html and "note-" + mark in html


@pytest.mark.django_db
def test_someone_elses_session_is_not_found(alice: Any, bob_client: Client) -> None:
    transcript = _import(alice, 60)
    url = reverse("transcript-now", args=[transcript.pk])
    assert bob_client.get(url).status_code == 404
    assert bob_client.get(url, {"format": "json"}).status_code == 404


@pytest.mark.django_db
def test_transcript_text_is_escaped(alice: Any, alice_client: Client) -> None:
    hostile = '<img src=x onerror="alert(1)">'
    line = (
        '{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","version":"2.1.14",'
        '"message":{"role":"user","content":"' + hostile.replace('"', '\\"') + '"}}'
    )
    reply = (
        '{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","version":"2.1.14",'
        '"message":{"id":"msg_1","role":"assistant","model":"claude","content":[{"type":"text",'
        '"text":"ok"}],"usage":{"input_tokens":10,"cache_read_input_tokens":20000,'
        '"output_tokens":5}}}'
    )
    outcome = services.upload_import(
        owner=alice, name="h.jsonl", data=(line + "\n" + reply + "\n").encode()
    )
    transcript = Transcript.objects.get(pk=outcome.conversations[0].transcript_id or 0)
    html = alice_client.get(reverse("transcript-now", args=[transcript.pk])).content.decode()
    assert hostile not in html and "&lt;img src=x" in html


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_socket_follows_the_sessions_growth(alice: Any, tmp_path: Path) -> None:
    """Issue 35's re-import of a grown file (``services.import_path``) announces it; the
    page's socket answers with the newer state."""
    import re

    path = tmp_path / "session.jsonl"
    lines = SESSION.read_bytes().splitlines()
    path.write_bytes(b"\n".join(lines[:100]) + b"\n")

    def first_import() -> int:
        outcome, _ = services.import_path(owner=alice, path=path)
        assert outcome.ok, outcome.error
        return outcome.conversations[0].transcript_id or 0

    transcript_id = await database_sync_to_async(first_import)()

    def cookie() -> bytes:
        client = Client()
        client.force_login(alice)
        return f"sessionid={client.cookies['sessionid'].value}".encode()

    headers = [*HEADERS, (b"cookie", await database_sync_to_async(cookie)())]
    comm = Communicator(application, f"/ws/transcripts/{transcript_id}/now/", headers=headers)
    connected, _ = await comm.connect()
    assert connected
    first = await comm.receive_from()  # the catch-up
    assert 'id="now-live"' in first and 'hx-swap-oob="true"' in first

    def steps(fragment: str) -> int:
        found = re.search(r'data-steps="(\d+)"', fragment)
        assert found, fragment[:200]
        return int(found.group(1))

    def grow() -> None:
        path.write_bytes(b"\n".join(lines[:135]) + b"\n")
        _, refreshed = services.import_path(owner=alice, path=path)
        assert refreshed and refreshed[0].new_messages > 0

    await database_sync_to_async(grow)()
    again = await comm.receive_from()
    assert steps(again) > steps(first)
    await comm.disconnect()


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_stranger_socket_is_refused(alice: Any, bob: Any) -> None:
    transcript = await database_sync_to_async(_import)(alice, 60)

    def cookie() -> bytes:
        client = Client()
        client.force_login(bob)
        return f"sessionid={client.cookies['sessionid'].value}".encode()

    headers = [*HEADERS, (b"cookie", await database_sync_to_async(cookie)())]
    comm = Communicator(application, f"/ws/transcripts/{transcript.pk}/now/", headers=headers)
    connected, _ = await comm.connect()
    assert not connected


@pytest.mark.django_db
def test_the_transcript_page_links_to_it(alice: Any, alice_client: Client) -> None:
    transcript = _import(alice, 60)
    html = alice_client.get(reverse("transcript-detail", args=[transcript.pk])).content.decode()
    assert f'href="{reverse("transcript-now", args=[transcript.pk])}"' in html


def _claude_lines(user_text: str, usage: bool = True) -> bytes:
    import json

    user = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "s",
        "version": "2.1.14",
        "message": {"role": "user", "content": user_text},
    }
    reply = {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "sessionId": "s",
        "version": "2.1.14",
        "message": {
            "id": "msg_1",
            "role": "assistant",
            "model": "claude",
            "content": [{"type": "text", "text": "ok"}],
            **({"usage": {"input_tokens": 10, "output_tokens": 5}} if usage else {}),
        },
    }
    return (json.dumps(user) + "\n" + json.dumps(reply) + "\n").encode()


@pytest.mark.django_db
def test_secrets_in_what_is_shown_are_masked(alice: Any, alice_client: Client) -> None:
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    data = _claude_lines(f"git clone https://{key}@github.com/o/r and always run the tests")
    outcome = services.upload_import(owner=alice, name="s.jsonl", data=data)
    transcript = Transcript.objects.get(pk=outcome.conversations[0].transcript_id or 0)
    url = reverse("transcript-now", args=[transcript.pk])
    html = alice_client.get(url).content.decode()
    twin = alice_client.get(url, {"format": "json"}).content.decode()
    assert key not in html and key not in twin
    assert "git clone" in html  # the message is listed, its key masked


@pytest.mark.django_db
def test_a_transcript_without_a_model_call(alice: Any, alice_client: Client) -> None:
    data = _claude_lines("hello").splitlines()[0] + b"\n"
    outcome = services.upload_import(owner=alice, name="one.jsonl", data=data)
    transcript = Transcript.objects.get(pk=outcome.conversations[0].transcript_id or 0)
    url = reverse("transcript-now", args=[transcript.pk])
    data_json = alice_client.get(url, {"format": "json"}).json()
    assert data_json["steps"] == 0 and data_json["zones"] is None
    assert data_json["forecast"] is None
    assert 'id="no-steps"' in alice_client.get(url).content.decode()


@pytest.mark.django_db
def test_the_step_table_shows_each_calls_forecast(alice: Any, alice_client: Client) -> None:
    transcript = _import(alice, 135)
    data = alice_client.get(
        reverse("transcript-now", args=[transcript.pk]), {"format": "json"}
    ).json()
    rows = {r["step"]: r for r in data["step_rows"]}
    newest = rows[data["step"]]
    assert newest["turns_to_auto_compact"] == data["forecast"]["turns_to_auto_compact"]["turns"]
    # the first call after the microcompact has no growth rate yet
    (micro,) = data["agent_compactions"]
    assert rows[micro["first_step_after"]]["turns_to_auto_compact"] is None
    assert rows[micro["first_step_after"]]["compaction_before"] == "microcompact"


@pytest.mark.django_db
def test_an_agent_ctxlab_does_not_model(
    tau_upload: services.ImportOutcome, alice_client: Client
) -> None:
    transcript = Transcript.objects.get(upload=tau_upload.upload)
    url = reverse("transcript-now", args=[transcript.pk])
    data = alice_client.get(url, {"format": "json"}).json()
    assert data["agent"]["agent"] == "" and data["agent"]["threshold"] is None
    if data["steps"]:
        assert data["forecast"]["turns_to_auto_compact"]["turns"] is None
        assert "threshold" in data["forecast"]["turns_to_auto_compact"]["why"]
    html = alice_client.get(url).content.decode()
    assert "does not model this agent" in html


@pytest.mark.django_db
def test_the_fixed_part_says_it_comes_from_the_first_reported_usage(
    alice: Any, alice_client: Client
) -> None:
    data = (DATA / "claude-code-2.1" / "parallel-calls-hooks.jsonl").read_bytes()
    outcome = services.upload_import(owner=alice, name="p.jsonl", data=data)
    transcript = Transcript.objects.get(pk=outcome.conversations[0].transcript_id or 0)
    url = reverse("transcript-now", args=[transcript.pk])
    twin = alice_client.get(url, {"format": "json"}).json()
    html = alice_client.get(url).content.decode()
    fixed = next(z for z in twin["zones"]["zones"] if z["key"] == "unseen")
    assert fixed["label"] == "System prompt + tools (not in the transcript)"
    assert fixed["tokens"] > 20_000 and not twin["fixed_part_note"]
    assert "System prompt + tools: the first reported usage" in html
    assert 'id="now-overhead-note"' not in html
