"""Issue 31, item 16 in a real browser: on the compare page, one click on a winning run's
"Save as configuration" (the metrics column's button, submitting the run header's POST
form with its CSRF token) lands on the saved configuration with the run's parameters, and
one click on "Export to my agent's config" downloads the agent's own file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_one_click_save_and_export_from_the_compare_page(
    page: Any, live_server: Any, login: Any, screenshot: Any, django_user_model: Any
) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))
    from inspect_helpers import make_run
    from replay_testdata import agent_chat, import_transcript

    from ctxlab.engine.native_config import native_config
    from replay_app.configs import services as config_services
    from replay_app.models import StrategyConfig

    login()
    user = django_user_model.objects.get(username="alice")
    transcript = import_transcript(user, agent_chat(turns=6, size=500), name="small.json")
    loser = make_run(user, transcript, "qwenpaw", max_input_length=6000)
    winner = make_run(user, transcript, "claude_code", context_window=16000)

    page.goto(f"{live_server.url}/compare/?runs={loser.pk},{winner.pk}")
    column = page.locator(f"#compare-metrics th:has(button[form='adopt-save-run-{winner.pk}'])")
    screenshot("compare-adopt")
    column.locator("button.adopt-save").click()
    page.wait_for_url("**/strategies/*/")
    config = StrategyConfig.objects.get(owner=user)
    assert page.url.endswith(config.get_absolute_url())
    assert "Saved as configuration" in page.locator("ul.messages").inner_text()
    assert config.strategy == "claude_code"
    assert config_services.config_full_params(config) == winner.params
    screenshot("saved-configuration")

    page.goto(f"{live_server.url}/compare/?runs={loser.pk},{winner.pk}")
    header = page.locator(f"li.compare-run[data-run='{winner.pk}']")
    with page.expect_download() as download:
        header.locator("button.adopt-native").click()
    native = native_config("claude_code", winner.params)
    assert download.value.suggested_filename == native.filename
    assert Path(download.value.path()).read_text(encoding="utf-8") == native.text
    assert not page.errors, page.errors
