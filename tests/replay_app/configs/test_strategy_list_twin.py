"""The strategy list and its JSON twin are built from one ``StrategyListPage``: presets and
configurations narrowed only on that object show in both."""

from __future__ import annotations

from typing import Any

import pytest

from replay_app.configs import services, views
from replay_app.configs.list_page import StrategyListPage

pytestmark = pytest.mark.django_db


def test_strategy_list_and_json_twin_read_one_object(
    auth_client: Any, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = services.config_create(owner=user, name="kept-config", strategy="qwenpaw")
    services.config_create(owner=user, name="hidden-config", strategy="copaw")

    class Narrowed(StrategyListPage):
        @property
        def configs(self) -> Any:  # type: ignore[override]
            return super().configs.filter(pk=kept.pk)

        @property
        def presets(self) -> list[dict[str, Any]]:  # type: ignore[override]
            return [p for p in super().presets if p["name"] == "cowagent"]

    monkeypatch.setattr(views, "StrategyListPage", Narrowed)
    html = auth_client.get("/strategies/").content.decode()
    data = auth_client.get("/strategies/", {"format": "json"}).json()
    assert [c["name"] for c in data["configs"]] == ["kept-config"]
    assert [p["name"] for p in data["presets"]] == ["cowagent"]
    assert "kept-config" in html and "hidden-config" not in html
    assert "preset=cowagent" in html and "preset=qwenpaw" not in html
