"""What every native shape shares: the result type, content types, JSON text, defaults."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..strategies import get_strategy_class

MEDIA_TYPES = {
    ".json": "application/json",
    ".toml": "application/toml",
    ".py": "text/x-python",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
}


def media_type(filename: str) -> str:
    """The content type a native file is served with (by its extension)."""
    for suffix, kind in MEDIA_TYPES.items():
        if filename.endswith(suffix):
            return kind
    return "text/plain"


@dataclass(frozen=True, slots=True)
class NativeConfig:
    strategy: str
    filename: str
    content: dict[str, Any]
    text: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    # (parameter, value) changed from the default that the file cannot carry
    unexpressed: tuple[tuple[str, Any], ...] = ()

    @property
    def media_type(self) -> str:
        return media_type(self.filename)

    def as_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "filename": self.filename,
            "media_type": self.media_type,
            "content": self.content,
            "notes": list(self.notes),
            "unexpressed": [{"param": name, "value": value} for name, value in self.unexpressed],
        }


def json_text(content: Mapping[str, Any]) -> str:
    """Indented UTF-8 JSON, as the originals' own config files are written."""
    return json.dumps(content, ensure_ascii=False, indent=2) + "\n"


def param_default(strategy: str, name: str) -> Any:
    return next(s.default for s in get_strategy_class(strategy).PARAMS if s.name == name)
