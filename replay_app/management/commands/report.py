"""``manage.py report --runs 1,2,3`` or ``--suite ID``: a comparison or a suite's results as
one self-contained HTML file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from replay_app.compare import overview, report
from sessions_app.management.commands._owner import resolve_owner


class Command(BaseCommand):
    help = (
        "Write a comparison of 2-6 runs of one transcript (curves, metrics, summaries side by "
        "side, what was lost) or a suite's results (leaderboard, Pareto front, heatmap, every "
        "metric, each transcript's runs) as one HTML file: plotly inlined, no external requests."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--runs", help="run ids, e.g. 1,2,3")
        what.add_argument("--suite", help="a suite's id or name")
        parser.add_argument("--user", help="whose runs or suite (default: the local account)")
        parser.add_argument(
            "-o",
            "--output",
            "--out",
            help="file to write (default ctxlab-compare-<ids>.html or ctxlab-suite-<id>.html; "
            "- = stdout)",
        )

    def handle(
        self,
        *args: Any,
        runs: str | None,
        suite: str | None,
        user: str | None,
        output: str | None,
        **options: Any,
    ) -> None:
        owner = resolve_owner(user)
        if suite is not None:
            text, default_name = _suite_report(owner, suite)
        else:
            try:
                chosen = overview.load_runs(owner, runs or "")
            except (LookupError, overview.CompareError) as exc:
                raise CommandError(f"{exc} (runs of user {owner.get_username()!r})") from None
            text, default_name = report.report_html(chosen), report.report_filename(chosen)
        if output == "-":
            sys.stdout.write(text)
            return
        path = Path(output or default_name)
        path.write_text(text, encoding="utf-8")
        self.stdout.write(f"wrote {path} ({path.stat().st_size:,} bytes)")


def _suite_report(owner: Any, ref: str) -> tuple[str, str]:
    # suites_app builds on replay_app: imported here, not at module level.
    from suites_app import report as suite_report
    from suites_app.models import Suite

    mine = Suite.objects.filter(owner=owner)
    found = mine.filter(name=ref).first() or (
        mine.filter(pk=int(ref)).first() if ref.isdigit() else None
    )
    if found is None:
        raise CommandError(f"no suite {ref!r} of user {owner.get_username()!r}")
    return suite_report.report_html(found), suite_report.report_filename(found)
