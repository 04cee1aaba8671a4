"""``manage.py bench``: run every section in ``ctxlab.benchmarks`` and print a table.

Ends with the sections' result lines (``real_presets_vs_floor_ratio=…``, ``engine_cli_start_s=…``).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ctxlab.benchmarks import sections


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # engine-only: never import the web URLconf
    help = "Run the benchmarks (imports, replay ...) and print a table plus result lines."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--only",
            action="append",
            default=[],
            help="run only these sections (repeat the option or separate names by commas)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        lines: list[str] = []
        table: list[tuple[str, dict[str, Any]]] = []
        only = {name.strip() for value in options["only"] for name in value.split(",") if name}
        unknown = only - {name for name, _ in sections()}
        if unknown:
            raise CommandError(f"unknown bench section(s): {', '.join(sorted(unknown))}")
        for name, module in sections():
            if only and name not in only:
                continue
            self.stdout.write(f"== {name}")
            for row in module.run(self.stdout):
                if "line" in row:
                    lines.append(str(row["line"]))
                else:
                    table.append((name, row))
        self.stdout.write("\n== summary")
        for name, row in table:
            cells = "  ".join(f"{k}={v}" for k, v in row.items() if k != "section")
            self.stdout.write(f"{name:<10} {cells}")
        for line in lines:
            self.stdout.write(line)
