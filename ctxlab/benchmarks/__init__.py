"""``manage.py bench`` sections: every module here with ``run(out) -> list[dict]``.

A section prints its own progress lines to ``out`` and returns rows (dicts). A row with a
``"line"`` key is a final result line (``name=value``) the command prints at the very end.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def sections() -> list[tuple[str, ModuleType]]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if callable(getattr(module, "run", None)):
            found.append((info.name, module))
    return sorted(found)
