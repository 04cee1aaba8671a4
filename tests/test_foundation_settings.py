"""Settings come from the environment alone; the parsing helpers and their refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from waiting import WAIT_SECONDS

from ctxlab.envconfig import channel_layers_from_url, database_from_url, env_bool

BASE_DIR = Path(settings.BASE_DIR)
_SERVICE_VARS = ("DATABASE_URL", "CELERY_BROKER_URL", "CHANNEL_LAYER_URL", "REDIS_URL")


def _django_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter after django.setup(), with a clean service env."""
    base = {k: v for k, v in os.environ.items() if k not in _SERVICE_VARS and k != "DJANGO_DEBUG"}
    base["DJANGO_SETTINGS_MODULE"] = "ctxlab.settings"
    script = "import django; django.setup()\n" + code
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=BASE_DIR,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
    )


def test_secret_key_dev_default_refused_when_debug_off() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SECRET_KEY"}
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=BASE_DIR,
        env={**env, "DJANGO_SETTINGS_MODULE": "ctxlab.settings", "DJANGO_DEBUG": "0"},
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_secret_key_from_env_accepted_when_debug_off() -> None:
    result = _django_python(
        "from django.conf import settings; print(settings.DEBUG, settings.SECRET_KEY)",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="a-long-random-production-key-0123456789",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "a-long-random-production-key-0123456789"]


def test_settings_database_url_selects_postgresql() -> None:
    result = _django_python(
        "import json; from django.conf import settings; "
        "print(json.dumps(settings.DATABASES['default'], default=str))",
        DATABASE_URL="postgres://lab:p%40ss@db.internal:5433/ctxlab?sslmode=require",
    )
    assert result.returncode == 0, result.stderr
    db = json.loads(result.stdout)
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["NAME"], db["USER"], db["PASSWORD"]) == ("ctxlab", "lab", "p@ss")
    assert (db["HOST"], db["PORT"]) == ("db.internal", "5433")
    assert db["OPTIONS"] == {"sslmode": "require"}


