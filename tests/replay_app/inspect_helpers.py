"""Helpers shared by the inspect/compare tests (a unique module name: ``conftest`` is
ambiguous when tests/engine runs in the same session)."""

from __future__ import annotations

from typing import Any

from django.test.signals import template_rendered

from replay_app.models import Run, RunStatus
from replay_app.runs import executor, services
from replay_app.runs.services import RunSpec


def make_run(user: Any, transcript: Any, strategy: str, **params: Any) -> Run:
    run = services.run_create(
        owner=user,
        transcript=transcript,
        spec=RunSpec(strategy=strategy, params=params),
        enqueue=False,
    )
    run = executor.run_execute(run=run)
    assert run.status == RunStatus.DONE, run.error
    return run


def view_with_templates(client: Any, url: str) -> tuple[str, list[str]]:
    """(body, names of the templates rendered for it) of a GET that must answer 200."""
    rendered: list[str] = []

    def seen(sender: Any, template: Any, **_: Any) -> None:
        rendered.append(template.name)

    template_rendered.connect(seen)
    try:
        response = client.get(url)
    finally:
        template_rendered.disconnect(seen)
    assert response.status_code == 200
    return response.content.decode(), rendered
