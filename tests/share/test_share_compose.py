"""compose.yaml and the Dockerfile, checked without a container runtime.

The file parses; it has web, worker, Redis and PostgreSQL; every variable it sets is one
ctxlab's settings read; its URLs are accepted by the same parsers settings use and point at
the compose services; the worker runs the command the distributed CI leg runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings

from ctxlab.envconfig import channel_layers_from_url, database_from_url

ROOT = Path(settings.BASE_DIR)
TEST_VALUES = {"DJANGO_SECRET_KEY": "x" * 50, "CTXLAB_PASSWORD": "pw"}


def _interpolate(value: Any) -> Any:
    """Compose's ${NAME}, ${NAME:-default}, ${NAME:?error} with the test's values."""
    if not isinstance(value, str):
        return value

    def one(match: re.Match[str]) -> str:
        name, op, rest = match.group(1), match.group(2) or "", match.group(3) or ""
        if name in TEST_VALUES:
            return TEST_VALUES[name]
        assert op == ":-", f"${{{name}}} has no default and no test value"
        return rest

    return re.sub(r"\$\{(\w+)(:-|:\?)?([^}]*)\}", one, value)


def _compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def _settings_variables() -> set[str]:
    """Every environment variable name ctxlab's settings (and the login command) read."""
    sources = [ROOT / "ctxlab" / name for name in ("settings.py", "paths.py")]
    sources.append(ROOT / "ctxlab/management/commands/ensure_local_user.py")
    names: set[str] = set()
    for source in sources:
        names |= set(
            re.findall(
                r"""["']((?:DJANGO|CTXLAB|DATABASE|CELERY|CHANNEL)_\w+)["']""", source.read_text()
            )
        )
    return names


def test_compose_has_the_four_services() -> None:
    services = _compose()["services"]
    assert set(services) == {"web", "worker", "redis", "postgres"}
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["redis"]["image"].startswith("redis:")


def test_every_variable_is_a_setting_and_every_url_parses() -> None:
    services = _compose()["services"]
    known = _settings_variables()
    for name in ("web", "worker"):
        env = {k: _interpolate(v) for k, v in services[name]["environment"].items()}
        unknown = set(env) - known
        assert unknown == set(), f"{name} sets variables ctxlab never reads: {unknown}"
        db = database_from_url(env["DATABASE_URL"])
        assert (
            db["HOST"] == "postgres"
            and db["NAME"] == services["postgres"]["environment"]["POSTGRES_DB"]
        )
        assert db["USER"] == services["postgres"]["environment"]["POSTGRES_USER"]
        assert env["CELERY_BROKER_URL"].startswith("redis://redis:")
        layer = channel_layers_from_url(env["CHANNEL_LAYER_URL"])["default"]
        assert layer["BACKEND"] == "ctxlab.serving.channel_layer.RedisChannelLayer"
        assert env["DJANGO_DEBUG"] == "0"  # so the secret key is required, as it is set


def test_worker_runs_what_the_distributed_leg_runs() -> None:
    worker = _compose()["services"]["worker"]["command"]
    distributed = (ROOT / "tests/replay_app/test_replay_distributed.py").read_text()
    assert worker[:4] == ["celery", "-A", "ctxlab.celery", "worker"]
    assert '"-A", "ctxlab.celery", "worker"' in distributed
    web = _compose()["services"]["web"]["command"]
    assert web[:2] == ["ctxlab", "serve"]  # manage.py serve: the bounded server


def test_dockerfile_installs_the_wheel_with_scale_extras_and_serves() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "pip wheel" in text and "[scale]" in text
    cmd = re.search(r"^CMD (.+)$", text, re.M)
    assert cmd and yaml.safe_load(cmd.group(1)) == _compose()["services"]["web"]["command"]
    assert "CTXLAB_DATA_DIR=/data" in text
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and "var" in ignored
