"""Transcript pages: upload + list, one upload's conversations, one transcript.

Every query goes through ``owned``/``get_owned_or_404``: another user's data is a 404.
Every page has a JSON twin (``?format=json``).
"""

from __future__ import annotations

from django.core.paginator import Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_POST

from ctxlab.engine import TranscriptError
from ctxlab.engine.sources import entire
from ctxlab.serving.abandon import raise_if_abandoned
from ctxlab.web.http import HtmxHttpRequest
from ctxlab.web.http import wants_json as _wants_json
from ctxlab.web.ownership import get_owned_or_404

from . import conversation, huge, services, session_now_page, transcript_page, upload_pages
from .forms import UploadForm
from .models import Message, Transcript, Upload
from .uploads import SizeLimitUploadHandler, close_uploads

MESSAGES_PER_PAGE = 100
MAX_MESSAGES_PER_PAGE = 1000


def _page_number(request: HttpRequest) -> str:
    return request.GET.get("page") or "1"


# Upload list


def _list_page(request: HttpRequest) -> upload_pages.UploadListPage:
    return upload_pages.upload_list_page(
        request.user,
        request.GET.get("q", "").strip(),
        request.GET.get("sort", "-created"),
        _page_number(request),
    )


@require_GET
def transcript_list(request: HtmxHttpRequest) -> HttpResponse:
    listing = _list_page(request)
    if _wants_json(request):
        return JsonResponse(listing.as_json())
    context = listing.context()
    template_name = "sessions_app/transcript_list.html"
    if request.htmx and request.htmx.target == "upload-table":
        template_name += "#upload-table"
    context["form"] = UploadForm()
    return render(request, template_name, context)


# Upload (POST): many files, one outcome each


@csrf_exempt  # the CSRF check runs in _upload_create, after our upload handler is installed
@require_POST
def upload_create(request: HtmxHttpRequest) -> HttpResponse:
    handler = SizeLimitUploadHandler(request, limit=services.max_upload_bytes())
    request.upload_handlers.insert(0, handler)
    return _upload_create(request, handler)


@csrf_protect
def _upload_create(request: HtmxHttpRequest, handler: SizeLimitUploadHandler) -> HttpResponse:
    form = UploadForm(request.POST, request.FILES)
    outcomes: list[services.ImportOutcome] = [
        services.ImportOutcome(
            name=name, size=size, error=services.oversize_error(name=name, size=size)
        )
        for name, size in handler.refused
    ]
    try:
        valid = form.is_valid()
        if valid:
            outcomes += _import_files(request, form)
    finally:
        # Now, whatever happened (an error, a client that went away): not when the request
        # is collected, which for an abandoned request may be never.
        close_uploads(f for files in request.FILES.lists() for f in files[1])
    if not valid and not outcomes:
        outcomes.append(
            services.ImportOutcome(
                name="(form)", size=0, error=TranscriptError(form.errors.as_text())
            )
        )
    if not outcomes:
        outcomes.append(
            services.ImportOutcome(
                name="(no file)", size=0, error=TranscriptError("no file was chosen")
            )
        )
    status = 200 if any(o.ok for o in outcomes) else 400
    if _wants_json(request):
        return JsonResponse({"results": [o.to_json() for o in outcomes]}, status=status)
    if request.htmx:
        # htmx swaps 2xx only; per-file errors are content, not a failed request.
        return render(
            request, "sessions_app/_upload_results.html", {"outcomes": outcomes}, status=200
        )
    context = _list_page(request).context()
    context.update(form=UploadForm(), outcomes=outcomes)
    return render(request, "sessions_app/transcript_list.html", context, status=status)


def _import_files(request: HtmxHttpRequest, form: UploadForm) -> list[services.ImportOutcome]:
    """Each uploaded file through the CLI's path (``upload_import_file``): refused from
    its first bytes when it is no transcript, read whole only when it looks like one."""
    fmt = form.cleaned_data["format"] or None
    outcomes: list[services.ImportOutcome] = []
    for uploaded in form.cleaned_data["files"]:
        raise_if_abandoned()  # the client went away: no more files for nobody
        # A ZIP of an Entire checkpoints branch: each agent session on it, once.
        tree = entire.open_zip(uploaded) if uploaded.name.lower().endswith(".zip") else None
        if tree is not None and fmt is None:
            found = entire.found(tree, uploaded.name)
            outcomes.extend(o for _, o in services.import_found(owner=request.user, found=found))
            continue
        outcomes.append(
            services.upload_import_file(
                owner=request.user,
                name=uploaded.name or "upload",
                file=uploaded,
                size=uploaded.size,
                format=fmt,
            )
        )
    return outcomes


# One upload: its conversations, its bytes


@require_GET
def upload_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    upload = get_owned_or_404(Upload.objects.defer("data"), request.user, pk=pk)
    found = upload_pages.upload_page(
        upload, request.GET.get("q", "").strip(), _page_number(request)
    )
    if _wants_json(request):
        return JsonResponse(found.as_json())
    template_name = "sessions_app/upload_detail.html"
    if request.htmx and request.htmx.target and request.htmx.target.startswith("conversations-"):
        template_name += "#conversation-rows"
    context = found.context()
    return render(request, template_name, context)


