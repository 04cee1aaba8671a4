"""``ctxlab statusline``'s cache (issue 38): Claude Code runs the command after every
assistant message on a file that only grows, so a call reads only the bytes the file gained
since the last one. The cached answer is the uncached one, line after line, on real
sessions; a rewritten or truncated file, a corrupt cache and an unwritable cache directory
fall back to reading the file."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ctxlab.engine import statusline

ROOT = Path(__file__).resolve().parents[2]
# Claude Code 2.1.14: a microcompact_boundary (line 33), an auto compact_boundary (line 155)
FULL = ROOT / "tests" / "data" / "agreement" / "entireio-cli" / "76" / "62d755ef9f" / "2" / "full.jsonl"  # fmt: skip
VENDORED = sorted(
    [
        *(ROOT / "tests" / "data" / "claude-code-2.1").glob("*.jsonl"),
        *(ROOT / "tests" / "data" / "corpus" / "claude-code").glob("*.jsonl"),
        *(ROOT / "tests" / "data" / "agreement" / "entireio-cli").rglob("full.jsonl"),
    ]
)


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never the user's cache (subprocesses inherit the variable)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))


def figures(status: statusline.Status) -> dict[str, Any]:
    return {**status.as_dict(), "line": status.line()}


def uncached(path: Path) -> dict[str, Any]:
    """The status as the tail read gives it (the reference: every line split and read);
    ``status_of`` (the file mapped, only the lines that matter copied) gives the same."""
    lines, compacted = statusline.tail_lines(path)
    reference = figures(statusline._status(statusline.Span.of_lines(lines, compacted), {}))
    assert figures(statusline.status_of(path, {})) == reference
    return reference


def cached(path: Path, cache: Path) -> dict[str, Any]:
    return figures(statusline.cached_status_of(path, {}, cache))


class NoFullRead:
    """Makes the full (tail) read fail: a call that still answers read only what was new."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch

    def __enter__(self) -> None:
        def refuse(handle: object) -> tuple[statusline.Span, int, bytes]:
            raise AssertionError("the whole span was read again")

        self.monkeypatch.setattr(statusline, "_read_span", refuse)

    def __exit__(self, *exc: object) -> None:
        self.monkeypatch.undo()


def test_line_by_line_across_both_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every line of a session that crosses a microcompact and an auto-compact between
    calls, appended one at a time (and each first half-written): the cached line is the
    uncached one, and after the first call no call reads the whole span again."""
    lines = FULL.read_bytes().splitlines(keepends=True)
    path, cache = tmp_path / "s.jsonl", tmp_path / "cache"
    path.write_bytes(lines[0])
    assert cached(path, cache) == uncached(path)
    seen_compacted = set()
    for number, line in enumerate(lines[1:], start=2):
        with path.open("ab") as out:
            out.write(line[: len(line) // 2])  # Claude Code is still writing the line
        with NoFullRead(monkeypatch):
            half = cached(path, cache)
        assert half == uncached(path), number
        with path.open("ab") as out:
            out.write(line[len(line) // 2 :])
        with NoFullRead(monkeypatch):
            whole = cached(path, cache)
        assert whole == uncached(path), number
        seen_compacted.add(whole["since_compaction"])
    assert seen_compacted == {False, True}
    assert whole["turns_to_auto_compact"]["why"]  # past the auto-compact: no rate yet


@pytest.mark.parametrize("source", VENDORED, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_vendored_session_grown_in_steps(tmp_path: Path, source: Path) -> None:
    """The session written in about 30 steps, each cut anywhere (mid-line too): the cached
    answer after each equals the uncached one."""
    data = source.read_bytes()
    path, cache = tmp_path / "s.jsonl", tmp_path / "cache"
    path.write_bytes(b"")
    step = max(1, len(data) // 30)
    cuts = [*range(step // 3, len(data), step), len(data)]
    written = 0
    for at in cuts:
        with path.open("ab") as out:
            out.write(data[written:at])
        written = at
        assert cached(path, cache) == uncached(path), at
    assert uncached(path) == figures(statusline.status_of(source, {}))


def test_instructions_found_between_calls(tmp_path: Path) -> None:
    """A user's constraint typed after a cached call is counted (at risk) by the next."""
    path, cache = tmp_path / "s.jsonl", tmp_path / "cache"

    def record(kind: str, n: int, message: dict[str, Any]) -> bytes:
        line = {"type": kind, "uuid": f"{kind}{n}", "sessionId": "s", "version": "2.1.14",
                "message": message}  # fmt: skip
        return json.dumps(line).encode() + b"\n"

    def reply(n: int, total: int) -> bytes:
        usage = {"input_tokens": 10, "cache_read_input_tokens": total, "output_tokens": 5}
        return record("assistant", n, {"id": f"msg_{n}", "role": "assistant",
                                        "content": [{"type": "text", "text": "ok"}],
                                        "usage": usage})  # fmt: skip

    path.write_bytes(record("user", 0, {"role": "user", "content": "go"}) + reply(1, 30_000))
    assert cached(path, cache)["instructions_at_risk"] == []
    with path.open("ab") as out:
        out.write(record("user", 1, {"role": "user", "content": "Never touch the migrations."}))
        out.write(reply(2, 31_000))
    after = cached(path, cache)
    assert after == uncached(path)
    assert after["instructions_at_risk"] == ["Never touch the migrations."]
    assert after["used"] == 31_015


