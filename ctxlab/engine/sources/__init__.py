"""Where sessions live beyond a single file: an Entire checkpoints branch, OpenCode's
storage or database, OpenHands conversation folders, Cline / Roo Code task folders. ``find`` says what a path holds; each
place hands the import the same ``Found`` sessions, so one loop imports them all."""

from __future__ import annotations

from pathlib import Path

from . import cline, entire, opencode, openhands
from .found import Found, Loaded, Place

__all__ = ["Found", "Loaded", "Place", "find"]


def find(path: Path) -> Place:
    """The sessions a place at ``path`` holds (a whole place: an Entire branch or an
    OpenCode store), else OpenHands conversation folders and Cline / Roo Code task folders
    at or under it (its other files are imported one by one)."""
    tree = entire.open_tree(path)
    if tree is not None:
        return Place(entire.found(tree, str(path)), whole=True)
    store = opencode.open_source(path)
    if store is not None:
        return Place(opencode.found(store, str(path)), whole=True)
    return Place([*openhands.found(path), *cline.found(path)], whole=False)
