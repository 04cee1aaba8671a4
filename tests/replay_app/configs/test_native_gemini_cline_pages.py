"""Gemini CLI and Cline native files are offered like the others: the saved configuration's
download, its strategy page, the strategy list and the preset defaults."""

from __future__ import annotations

import json
from typing import Any

import pytest

from replay_app.configs import services as config_services

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("strategy", "params", "filename", "path", "value"),
    [
        ("gemini_cli", {"compression_threshold": 0.7}, "settings.json",
         ("model", "compressionThreshold"), 0.7),
        ("cline", {"strategy": "basic"}, "global-settings.json",
         ("compactionStrategy",), "basic"),
    ],
)  # fmt: skip
def test_native_download_and_pages(
    auth_client: Any,
    user: Any,
    strategy: str,
    params: dict[str, Any],
    filename: str,
    path: tuple[str, ...],
    value: Any,
) -> None:
    config = config_services.config_create(
        owner=user, name=f"{strategy}-native", strategy=strategy, params=params
    )
    response = auth_client.get(f"/strategies/{config.pk}/native/")
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert filename in response["Content-Disposition"]
    body: Any = json.loads(response.content)
    for key in path:
        body = body[key]
    assert body == value
    page = auth_client.get(f"/strategies/{config.pk}/").content.decode()
    assert f"{filename} ({strategy} native)" in page
    listing = auth_client.get("/strategies/").content.decode()
    assert f'href="/strategies/{config.pk}/native/"' in listing
    assert f'href="/strategies/presets/{strategy}/native/"' in listing
    preset = auth_client.get(f"/strategies/presets/{strategy}/native/").json()
    assert preset["filename"] == filename and preset["unexpressed"] == []


def test_cline_page_names_the_thresholds_the_file_cannot_hold(auth_client: Any, user: Any) -> None:
    config = config_services.config_create(
        owner=user, name="cline-old", strategy="cline", params={"trigger_ratio": 0.75}
    )
    page = auth_client.get(f"/strategies/{config.pk}/").content.decode()
    assert "Not expressible in global-settings.json" in page
    assert '<span class="mono">trigger_ratio</span> = <span class="mono">0.75' in page
