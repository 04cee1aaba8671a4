"""Issue 31, item 16: from a winning run, "save as configuration" and "export to my
agent's config" in one click each: POST forms with the CSRF token beside each finished run
on the compare page (run header and metrics column) and the comparison group page; saving
lands on the new configuration with the run's exact parameters, exporting downloads the
agent's own file with them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from inspect_helpers import make_run

from ctxlab.engine.native_config import native_config
from replay_app.configs import services as config_services
from replay_app.models import Run, StrategyConfig

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]


@pytest.fixture
def runs(user: Any, small_transcript: Any) -> list[Run]:
    # A window the run form would set: claude_code's own window and its followers.
    return [
        make_run(user, small_transcript, "qwenpaw", max_input_length=6000),
        make_run(user, small_transcript, "claude_code", context_window=16000),
    ]


def _csrf_client(user: Any) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def _form(html: str, action: str) -> str:
    """The CSRF token of the POST form whose action is ``action`` (it must exist)."""
    found = re.search(
        rf'<form method="post" action="{re.escape(action)}"[^>]*>'
        r'<input type="hidden" name="csrfmiddlewaretoken" value="([^"]+)">',
        html,
    )
    assert found is not None, action
    return found[1]


def test_save_as_configuration_from_the_compare_page(user: Any, runs: list[Run]) -> None:
    client = _csrf_client(user)
    page = client.get(f"/compare/?runs={runs[0].pk},{runs[1].pk}").content.decode()
    winner = runs[1]
    token = _form(page, f"/runs/{winner.pk}/save-config/")
    # The metrics column carries the same two buttons, submitting the header's forms.
    metrics = page[page.index('id="compare-metrics"') :]
    assert f'form="adopt-save-run-{winner.pk}"' in metrics
    assert f'form="adopt-native-run-{winner.pk}"' in metrics
    # Without the token the POST is refused; with it, one click saves and lands there.
    assert client.post(f"/runs/{winner.pk}/save-config/").status_code == 403
    response = client.post(f"/runs/{winner.pk}/save-config/", {"csrfmiddlewaretoken": token})
    config = StrategyConfig.objects.get(owner=user)
    assert response.status_code == 302 and response["Location"] == config.get_absolute_url()
    assert config.strategy == "claude_code"
    assert config.name == f"{winner.label} (run {winner.pk})"
    assert config_services.config_full_params(config) == winner.params
    assert config.params["context_window"] == 16000  # only what differs from the defaults
    landed = client.get(response["Location"]).content.decode()
    assert "Saved as configuration" in landed and config.name in landed
    # A second click saves another copy under a name of its own.
    client.post(f"/runs/{winner.pk}/save-config/", {"csrfmiddlewaretoken": token})
    assert StrategyConfig.objects.filter(owner=user).count() == 2
    assert StrategyConfig.objects.filter(name=f"{config.name} (2)").exists()


def test_export_to_my_agents_config_from_the_compare_page(user: Any, runs: list[Run]) -> None:
    client = _csrf_client(user)
    page = client.get(f"/compare/?runs={runs[0].pk},{runs[1].pk}").content.decode()
    for run in runs:
        token = _form(page, f"/runs/{run.pk}/native/")
        response = client.post(f"/runs/{run.pk}/native/", {"csrfmiddlewaretoken": token})
        native = native_config(run.strategy, run.params)
        assert response.status_code == 200
        assert response["Content-Disposition"].startswith("attachment")
        assert native.filename in response["Content-Disposition"]
        assert response.content.decode() == native.text
    # The window the run was replayed at is in the file (claude_code: its settings.json).
    assert (
        "16000"
        in client.post(
            f"/runs/{runs[1].pk}/native/", {"csrfmiddlewaretoken": token}
        ).content.decode()
    )
    assert client.get(f"/runs/{runs[1].pk}/native/").status_code == 405


def test_the_group_page_offers_both_for_each_finished_run(user: Any, runs: list[Run]) -> None:
    # The two runs as one comparison group, as the run form makes them.
    from replay_app.models import RunGroup

    group = RunGroup.objects.create(owner=user, transcript=runs[0].transcript, name="g")
    Run.objects.filter(pk__in=[r.pk for r in runs]).update(group=group)
    client = _csrf_client(user)
    page = client.get(group.get_absolute_url()).content.decode()
    for run in runs:
        _form(page, f"/runs/{run.pk}/save-config/")
        _form(page, f"/runs/{run.pk}/native/")


def test_another_users_run_is_not_found(
    user: Any, other_user: Any, runs: list[Run], client: Client
) -> None:
    client.force_login(other_user)
    assert client.post(f"/runs/{runs[0].pk}/save-config/").status_code == 404
    assert client.post(f"/runs/{runs[0].pk}/native/").status_code == 404
    assert not StrategyConfig.objects.exists()
