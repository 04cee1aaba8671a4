"""Regenerate ``limits.json`` from a clone of models.dev (dev time only; nothing downloads at
run time).

    python ctxlab/engine/data/models_dev/generate.py /path/to/models.dev[.git] > limits.json

Reads every ``providers/<provider>/models/<model>.toml`` at the clone's HEAD (a bare git
directory is fine), the model id being the path under ``models/`` without ``.toml`` (as
models.dev and OpenCode name it), and keeps only ``[limit]``: ``[context, input, output]``,
0 where a limit is not given. A provider model with ``base_model`` takes the limits of
``models/<base_model>.toml`` unless it has its own ``[limit]`` table (which replaces the
whole table), less the ``limit.*`` fields ``base_model_omit`` names: models.dev's own merge.
Models without limits are left out. Output: ``{"commit": ..., "limits": {provider:
{model: [context, input, output]}}, "history": ...}``, sorted, one provider per line.

``history`` keeps what the limits were before (OpenCode reads models.dev's ``api.json`` as
published, refreshed hourly, so a session replays at the limits of its day): for every model
whose limits ever changed, ``[[since, context, input, output], ...]`` in order, ``since`` the
Unix time (seconds) of the commit on models.dev's main line (first parent) that set them, the
last entry being the limits at HEAD (a model since removed keeps its last limits).
"""

from __future__ import annotations

import json
import posixpath
import subprocess
import sys
import tomllib
from functools import cache
from typing import Any

FIELDS = ("context", "input", "output")


def _git(repo: str, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-C", repo, *args], input=data, capture_output=True, check=True
    ).stdout


def _read_all(repo: str, paths: list[str]) -> dict[str, bytes]:
    """Each path's file at HEAD (a dangling link left out)."""
    return _cat(repo, {f"HEAD:{p}": p for p in paths})


def _cat(repo: str, names: dict[str, str]) -> dict[str, bytes]:
    """``git cat-file --batch`` of each object name, keyed by ``names[name]`` (the missing
    left out)."""
    order = list(names)
    out = _git(repo, "cat-file", "--batch", data="".join(f"{n}\n" for n in order).encode())
    found: dict[str, bytes] = {}
    pos = 0
    for name in order:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        if header[-1] == b"missing":
            pos = end + 1
            continue
        size = int(header[2])
        found[names[name]] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return found


def _documents(repo: str, paths: list[str], links: set[str]) -> dict[str, dict[str, Any]]:
    """Each TOML parsed; a symbolic link (a provider reusing another's file) read through."""
    blobs = _read_all(repo, paths)
    docs: dict[str, dict[str, Any]] = {}
    for path in paths:
        seen = path
        for _ in range(8):
            if seen not in links:
                break
            seen = posixpath.normpath(posixpath.join(posixpath.dirname(seen), blobs[seen].decode()))
            if seen not in blobs:
                blobs.update(_read_all(repo, [seen]))
        if seen in blobs:
            docs[path] = tomllib.loads(blobs[seen].decode())
        else:
            print(f"skipped {path}: its link {seen} is not in the tree", file=sys.stderr)
    return docs


def _limit(path: str, doc: dict[str, Any], base: dict[str, Any] | None) -> list[int] | None:
    """A provider model's ``[context, input, output]`` (``base``: its ``base_model``'s
    document), or None without limits."""
    limit = doc.get("limit")
    if limit is None and doc.get("base_model"):
        limit = (base or {}).get("limit")
    if not limit:
        return None
    limit = dict(limit)
    for omitted in doc.get("base_model_omit", ()):
        if omitted.startswith("limit."):
            limit.pop(omitted[len("limit.") :], None)
    return [int(limit.get(f, 0)) for f in FIELDS]


def _is_model(path: str) -> bool:
    return path.endswith(".toml") and (
        path.startswith("providers/") and "/models/" in path or path.startswith("models/")
    )


def _key(path: str) -> tuple[str, str]:
    _, provider, _, *rest = path.split("/")
    return provider, "/".join(rest)[: -len(".toml")]


