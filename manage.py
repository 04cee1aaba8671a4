#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ctxlab.settings")
    from ctxlab.console import prepare_environment

    # `serve` without DJANGO_DEBUG / DJANGO_SECRET_KEY: DEBUG off and a random key kept in
    # the data directory, never Django's debug pages with the public development key.
    args = sys.argv[1:]
    prepare_environment(bool(args) and args[0] == "serve" and not {"-h", "--help"} & set(args))
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
