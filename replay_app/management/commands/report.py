"""``manage.py report --runs 1,2,3``: a comparison as one self-contained HTML file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from replay_app.compare import overview, report
from sessions_app.management.commands._owner import resolve_owner


class Command(BaseCommand):
    help = (
        "Write a comparison of 2-6 runs of one transcript as one HTML file (curves, metrics, "
        "summaries side by side, what was lost; plotly inlined, no external requests)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--runs", required=True, help="run ids, e.g. 1,2,3")
        parser.add_argument("--user", help="whose runs (default: the local account)")
        parser.add_argument(
            "-o", "--output", help="file to write (default ctxlab-compare-<ids>.html; - = stdout)"
        )

    def handle(
        self, *args: Any, runs: str, user: str | None, output: str | None, **options: Any
    ) -> None:
        owner = resolve_owner(user)
        try:
            chosen = overview.load_runs(owner, runs)
        except (LookupError, overview.CompareError) as exc:
            raise CommandError(f"{exc} (runs of user {owner.get_username()!r})") from None
        text = report.report_html(chosen)
        if output == "-":
            sys.stdout.write(text)
            return
        path = Path(output or report.report_filename(chosen))
        path.write_text(text, encoding="utf-8")
        self.stdout.write(f"wrote {path} ({path.stat().st_size:,} bytes)")
