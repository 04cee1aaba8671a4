"""Issue 31, item 16 on a suite: each leaderboard row saves its configuration (as its
runs ran it: the window and grid values over the base) or exports it as the agent's own
config file, in one click each (POST with the CSRF token)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from suite_testdata import import_chat

from ctxlab.engine.native_config import native_config
from replay_app.configs import services as config_services
from replay_app.models import StrategyConfig
from suites_app import configs, services
from suites_app.configs import Base
from suites_app.models import Suite

pytestmark = pytest.mark.django_db


@pytest.fixture
def suite(user: Any) -> Suite:
    transcripts = [import_chat(user, seed=s, turns=6, size=2000) for s in (1, 2)]
    grid = configs.grid_configs(
        Base("qwenpaw"), {"compact_threshold_ratio": "0.5,0.8"}, window=6000
    )
    made = services.suite_create(
        owner=user, name="ratios", transcripts=transcripts, configs=grid,
        grid_keys=["compact_threshold_ratio"], enqueue=False,
    )  # fmt: skip
    services.suite_enqueue(made)  # eager Celery: runs here
    made.refresh_from_db()
    return made


def _token(html: str, action: str) -> str:
    found = re.search(
        rf'<form method="post" action="{re.escape(action)}"[^>]*>'
        r'<input type="hidden" name="csrfmiddlewaretoken" value="([^"]+)">',
        html,
    )
    assert found is not None, action
    return found[1]


def test_a_leaderboard_row_saves_and_exports_its_configuration(user: Any, suite: Suite) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    page = client.get(f"/suites/{suite.pk}/").content.decode()
    board = page[page.index('id="leaderboard"') :]
    index = 0  # compact_threshold_ratio=0.5 at window 6,000 (0.8 is the default)
    run = suite.items.filter(config_index=index).select_related("run").first().run  # type: ignore[union-attr]
    save = f"/suites/{suite.pk}/configs/{index}/save-config/"
    native = f"/suites/{suite.pk}/configs/{index}/native/"
    token = _token(board, save)
    response = client.post(save, {"csrfmiddlewaretoken": token})
    config = StrategyConfig.objects.get(owner=user)
    assert response.status_code == 302 and response["Location"] == config.get_absolute_url()
    # Exactly the parameters its runs replayed with.
    assert config.strategy == "qwenpaw"
    assert config_services.config_full_params(config) == run.params
    assert config.params["max_input_length"] == 6000
    assert config.params["compact_threshold_ratio"] == 0.5
    assert "ratios" in config.description and config.name.endswith(f"(suite {suite.pk})")
    token = _token(board, native)
    response = client.post(native, {"csrfmiddlewaretoken": token})
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment")
    assert response.content.decode() == native_config("qwenpaw", run.params).text
    assert client.post(f"/suites/{suite.pk}/configs/9/save-config/",
                       {"csrfmiddlewaretoken": token}).status_code == 404  # fmt: skip


def test_another_users_suite_row_is_not_found(
    suite: Suite, other_user: Any, client: Client
) -> None:
    client.force_login(other_user)
    assert client.post(f"/suites/{suite.pk}/configs/0/save-config/").status_code == 404
    assert client.post(f"/suites/{suite.pk}/configs/0/native/").status_code == 404
    assert not StrategyConfig.objects.exists()
