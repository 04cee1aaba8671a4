"""The Cline and Gemini CLI strategy pages in a real browser: the native file is shown and
offered for download, and what the file cannot hold is named beside it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from replay_app.configs import services as config_services

pytestmark = pytest.mark.django_db(transaction=True)


def test_native_files_on_the_strategy_pages(
    page: Any, live_server: Any, login: Any, screenshot: Any, django_user_model: Any
) -> None:
    login()
    user = django_user_model.objects.get(username="alice")
    cline = config_services.config_create(
        owner=user, name="cline old threshold", strategy="cline",
        params={"strategy": "basic", "trigger_ratio": 0.75},
    )  # fmt: skip
    gemini = config_services.config_create(
        owner=user, name="gemini 2025", strategy="gemini_cli",
        params={"compression_threshold": 0.7},
    )  # fmt: skip

    page.goto(f"{live_server.url}/strategies/{cline.pk}/")
    shown = json.loads(page.inner_text("pre.native-config"))
    assert shown == {"compactionEnabled": True, "compactionStrategy": "basic"}
    note = page.locator(".native-unexpressed")
    assert "Not expressible in global-settings.json" in note.inner_text()
    assert "trigger_ratio" in note.inner_text() and "0.75" in note.inner_text()
    with page.expect_download() as download:
        page.click(f"a[href='/strategies/{cline.pk}/native/']")
    assert download.value.suggested_filename == "global-settings.json"
    screenshot("cline")

    page.goto(f"{live_server.url}/strategies/{gemini.pk}/")
    shown = json.loads(page.inner_text("pre.native-config"))
    assert shown["model"]["compressionThreshold"] == 0.7
    assert page.locator(".native-unexpressed").count() == 0
    screenshot("gemini")
