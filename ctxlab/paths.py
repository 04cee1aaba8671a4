"""Where ctxlab finds its site files and keeps its data, in a checkout and when installed.

A checkout keeps ``templates/`` and ``static/`` at the repository root and its data in
``var/``. A wheel cannot install top-level directories, so the build (``setup.py``) copies
them into the package as ``ctxlab/_site/``; an installed ctxlab then keeps its data under
the user's home (``$XDG_DATA_HOME/ctxlab``, by default ``~/.local/share/ctxlab``), never
inside site-packages. ``CTXLAB_DATA_DIR`` overrides both. Settings and the ``ctxlab``
console command (ctxlab/console.py) read the same answers from here.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
CHECKOUT_DIR = PACKAGE_DIR.parent
PACKAGED_SITE_DIR = PACKAGE_DIR / "_site"


def is_installed() -> bool:
    """True when running from a built wheel (the site files were copied into the package)."""
    return PACKAGED_SITE_DIR.is_dir() and not (CHECKOUT_DIR / "manage.py").is_file()


def site_dir() -> Path:
    """The directory holding ``templates/`` and ``static/``."""
    return PACKAGED_SITE_DIR if is_installed() else CHECKOUT_DIR


def default_data_dir() -> Path:
    if is_installed():
        xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        return Path(xdg) / "ctxlab"
    return CHECKOUT_DIR / "var"


def data_dir() -> Path:
    return Path(os.environ.get("CTXLAB_DATA_DIR") or default_data_dir()).expanduser().resolve()
