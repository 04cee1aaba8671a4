"""OpenHands V1 conversations where the SDK keeps them: ``<persistence dir>/<conversation
id>/events/event-<index>-<event id>.json``, one JSON event per file (the default persistence
dir is ``~/.openhands/conversations``; ``base_state.json`` sits beside ``events/``).

Verified in OpenHands/software-agent-sdk (MIT) at 611629e6999ad398dc49c761721eefe18d5e6bd9:
``conversation/persistence_const.py`` (``EVENTS_DIR = "events"``, ``EVENT_NAME_RE =
^event-(?P<idx>\\d{5,})-(?P<event_id>[0-9a-fA-F\\-]{8,})\\.json$``) and
``conversation/event_store.py`` (files listed by that name, read in index order).

``conversations(path)`` finds every such folder at or under ``path`` (the events folder
itself, a conversation folder, or the persistence dir); ``Conversation.read`` joins its events,
in index order, as JSONL (one compact line per event), the bytes the ``openhands-v1``
importer reads and the upload keeps.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..core.model import TranscriptError
from .found import Found, Loaded

FORMAT = "openhands-v1"
EVENTS_DIR = "events"
EVENT_NAME = re.compile(r"^event-(?P<idx>\d{5,})-(?P<event_id>[0-9a-zA-Z\-]{1,})\.json$")


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation's events folder."""

    folder: Path  # the events/ folder

    @property
    def conversation_id(self) -> str:
        return self.folder.parent.name

    @property
    def name(self) -> str:
        return f"{self.conversation_id}.events.jsonl"

    def event_files(self) -> list[Path]:
        found = []
        for entry in self.folder.iterdir():
            match = EVENT_NAME.match(entry.name)
            if match and entry.is_file():
                found.append((int(match.group("idx")), entry.name, entry))
        return [path for _, _, path in sorted(found)]

    def read(self) -> bytes:
        """The events as JSONL, in index order; each file's JSON re-written on one line."""
        lines = []
        for path in self.event_files():
            try:
                value = json.loads(path.read_bytes())
            except (OSError, ValueError) as exc:
                raise TranscriptError(
                    f"event file is not readable JSON: {exc}", file=str(path),
                    expected="one OpenHands event as JSON",
                ) from exc  # fmt: skip
            lines.append(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
        return ("\n".join(lines) + "\n").encode() if lines else b""


def is_events_folder(path: Path) -> bool:
    """A folder named ``events`` holding at least one ``event-<n>-<id>.json``."""
    if path.name != EVENTS_DIR or not path.is_dir():
        return False
    return any(EVENT_NAME.match(entry.name) for entry in path.iterdir())


def conversations(path: Path) -> list[Conversation]:
    """Every OpenHands events folder at or under ``path`` (dotted folders included: the
    SDK keeps them under ``.openhands``), sorted by path."""
    if not path.is_dir():
        return []
    if is_events_folder(path):
        return [Conversation(path)]
    found: list[Conversation] = []
    for root, dirs, _files in os.walk(path):
        dirs.sort()
        here = Path(root)
        if EVENTS_DIR in dirs and is_events_folder(here / EVENTS_DIR):
            found.append(Conversation(here / EVENTS_DIR))
            dirs.remove(EVENTS_DIR)
    return found


def found(path: Path) -> list[Found]:
    """Each conversation folder at or under ``path`` for the import, as one session."""
    return [
        Found(c.name, str(c.folder), lambda c=c: _load(c), covers=c.folder.parent)  # type: ignore[misc]
        for c in conversations(path)
    ]


def _load(conversation: Conversation) -> Loaded:
    facts = {"kind": "openhands", "conversation": conversation.conversation_id}
    summary = f"OpenHands conversation {conversation.conversation_id}"
    return Loaded(conversation.read(), FORMAT, facts, summary)
