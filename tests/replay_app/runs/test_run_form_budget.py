"""The run form at one budget: the window field (with windows suggested from the
transcript's cl100k peak) and the searchable transcript choice."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from replay_testdata import agent_chat, import_transcript

from ctxlab.benchmarks._rows import many_transcripts
from ctxlab.engine import budget
from replay_app.models import Run, RunStatus
from replay_app.runs import transcript_picker
from sessions_app.models import Upload

pytestmark = pytest.mark.django_db


def test_form_suggests_windows_from_the_transcripts_peak(auth_client: Client, transcript: Any):
    html = auth_client.get(f"/runs/new/?transcript={transcript.pk}").content.decode()
    size = budget.sent_size(transcript.to_conversation())
    windows = budget.fit_windows(size)
    assert len(windows) == 3 and size.fixed < windows[0] < windows[1] < windows[2] < size.peak
    assert f"largest request is {size.peak:,} tokens (messages " in html
    listed = re.findall(r'<option value="(\d+)">[\d,]+ tokens</option>', html)
    assert [int(w) for w in listed] == windows
    # The fragment the form swaps in when another transcript is chosen.
    part = auth_client.get(f"/runs/new/window/?transcript={transcript.pk}&window=9000")
    assert 'value="9000"' in part.content.decode() and f"{size.peak:,}" in part.content.decode()


def test_one_window_sets_every_chosen_strategys_own_parameter(
    auth_client: Client, user: Any, small_transcript: Any, django_capture_on_commit_callbacks: Any
):
    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(
            "/runs/new/",
            {"transcript": small_transcript.pk, "window": "16000", "summarizer": "offline",
             "presets": ["qwenpaw", "picoclaw", "claude_code", "langchain_trim"]},
        )  # fmt: skip
    assert response.status_code == 302
    runs = {r.strategy: r for r in Run.objects.filter(owner=user)}
    assert {r.status for r in runs.values()} == {RunStatus.DONE}
    assert {r.window for r in runs.values()} == {16000}
    assert runs["qwenpaw"].params["max_input_length"] == 16000
    assert runs["picoclaw"].params["context_window"] == 16000
    assert runs["picoclaw"].params["max_tokens"] == 4000
    assert runs["claude_code"].params["context_window"] == 16000
    assert runs["langchain_trim"].params["context_window"] == 16000
    page = auth_client.get(runs["claude_code"].get_absolute_url()).content.decode()
    assert "window from the comparison" in page
    group = auth_client.get(runs["qwenpaw"].group.get_absolute_url()).content.decode()
    assert "Model context window from the comparison: <strong>16,000</strong>" in group


def test_window_outside_a_strategys_range_is_refused_beside_the_field(
    auth_client: Client, small_transcript: Any
):
    response = auth_client.post(
        "/runs/new/",
        {"transcript": small_transcript.pk, "window": "600", "presets": ["codex"],
         "summarizer": "offline"},
    )  # fmt: skip
    html = response.content.decode()
    assert response.status_code == 400
    field = html[html.index('id="window-field"') :]
    assert "window 600 is out of range for codex" in field[: field.index("</div>")]
    assert not Run.objects.exists()


def _many_transcripts(owner: Any, count: int) -> Upload:
    return many_transcripts(owner, count)


def test_transcript_choice_lists_a_few_and_searches(
    auth_client: Client, user: Any, other_user: Any, small_transcript: Any
):
    _many_transcripts(user, 3000)
    import_transcript(other_user, agent_chat(turns=2, size=100), name="secret-bob.json")
    with CaptureQueriesContext(connection) as queries:
        html = auth_client.get(f"/runs/new/?transcript={small_transcript.pk}").content.decode()
    radios = re.findall(r'<input type="radio" name="transcript" value="(\d+)"', html)
    assert len(radios) == transcript_picker.RESULTS and radios[0] == str(small_transcript.pk)
    assert 'id="id_transcript" checked' in html  # the chosen one, first
    assert "small.json" in html and "openai" in html and "messages ·" in html
    assert len(queries) < 30  # not one per transcript
    found = auth_client.get(
        "/runs/new/transcripts/", {"transcript_q": "number 2999", "transcript": small_transcript.pk}
    ).content.decode()
    values = re.findall(r'name="transcript" value="(\d+)"', found)
    assert values[0] == str(small_transcript.pk) and len(values) == 2
    assert "conversation number 2999" in found
    nothing = auth_client.get("/runs/new/transcripts/", {"transcript_q": "secret-bob"})
    assert "No transcript matches" in nothing.content.decode()


def test_transcript_search_escapes_the_query(auth_client: Client):
    page = auth_client.get("/runs/new/transcripts/", {"transcript_q": "<script>x</script>"})
    assert "<script>x" not in page.content.decode() and "&lt;script&gt;" in page.content.decode()


def test_form_with_many_conversations_stays_small(auth_client: Client, user: Any):
    """20,000 conversations: the form and a search list a few, in a few queries (how long
    they take is ``manage.py bench --only request_times``, not a test on a shared machine)."""
    _many_transcripts(user, 20_000)
    auth_client.get("/runs/new/")  # warm templates
    with CaptureQueriesContext(connection) as queries:
        response = auth_client.get("/runs/new/")
    assert response.status_code == 200
    html = response.content.decode()
    radios = re.findall(r'<input type="radio" name="transcript" value="(\d+)"', html)
    assert len(radios) == transcript_picker.RESULTS
    assert len(queries) < 30  # not one per transcript
    with CaptureQueriesContext(connection) as queries:
        found = auth_client.get("/runs/new/transcripts/", {"transcript_q": "number 99999"})
    assert found.status_code == 200 and len(queries) < 30
    assert re.findall(r'name="transcript" value="(\d+)"', found.content.decode()) == []


def test_sweep_form_sweeps_the_window_or_keeps_one_for_another_parameter(
    auth_client: Client, user: Any, small_transcript: Any, django_capture_on_commit_callbacks: Any
):
    page = auth_client.get("/runs/sweep/new/?base=preset:claude_code").content.decode()
    assert re.search(r'<option value="window"( selected)?>window</option>', page)
    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(
            "/runs/sweep/new/",
            {"transcript": small_transcript.pk, "base": "preset:claude_code", "param": "window",
             "values": "8000, 16000", "summarizer": "offline"},
        )  # fmt: skip
    assert response.status_code == 302
    swept = list(Run.objects.filter(owner=user).order_by("pk"))
    assert [(r.window, r.params["context_window"], r.params["output_reserve"]) for r in swept] == [
        (8000, 8000, 800),
        (16000, 16000, 1600),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = auth_client.post(
            "/runs/sweep/new/",
            {"transcript": small_transcript.pk, "base": "preset:qwenpaw", "window": "12000",
             "param": "compact_threshold_ratio", "values": "0.6, 0.8", "summarizer": "offline"},
        )  # fmt: skip
    assert response.status_code == 302
    runs = list(Run.objects.filter(owner=user, strategy="qwenpaw").order_by("pk"))
    assert [(r.window, r.params["max_input_length"]) for r in runs] == [(12000, 12000)] * 2
    assert [r.params["compact_threshold_ratio"] for r in runs] == [0.6, 0.8]
