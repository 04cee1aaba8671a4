"""The ``ctxlab`` console command (and ``python -m ctxlab``): manage.py for an installed wheel.

``ctxlab serve [ADDR]`` does what ``make run`` does in a checkout: DEBUG off, a random
secret key made once and kept in the data directory (readable by the user only), the
database migrated, the local account ensured, then the bounded Daphne server with the
embedded worker. The short names map to the management commands (``import`` →
``import_transcripts``); anything else (``migrate``, ``createsuperuser``, ``replay``,
``report``, ...) is passed to Django's manage.py unchanged.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

# Imports stay inside the commands that need them: ``statusline`` runs at every prompt
# of Claude Code and pays for each module a fresh interpreter loads.

ALIASES = {"import": "import_transcripts", "bench": "bench"}

USAGE = """\
usage: ctxlab COMMAND [ARGS...]

  serve [ADDR]          migrate, ensure the local login, serve http://127.0.0.1:8000
  import PATH...        import transcript files (manage.py import_transcripts)
  import --discover     find every agent's sessions in your home folder and import them
  watch PATH...         keep importing session files as they grow (manage.py watch)
  replay ...            replay a transcript through strategies (manage.py replay)
  report --runs 1,2,3   one self-contained HTML file of a comparison
  bench ...             the benchmark (manage.py bench)
  statusline            Claude Code's status line: context, turns to auto-compact
  migrate, createsuperuser, load_demo, ... any other manage.py command

Data (database, secret key, media): {data_dir}  (CTXLAB_DATA_DIR to change)
Every COMMAND takes --help.
"""


def prepare_environment(serving: bool) -> None:
    """Settings read the environment: choose the serving defaults before Django starts
    (``manage.py serve`` calls it too: the safe default belongs to the serving command,
    not only to ``make run``)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ctxlab.settings")
    if not serving:
        return
    os.environ.setdefault("DJANGO_DEBUG", "0")
    if "DJANGO_SECRET_KEY" not in os.environ:
        os.environ["DJANGO_SECRET_KEY"] = _stored_secret_key()


def _stored_secret_key() -> str:
    import secrets

    from ctxlab import paths

    data = paths.data_dir()
    data.mkdir(parents=True, exist_ok=True)
    key_file = data / "secret_key"
    if not key_file.is_file() or not key_file.read_text().strip():
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50) + "\n")
    return key_file.read_text().strip()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help", "help"}:
        from ctxlab import paths

        print(USAGE.format(data_dir=paths.data_dir()))
        return 0
    command, rest = args[0], args[1:]
    if command == "statusline":  # Claude Code's status line: no Django, the engine only
        from ctxlab.engine.statusline import main as statusline

        return statusline(rest)
    serving = command == "serve" and not ({"-h", "--help"} & set(rest))
    prepare_environment(serving)
    from django.core.management import execute_from_command_line

    if serving:
        execute_from_command_line(["ctxlab", "migrate", "--noinput"])
        execute_from_command_line(["ctxlab", "ensure_local_user"])
    execute_from_command_line(["ctxlab", ALIASES.get(command, command), *rest])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
