"""Native files are served with their real content type, and the strategy page names what
the target format cannot express."""

from __future__ import annotations

import json
from typing import Any

import pytest

from replay_app.configs import services as config_services

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("strategy", "params", "media_type"),
    [
        ("codex", {"model_context_window": 100_000}, "application/toml"),
        ("claude_code", {"context_window": 60_000}, "application/json"),
        ("baseagent", {}, "text/x-python"),
    ],
)
def test_native_download_content_type(
    auth_client: Any, user: Any, strategy: str, params: dict[str, Any], media_type: str
) -> None:
    config = config_services.config_create(owner=user, name="x", strategy=strategy, params=params)
    response = auth_client.get(f"/strategies/{config.pk}/native/")
    assert response["Content-Type"] == f"{media_type}; charset=utf-8"
    data = auth_client.get(f"/strategies/{config.pk}/native/?format=json").json()
    assert data["media_type"] == media_type


def test_claude_code_window_survives_export_and_constants_are_named(
    auth_client: Any, user: Any
) -> None:
    params = {"context_window": 60_000, "autocompact_buffer_tokens": 3_900}
    config = config_services.config_create(
        owner=user, name="cc", strategy="claude_code", params=params
    )
    body = json.loads(auth_client.get(f"/strategies/{config.pk}/native/").content)
    assert body["env"]["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "60000"
    page = auth_client.get(f"/strategies/{config.pk}/").content.decode()
    assert "Not expressible in settings.json" in page
    assert '<span class="mono">autocompact_buffer_tokens</span> = <span class="mono">3900' in page
