"""Keep importing transcript files as they grow (``ctxlab watch PATH...``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from sessions_app import services

from ._owner import resolve_owner
from .import_transcripts import iter_files


class Command(BaseCommand):
    help = (
        "Watch transcript files (or folders, recursively) and import them as they grow: a "
        "new file is imported, a file that has grown (same path, same first bytes) has what "
        "it gained appended to its transcript, which keeps its id; each growth is announced "
        "to the transcript's live page (channel-layer group transcript-<id>). Polls every "
        "--interval seconds until stopped (--polls N: stop after N polls)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument("--user", default=None, help="owner (default: the local account)")
        parser.add_argument("--interval", type=float, default=2.0, help="seconds between polls")
        parser.add_argument("--polls", type=int, default=0, help="stop after N polls (0: never)")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = resolve_owner(options["user"])
        seen: dict[Path, tuple[int, int]] = {}
        polls = 0
        while True:
            for path in iter_files(options["paths"]):
                try:
                    stat = path.stat()
                except OSError:
                    continue
                state = (stat.st_size, stat.st_mtime_ns)
                if seen.get(path) == state:
                    continue
                seen[path] = state
                self._poll_one(path, owner=owner)
            polls += 1
            if options["polls"] and polls >= options["polls"]:
                return
            time.sleep(max(0.05, options["interval"]))

    def _poll_one(self, path: Path, *, owner: Any) -> None:
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
            ids = ", ".join(str(c.transcript_id) for c in outcome.conversations)
            messages = sum(c.messages for c in outcome.conversations)
            self.stdout.write(
                f"imported {path}: {outcome.format}, {messages} messages; transcript id(s) {ids}"
            )
