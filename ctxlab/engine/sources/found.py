"""What every place that holds sessions hands the import: one session, read on demand."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Loaded:
    """One session's bytes (kept whole by the upload), the importer to read them with
    (None: detect), and what the place says about it."""

    data: bytes
    format: str | None
    facts: dict[str, Any]  # JSON-safe; "kind" names the place ("entire", "opencode" ...)
    summary: str  # one line for the import report
    note: str = ""  # a caution, e.g. an agent name the bytes contradict


@dataclass(frozen=True, slots=True)
class Found:
    name: str  # the upload's name
    where: str  # where the user finds it (shown next to the result)
    load: Callable[[], Loaded]
    covers: Path | None = None  # a folder this session stands for: not walked for files


@dataclass(frozen=True, slots=True)
class Place:
    """The sessions at a path; ``whole``: nothing else there to import file by file."""

    sessions: list[Found]
    whole: bool
