"""Build hook: put the repository's ``templates/`` and ``static/`` into the wheel.

Everything else is declared in pyproject.toml. A wheel can only install packages, so the
two top-level site directories are copied into the package as ``ctxlab/_site/`` while the
wheel is built (ctxlab/paths.py finds them there). Editable installs read them from the
checkout and copy nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SITE_DIRS = ("templates", "static")


class BuildPyWithSite(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        root = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "ctxlab" / "_site"
        for name in SITE_DIRS:
            shutil.rmtree(target / name, ignore_errors=True)
            shutil.copytree(
                root / name, target / name, ignore=shutil.ignore_patterns("__pycache__")
            )


setup(cmdclass={"build_py": BuildPyWithSite})
