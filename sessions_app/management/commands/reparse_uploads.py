"""Re-parse stored uploads from their kept bytes with the current importers, in bulk.

The upload page's Re-parse button does one upload (``services.upload_reparse``); this
does all of them, or those selected by id, owner or format, one transaction per upload.
Re-parsing is idempotent: the same bytes and importers store the same messages again, and
transcripts keep their ids (runs point at them). Needed, for instance, on PostgreSQL for
rows stored before migration ``sessions_app.0006`` (``Message.blocks`` and
``Transcript.tools`` were jsonb, which sorted every object's keys).
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import QuerySet

from sessions_app import services
from sessions_app.models import Upload

from ._owner import resolve_owner


class Command(BaseCommand):
    help = (
        "Re-parse stored uploads from their kept bytes with the current importers (what the "
        "upload page's Re-parse button does, for many). Give upload ids, or --all; narrow "
        "with --user and --format; --dry-run lists them. One transaction per upload: a "
        "failure changes nothing in it, the others go on, and the command exits non-zero."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("ids", nargs="*", type=int, help="upload ids (see /transcripts/)")
        parser.add_argument("--all", action="store_true", help="every upload (of --user)")
        parser.add_argument("--user", help="only this user's uploads")
        parser.add_argument("--format", help="only uploads of this format (e.g. claude_code)")
        parser.add_argument(
            "--stale", action="store_true",
            help="only uploads parsed by another importer version than the current one",
        )  # fmt: skip
        parser.add_argument("--dry-run", action="store_true", help="list, re-parse nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        uploads = self._selected(options)
        total = uploads.count()
        if not total:
            self.stdout.write("No upload to re-parse.")
            return
        failed: list[int] = []
        started = time.perf_counter()
        for n, upload in enumerate(uploads.iterator(), start=1):
            head = f"[{n}/{total}] upload {upload.pk} {upload.name!r}"
            if options["dry_run"]:
                self.stdout.write(f"{head}: would re-parse ({upload.format})")
                continue
            took = time.perf_counter()
            try:
                outcome = services.upload_reparse(upload=upload)
                error: object = outcome.error
            except Exception as exc:  # a database error on one upload: say it, go on
                error = f"{type(exc).__name__}: {exc}"
            seconds = time.perf_counter() - took
            if error is None:
                messages = sum(t.message_count for t in upload.transcripts.all())
                conversations = upload.transcripts.count()
                self.stdout.write(
                    f"{head}: {conversations} conversation{'s' if conversations != 1 else ''},"
                    f" {messages:,} messages ({seconds:.1f} s)"
                )
            else:
                failed.append(upload.pk)
                self.stderr.write(f"{head}: FAILED, nothing changed: {error}")
        if options["dry_run"]:
            self.stdout.write(f"{total} upload{'s' if total != 1 else ''} would be re-parsed.")
            return
        done = total - len(failed)
        self.stdout.write(
            f"Re-parsed {done} of {total} upload{'s' if total != 1 else ''} "
            f"in {time.perf_counter() - started:.1f} s."
        )
        if failed:
            raise CommandError(
                f"{len(failed)} upload{'s' if len(failed) != 1 else ''} failed to re-parse "
                f"(ids {', '.join(map(str, failed))}): see above."
            )

    def _selected(self, options: dict[str, Any]) -> QuerySet[Upload]:
        ids: list[int] = list(dict.fromkeys(options["ids"]))
        if bool(ids) == bool(options["all"]):
            raise CommandError("Give upload ids, or --all (not both).")
        uploads = Upload.objects.defer("data").order_by("pk")
        if ids:
            found = set(Upload.objects.filter(pk__in=ids).values_list("pk", flat=True))
            missing = [i for i in ids if i not in found]
            if missing:
                raise CommandError(f"No upload with id {', '.join(map(str, missing))}.")
            uploads = uploads.filter(pk__in=ids)
        if options["user"]:
            uploads = uploads.filter(owner=resolve_owner(options["user"]))
        if options["format"]:
            uploads = uploads.filter(format=options["format"])
        if options["stale"]:
            uploads = uploads.exclude(importer_version=services.importer_version())
        return uploads
