"""A saved configuration's form page (/strategies/<id>/) and its JSON twin read one
``StrategyConfig``: a name, a description and a parameter set only on that object (after
it was read from the database, never saved) show in both."""

from __future__ import annotations

from typing import Any

import pytest

from ctxlab.web.ownership import get_owned_or_404
from replay_app.configs import services, views
from replay_app.models import StrategyConfig

pytestmark = pytest.mark.django_db

MARK = "name-set-on-the-config-object"


def test_strategy_form_and_json_twin_read_one_object(
    auth_client: Any, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = services.config_create(owner=user, name="saved-name", strategy="qwenpaw")

    def marked(*args: Any, **kwargs: Any) -> StrategyConfig:
        found: StrategyConfig = get_owned_or_404(*args, **kwargs)
        found.name, found.description = MARK, "description-set-on-the-object"
        found.params = {**found.params, "max_input_length": 54321}
        return found

    monkeypatch.setattr(views, "get_owned_or_404", marked)
    url = f"/strategies/{config.pk}/"
    html = auth_client.get(url).content.decode()
    data = auth_client.get(url, {"format": "json"}).json()
    assert data["name"] == MARK and data["description"] == "description-set-on-the-object"
    assert data["params"]["max_input_length"] == data["changed"]["max_input_length"] == 54321
    assert f'value="{MARK}"' in html and "description-set-on-the-object" in html
    assert 'name="max_input_length"' in html and 'value="54321"' in html
    assert "saved-name" not in html
    monkeypatch.undo()
    plain = auth_client.get(url, {"format": "json"}).json()
    assert plain["name"] == "saved-name" and "max_input_length" not in plain["changed"]
