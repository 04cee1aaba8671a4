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
{model: [context, input, output]}}}``, sorted, one provider per line.
"""

from __future__ import annotations

import json
import posixpath
import subprocess
import sys
import tomllib
from typing import Any

FIELDS = ("context", "input", "output")


def _git(repo: str, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-C", repo, *args], input=data, capture_output=True, check=True
    ).stdout


def _read_all(repo: str, paths: list[str]) -> dict[str, bytes]:
    out = _git(repo, "cat-file", "--batch", data="".join(f"HEAD:{p}\n" for p in paths).encode())
    blobs: dict[str, bytes] = {}
    pos = 0
    for path in paths:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        if header[-1] == b"missing":  # a dangling link
            pos = end + 1
            continue
        size = int(header[2])
        blobs[path] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return blobs


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
        _, provider, _, *rest = path.split("/")
        model = "/".join(rest)[: -len(".toml")]
        limit = doc.get("limit")
        if limit is None and doc.get("base_model"):
            limit = docs.get(f"models/{doc['base_model']}.toml", {}).get("limit")
        if not limit:
            continue
        limit = dict(limit)
        for omitted in doc.get("base_model_omit", ()):
            if omitted.startswith("limit."):
                limit.pop(omitted[len("limit.") :], None)
        table.setdefault(provider, {})[model] = [int(limit.get(f, 0)) for f in FIELDS]
    commit = _git(repo, "rev-parse", "HEAD").decode().strip()
    return commit, {p: dict(sorted(table[p].items())) for p in sorted(table)}


def main() -> None:
    commit, table = limits(sys.argv[1])
    rows = [f"  {json.dumps(p)}: {json.dumps(m, separators=(',', ':'))}" for p, m in table.items()]
    print('{"commit": ' + json.dumps(commit) + ', "limits": {\n' + ",\n".join(rows) + "\n}}")


if __name__ == "__main__":
    main()
