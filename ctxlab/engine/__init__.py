"""ctxlab's engine: plain Python, no Django, Celery or Channels.

Import transcripts into frozen values, replay them through compaction strategies and
measure what each strategy kept, cut and summarised::

    from ctxlab import engine

    conversation = engine.load_file("session.jsonl")
    result = engine.run(conversation, "codex")
    print(result.metrics["peak_reference"], sorted(engine.STRATEGIES))

Every name loads its module when first named (PEP 562): the values (``Message``,
``Conversation``, ...) load ``core.model``; ``run``, ``replay``, ``load_file``, ``parse``
and ``STRATEGIES`` discover every strategy and importer. So ``import ctxlab.engine`` (and
any engine module, e.g. ``ctxlab statusline``'s) loads nothing it does not use. The
layout: docs/architecture.md.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cli import load_file
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
    from .importers import parse
    from .replay import replay, run
    from .strategies import STRATEGIES

_VALUES = (
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
)
_LAZY = {
    **dict.fromkeys(_VALUES, ".core.model"),
    "load_file": ".cli",
    "parse": ".importers",
    "replay": ".replay",
    "run": ".replay",
    "STRATEGIES": ".strategies",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        if name in _VALUES:  # named once: later lookups skip this function (not ``replay``,
            globals()[name] = value  # also a submodule's name: ``import ... as`` reads it)
        return value
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