def warm(tmp_path: Path, lines: int = 120) -> tuple[Path, Path, list[bytes]]:
    """A session cut at ``lines`` lines with a warm cache."""
    every = FULL.read_bytes().splitlines(keepends=True)
    path, cache = tmp_path / "s.jsonl", tmp_path / "cache"
    path.write_bytes(b"".join(every[:lines]))
    cached(path, cache)
    assert statusline.cache_file(cache, path).is_file()
    return path, cache, every


def test_a_truncated_file_is_read_again(tmp_path: Path) -> None:
    path, cache, every = warm(tmp_path)
    path.write_bytes(b"".join(every[:60]))  # the same inode, shorter
    assert cached(path, cache) == uncached(path)
    assert cached(path, cache)["used"] != figures(statusline.status_of(FULL, {}))["used"]


def test_a_rewritten_file_is_read_again(tmp_path: Path) -> None:
    """Rewritten in place, as long or longer: its first bytes differ, or its bytes before
    the offset read up to."""
    path, cache, every = warm(tmp_path)
    before = cached(path, cache)
    other = (ROOT / "tests" / "data" / "corpus" / "claude-code" / "agentcmd-full-session.jsonl").read_bytes()  # fmt: skip
    with path.open("r+b") as out:  # same inode, not shorter, other contents
        out.write(other)
    assert cached(path, cache) == uncached(path) != before
    # only the bytes just before the offset changed (the last response rewritten, as long)
    cut = max(i for i, line in enumerate(every[:120]) if b'"output_tokens":' in line) + 1
    path.write_bytes(b"".join(every[:cut]))
    stale = cached(path, cache)
    last = every[cut - 1]
    changed = last.replace(b'"output_tokens":', b'"output_tokenz":', 1)
    path.write_bytes(b"".join(every[: cut - 1]) + changed + b"".join(every[cut : cut + 10]))
    assert cached(path, cache) == uncached(path)
    assert uncached(path)["used"] != stale["used"]


def test_a_replaced_file_is_read_again(tmp_path: Path) -> None:
    """Another file at the same path (a new inode), longer than the offset."""
    path, cache, every = warm(tmp_path, 40)
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(b"".join(every[60:135]))
    os.replace(replacement, path)
    assert cached(path, cache) == uncached(path)


@pytest.mark.parametrize(
    "garbage",
    [
        b"",
        b"\x00\xff not json",
        b"[1, 2]",
        b'{"format": 1}',
        b"[" * 100_000,
    ],
    ids=["empty", "binary", "a list", "no fields", "deeply nested"],
)
def test_a_corrupt_cache_file_is_read_around(tmp_path: Path, garbage: bytes) -> None:
    path, cache, _ = warm(tmp_path)
    entry = statusline.cache_file(cache, path)
    entry.write_bytes(garbage)
    assert cached(path, cache) == uncached(path)
    assert json.loads(entry.read_bytes())["format"] == statusline.CACHE_FORMAT  # written anew


@pytest.mark.parametrize(
    "span",
    [
        {"responses": [["msg_1", "150000"]]},
        {"responses": [["msg_1", 1]] * (statusline.KEPT + 1)},
        {"responses": [["msg_1", True]]},
        {"instructions": [3]},
        {"compacted": "yes"},
        {"version": None},
    ],
)
def test_a_cache_with_the_wrong_values_is_not_believed(
    tmp_path: Path, span: dict[str, object]
) -> None:
    """A cache whose file identity matches but whose span is no span: the file is read."""
    path, cache, _ = warm(tmp_path)
    entry = statusline.cache_file(cache, path)
    data = json.loads(entry.read_bytes())
    data["span"].update(span)
    entry.write_text(json.dumps(data))
    assert cached(path, cache) == uncached(path)


