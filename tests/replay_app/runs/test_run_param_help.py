"""The run page's parameter snapshot shows each value beside its parameter's help: aider's
max_chat_history_tokens 0 reads as "0 = the model's: max_input_tokens / 16 ...", not as a
budget of zero tokens."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.utils.html import escape

from ctxlab.engine.strategies import get_strategy_class
from replay_app.models import Run, RunStatus
from replay_app.runs import services
from replay_app.runs.services import RunSpec

pytestmark = pytest.mark.django_db


def test_each_parameter_is_shown_with_its_help(
    auth_client: Client, user: Any, small_transcript: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_create(
            owner=user, transcript=small_transcript, spec=RunSpec(strategy="aider")
        )
    run = Run.objects.get(pk=run.pk)
    assert run.status == RunStatus.DONE and run.params["max_chat_history_tokens"] == 0
    html = auth_client.get(f"/runs/{run.pk}/").content.decode()
    section = html[html.index('id="run-params"') :]
    section = section[: section.index("</section>")]
    for param in get_strategy_class("aider").PARAMS:
        row = section[section.index(f'<th class="mono">{param.name}</th>') :]
        row = row[: row.index("</tr>")]
        assert escape(param.help) in row, param.name
