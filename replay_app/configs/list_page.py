"""The strategy list (``/strategies/``): one object that its template and its JSON twin
both read: the library's presets with their parameters, and the user's saved
configurations."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.db.models import QuerySet

from ctxlab.engine.native_config import NATIVE_SHAPES
from ctxlab.engine.strategies import LIBRARY, STRATEGIES
from ctxlab.web.ownership import owned
from replay_app.configs import services
from replay_app.configs.forms import ImportConfigForm
from replay_app.models import StrategyConfig


def config_json(config: StrategyConfig) -> dict[str, Any]:
    return {
        "id": config.pk,
        "url": config.get_absolute_url(),
        **services.config_export(config),
        "changed": dict(config.params),
        "updated_at": config.updated_at.isoformat(),
    }


class StrategyListPage:
    def __init__(self, user: Any) -> None:
        self.user = user

    @cached_property
    def configs(self) -> QuerySet[StrategyConfig]:
        return owned(StrategyConfig.objects, self.user)

    @cached_property
    def presets(self) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "label": STRATEGIES[name].label,
                "description": STRATEGIES[name].description,
                "params": [p.as_dict() for p in STRATEGIES[name].PARAMS],
            }
            for name in LIBRARY
            if name in STRATEGIES
        ]

    def context(self) -> dict[str, Any]:
        return {
            "configs": self.configs,
            "presets": self.presets,
            "import_form": ImportConfigForm(),
            "native_strategies": set(NATIVE_SHAPES),
        }

    def as_json(self) -> dict[str, Any]:
        return {"presets": self.presets, "configs": [config_json(c) for c in self.configs]}
