"""Import transcript files or folders from disk, one transaction per file."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ctxlab.engine import importers, sources
from ctxlab.engine.sources import discover
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
        "Cline / Roo Code task folders (tasks/<id>/api_conversation_history.json ...) at or "
        "under a path are one conversation each. "
        "--discover looks where each agent keeps its sessions in the home folder (--home), "
        "lists what it found per agent (sessions, size, newest first) and imports it on "
        "confirmation (--yes: without asking; --dry-run: list only); a file imported before "
        "that has grown since has only what it gained added. "
        "--json prints one JSON object per file per line, with each conversation's stored "
        "transcript id (for replay --transcript ID). Exits non-zero if any file failed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="*", metavar="PATH")
        parser.add_argument(
            "--discover", action="store_true", help="find every agent's sessions in --home"
        )
        parser.add_argument("--home", default=None, help="the home folder --discover looks in")
        parser.add_argument("--yes", action="store_true", help="--discover: import, no question")
        parser.add_argument("--dry-run", action="store_true", help="--discover: only list")
        parser.add_argument("--format", choices=importers.FORMATS, default=None)
        parser.add_argument("--user", default=None, help="owner (default: the local account)")
        parser.add_argument("--json", action="store_true", help="one JSON line per file")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["discover"]:
            self._discover(options)
            return
        if not options["paths"]:
            raise CommandError("name a PATH to import, or --discover")
        owner = resolve_owner(options["user"])
        as_json = options["json"]
        places = [(raw, sources.find(Path(raw))) for raw in options["paths"]]
        failed = 0
        for _, place in places:
            pairs = services.import_found(owner=owner, found=place.sessions, remember=True)
            for item, outcome in pairs:
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

    def _discover(self, options: dict[str, Any]) -> None:
        home = Path(options["home"]).expanduser() if options["home"] else Path.home()
        agents = discover.discover(home)
        as_json = options["json"]
        out = self.stderr if as_json else self.stdout
        if not agents:
            out.write(f"no agent's sessions found under {home}")
            return
        out.write(f"Sessions under {home}:")
        for agent in agents:
            newest = (
                datetime.fromtimestamp(agent.newest, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
                if agent.newest
                else "-"
            )
            roots = ", ".join(str(r.relative_to(home)) for r in agent.roots)
            count = len(agent.sessions)
            out.write(
                f"  {agent.label:<20} {count:>5} session{'s' if count != 1 else ' '} "
                f"{_size(agent.size):>9}  newest {newest}  ({roots})"
            )
        total = sum(len(a.sessions) for a in agents)
        if options["dry_run"] or not total:
            return
        if not options["yes"]:
            if not sys.stdin.isatty():
                out.write(f"{total} session(s) found: run again with --yes to import them")
                return
            answer = input(f"Import these {total} session(s)? [y/N] ")
            if answer.strip().lower() not in {"y", "yes"}:
                return
        owner = resolve_owner(options["user"])
        failed = 0
        for agent in agents:
            for session in agent.sessions:
                if session.found is not None:
                    pairs = services.import_found(owner=owner, found=[session.found], remember=True)
                    for item, outcome in pairs:
                        failed += not outcome.ok
                        self._report(item.where, outcome, as_json=as_json, agent=agent.key)
                elif session.path is not None:
                    outcome = self._import_one(session.path, owner=owner, format=None)
                    failed += not outcome.ok
                    self._report(session.where, outcome, as_json=as_json, agent=agent.key)
        if failed:
            raise CommandError(f"{failed} file(s) or session(s) failed", returncode=1)

    def _report(
        self, where: str, outcome: services.ImportOutcome, *, as_json: bool, agent: str = ""
    ) -> None:
        if as_json:
            line = {**outcome.to_json(), "file": where, **({"agent": agent} if agent else {})}
            self.stdout.write(json.dumps(line, ensure_ascii=False))
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
            failed = self.style.ERROR(f"FAILED {path}: {outcome.error}")
            if outcome.error.declined:
                names = ", ".join(fmt for fmt, _ in outcome.error.declined)
                failed += (
                    f"\n  considered {len(outcome.error.declined)} formats, each declined "
                    f"(none found what it looks for; --json says what that is): {names}"
                )
            return failed
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


def _size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{size:,} B" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} GB"
