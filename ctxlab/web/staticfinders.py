"""Expose exactly one file of the plotly package, plotly.min.js, as ``plotly/plotly.min.js``.

plotly ships plotly.js inside its Python package; serving that copy keeps pages offline
and the version in step with the Python library. Nothing else of the package is exposed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, overload

from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import CheckMessage, Error
from django.core.files.storage import FileSystemStorage

PLOTLY_STATIC_PATH = "plotly/plotly.min.js"


def plotly_js_path() -> Path:
    """Location of plotly.min.js, found without importing plotly (a heavy import)."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the plotly package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "package_data" / "plotly.min.js"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.file = plotly_js_path()
        self.storage = FileSystemStorage(location=self.file.parent)
        self.storage.prefix = "plotly"  # type: ignore[attr-defined]  # read by collectstatic/WhiteNoise

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        if not self.file.is_file():
            return [Error(f"plotly.min.js not found at {self.file}", id="ctxlab.E001")]
        return []

    @overload
    def find(self, path: str, find_all: Literal[False] = False, **kwargs: Any) -> str | None: ...
    @overload
    def find(self, path: str, find_all: Literal[True], **kwargs: Any) -> list[str]: ...
    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str] | None:
        if path == PLOTLY_STATIC_PATH and self.file.is_file():
            return [str(self.file)] if (find_all or kwargs.get("all")) else str(self.file)
        return [] if (find_all or kwargs.get("all")) else ""

    def list(self, ignore_patterns: Any) -> Iterator[tuple[str, FileSystemStorage]]:
        if self.file.is_file():
            yield self.file.name, self.storage