def test_settings_default_is_tuned_sqlite_with_file_test_db() -> None:
    result = _django_python(
        "import json; from django.conf import settings; "
        "print(json.dumps([settings.DATABASES['default'], settings.CELERY_BROKER_URL, "
        "settings.CHANNEL_LAYERS], default=str))"
    )
    assert result.returncode == 0, result.stderr
    db, broker, layers = json.loads(result.stdout)
    assert db["ENGINE"] == "django.db.backends.sqlite3"
    assert db["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in db["OPTIONS"]["init_command"]
    assert db["TEST"]["NAME"].endswith(".sqlite3")  # a file: ChannelsLiveServerTestCase needs it
    assert broker == "memory://"
    assert layers["default"]["BACKEND"] == "channels.layers.InMemoryChannelLayer"


def test_settings_redis_urls_select_redis_broker_and_layer() -> None:
    result = _django_python(
        "import json; from django.conf import settings; "
        "print(json.dumps([settings.CELERY_BROKER_URL, settings.CHANNEL_LAYERS]))",
        CELERY_BROKER_URL="redis://127.0.0.1:6390/0",
        CHANNEL_LAYER_URL="redis://127.0.0.1:6390/1",
    )
    assert result.returncode == 0, result.stderr
    broker, layers = json.loads(result.stdout)
    assert broker == "redis://127.0.0.1:6390/0"
    assert layers["default"]["BACKEND"] == "ctxlab.serving.channel_layer.RedisChannelLayer"
    (host,) = layers["default"]["CONFIG"]["hosts"]
    assert host == {"address": "redis://127.0.0.1:6390/1", "socket_timeout": 5.0}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "postgres://u:p@h:5432/d",
            {"NAME": "d", "USER": "u", "PASSWORD": "p", "HOST": "h", "PORT": "5432"},
        ),
        ("postgresql://h/d", {"NAME": "d", "USER": "", "PASSWORD": "", "HOST": "h", "PORT": ""}),
        (
            "postgres://u@127.0.0.1:5433/ctxlab",
            {"NAME": "ctxlab", "USER": "u", "HOST": "127.0.0.1", "PORT": "5433"},
        ),
        ("postgres://u:a%2Fb%3Ac@h/d%20x", {"PASSWORD": "a/b:c", "NAME": "d x"}),
    ],
    ids=["full", "no-credentials", "no-password", "percent-encoded"],
)
def test_database_from_url_parses(url: str, expected: dict[str, Any]) -> None:
    db = database_from_url(url)
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert {k: db[k] for k in expected} == expected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://u:p@h/d", "scheme 'mysql'"),
        ("postgres://u:secret@h:5432/", "names no database"),
    ],
    ids=["unsupported-scheme", "missing-name"],
)
def test_database_from_url_refuses(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        database_from_url(url)
    assert "secret" not in str(info.value)  # passwords are redacted from errors


@pytest.mark.parametrize(
    ("url", "backend"),
    [
        (None, "channels.layers.InMemoryChannelLayer"),
        ("", "channels.layers.InMemoryChannelLayer"),
        ("memory://", "channels.layers.InMemoryChannelLayer"),
        ("redis://127.0.0.1:6379/1", "ctxlab.serving.channel_layer.RedisChannelLayer"),
    ],
    ids=["unset", "empty", "memory", "redis"],
)
def test_channel_layers_from_url(url: str | None, backend: str) -> None:
    assert channel_layers_from_url(url)["default"]["BACKEND"] == backend


def test_redis_channel_layer_answers_an_idle_receive_well_before_its_reads_time_out() -> None:
    """channels_redis blocks BZPOPMIN for brpop_timeout seconds and redis-py reads the
    answer with the pool's socket_timeout: equal (5 s and 5 s, the libraries' defaults), an
    idle receive raised on a loaded machine. The block is 1 s, the read timeout stays 5 s
    (a longer one, 30 s, kept the distributed leg waiting on a refused socket's receive)."""
    from channels_redis.core import RedisChannelLayer as LibraryLayer
    from django.utils.module_loading import import_string

    layers = channel_layers_from_url("redis://127.0.0.1:6390/1")["default"]
    layer_class = import_string(layers["BACKEND"])
    assert issubclass(layer_class, LibraryLayer)
    layer = layer_class(**layers["CONFIG"])
    pool = layer.create_pool(0)
    timeout = pool.connection_kwargs["socket_timeout"]
    assert timeout - layer.brpop_timeout >= 3, (timeout, layer.brpop_timeout)
    assert LibraryLayer.brpop_timeout >= timeout  # what the library alone would race
    assert timeout == 5.0 and pool.connection_kwargs["db"] == 1


def test_channel_layers_from_url_refuses_unknown_scheme() -> None:
    with pytest.raises(ValueError, match="CHANNEL_LAYER_URL"):
        channel_layers_from_url("amqp://x")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, True), ("1", True), ("yes", True), ("0", False), ("off", False), ("", False)],
    ids=["unset-default", "1", "yes", "0", "off", "empty"],
)
def test_env_bool(monkeypatch: pytest.MonkeyPatch, raw: str | None, expected: bool) -> None:
    if raw is None:
        monkeypatch.delenv("CTXLAB_TEST_FLAG", raising=False)
    else:
        monkeypatch.setenv("CTXLAB_TEST_FLAG", raw)
    assert env_bool("CTXLAB_TEST_FLAG", True) is expected


def test_env_bool_refuses_junk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXLAB_TEST_FLAG", "maybe")
    with pytest.raises(ValueError, match="CTXLAB_TEST_FLAG='maybe'"):
        env_bool("CTXLAB_TEST_FLAG", False)


def test_max_upload_bytes_default_200_mb() -> None:
    assert settings.CTXLAB_MAX_UPLOAD_BYTES == 200 * 1024 * 1024


def test_daphne_first_installed_app() -> None:
    assert settings.INSTALLED_APPS[0] == "daphne"
