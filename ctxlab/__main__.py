"""``python -m ctxlab``: the same as the ``ctxlab`` console command (ctxlab/console.py)."""

from __future__ import annotations

from ctxlab.console import main

raise SystemExit(main())
