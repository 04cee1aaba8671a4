"""Import transcript files or folders from disk, one transaction per file."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ctxlab.engine import importers, sources
from sessions_app import services

from ._owner import resolve_owner


def iter_files(paths: list[str]) -> Iterator[Path]:
    """Files named, and every file under folders named (recursive, dotfiles skipped)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if not name.startswith("."):
                        yield Path(root) / name
        else:
            yield path


class Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, total: int, *, enabled: bool) -> None:
        self.total, self.done, self.enabled = total, 0, enabled

    def step(self, label: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        width = 30
        filled = width * self.done // max(self.total, 1)
        bar = "#" * filled + "-" * (width - filled)
        sys.stderr.write(f"\r[{bar}] {self.done}/{self.total} {label[-40:]:<40}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


class Command(BaseCommand):
    help = (
        "Import transcript files (or folders, recursively) for a user. A git repository with "
        "an Entire checkpoints branch (entire/checkpoints/v1), a ZIP of that branch or a "
        "folder it was extracted to imports each agent session on it once, and so does "
        "OpenCode's data folder (~/.local/share/opencode: storage/ and opencode.db), its "
        "storage folder or an opencode.db file. Each OpenHands V1 conversation folder at or "
        "under a path (~/.openhands/conversations/<id>/events/event-*.json) is one "
        "conversation. "
        "--json prints one JSON object per file per line, with each conversation's stored "
        "transcript id (for replay --transcript ID). Exits non-zero if any file failed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument("--format", choices=importers.FORMATS, default=None)
        parser.add_argument("--user", default=None, help="owner (default: the local account)")
        parser.add_argument("--json", action="store_true", help="one JSON line per file")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = resolve_owner(options["user"])
        as_json = options["json"]
        places = [(raw, sources.find(Path(raw))) for raw in options["paths"]]
        failed = 0
        for _, place in places:
            for item, outcome in services.import_found(owner=owner, found=place.sessions):
                failed += not outcome.ok
                self._report(item.where, outcome, as_json=as_json)
        covered = [item.covers for _, p in places for item in p.sessions if item.covers]
        files = [
            path
            for path in iter_files([raw for raw, place in places if not place.whole])
            if not any(path.is_relative_to(folder) for folder in covered)
        ]
        progress = Progress(len(files), enabled=sys.stderr.isatty() and not as_json)
        for path in files:
            outcome = self._import_one(path, owner=owner, format=options["format"])
            progress.step(path.name)
            failed += not outcome.ok
            self._report(str(path), outcome, as_json=as_json)
        progress.close()
        if failed:
            raise CommandError(f"{failed} file(s) or session(s) failed", returncode=1)

    def _report(self, where: str, outcome: services.ImportOutcome, *, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps({**outcome.to_json(), "file": where}, ensure_ascii=False))
            return
        self.stdout.write(self._describe(Path(where), outcome))
        source = outcome.source or {}
        if source.get("summary"):
            self.stdout.write(f"  {source['summary']}")
        if source.get("note"):
            self.stdout.write(self.style.WARNING(f"  {source['note']}"))

    def _import_one(self, path: Path, *, owner: Any, format: str | None) -> services.ImportOutcome:
        # The web upload's path (over the limit or no transcript: refused before read
        # whole), its path kept: a file imported before that has grown is appended to.
        outcome, refreshed = services.import_path(owner=owner, path=path, format=format)
        if refreshed is not None:
            grown = sum(o.new_messages for o in refreshed)
            self.stderr.write(f"{path}: grown since its import, {grown} new message(s) appended")
        return outcome

    def _describe(self, path: Path, outcome: services.ImportOutcome) -> str:
        if outcome.error is not None:
            return self.style.ERROR(f"FAILED {path}: {outcome.error}")
        messages = sum(c.messages for c in outcome.conversations)
        state = "duplicate" if outcome.duplicate else "imported"
        warnings = sum(int(w.get("count", 1)) for w in outcome.warnings)
        extra = f", {warnings} warning(s)" if warnings else ""
        ids = ", ".join(str(c.transcript_id) for c in outcome.conversations)
        head = self.style.SUCCESS(
            f"{state} {path}: {outcome.format}, {len(outcome.conversations)} conversation(s), "
            f"{messages} messages{extra}; transcript id(s) {ids or '-'}"
        )
        # Plain words for lines left out of the conversation, then each warning by name.
        details = [self.style.WARNING(f"  {sentence}") for sentence in outcome.set_aside]
        for w in outcome.described_warnings:
            count = f" x{w['count']}" if int(w.get("count", 1)) != 1 else ""
            where = f" ({w['where']})" if w.get("where") else ""
            label = f"{w['label']}: " if w.get("label") else ""
            details.append(f"  warning{count}: {label}{w['message']}{where}")
        return "\n".join([head, *details])