def test_a_believable_cache_is_believed(tmp_path: Path) -> None:
    """The other side of the checks above: a span edited in place, its file unchanged, is
    what the next call answers from (the file is not read again)."""
    path, cache, _ = warm(tmp_path)
    entry = statusline.cache_file(cache, path)
    data = json.loads(entry.read_bytes())
    data["span"]["instructions"] = ["from the cache"]
    entry.write_text(json.dumps(data))
    assert cached(path, cache)["instructions_at_risk"] == ["from the cache"]


def test_an_unwritable_cache_directory(tmp_path: Path) -> None:
    """The cache's place is a file (no directory can be made there): every call reads the
    file and answers."""
    path, _, every = warm(tmp_path)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file")
    for lines in (120, 125, 140):
        path.write_bytes(b"".join(every[:lines]))
        assert cached(path, blocked / "statusline") == uncached(path)
    assert blocked.read_text() == "a file"


def test_where_the_cache_is_and_how_to_turn_it_off(tmp_path: Path) -> None:
    home = Path.home() / ".cache" / "ctxlab" / "statusline"
    assert statusline.cache_dir({}) == home
    assert statusline.cache_dir({"XDG_CACHE_HOME": "relative"}) == home  # the spec ignores it
    assert statusline.cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == (
        tmp_path / "ctxlab" / "statusline"
    )
    assert statusline.cache_dir({"CTXLAB_STATUSLINE_CACHE": "0"}) is None
    assert statusline.cache_file(tmp_path, Path("/a/s.jsonl")) != statusline.cache_file(
        tmp_path, Path("/b/s.jsonl")
    )


def test_without_a_home_directory_there_is_no_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def homeless() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", homeless)
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert statusline.cache_dir({}) is None
    path, _, _ = warm(tmp_path)
    assert run_main({"transcript_path": str(path)}).startswith("ctx ")


def run_main(payload: dict[str, object], *args: str) -> str:
    out, saved = io.StringIO(), sys.stdout
    sys.stdout = out
    try:
        assert statusline.main(list(args), stdin=io.StringIO(json.dumps(payload))) == 0
    finally:
        sys.stdout = saved
    return out.getvalue().strip()


def test_the_command_keeps_its_cache_under_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _, _ = warm(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("CTXLAB_STATUSLINE_CACHE", raising=False)
    place = tmp_path / "xdg" / "ctxlab" / "statusline"
    payload: dict[str, object] = {"transcript_path": str(path), "version": "2.1.14"}
    line = run_main(payload, "--no-cache")
    assert not place.exists()
    monkeypatch.setenv("CTXLAB_STATUSLINE_CACHE", "0")
    assert run_main(payload) == line and not place.exists()
    monkeypatch.delenv("CTXLAB_STATUSLINE_CACHE")
    assert run_main(payload) == line
    assert [p.name for p in place.iterdir()] == [statusline.cache_file(place, path).name]
    assert oct(place.stat().st_mode & 0o777) == "0o700"
    assert oct(statusline.cache_file(place, path).stat().st_mode & 0o777) == "0o600"


def test_a_warm_call_loads_the_instruction_machinery_only_for_a_constraint(
    tmp_path: Path,
) -> None:
    """What Claude Code runs after each assistant message, a fresh interpreter with the
    cache warm: after a typed request and responses it imports neither the engine's values
    nor the fact extraction; after a typed constraint it runs the rule (on the texts: still
    neither of them) and counts it."""
    every = FULL.read_bytes().splitlines(keepends=True)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(every[:100]))
    gained = [line for line in every[100:130] if b'"tool_result"' in line or b'"assistant"' in line]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    env.pop("CTXLAB_STATUSLINE_CACHE", None)
    code = (
        "import sys, json; from ctxlab.console import main; "
        f"main(['statusline', '--file', {str(path)!r}, '--json']); "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('ctxlab'))))"
    )

    def call() -> tuple[dict[str, Any], list[str]]:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env=env,
        )
        first, loaded = done.stdout.strip().splitlines()
        return json.loads(first), list(json.loads(loaded))

    def typed(text: str) -> bytes:
        record = {"type": "user", "uuid": "typed", "sessionId": "s", "version": "2.1.14",
                  "message": {"role": "user", "content": text}}  # fmt: skip
        return json.dumps(record).encode() + b"\n"

    call()  # the cache made
    with path.open("ab") as out:
        out.write(typed("fix the failing test, then run it again") + b"".join(gained))
    figures, loaded = call()
    assert "ctxlab.engine.evaluate.extract" not in loaded
    assert "ctxlab.engine.core.model" not in loaded
    assert figures == statusline.status_of(path, {}).as_dict()
    with path.open("ab") as out:
        out.write(typed("Never touch the migrations.") + gained[-1])
    figures, loaded = call()
    assert "ctxlab.engine.evaluate.instruction_sentences" in loaded  # the rule ran ...
    assert "ctxlab.engine.evaluate.extract" not in loaded  # ... on the texts alone
    assert "ctxlab.engine.core.model" not in loaded
    assert figures["instructions_at_risk"][-1] == "Never touch the migrations."
    assert figures == statusline.status_of(path, {}).as_dict()


