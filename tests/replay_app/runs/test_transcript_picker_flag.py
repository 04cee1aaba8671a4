"""The transcript picker is single (radios) or multiple (checkboxes) by its own flag,
``TranscriptPicker(multiple=True)``, never by the field's name: a form naming its field
``transcripts`` for one choice, or anything else for several, gets what it asked for."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django import forms
from django.http import QueryDict
from replay_testdata import agent_chat, import_transcript

from replay_app.runs.transcript_picker import TranscriptPicker
from sessions_app.models import Transcript

pytestmark = pytest.mark.django_db


def import_chat(owner: Any, *, seed: int) -> Transcript:
    return import_transcript(owner, agent_chat(turns=1, size=200, seed=seed), f"chat-{seed}.json")


def _inputs(html: str, name: str) -> list[str]:
    return re.findall(rf'<input type="(\w+)" name="{name}"', html)


def test_the_flag_not_the_name_decides(user: Any) -> None:
    made = [import_chat(user, seed=s) for s in range(3)]

    class Form(forms.Form):
        transcripts = forms.ModelChoiceField(queryset=Transcript.objects.all(), widget=TranscriptPicker())  # fmt: skip
        chosen = forms.ModelMultipleChoiceField(
            queryset=Transcript.objects.all(), widget=TranscriptPicker(multiple=True)
        )

    data = QueryDict(mutable=True)
    data["transcripts"] = str(made[0].pk)
    data.setlist("chosen", [str(made[1].pk), str(made[2].pk)])
    form = Form(data)
    for field in form.fields.values():
        field.widget.owner = user  # type: ignore[attr-defined]
    assert form.is_valid(), form.errors
    assert form.cleaned_data["transcripts"] == made[0]
    assert set(form.cleaned_data["chosen"]) == {made[1], made[2]}  # both, not the last
    single, several = str(form["transcripts"]), str(form["chosen"])
    assert set(_inputs(single, "transcripts")) == {"radio"}
    assert set(_inputs(several, "chosen")) == {"checkbox"} and len(_inputs(several, "chosen")) == 3
    # each picker's search carries its own name and flag to the options fragment
    assert "?picker=transcripts&quot;" not in single and '?picker=transcripts"' in single
    assert "?picker=chosen&amp;multiple=1" in several


def test_the_options_fragment_follows_the_flag(user: Any, client: Any) -> None:
    made = [import_chat(user, seed=s) for s in range(2)]
    client.force_login(user)
    ids = [str(t.pk) for t in made]
    several = client.get(
        "/runs/new/transcripts/", {"picker": "chosen", "multiple": "1", "chosen": ids}
    ).content.decode()
    checked = re.findall(r'type="checkbox" name="chosen" value="(\d+)" id="[^"]+" checked', several)  # fmt: skip
    assert sorted(checked) == sorted(ids)
    single = client.get("/runs/new/transcripts/", {"picker": "transcripts", "transcripts": ids[1]})
    html = single.content.decode()
    assert set(_inputs(html, "transcripts")) == {"radio"}
    # a name that is not a plain field name falls back to the run form's
    odd = client.get("/runs/new/transcripts/", {"picker": '"><b>x'}).content.decode()
    assert set(_inputs(odd, "transcript")) == {"radio"} and "<b>x" not in odd


def test_search_matches_the_format(user: Any, client: Any) -> None:
    """A new user looking for their Gemini CLI session types "gemini": its file name
    (``session-2025-….json``) does not say so, its format does."""
    chat = import_chat(user, seed=1)
    client.force_login(user)
    html = client.get("/runs/new/transcripts/", {"transcript_q": chat.format[:6]}).content.decode()
    assert re.findall(r'name="transcript" value="(\d+)"', html) == [str(chat.pk)]
    none = client.get("/runs/new/transcripts/", {"transcript_q": "gemini-cli"}).content.decode()
    assert 'name="transcript"' not in none and "No transcript matches" in none
