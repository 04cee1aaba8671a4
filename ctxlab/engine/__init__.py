"""ctxlab's engine: plain Python, no Django, Celery or Channels.

Import transcripts into frozen values, replay them through compaction strategies and
measure what each strategy kept, cut and summarised.
"""

from __future__ import annotations

from .model import (
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

__all__ = [
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
]