@require_GET
def upload_download(request: HttpRequest, pk: int) -> HttpResponse:
    upload = get_owned_or_404(Upload.objects.all(), request.user, pk=pk)
    response = HttpResponse(bytes(upload.data), content_type="application/octet-stream")
    response["Content-Disposition"] = content_disposition_header(True, upload.name)
    return response


@require_POST
def upload_reparse(request: HttpRequest, pk: int) -> HttpResponse:
    upload = get_owned_or_404(Upload.objects.defer("data"), request.user, pk=pk)
    outcome = services.upload_reparse(upload=upload)
    if _wants_json(request):
        return JsonResponse(outcome.to_json(), status=200 if outcome.ok else 400)
    from django.contrib import messages

    if outcome.ok:
        messages.success(request, f"Re-parsed {upload.name}.")
    else:
        messages.error(request, f"Re-parse failed: {outcome.error}")
    return redirect(upload)


@require_POST
def upload_delete(request: HttpRequest, pk: int) -> HttpResponse:
    upload = get_owned_or_404(Upload.objects.defer("data"), request.user, pk=pk)
    services.upload_delete(upload=upload)
    from django.contrib import messages

    messages.success(request, f"Deleted {upload.name}.")
    return redirect("transcript-list")


# One transcript


@require_GET
def message_block_text(request: HttpRequest, pk: int, index: int, block: int) -> HttpResponse:
    """One block's full text (``?field=text|input``, ``&part=N`` for a tool result's part)
    as UTF-8 plain text; ``?start=&length=`` pages through it in characters,
    ``?download=1`` saves it as a file."""
    transcript = get_owned_or_404(Transcript.objects.only("pk", "owner"), request.user, pk=pk)
    message = transcript.messages.filter(index=index).only("blocks").first()
    field = request.GET.get("field", "text")
    try:
        blocks = message.blocks if message is not None else []
        target = blocks[block]
        if request.GET.get("part") not in (None, ""):
            target = (target.get("parts") or [])[int(request.GET["part"])]
        start = max(0, int(request.GET.get("start", 0)))
        length = int(request.GET["length"]) if request.GET.get("length") else None
    except (IndexError, ValueError, TypeError, AttributeError):
        raise Http404("no such block") from None
    if field not in huge.FIELDS:
        raise Http404("field is text or input")
    text = huge.field_text(target, field)
    piece = text[start:] if length is None else text[start : start + max(0, length)]
    response = HttpResponse(piece, content_type="text/plain; charset=utf-8")
    response["X-Total-Chars"] = str(len(text))
    name = f"transcript-{transcript.pk}-message-{index}-block-{block}-{field}.txt"
    disposition = "attachment" if request.GET.get("download") else "inline"
    header = content_disposition_header(disposition == "attachment", name)
    if header is not None:  # None only without a file name
        response["Content-Disposition"] = header
    return response


def _message_page(request: HttpRequest, transcript: Transcript) -> tuple[Page[Message], int]:
    try:
        per_page = max(
            1, min(int(request.GET.get("per_page", MESSAGES_PER_PAGE)), MAX_MESSAGES_PER_PAGE)
        )
    except ValueError:
        per_page = MESSAGES_PER_PAGE
    messages = transcript.messages.order_by("index")
    return Paginator(messages, per_page).get_page(_page_number(request)), per_page


@require_GET
def transcript_now(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The original session at one of its model calls (the newest, followed live, unless
    ``?step=``): what the agent sent and what its next compaction would take."""
    transcript = get_owned_or_404(
        Transcript.objects.select_related("upload").defer("upload__data"), request.user, pk=pk
    )
    step = request.GET.get("step", "")
    shown = session_now_page.session_now_page(transcript, int(step) if step.isdigit() else None)
    if _wants_json(request):
        return JsonResponse(shown.as_json(), json_dumps_params={"ensure_ascii": False})
    return render(request, "sessions_app/session_now.html", shown.context())


@require_GET
def transcript_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    transcript = get_owned_or_404(
        Transcript.objects.select_related("upload", "parent").defer("upload__data"),
        request.user,
        pk=pk,
    )
    page, per_page = _message_page(request, transcript)
    query = request.GET.get("q", "").strip()[:200]
    found = None
    if query:
        hit_page = int(request.GET["hits"]) if request.GET.get("hits", "").isdigit() else 1
        current = int(request.GET["hit"]) if request.GET.get("hit", "").isdigit() else None
        found = conversation.search(transcript, query, hit_page, per_page, current)
    shown = transcript_page.transcript_page(transcript, page, per_page, found)
    if _wants_json(request):
        return JsonResponse(shown.as_json(), json_dumps_params={"ensure_ascii": False})
    if request.htmx and request.htmx.target and request.htmx.target.startswith("message-page"):
        template = "sessions_app/transcript_detail.html#message-page"
        return render(request, template, shown.messages_context())
    return render(request, "sessions_app/transcript_detail.html", shown.context())
