"""ctxlab's engine: plain Python, no Django, Celery or Channels.

Import transcripts into frozen values, replay them through compaction strategies and
measure what each strategy kept, cut and summarised::

    from ctxlab import engine

    conversation = engine.load_file("session.jsonl")
    result = engine.run(conversation, "codex")
    print(result.metrics["peak_reference"], sorted(engine.STRATEGIES))

The values load with the package; ``run``, ``replay``, ``load_file``, ``parse`` and
``STRATEGIES`` load their modules when first named (that discovers every strategy and
importer), so ``import ctxlab.engine`` stays light. The layout: docs/architecture.md.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .core.model import (
    Block,
    BlockKind,
    Conversation,
    ImportWarning,
    Message,
    OriginalCompaction,
    ParsedFile,
    Role,
    SourcePos,
    ToolDef,
    TranscriptError,
    Usage,
)

if TYPE_CHECKING:
    from .cli import load_file
    from .importers import parse
    from .replay import replay, run
    from .strategies import STRATEGIES

_LAZY = {
    "load_file": ".cli",
    "parse": ".importers",
    "replay": ".replay",
    "run": ".replay",
    "STRATEGIES": ".strategies",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "STRATEGIES",
    "Block",
    "BlockKind",
    "Conversation",
    "ImportWarning",
    "Message",
    "OriginalCompaction",
    "ParsedFile",
    "Role",
    "SourcePos",
    "ToolDef",
    "TranscriptError",
    "Usage",
    "load_file",
    "parse",
    "replay",
    "run",
]
