"""Import transcript files or folders from disk, one transaction per file."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ctxlab.engine import TranscriptError, importers
from ctxlab.engine.sources import entire, opencode
from ctxlab.engine.sources import openhands as openhands_folders
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
        trees = {raw: entire.open_tree(Path(raw)) for raw in options["paths"]}
        failed = sum(
            self._import_entire(raw, tree, owner=owner, as_json=options["json"])
            for raw, tree in trees.items()
            if tree is not None
        )
        stores = {raw: opencode.open_source(Path(raw)) for raw, t in trees.items() if t is None}
        failed += sum(
            self._import_opencode(raw, store, owner=owner, as_json=options["json"])
            for raw, store in stores.items()
            if store is not None
        )
        plain = [raw for raw, store in stores.items() if store is None]
        folders = [c for raw in plain for c in openhands_folders.conversations(Path(raw))]
        failed += sum(
            self._import_openhands(c, owner=owner, as_json=options["json"]) for c in folders
        )
        files = [
            path
            for path in iter_files(plain)
            if not any(path.is_relative_to(c.folder.parent) for c in folders)
        ]
        progress = Progress(len(files), enabled=sys.stderr.isatty() and not options["json"])
        for path in files:
            outcome = self._import_one(path, owner=owner, format=options["format"])
            progress.step(path.name)
            failed += not outcome.ok
            if options["json"]:
                line = outcome.to_json()
                line["file"] = str(path)
                self.stdout.write(json.dumps(line, ensure_ascii=False))
            else:
                self.stdout.write(self._describe(path, outcome))
        progress.close()
        if failed:
            raise CommandError(f"{failed} file(s) or session(s) failed", returncode=1)

    def _import_entire(self, raw: str, tree: entire.Tree, *, owner: Any, as_json: bool) -> int:
        """Each session on an Entire checkpoints branch, once; returns how many failed."""
        failed = 0
        for outcome in services.entire_import(owner=owner, tree=tree):
            failed += not outcome.ok
            where = f"{raw}:{outcome.name}"
            if as_json:
                self.stdout.write(
                    json.dumps({**outcome.to_json(), "file": where}, ensure_ascii=False)
                )
                continue
            self.stdout.write(self._describe(Path(where), outcome))
            source = outcome.entire or {}
            self.stdout.write(
                f"  Entire session {source.get('session')} "
                f"({source.get('agent') or 'agent not named'}): "
                f"{len(source.get('checkpoints', []))} checkpoint(s), "
                f"{source.get('linked', 0)} linked to a commit"
            )
            if source.get("note"):
                self.stdout.write(self.style.WARNING(f"  {source['note']}"))
        return failed

    def _import_opencode(
        self, raw: str, store: opencode.Source, *, owner: Any, as_json: bool
    ) -> int:
        """Each session of an OpenCode storage folder or database; returns how many failed."""
        failed = 0
        for outcome in services.opencode_import(owner=owner, source=store):
            failed += not outcome.ok
            where = f"{raw}:{outcome.name}"
            if as_json:
                self.stdout.write(
                    json.dumps({**outcome.to_json(), "file": where}, ensure_ascii=False)
                )
                continue
            self.stdout.write(self._describe(Path(where), outcome))
            source = outcome.source or {}
            self.stdout.write(
                f"  OpenCode session {source.get('session')} from its {source.get('where')} "
                f"({source.get('directory') or 'no directory'})"
            )
        return failed

    def _import_openhands(
        self, conv: openhands_folders.Conversation, *, owner: Any, as_json: bool
    ) -> int:
        """An OpenHands V1 conversation folder (``events/event-<n>-<id>.json``, found by
        ``sources.openhands``), its events joined as one JSONL file; 1 if it failed."""
        try:
            data = conv.read()
        except TranscriptError as exc:
            outcome = services.ImportOutcome(name=conv.name, size=0, error=exc)
        else:
            outcome = services.upload_import_file(
                owner=owner,
                name=conv.name,
                file=io.BytesIO(data),
                size=len(data),
                format=openhands_folders.FORMAT,
            )
        if as_json:
            line = {**outcome.to_json(), "file": str(conv.folder)}
            self.stdout.write(json.dumps(line, ensure_ascii=False))
        else:
            self.stdout.write(self._describe(conv.folder, outcome))
        return int(not outcome.ok)

    def _import_one(self, path: Path, *, owner: Any, format: str | None) -> services.ImportOutcome:
        name = path.name
        try:
            size = path.stat().st_size
        except OSError as exc:
            return services.ImportOutcome(
                name=name, size=0, error=TranscriptError(exc.strerror or str(exc), file=str(path))
            )
        try:
            file = path.open("rb")
        except OSError as exc:
            return services.ImportOutcome(
                name=name,
                size=size,
                error=TranscriptError(exc.strerror or str(exc), file=str(path)),
            )
        # The web upload's path: over the limit or no transcript, refused before read whole.
        with file:
            return services.upload_import_file(
                owner=owner, name=name, file=file, size=size, format=format
            )

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
