"""Structural rules: the engine stays framework-free; the project package stays empty."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib import admin
from waiting import WAIT_SECONDS

BASE_DIR = Path(settings.BASE_DIR)
ENGINE_DIR = BASE_DIR / "ctxlab" / "engine"
FORBIDDEN = ("django", "celery", "channels", "kombu", "daphne", "asgiref", "redis", "psycopg")

_IMPORT_ALL_ENGINE = """
import importlib, json, pkgutil, sys
import ctxlab.engine
names = ["ctxlab.engine"]
for info in pkgutil.walk_packages(ctxlab.engine.__path__, "ctxlab.engine."):
    importlib.import_module(info.name)
    names.append(info.name)
loaded = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps({"modules": names, "loaded": loaded}))
"""


def _run_clean(code: str) -> subprocess.CompletedProcess[str]:
    # -I: isolated mode (no user site, no PYTHON* env); DJANGO_SETTINGS_MODULE is not set.
    return subprocess.run(
        [sys.executable, "-I", "-c", code],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
    )


def test_import_ctxlab_engine_loads_no_framework() -> None:
    result = _run_clean("import sys, json, ctxlab.engine; print(json.dumps(sorted(sys.modules)))")
    assert result.returncode == 0, result.stderr
    loaded = {name.split(".")[0] for name in json.loads(result.stdout)}
    assert sorted(loaded & set(FORBIDDEN)) == []


def test_every_engine_module_loads_no_framework() -> None:
    result = _run_clean(_IMPORT_ALL_ENGINE)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert "ctxlab.engine.tokens.cl100k" in report["modules"]
    assert sorted(set(report["loaded"]) & set(FORBIDDEN)) == []


def _engine_imports() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted(ENGINE_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = {node.module.split(".")[0]}
            else:
                continue
            found.setdefault(str(path.relative_to(BASE_DIR)), set()).update(roots)
    return found


def test_engine_source_never_imports_frameworks() -> None:
    # Static twin of the subprocess test: also covers imports inside functions.
    offenders = {
        path: sorted(roots & set(FORBIDDEN))
        for path, roots in _engine_imports().items()
        if roots & set(FORBIDDEN)
    }
    assert offenders == {}


def test_engine_has_no_import_circle() -> None:
    # The engine's modules import one another one way (imports under TYPE_CHECKING aside).
    assert import_cycles(ENGINE_DIR, "ctxlab.engine") == []


def test_ctxlab_package_init_is_empty() -> None:
    # Anything here (the usual `from .celery import app`) would run on `import ctxlab.engine`.
    assert (BASE_DIR / "ctxlab" / "__init__.py").read_text().strip() == ""


@pytest.mark.parametrize("app_label", ["sessions_app", "replay_app", "judge_app"])
def test_every_model_registered_in_admin(app_label: str) -> None:
    missing = [
        model.__name__
        for model in apps.get_app_config(app_label).get_models()
        if not admin.site.is_registered(model)
    ]
    assert missing == []


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If):
            test = node.test
            name = (
                test.id
                if isinstance(test, ast.Name)
                else test.attr
                if isinstance(test, ast.Attribute)
                else ""
            )
            if name != "TYPE_CHECKING":
                pending.extend(node.body)
            pending.extend(node.orelse)
        elif isinstance(node, ast.Try):
            pending.extend(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                pending.extend(handler.body)
        elif isinstance(node, ast.With):
            pending.extend(node.body)
    return found


def import_cycles(package_dir: Path, package_name: str) -> list[list[str]]:
    """Import circles among a package's modules, module-level imports only (not `if TYPE_CHECKING:`)."""
    modules: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join([package_name, *parts])] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in _module_level_imports(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".")
                    anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            graph[name].update(t for t in targets if t in modules and t != name)
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


@pytest.mark.parametrize(
    "package", ["ctxlab", "replay_app", "sessions_app", "judge_app", "suites_app", "prompts_app"]
)
def test_no_import_circles(package: str) -> None:
    # The engine's own circles are the engine's test's; here every other module of the package.
    cycles = [
        cycle
        for cycle in import_cycles(BASE_DIR / package, package)
        if not all(name.startswith("ctxlab.engine") for name in cycle)
    ]
    assert cycles == []
