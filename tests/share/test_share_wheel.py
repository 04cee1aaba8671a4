"""The wheel a user installs: built from this checkout, installed into a fresh venv, served.

The build is the real one (``pip wheel .``, setuptools in its isolated build environment).
The fresh venv gets the wheel with ``--no-deps`` and reaches the dependencies through a
path line to this interpreter's site-packages (a plain path, so the checkout's editable
finder is not loaded): what runs is the installed copy, templates and static files included.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from http.cookiejar import CookieJar
from pathlib import Path

import pytest
from django.conf import settings
from waiting import wait_until

CHECKOUT = Path(settings.BASE_DIR)
pytestmark = pytest.mark.slow  # a wheel build and a fresh venv: ~30 s


def _source_copy(target: Path) -> Path:
    """The checkout's files (tracked and new, not ignored) without tests: a build in the
    checkout itself would reuse a stale build/ directory (modules since moved or deleted)."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=CHECKOUT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    for name in listed:
        source = CHECKOUT / name
        if not name or name.startswith(("tests/", "docs/")) or not source.is_file():
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name)
    return target


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = _source_copy(tmp_path_factory.mktemp("source"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(out)],
        check=True,
        cwd=out,
        timeout=600,
    )
    (built,) = out.glob("ctxlab-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300)
    python = root / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=300,
    )
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "ctxlab_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return root


def test_wheel_carries_templates_static_migrations_and_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in [
        "ctxlab/_site/templates/base.html",
        "ctxlab/_site/static/css/ctxlab.css",
        "ctxlab/_site/static/js/plots.js",
        "sessions_app/templates/sessions_app/transcript_detail.html",
        "replay_app/migrations/0001_initial.py",
        "sessions_app/migrations/0001_initial.py",
        "ctxlab/engine/data/qwen2_5/tokenizer.json",
        "ctxlab/__main__.py",
    ]:
        assert needed in names, needed
    assert any(n.startswith("replay_app/templates/replay_app/") for n in names)
    assert any(n.startswith("replay_app/static/replay_app/") for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "ctxlab = ctxlab.console:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CTXLAB_"))}
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL", "REDIS_URL"):
        env.pop(name, None)
    env.update(HOME=str(home), XDG_DATA_HOME="", PYTHONPATH="")
    return env


@pytest.fixture
def served(venv: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port = _free_port()
    home = tmp_path / "home"
    home.mkdir()
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [venv / "bin" / "ctxlab", "serve", f"127.0.0.1:{port}"],
        cwd=tmp_path,
        env=_clean_env(home),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:

        def healthy() -> bool:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2)
            except OSError:
                return False
            return True

        wait_until(healthy, f"the installed ctxlab serve to answer {base}/healthz")
        yield base, home
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_console_help_and_python_m(venv: Path, tmp_path: Path) -> None:
    env = _clean_env(tmp_path)
    out = subprocess.run(
        [venv / "bin" / "ctxlab", "--help"], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "serve" in out and "report" in out and str(tmp_path / ".local/share/ctxlab") in out
    out = subprocess.run(
        [venv / "bin" / "python", "-m", "ctxlab", "replay", "--list-strategies"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert "copaw" in out and "max_input_length" in out


def test_installed_wheel_serves_and_logs_in(served: tuple[str, Path]) -> None:
    base, home = served
    data = home / ".local" / "share" / "ctxlab"
    assert (data / "db.sqlite3").is_file()
    assert (data / "secret_key").stat().st_mode & 0o077 == 0
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    login = opener.open(base + "/accounts/login/").read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login)
    assert token, login[:500]
    body = urllib.parse.urlencode(
        {"csrfmiddlewaretoken": token.group(1), "username": "ctxlab", "password": "ctxlab"}
    ).encode()
    request = urllib.request.Request(base + "/accounts/login/", data=body)
    request.add_header("Referer", base + "/accounts/login/")
    home_page = opener.open(request)
    assert home_page.url.rstrip("/") == base  # redirected home: logged in
    assert "Log out" in home_page.read().decode()
    css = opener.open(base + "/static/css/ctxlab.css").read().decode()
    assert "--" in css  # the packaged stylesheet, not a 404 page