def history(repo: str) -> dict[str, dict[str, list[list[int]]]]:
    """Each model's limits along models.dev's main line: replays the first-parent commits'
    changes to the model files (links and ``base_model`` read through as at HEAD), keeping
    the models whose limits changed."""
    log = _git(
        repo, "log", "--first-parent", "--reverse", "-m", "--no-renames", "--raw",
        "--no-abbrev", "--format=C %H %ct", "--", "providers", "models",
    ).decode()  # fmt: skip
    commits: list[tuple[int, list[tuple[str, str, str]]]] = []  # (time, [(path, mode, blob)])
    for line in log.splitlines():
        if line.startswith("C "):
            commits.append((int(line.split()[2]), []))
        elif line.startswith(":"):
            meta, path = line.split("\t", 1)
            _, mode, _, blob, _ = meta[1:].split()
            if _is_model(path):
                commits[-1][1].append((path, mode, blob))
    blobs = _blobs(repo, {b for _, changes in commits for _, m, b in changes if set(b) != {"0"}})
    files: dict[str, tuple[str, str]] = {}  # path -> (mode, blob) in the tree so far
    base_of: dict[str, str] = {}  # provider path -> its base_model's path
    timeline: dict[tuple[str, str], list[list[int]]] = {}
    for when, changes in commits:
        for path, mode, blob in changes:
            if set(blob) == {"0"}:
                files.pop(path, None)
            else:
                files[path] = (mode, blob)
        changed = {p for p, _, _ in changes}
        touched = {p for p in changed if p.startswith("providers/")}
        touched |= {p for p, b in base_of.items() if b in changed}
        touched |= {
            p
            for p, (mode, _) in files.items()
            if mode == "120000"
            and p.startswith("providers/")
            and _target(p, files, blobs) in changed
        }
        for path in sorted(touched):
            doc = _resolve(path, files, blobs)
            if doc is None:
                continue
            base_path = f"models/{doc['base_model']}.toml" if doc.get("base_model") else ""
            if base_path:
                base_of[path] = base_path
            base = _resolve(base_path, files, blobs) if base_path else None
            value = _limit(path, doc, base)
            if value is None:
                continue
            rows = timeline.setdefault(_key(path), [])
            if not rows or rows[-1][1:] != value:
                rows.append([when, *value])
    out: dict[str, dict[str, list[list[int]]]] = {}
    for (provider, model), rows in sorted(timeline.items()):
        if len(rows) > 1:
            out.setdefault(provider, {})[model] = rows
    return out


def _blobs(repo: str, ids: set[str]) -> dict[str, bytes]:
    return _cat(repo, {b: b for b in sorted(ids)})


def _target(path: str, files: dict[str, tuple[str, str]], blobs: dict[str, bytes]) -> str:
    """Where a symbolic link ends (the path itself when it is a file)."""
    seen = path
    for _ in range(8):
        entry = files.get(seen)
        if entry is None or entry[0] != "120000":
            break
        seen = posixpath.normpath(
            posixpath.join(posixpath.dirname(seen), blobs.get(entry[1], b"").decode())
        )
    return seen


def _resolve(
    path: str, files: dict[str, tuple[str, str]], blobs: dict[str, bytes]
) -> dict[str, Any] | None:
    entry = files.get(_target(path, files, blobs))
    if entry is None or entry[1] not in blobs:
        return None
    return _parsed(blobs[entry[1]])


@cache
def _parsed(data: bytes) -> dict[str, Any] | None:
    try:
        return tomllib.loads(data.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None  # a broken file on the way: models.dev's build failed on it too


def limits(repo: str) -> tuple[str, dict[str, dict[str, list[int]]]]:
    rows = [
        line.split(None, 3) for line in _git(repo, "ls-tree", "-r", "HEAD").decode().splitlines()
    ]
    wanted = [r[3] for r in rows if r[3].endswith(".toml")
              and (r[3].startswith("providers/") and "/models/" in r[3] or r[3].startswith("models/"))]  # fmt: skip
    links = {r[3] for r in rows if r[0] == "120000"}
    docs = _documents(repo, wanted, links)
    table: dict[str, dict[str, list[int]]] = {}
    for path, doc in docs.items():
        if not path.startswith("providers/"):
            continue
        provider, model = _key(path)
        base = docs.get(f"models/{doc['base_model']}.toml") if doc.get("base_model") else None
        value = _limit(path, doc, base)
        if value is not None:
            table.setdefault(provider, {})[model] = value
    commit = _git(repo, "rev-parse", "HEAD").decode().strip()
    return commit, {p: dict(sorted(table[p].items())) for p in sorted(table)}


def main() -> None:
    commit, table = limits(sys.argv[1])
    past = history(sys.argv[1])
    rows = [f"  {json.dumps(p)}: {json.dumps(m, separators=(',', ':'))}" for p, m in table.items()]
    then = [f"  {json.dumps(p)}: {json.dumps(m, separators=(',', ':'))}" for p, m in past.items()]
    print(
        '{"commit": ' + json.dumps(commit) + ', "limits": {\n' + ",\n".join(rows) + "\n},"
        ' "history": {\n' + ",\n".join(then) + "\n}}"
    )


if __name__ == "__main__":
    main()
