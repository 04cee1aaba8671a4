"""The environment of a timed child process: Python's bytecode written and read as an
installed ctxlab has it. Not a section itself.

Under ``PYTHONDONTWRITEBYTECODE`` (set in some shells and CI images) a module edited since
its ``.pyc`` was written, or never compiled, is compiled from source at every start and
never cached: the old engine's ``replay --help`` read 0.51 s of CPU with no ctxlab ``.pyc``
against 0.26 s with them, ~7 ms for ``statusline.py`` alone. A user's installed copy has
its bytecode (the installer compiles it), so a timed child runs without the variable, after
one untimed run that writes what is missing."""

from __future__ import annotations

import os


def installed_env(**extra: str) -> dict[str, str]:
    """This process's environment without ``PYTHONDONTWRITEBYTECODE``, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(extra)
    return env
