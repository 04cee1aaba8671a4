"""Strategy configurations: list, create/edit (with the stage builder), delete, export and
import, native exports.

Thin views: parse input, call a service or query, render. Every query is scoped with
``owned``/``get_owned_or_404`` (another user's row is a 404). Every page has a JSON twin
(``?format=json``). POSTs end in a redirect.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ctxlab.engine.native_config import NATIVE_SHAPES, native_config
from ctxlab.engine.strategies import STRATEGIES
from ctxlab.web.http import json_response
from ctxlab.web.http import wants_json as _wants_json
from ctxlab.web.ownership import get_owned_or_404
from replay_app.configs import services as config_services
from replay_app.configs import stage_builder
from replay_app.configs.forms import ImportConfigForm, StrategyConfigForm
from replay_app.configs.list_page import StrategyListPage, config_json
from replay_app.models import Run, StrategyConfig

CUSTOM = "custom"  # the strategy composed from stages (stage builder on its form)

# ---------------------------------------------------------------------------------------
# Strategy configurations
# ---------------------------------------------------------------------------------------


@require_GET
def strategy_list(request: HttpRequest) -> HttpResponse:
    page = StrategyListPage(request.user)
    if _wants_json(request):
        return json_response(page.as_json())
    return render(request, "replay_app/configs/strategy_list.html", page.context())


def _posted(request: HttpRequest, strategy: str) -> tuple[QueryDict | None, bool]:
    """The form data (None for a GET) and whether a stage-builder button sent it (a
    no-JavaScript builder step: re-render, do not save). For ``custom`` the stages field
    is rebuilt from the builder's inputs first (``stage_builder.from_post``)."""
    if request.method != "POST":
        return None, False
    data = request.POST.copy()
    if strategy != CUSTOM or stage_builder.FIELD not in data:
        return data, False
    built = stage_builder.from_post(data)
    data[stage_builder.FIELD] = built.text
    return data, bool(data.get(stage_builder.ACTION))


def _unsaved(data: QueryDict) -> dict[str, Any]:
    """A builder step's values as the initial values of an unbound form."""
    return {key: data.get(key) for key in data if key != "csrfmiddlewaretoken"}


def _form_context(
    form: StrategyConfigForm, strategy: str, config: StrategyConfig | None
) -> dict[str, Any]:
    context: dict[str, Any] = {"form": form, "strategy": STRATEGIES[strategy], "config": config}
    if strategy == CUSTOM:
        context["builder"] = stage_builder.from_text(str(form[stage_builder.FIELD].value()))
        context["builder_url"] = (
            reverse("strategy-stages-for", args=[config.pk])
            if config
            else reverse("strategy-stages")
        )
    return context


@require_http_methods(["GET", "POST"])
def strategy_create(request: HttpRequest) -> HttpResponse:
    # "preset" names the strategy: a parameter may be called "strategy" (langchain_trim).
    strategy = request.POST.get("preset") or request.GET.get("preset") or ""
    if strategy not in STRATEGIES:
        strategy = request.POST.get("strategy") or ""  # older forms and scripts
    if strategy not in STRATEGIES:
        raise Http404("No such strategy preset.")
    data, building = _posted(request, strategy)
    initial = {"name": f"my {strategy}"}
    if building and data is not None:
        initial, data = _unsaved(data), None
    form = StrategyConfigForm(data, strategy=strategy, owner=request.user, initial=initial)
    if data is not None and form.is_valid():
        config = config_services.config_create(
            owner=request.user,
            name=form.cleaned_data["name"],
            strategy=strategy,
            params=form.cleaned_data["params"],
            description=form.cleaned_data["description"],
        )
        messages.success(request, f"Saved configuration {config.name!r}.")
        return redirect(config)
    status = 400 if data is not None else 200
    return render(
        request,
        "replay_app/configs/strategy_form.html",
        _form_context(form, strategy, None),
        status=status,
    )


@require_http_methods(["GET", "POST"])
def strategy_edit(request: HttpRequest, pk: int) -> HttpResponse:
    config = get_owned_or_404(StrategyConfig.objects, request.user, pk=pk)
    if _wants_json(request):
        return json_response(config_json(config))
    data, building = _posted(request, config.strategy)
    initial = None
    if building and data is not None:
        initial, data = _unsaved(data), None
    form = StrategyConfigForm(
        data, strategy=config.strategy, owner=request.user, instance=config, initial=initial
    )
    if data is not None and form.is_valid():
        config_services.config_update(
            config=config,
            name=form.cleaned_data["name"],
            params=form.cleaned_data["params"],
            description=form.cleaned_data["description"],
        )
        messages.success(request, f"Saved configuration {config.name!r}.")
        return redirect(config)
    status = 400 if data is not None else 200
    context = _form_context(form, config.strategy, config)
    # A composed (custom) configuration has no original system, so no native file.
    context["native"] = (
        config_services.config_native(config) if config.strategy in NATIVE_SHAPES else None
    )
    return render(request, "replay_app/configs/strategy_form.html", context, status=status)


