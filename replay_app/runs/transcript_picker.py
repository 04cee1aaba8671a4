"""The run and sweep forms' transcript choice: a handful of radio buttons (the chosen
transcript and the newest ones) and a search box whose results htmx swaps in; the suite
form's is the same with checkboxes (several transcripts).

A user may own 100,000 conversations: a ``<select>`` of all of them makes the form slow
to build and to use, so no page ever lists more than ``RESULTS`` of them. Each option
shows the file name, format, message count and date; search matches the title, the file
name, the format (as the transcript list's search does: "gemini" finds Gemini CLI sessions
whose file names do not say so) and the conversation id.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET

from ctxlab.engine.budget import (
    SentSize,
    WindowAdvice,
    peak_request,
    tools_reference_tokens,
    window_advice,
)
from ctxlab.engine.core.model import Role
from ctxlab.engine.strategies import LIBRARY, STRATEGIES
from ctxlab.web.http import json_response, wants_json
from ctxlab.web.ownership import owned
from sessions_app.models import Transcript

RESULTS = 12
FIELDS = ("id", "title", "conversation_id", "format", "message_count", "position",
          "upload__name", "upload__created_at")  # fmt: skip


def _base(owner: Any) -> QuerySet[Transcript]:
    return (
        owned(Transcript.objects, owner)
        .select_related("upload")
        .only(*FIELDS)
        .order_by("-upload__created_at", "-upload_id", "position")
    )


def _ids(selected: Any) -> list[int]:
    values = selected if isinstance(selected, list | tuple) else [selected]
    return [int(v) for v in values if str(v or "").isdigit()]


def options(owner: Any, *, query: str = "", selected: Any = None) -> list[Transcript]:
    """The chosen transcripts first (one id, or a list of them), then the newest (or the
    best matches of ``query``): ``RESULTS`` in all, or every chosen one and ``RESULTS``
    others when several are chosen."""
    ids = _ids(selected)
    chosen = list(_base(owner).filter(pk__in=ids)) if ids else []
    found = _base(owner)
    text = query.strip()
    if text:
        match = Q(title__icontains=text) | Q(upload__name__icontains=text)
        match |= Q(conversation_id__icontains=text) | Q(format__icontains=text)
        if text.isdigit():
            match |= Q(pk=int(text))
        found = found.filter(match)
    if chosen:
        found = found.exclude(pk__in=[t.pk for t in chosen])
    rows = list(found[: RESULTS if len(chosen) > 1 else RESULTS - len(chosen)])
    return chosen + rows


def _context(
    name: str, shown: list[Transcript], selected: Any, query: str, *, multiple: bool
) -> dict[str, Any]:
    return {
        "name": name,
        "options": shown,
        "multiple": multiple,
        "selected": {str(i) for i in _ids(selected)},
        "query": query,
    }


class TranscriptPicker(forms.Widget):
    """Radio buttons (one transcript: the run forms) or, with ``multiple=True``,
    checkboxes (several: the suite form) for the few options + the search box (the
    field's queryset is only used to validate the posted ids). Searching keeps what is
    checked: the search sends the checked ids along. Single or multiple is this flag,
    never read from the field's name."""

    template_name = "replay_app/runs/_transcript_picker.html"
    owner: Any = None

    def __init__(self, attrs: dict[str, Any] | None = None, *, multiple: bool = False) -> None:
        super().__init__(attrs)
        self.multiple = multiple

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        shown = options(self.owner, selected=value)
        context = _context(name, shown, value, "", multiple=self.multiple)
        return render_to_string(self.template_name, context)

    def value_from_datadict(self, data: Any, files: Any, name: str) -> Any:
        if self.multiple:
            return data.getlist(name) if hasattr(data, "getlist") else data.get(name)
        return data.get(name)


_FIELD_NAME = re.compile(r"[a-z_]{1,40}")


@require_GET
def transcript_options(request: HttpRequest) -> HttpResponse:
    """``?picker=<field name>[&multiple=1]&transcript_q=&<field name>=…`` → the options
    fragment (the search box's target; the picker's own URL carries its name and flag)."""
    asked = request.GET.get("picker", "")
    name = asked if _FIELD_NAME.fullmatch(asked) else "transcript"
    multiple = request.GET.get("multiple") == "1"
    selected: Any = request.GET.getlist(name) if multiple else request.GET.get(name, "")
    query = request.GET.get("transcript_q", "")[:200]
    shown = options(request.user, query=query, selected=selected)
    return render(
        request,
        "replay_app/runs/_transcript_picker.html#transcript-options",
        _context(name, shown, selected, query, multiple=multiple),
    )


# --- windows that make compaction fire ------------------------------------------------------


def sent_size(transcript: Transcript) -> SentSize:
    """What the transcript's agent sent at its largest request (counted at import; a
    transcript imported before those counts existed is counted from its rows now)."""
    messages_peak, system, tools = (
        transcript.messages_peak,
        transcript.system_tokens,
        transcript.tools_tokens,
    )
    if messages_peak is None or system is None or tools is None:
        rows = transcript.messages.order_by("index").values_list("role", "reference_tokens")
        messages_peak = peak_request(rows.iterator(chunk_size=5000))
        first = rows.filter(index=0).first()
        system = first[1] if first is not None and first[0] == Role.SYSTEM.value else 0
        tools = tools_reference_tokens(transcript.head_conversation().tools)
    return SentSize(
        messages_peak=messages_peak,
        system=system,
        tools=tools,
        reported_peak=transcript.reported_peak_context,
    )


def advice_for(transcript: Transcript, window: int | None) -> WindowAdvice:
    """The run form's window advice for ``transcript`` (``budget.window_advice`` over its
    stored counts, the room of every preset with a window parameter)."""
    return window_advice(
        sent_size(transcript),
        transcript.head_conversation(),
        window=window,
        strategies=[name for name in LIBRARY if name in STRATEGIES],
    )


def window_hint(owner: Any, transcript_id: Any, window: Any = None) -> dict[str, Any] | None:
    """The chosen transcript's window advice (suggestions from what its agent sent, the
    fixed part, the warning for ``window`` and the room per strategy), or None without a
    transcript."""
    if not str(transcript_id or "").isdigit():
        return None
    transcript = owned(Transcript.objects, owner).filter(pk=int(transcript_id)).first()
    if transcript is None or transcript.message_count == 0:  # nothing to suggest from
        return None
    chosen = int(window) if str(window or "").isdigit() and int(window) > 0 else None
    advice = advice_for(transcript, chosen)
    return {
        "transcript": transcript,
        "advice": advice,
        "size": advice.size,
        "peak": advice.size.peak,
        "windows": advice.windows,
        "room_windows": list(advice.rooms),
        "room_rows": _room_rows(advice),
    }


def _room_rows(advice: WindowAdvice) -> list[dict[str, Any]]:
    """One row per strategy: its label and its room at each window of ``advice.rooms``."""
    rows: dict[str, dict[str, Any]] = {}
    for rooms in advice.rooms.values():
        for room in rooms:
            row = rows.setdefault(room.strategy, {"strategy": room.strategy,
                                                  "label": room.label, "cells": []})  # fmt: skip
            row["cells"].append(room)
    return list(rows.values())


@require_GET
def window_suggestions(request: HttpRequest) -> HttpResponse:
    """``?transcript=&window=`` → the run form's window field with its suggestions;
    ``&format=json``: the same advice as JSON (its twin)."""
    value = request.GET.get("window", "")[:12]
    hint = window_hint(request.user, request.GET.get("transcript"), value)
    if wants_json(request):
        return json_response(None if hint is None else hint["advice"].as_dict())
    return render(
        request,
        "replay_app/runs/_window_field.html",
        {"hint": hint, "value": value, "errors": []},
    )


def window_warnings(transcripts: list[Transcript], window: int | None) -> list[str]:
    """For each transcript whose fixed part (system prompt + tools) ``window`` does not
    exceed: the advice's warning, named by the transcript (the run and suite forms)."""
    if window is None:
        return []
    out = []
    for transcript in transcripts:
        advice = window_advice(sent_size(transcript), window=window)
        if advice.below_fixed:
            out.append(f"“{transcript.display_title}”: {advice.warning}.")
    return out