SPACED = [
    b'{"type": "user", "isSidechain": true, "message": {"id": "msg_1", "type": "x"}}',
    b'{"type":\t"assistant", "type": "user", "subtype":  "microcompact_boundary"}',
    b'{"type":"progress","data":{"type":"assistant","isSidechain":false}} "type":"user"',
    b'"usage": {"a": 1}, "usage":{"b": 2} "id": "toolu_1" "id":"msg_2" "version": "2.1.3"',
    b'"type":"type":"user" "subtype":"subtype": "compact_boundary"',
]


def test_the_key_search_finds_what_the_patterns_find() -> None:
    """``_search`` / ``_last`` (the pattern tried only where its key is) give the regex
    engine's own first and last matches, on every line of the vendored sessions and on
    lines written with spaces, tabs and repeated keys."""
    patterns = [
        statusline.BOUNDARY,
        statusline.ASSISTANT,
        statusline.USER,
        statusline.SIDECHAIN,
        statusline.FIRST_TYPE,
        statusline._VERSION,
    ]
    lines = [line for path in VENDORED for line in path.read_bytes().splitlines()] + SPACED
    hits = dict.fromkeys(range(len(patterns)), 0)
    for line in lines:
        for n, pattern in enumerate(patterns):
            found, expected = statusline._search(pattern, line), pattern.search(line)
            assert (found and (found.span(), found.groups())) == (
                expected and (expected.span(), expected.groups())
            ), (pattern.pattern, line[:200])
            if pattern is statusline.BOUNDARY:  # what _last reads
                last = max((m.start() for m in pattern.finditer(line)), default=-1)
                assert statusline._last(pattern, line) == last
            hits[n] += expected is not None
    assert all(hits.values()), hits


def test_carriage_returns_and_a_boundary_being_written(tmp_path: Path) -> None:
    """Lines ending in CRLF are split as the tail read splits them; a boundary on the line
    still being written starts the span."""
    every = FULL.read_bytes().splitlines(keepends=True)
    path, cache = tmp_path / "s.jsonl", tmp_path / "cache"
    path.write_bytes(b"".join(line.replace(b"\n", b"\r\n") for line in every[:140]))
    assert cached(path, cache) == uncached(path)
    assert cached(path, cache)["used"] is not None
    boundary = next(i for i, line in enumerate(every) if b'"compact_boundary"' in line)
    path.write_bytes(b"".join(every[:boundary]) + every[boundary][:-1])  # no newline yet
    (tmp_path / "cache").mkdir(exist_ok=True)
    for entry in (tmp_path / "cache").iterdir():
        entry.unlink()
    status = cached(path, cache)
    assert status == uncached(path) and status["since_compaction"]
    assert status["used"] is None


class Unmappable:
    """``mmap`` on a file system that cannot map files."""

    ACCESS_READ = 1

    def mmap(self, *args: object, **kwargs: object) -> object:
        raise OSError("no mmap here")


def test_a_file_that_cannot_be_mapped_is_read_in_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, cache, every = warm(tmp_path, 150)
    expected = uncached(path)

    path.write_bytes(b"".join(every[:150]) + every[150][:20])
    half = uncached(path)
    monkeypatch.setattr(statusline, "mmap", Unmappable())
    assert figures(statusline.status_of(path, {})) == half
    for entry in cache.iterdir():
        entry.unlink()
    assert cached(path, cache) == half
    path.write_bytes(b"".join(every[:150]))
    assert cached(path, cache) == expected
    with path.open("ab") as out:
        out.write(every[150][20:] + b"".join(every[151:]))
    assert cached(path, cache) == figures(statusline.status_of(FULL, {}))


def test_the_files_of_sessions_long_unread_go(tmp_path: Path) -> None:
    """A session read for the first time prunes the files not touched for CACHE_DAYS."""
    path, cache, _ = warm(tmp_path)
    stale, recent = cache / "0000000000000000.json", cache / "1111111111111111.json"
    stale.write_text("{}")
    recent.write_text("{}")
    old = time.time() - (statusline.CACHE_DAYS + 1) * 86_400
    os.utime(stale, (old, old))
    cached(path, cache)  # a warm read: nothing pruned
    assert stale.exists()
    other = tmp_path / "other.jsonl"
    other.write_bytes(path.read_bytes())
    assert cached(other, cache) == uncached(other)
    assert not stale.exists() and recent.exists()
    assert statusline.cache_file(cache, path).exists()