@require_POST
def strategy_stages(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """The stage builder re-rendered from the posted form (htmx swaps it in place). With a
    ``pk`` the builder belongs to that (own, custom) configuration."""
    if pk is not None:
        config = get_owned_or_404(StrategyConfig.objects, request.user, pk=pk)
        if config.strategy != CUSTOM:
            raise Http404("Not a custom configuration.")
    context = {"builder": stage_builder.from_post(request.POST), "builder_url": request.path}
    return render(request, "replay_app/configs/_stage_builder.html", context)


@require_POST
def strategy_delete(request: HttpRequest, pk: int) -> HttpResponse:
    config = get_owned_or_404(StrategyConfig.objects, request.user, pk=pk)
    name = config.name
    config.delete()
    messages.success(request, f"Deleted configuration {name!r}.")
    return redirect("strategy-list")


def _download(content: str, filename: str, content_type: str) -> HttpResponse:
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


@require_GET
def strategy_export(request: HttpRequest, pk: int) -> HttpResponse:
    config = get_owned_or_404(StrategyConfig.objects, request.user, pk=pk)
    text = json.dumps(config_services.config_export(config), ensure_ascii=False, indent=2) + "\n"
    return _download(text, f"{config.name}.ctxlab.json", "application/json")


@require_GET
def strategy_native(request: HttpRequest, pk: int) -> HttpResponse:
    config = get_owned_or_404(StrategyConfig.objects, request.user, pk=pk)
    if config.strategy not in NATIVE_SHAPES:
        raise Http404("This strategy has no native configuration file.")
    native = config_services.config_native(config)
    if _wants_json(request):
        return JsonResponse(native.as_dict(), json_dumps_params={"ensure_ascii": False})
    return _download(native.text, native.filename, f"{native.media_type}; charset=utf-8")


@require_GET
def preset_native(request: HttpRequest, name: str) -> HttpResponse:
    if name not in STRATEGIES or name not in NATIVE_SHAPES:
        raise Http404("No such strategy preset.")
    return JsonResponse(native_config(name).as_dict(), json_dumps_params={"ensure_ascii": False})


@require_POST
def strategy_import(request: HttpRequest) -> HttpResponse:
    form = ImportConfigForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            config = config_services.config_import(
                owner=request.user, data=form.cleaned_data["data"]
            )
        except ValueError as exc:
            form.add_error(None, f"Import failed: {exc}")
        else:
            messages.success(request, f"Imported configuration {config.name!r}.")
            return redirect(config)
    context = {**StrategyListPage(request.user).context(), "import_form": form}
    return render(request, "replay_app/configs/strategy_list.html", context, status=400)


# ---------------------------------------------------------------------------------------
# From a winning run: save as a configuration, export the agent's own config (one click)
# ---------------------------------------------------------------------------------------


def adopt_saved(
    request: HttpRequest, *, strategy: str, params: dict[str, Any], name: str, description: str
) -> HttpResponse:
    """Save the winner as a configuration and land on it (its edit page)."""
    config = config_services.config_adopt(
        owner=request.user, strategy=strategy, params=params, name=name, description=description
    )
    messages.success(request, f"Saved as configuration {config.name!r}.")
    return redirect(config)


def adopt_native(strategy: str, params: dict[str, Any]) -> HttpResponse:
    """The winner's parameters as its original agent's config file, downloaded."""
    if not config_services.has_native(strategy):
        raise Http404("This strategy has no native configuration file.")
    native = native_config(strategy, params)
    return _download(native.text, native.filename, f"{native.media_type}; charset=utf-8")


def _run_description(run: Run) -> str:
    window = f", window {run.window:,}" if run.window else ""
    return (
        f"Saved from run {run.pk} ({run.label}) on “{run.transcript.display_title}”"
        f"{window}, summariser {run.summarizer}."
    )


@require_POST
def run_save_config(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_owned_or_404(Run.objects.select_related("transcript"), request.user, pk=pk)
    return adopt_saved(
        request,
        strategy=run.strategy,
        params=dict(run.params),
        name=f"{run.label} (run {run.pk})",
        description=_run_description(run),
    )


@require_POST
def run_native(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_owned_or_404(Run.objects, request.user, pk=pk)
    return adopt_native(run.strategy, dict(run.params))
