"""Turn environment variables into Django settings values.

Pure functions, no Django imports, so settings.py stays declarative and the parsing is
unit-testable. Distributed mode is nothing but different values for these variables.

Kept rather than django-environ / dj-database-url (judged again for the library swaps):
ctxlab accepts exactly two databases (SQLite, PostgreSQL through psycopg) and two channel
layers, and refuses everything else at start-up with the variable named and the password
redacted. dj-database-url would parse ``DATABASE_URL`` in one call but accepts every scheme
Django knows (a MySQL URL would fail later, at the first query, for want of a driver), so
the scheme and database-name checks here would stay around it; django-environ's booleans read
any unknown word as false, where ``env_bool`` refuses ``DJANGO_DEBUG=ture``. What remains is
``urlsplit`` plus a dict: less code than the wrapper a library would need.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    """Read a boolean flag; refuses anything that is not clearly true or false."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def database_from_url(url: str) -> dict[str, Any]:
    """``postgres://user:pass@host:port/name?sslmode=require`` → a DATABASES entry (psycopg 3).

    Query parameters become connection OPTIONS (sslmode, connect_timeout, ...).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql", "pgsql"):
        raise ValueError(
            f"DATABASE_URL scheme {parts.scheme!r} is not supported: use postgres://... "
            "or leave DATABASE_URL unset for SQLite"
        )
    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise ValueError(f"DATABASE_URL {_redact(url)!r} names no database (…/dbname)")
    options: dict[str, Any] = dict(parse_qsl(parts.query))
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": unquote(parts.hostname or ""),
        "PORT": str(parts.port or ""),
        "OPTIONS": options,
        "CONN_MAX_AGE": 0,
        "CONN_HEALTH_CHECKS": True,
    }


def sqlite_database(path: Path, *, test_path: Path) -> dict[str, Any]:
    """SQLite tuned for one web process plus worker threads writing concurrently.

    WAL lets readers proceed during a write; IMMEDIATE takes the write lock at BEGIN so two
    writers queue on ``timeout`` instead of failing with "database is locked" mid-transaction.
    The test database is a file so ChannelsLiveServerTestCase (a forked Daphne) can share it.
    """
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        "TEST": {"NAME": str(test_path)},
    }


# Every read of the Redis channel layer times out after this; its receives block for less
# (ctxlab/serving/channel_layer.py says why). redis-py 8's default, set explicitly.
CHANNEL_LAYER_SOCKET_TIMEOUT = 5.0


def channel_layers_from_url(url: str | None) -> dict[str, Any]:
    """``redis://host:port/db`` → channels_redis; unset → the in-process memory layer."""
    if not url or url.startswith("memory://"):
        return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    if url.startswith(("redis://", "rediss://", "unix://")):
        host = {"address": url, "socket_timeout": CHANNEL_LAYER_SOCKET_TIMEOUT}
        return {
            "default": {
                "BACKEND": "ctxlab.serving.channel_layer.RedisChannelLayer",
                "CONFIG": {"hosts": [host]},
            }
        }
    raise ValueError(
        f"CHANNEL_LAYER_URL {_redact(url)!r} is not supported: use redis://... or leave it unset"
    )


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        return url.replace(f":{parts.password}@", ":***@")
    return url
