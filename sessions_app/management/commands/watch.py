"""Keep importing transcript files as they grow (``ctxlab watch PATH...``)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ctxlab.engine import sources
from ctxlab.engine.sources import discover, entire
from sessions_app import services

from ._owner import resolve_owner
from .import_transcripts import iter_files


class Command(BaseCommand):
    help = (
        "Watch transcript files (or folders, recursively) and import them as they grow: a "
        "new file is imported, a file that has grown (same path, same first bytes) has what "
        "it gained appended to its transcript, which keeps its id; places that hold sessions "
        "(Cline / Roo Code task folders, OpenHands conversations, an OpenCode store, an "
        "Entire branch) have their changed sessions imported again the same way. Each growth "
        "is announced to the transcript's live page (channel-layer group transcript-<id>). "
        "Polls every --interval seconds until stopped (--polls N: stop after N polls)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument("--user", default=None, help="owner (default: the local account)")
        parser.add_argument("--interval", type=float, default=2.0, help="seconds between polls")
        parser.add_argument("--polls", type=int, default=0, help="stop after N polls (0: never)")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = resolve_owner(options["user"])
        seen: dict[str, object] = {}  # what each file or place looked like last time
        polls = 0
        while True:
            for raw in options["paths"]:
                self._poll(Path(raw), owner=owner, seen=seen)
            polls += 1
            if options["polls"] and polls >= options["polls"]:
                return
            time.sleep(max(0.05, options["interval"]))

    def _poll(self, path: Path, *, owner: Any, seen: dict[str, object]) -> None:
        place = sources.find(path)
        if place.whole:
            state = _whole_state(path)
            if seen.get(str(path)) != state:
                seen[str(path)] = state
                self._import_sessions(place.sessions, owner=owner)
            return
        covered = []
        for item in place.sessions:
            if item.covers is None:
                continue
            covered.append(item.covers)
            state = discover.folder_stat(item.covers)
            if seen.get(item.where) != state:
                seen[item.where] = state
                self._import_sessions([item], owner=owner)
        for file in iter_files([str(path)]):
            if any(file.is_relative_to(folder) for folder in covered):
                continue
            try:
                stat = file.stat()
            except OSError:
                continue
            state = (stat.st_size, stat.st_mtime_ns)
            if seen.get(str(file)) == state:
                continue
            seen[str(file)] = state
            self._poll_file(file, owner=owner)

    def _import_sessions(self, found: list[sources.Found], *, owner: Any) -> None:
        for item, outcome in services.import_found(owner=owner, found=found, remember=True):
            if outcome.error is not None:
                self.stderr.write(f"not imported {item.where}: {outcome.error}")
            elif not outcome.duplicate:
                self._say(item.where, outcome)

    def _poll_file(self, path: Path, *, owner: Any) -> None:
        outcome, refreshed = services.import_path(owner=owner, path=path)
        if outcome.error is not None:
            self.stderr.write(f"not imported {path}: {outcome.error}")
        elif refreshed is not None:
            for item in refreshed:
                if item.new_messages:
                    self.stdout.write(
                        f"grown {path}: transcript {item.transcript_id} +{item.new_messages} "
                        f"messages ({item.messages} in all)"
                    )
        elif not outcome.duplicate:
            self._say(str(path), outcome)

    def _say(self, where: str, outcome: services.ImportOutcome) -> None:
        ids = ", ".join(str(c.transcript_id) for c in outcome.conversations)
        messages = sum(c.messages for c in outcome.conversations)
        self.stdout.write(
            f"imported {where}: {outcome.format}, {messages} messages; transcript id(s) {ids}"
        )


def _whole_state(path: Path) -> object:
    """What a whole place (an Entire branch, an OpenCode store) looks like now: a git
    repository's checkpoints branch by its commit, anything else by its files."""
    if path.is_dir() and (path / ".git").exists():
        ref = entire.branch_ref(path)
        if ref is not None:
            result = subprocess.run(
                ["git", "-C", str(path), "rev-parse", ref], capture_output=True, check=False
            )
            return result.stdout.strip()
    return discover.folder_stat(path)
