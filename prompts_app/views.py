"""The prompt editor: versions of a summarising strategy's prompt, replayed beside the
original prompt, compared, and exported to the agent's own configuration.

Thin views: every row through ``owned`` / ``get_owned_or_404`` (another user's version is a
404); every page has its JSON twin; POSTs end in a redirect."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_POST

from ctxlab.engine.summarize import prompt_edit
from ctxlab.web.http import int_param, json_response, wants_json
from ctxlab.web.ownership import get_owned_or_404, owned
from prompts_app import services
from prompts_app.models import PromptVersion
from prompts_app.pages import DiffPage, PromptListPage, VersionPage
from replay_app.costs.run_budget import BudgetError, LLMOptions
from sessions_app.models import Transcript


@require_GET
def prompt_list(request: HttpRequest) -> HttpResponse:
    page = PromptListPage(request.user)
    if wants_json(request):
        return json_response(page.as_json())
    return render(request, "prompts_app/list.html", page.context())


@require_POST
def prompt_start(request: HttpRequest) -> HttpResponse:
    """Version 1 of a strategy's prompt: its real prompt, to edit."""
    strategy = request.POST.get("strategy", "")
    if strategy not in prompt_edit.TARGETS:
        raise Http404("No prompt editor for this strategy.")
    version = services.version_start(owner=request.user, strategy=strategy)
    return redirect(version)


@require_GET
def prompt_version(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_owned_or_404(PromptVersion.objects, request.user, pk=pk)
    page = VersionPage(version)
    if wants_json(request):
        return json_response(page.as_json())
    return render(request, "prompts_app/version.html", page.context())


@require_POST
def prompt_save(request: HttpRequest, pk: int) -> HttpResponse:
    """A new version from the editor's form (the parent stays as it was)."""
    parent = get_owned_or_404(PromptVersion.objects, request.user, pk=pk)
    try:
        version = services.version_save(
            owner=request.user,
            parent=parent,
            text=request.POST.get("text", ""),
            rules=request.POST.get("rules", ""),
            instructions=request.POST.get("instructions", ""),
            name=request.POST.get("name", ""),
        )
    except ValueError as exc:
        page = VersionPage(parent, error=str(exc))
        return render(request, "prompts_app/version.html", page.context(), status=400)
    messages.success(request, f"Saved version {version.number}.")
    return redirect(version)


@require_POST
def prompt_replay(request: HttpRequest, pk: int) -> HttpResponse:
    """Replay this version and the original prompt on one of the owner's transcripts."""
    version = get_owned_or_404(PromptVersion.objects, request.user, pk=pk)
    transcript = get_owned_or_404(
        Transcript.objects, request.user, pk=int_param(request.POST.get("transcript")) or 0
    )
    baseline = _posted_baseline(request)
    try:
        group = services.version_replay(
            owner=request.user,
            version=version,
            transcript=transcript,
            summarizer=request.POST.get("summarizer", "offline"),
            baseline=baseline,
            window=int_param(request.POST.get("window")),
            llm=LLMOptions(model=request.POST.get("model", "").strip()[:100]),
        )
    except (ValueError, BudgetError) as exc:
        page = VersionPage(version, error=str(exc))
        return render(request, "prompts_app/version.html", page.context(), status=400)
    messages.success(request, f"Replaying {group.name}.")
    return redirect(version)


@require_POST
def prompt_suite(request: HttpRequest, pk: int) -> HttpResponse:
    """This version and another over several of the owner's transcripts, as a suite."""
    version = get_owned_or_404(PromptVersion.objects, request.user, pk=pk)
    ids = [i for i in (int_param(v) for v in request.POST.getlist("transcripts")) if i]
    transcripts = list(owned(Transcript.objects, request.user).filter(pk__in=ids))
    baseline = _posted_baseline(request)
    try:
        if len(transcripts) != len(set(ids)) or not transcripts:
            raise ValueError("choose one or more of your transcripts")
        suite = services.version_suite(
            owner=request.user,
            version=version,
            transcripts=transcripts,
            summarizer=request.POST.get("summarizer", "offline"),
            baseline=baseline,
            window=int_param(request.POST.get("window")),
            llm=LLMOptions(model=request.POST.get("model", "").strip()[:100]),
            name=request.POST.get("name", ""),
        )
    except (ValueError, BudgetError) as exc:
        page = VersionPage(version, error=str(exc))
        return render(request, "prompts_app/version.html", page.context(), status=400)
    messages.success(request, f"Started suite {suite.name!r}.")
    return redirect("suite-detail", suite_id=suite.pk)


def _posted_baseline(request: HttpRequest) -> PromptVersion | None:
    """The owner's version posted as ``baseline`` (None: the strategy's original prompt)."""
    if not request.POST.get("baseline"):
        return None
    return get_owned_or_404(
        PromptVersion.objects, request.user, pk=int_param(request.POST.get("baseline")) or 0
    )


@require_POST
def prompt_adopt(request: HttpRequest, pk: int) -> HttpResponse:
    """Save the version's own setting as a strategy configuration (suites, the run form)."""
    version = get_owned_or_404(PromptVersion.objects, request.user, pk=pk)
    try:
        config = services.version_adopt(owner=request.user, version=version)
    except ValueError as exc:
        page = VersionPage(version, error=str(exc))
        return render(request, "prompts_app/version.html", page.context(), status=400)
    messages.success(request, f"Saved as configuration {config.name!r}.")
    return redirect(config)


@require_GET
def prompt_diff(request: HttpRequest, a: int, b: int) -> HttpResponse:
    left = get_owned_or_404(PromptVersion.objects, request.user, pk=a)
    right = get_owned_or_404(PromptVersion.objects, request.user, pk=b)
    page = DiffPage(left, right)
    if wants_json(request):
        return json_response(page.as_json())
    return render(request, "prompts_app/diff.html", page.context())


@require_GET
def prompt_export(request: HttpRequest, pk: int) -> HttpResponse:
    """The version in its agent's own configuration file, as a download."""
    version = get_owned_or_404(PromptVersion.objects, request.user, pk=pk)
    native = services.version_export(version)
    if wants_json(request):
        return JsonResponse(native.as_dict(), json_dumps_params={"ensure_ascii": False})
    response = HttpResponse(native.text, content_type=f"{native.media_type}; charset=utf-8")
    response.headers["Content-Disposition"] = content_disposition_header(True, native.filename)
    return response
