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

from ctxlab.engine.budget import peak_request, suggested_windows
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


def window_hint(owner: Any, transcript_id: Any) -> dict[str, Any] | None:
    """The chosen transcript's cl100k peak request and the windows suggested from it
    (25/50/75 %), or None without a transcript."""
    if not str(transcript_id or "").isdigit():
        return None
    transcript = owned(Transcript.objects, owner).filter(pk=int(transcript_id)).first()
    if transcript is None or transcript.message_count == 0:  # nothing to suggest from
        return None
    rows = transcript.messages.order_by("index").values_list("role", "reference_tokens")
    peak = peak_request(rows.iterator(chunk_size=5000))
    return {"transcript": transcript, "peak": peak, "windows": suggested_windows(peak)}


@require_GET
def window_suggestions(request: HttpRequest) -> HttpResponse:
    """``?transcript=&window=`` → the run form's window field with its suggestions."""
    return render(
        request,
        "replay_app/runs/_window_field.html",
        {
            "hint": window_hint(request.user, request.GET.get("transcript")),
            "value": request.GET.get("window", "")[:12],
            "errors": [],
        },
    )
