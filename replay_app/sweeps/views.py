"""Parameter sweeps: the start form (/runs/sweep/new/) and a group's sweep table
(/runs/groups/<id>/sweep/: the htmx fragment the group page polls, its JSON and CSV).

Thin: the form validates, ``services.group_create`` creates and enqueues (the same path as
/runs/new/, budget checks included), ``sweep`` reads the table back from the runs.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods

from ctxlab.web.http import json_response
from ctxlab.web.ownership import get_owned_or_404
from replay_app.models import RunGroup
from replay_app.runs import services
from replay_app.runs.views import start_group
from replay_app.sweeps import sweep
from replay_app.sweeps.forms import SweepForm
from replay_app.sweeps.section import SweepSection

INITIAL_FROM_QUERY = ("transcript", "base", "param", "values", "start", "stop", "step", "name")


@require_http_methods(["GET", "POST"])
def sweep_new(request: HttpRequest) -> HttpResponse:
    initial: dict[str, Any] = {"base": "preset:qwenpaw", "summarizer": "offline"}
    initial.update({k: request.GET[k] for k in INITIAL_FROM_QUERY if request.GET.get(k)})
    form = SweepForm(request.POST or None, owner=request.user, initial=initial)

    def plan(data: dict[str, Any]) -> tuple[list[services.RunSpec], str]:
        base, key = data["sweep_base"], data["sweep_key"]
        specs = sweep.specs(base, key, data["sweep_values"])
        return specs, data["name"] or sweep.default_name(base, key)

    return start_group(request, form, plan, "replay_app/sweeps/sweep_new.html")


@require_GET
def group_sweep(request: HttpRequest, pk: int) -> HttpResponse:
    group = get_owned_or_404(RunGroup.objects, request.user, pk=pk)
    section = SweepSection.of(group, list(group.runs.select_related("config").order_by("pk")))
    if section is None:
        raise Http404("This comparison is not a parameter sweep.")
    fmt = request.GET.get("format")
    if fmt == "json":
        return json_response({"group": group.pk, "name": group.name, **section.as_json()})
    if fmt == "csv":
        response = HttpResponse(section.as_csv(), content_type="text/csv; charset=utf-8")
        response.headers["Content-Disposition"] = content_disposition_header(
            True, f"sweep-{group.pk}-{section.sweep.key}.csv"
        )
        return response
    seen = request.GET.get("seen", "")
    if seen.isdigit() and int(seen) == section.settled and not section.sweep.finished:
        return HttpResponse(status=204)  # nothing new: htmx keeps the fragment and polls on
    return render(request, "replay_app/sweeps/_sweep.html#sweep-section", section.context())
