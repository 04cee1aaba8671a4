"""The upload list (``/transcripts/``) and one upload's page (``/transcripts/files/N/``).
One page object per page feeds both its template and its ``?format=json`` twin, so they
cannot disagree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Exists, F, OuterRef, Q, QuerySet

from ctxlab.web.ownership import owned

from . import services
from .models import Transcript, Upload

UPLOADS_PER_PAGE = 25
CONVERSATIONS_PER_PAGE = 50
TITLES_SHOWN = 5  # conversation titles the upload list shows under a file's name

SORTS = {
    "name": "name",
    "format": "format",
    "messages": "message_count",
    "tool_calls": "tool_call_count",
    "size": "size",
    "tokens": "reference_tokens",
    "peak": "reported_peak_context",
    "secrets": "secret_count",
    "created": "created_at",
}
SORT_LABELS = [
    ("name", "File"),
    ("format", "Format"),
    ("messages", "Messages"),
    ("tool_calls", "Tool calls"),
    ("size", "Size"),
    ("tokens", "Reference tokens"),
    ("peak", "Reported peak context"),
    ("secrets", "Secrets"),
    ("created", "Imported"),
]


def upload_json(upload: Upload) -> dict[str, Any]:
    return {
        "id": upload.pk,
        "name": upload.name,
        "format": upload.format,
        "size": upload.size,
        "sha256": upload.sha256,
        "created_at": upload.created_at.isoformat(),
        "importer_version": upload.importer_version,
        "conversations": upload.conversation_count,
        "messages": upload.message_count,
        "tool_calls": upload.tool_call_count,
        "tool_results": upload.tool_result_count,
        "reference_tokens": upload.reference_tokens,
        "reported_peak_context": upload.reported_peak_context,
        "secrets": upload.secret_count,
        "warnings": services.describe_warnings(upload.warnings),
        "set_aside": services.set_aside_sentences(upload.warnings),
        "url": upload.get_absolute_url(),
    }


@dataclass(frozen=True)
class TitleLine:
    """One conversation of a file as the upload list names it."""

    id: int
    title: str  # ``Transcript.display_title``: its title, else its id
    url: str

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "url": self.url}


def conversation_titles(uploads: list[Upload], query: str) -> dict[int, list[TitleLine]]:
    """Per upload, the titles of its first ``TITLES_SHOWN`` conversations in file order
    (with a ``query``: those whose title matches it first, the reason the file is listed).
    At most two queries for the whole page."""
    ids = [u.pk for u in uploads]
    rows = Transcript.objects.filter(upload__in=ids).only(
        "pk", "upload_id", "title", "conversation_id", "position"
    )
    found: dict[int, list[TitleLine]] = {pk: [] for pk in ids}
    picks = [rows.filter(title__icontains=query)] if query else []
    for chosen in [*picks, rows.filter(position__lt=TITLES_SHOWN)]:
        for t in chosen.order_by("upload_id", "position"):
            lines = found[t.upload_id]
            if len(lines) < TITLES_SHOWN and all(line.id != t.pk for line in lines):
                lines.append(TitleLine(t.pk, t.display_title, t.get_absolute_url()))
    return found


def transcript_summary_json(t: Transcript) -> dict[str, Any]:
    return {
        "id": t.pk,
        "conversation_id": t.conversation_id,
        "title": t.title,
        "format": t.format,
        "messages": t.message_count,
        "tool_calls": t.tool_call_count,
        "tool_results": t.tool_result_count,
        "reference_tokens": t.reference_tokens,
        "reported_peak_context": t.reported_peak_context,
        "secrets": t.secret_count,
        "url": t.get_absolute_url(),
    }


# The upload list


@dataclass
class UploadListPage:
    page: Page[Upload]
    query: str
    sort: str
    titles: dict[int, list[TitleLine]]  # per upload: the conversations the row names

    def as_json(self) -> dict[str, Any]:
        return {
            "uploads": [
                {
                    **upload_json(u),
                    "titles": [line.as_json() for line in self.titles.get(u.pk, [])],
                }
                for u in self.page
            ],
            "page": self.page.number,
            "pages": self.page.paginator.num_pages,
            "count": self.page.paginator.count,
            "q": self.query,
            "sort": self.sort,
        }

    def context(self) -> dict[str, Any]:
        columns = [
            {
                "key": key,
                "label": label,
                "sort": f"-{key}" if self.sort == key else key,
                "active": self.sort.removeprefix("-") == key,
                "descending": self.sort == f"-{key}",
            }
            for key, label in SORT_LABELS
        ]
        for upload in self.page:
            titles = self.titles.get(upload.pk, [])
            upload.titles = titles  # type: ignore[attr-defined]
            upload.titles_more = max(upload.conversation_count - len(titles), 0)  # type: ignore[attr-defined]
        return {"page_obj": self.page, "query": self.query, "sort": self.sort, "columns": columns}


def _uploads(user: Any, query: str, sort: str) -> tuple[QuerySet[Upload], str]:
    uploads = owned(Upload.objects.defer("data"), user)
    if query:
        titles = Transcript.objects.filter(upload=OuterRef("pk"), title__icontains=query)
        uploads = uploads.filter(
            Q(name__icontains=query) | Q(format__icontains=query) | Exists(titles)
        )
    key = sort.removeprefix("-")
    if key not in SORTS:
        sort, key = "-created", "created"
    field = F(SORTS[key])
    order = field.desc(nulls_last=True) if sort.startswith("-") else field.asc(nulls_first=True)
    return uploads.order_by(order, "-id"), sort


def upload_list_page(user: Any, query: str, sort: str, page_number: str) -> UploadListPage:
    """The user's uploads matching ``query`` (file name, format or a conversation title),
    sorted by ``sort`` (a ``SORTS`` key, ``-`` for descending; unknown: newest first)."""
    uploads, sort = _uploads(user, query, sort)
    page = Paginator(uploads, UPLOADS_PER_PAGE).get_page(page_number)
    # One query for the single-conversation uploads' transcript ids (their rows link there).
    singles = dict(
        Transcript.objects.filter(
            upload__in=[u.pk for u in page if u.conversation_count == 1]
        ).values_list("upload_id", "pk")
    )
    for upload in page:
        upload.single_transcript_id = singles.get(upload.pk)  # type: ignore[attr-defined]
    titles = conversation_titles(list(page), query)
    return UploadListPage(page=page, query=query, sort=sort, titles=titles)


# One upload


@dataclass
class UploadPage:
    upload: Upload
    page: Page[Transcript]
    query: str

    def as_json(self) -> dict[str, Any]:
        return {
            "upload": upload_json(self.upload),
            "transcripts": [transcript_summary_json(t) for t in self.page],
            "page": self.page.number,
            "pages": self.page.paginator.num_pages,
            "count": self.page.paginator.count,
        }

    def context(self) -> dict[str, Any]:
        return {
            "upload": self.upload,
            "page_obj": self.page,
            "query": self.query,
            "warnings": services.describe_warnings(self.upload.warnings),
            "set_aside": services.set_aside_sentences(self.upload.warnings),
        }


def upload_page(upload: Upload, query: str, page_number: str) -> UploadPage:
    """An upload's conversations in file order, narrowed by ``query`` (title or id)."""
    transcripts = upload.transcripts.order_by("position").defer(
        "tools", "compactions", "metadata", "secrets"
    )
    if query:
        transcripts = transcripts.filter(
            Q(title__icontains=query) | Q(conversation_id__icontains=query)
        )
    page = Paginator(transcripts, CONVERSATIONS_PER_PAGE).get_page(page_number)
    return UploadPage(upload=upload, page=page, query=query)
