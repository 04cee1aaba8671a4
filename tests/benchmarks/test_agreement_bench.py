"""``bench --only agreement`` on the vendored real sessions (tests/data/agreement): its lines
are well-formed and say what ``recorded.agreement_rows`` says of the same replays, computed
here directly from each file (no figure is written into this test)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

from ctxlab.benchmarks import agreement
from ctxlab.engine import importers
from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, ParsedFile, Role
from ctxlab.engine.importers.claude_code import ALTERNATE_OF
from ctxlab.engine.replay import Replay
from ctxlab.engine.summarize.recorded import RecordedSummarizer, agreement_rows, event_family

DATA = agreement.DEFAULT_DIR
LINE = re.compile(r"^(agreement_[a-z0-9_]+)(?:\[([a-z_]+)\])?=(\S+)$")
FORMAT_OF = {"claude_code": "claude-code", "codex": "codex-rollout"}
Bench = tuple[dict[tuple[str, str], str], list[dict[str, Any]], str]


def _bench(monkeypatch: pytest.MonkeyPatch, root: Path) -> Bench:
    monkeypatch.setenv("CTXLAB_AGREEMENT_DIR", str(root))
    out = io.StringIO()
    rows = agreement.run(out)
    lines: dict[tuple[str, str], str] = {}
    for row in rows:
        if "line" not in row:
            continue
        match = LINE.match(row["line"])
        assert match, f"malformed line {row['line']!r}"
        key, strategy, value = match.groups()
        assert (key, strategy or "") not in lines, f"repeated line {row['line']!r}"
        lines[(key, strategy or "")] = value
    return lines, [r for r in rows if "line" not in r], out.getvalue()


def _direct(strategy: str) -> tuple[list[dict[str, Any]], int, int]:
    """Every main conversation of the strategy's vendored files replayed here: the rows,
    the files, and the files whose replay compacted as often as the original in the file."""
    rows: list[dict[str, Any]] = []
    files = equal = 0
    for path in sorted(DATA.rglob("full.jsonl")):
        parsed = importers.parse(path.read_bytes(), name=path.name)
        if parsed.format != FORMAT_OF[strategy]:
            continue
        files += 1
        file_rows: list[dict[str, Any]] = []
        replay_steps: set[tuple[str, int]] = set()
        for conversation in parsed.conversations:
            if conversation.parent_id is not None:
                continue
            result = Replay(conversation, strategy, summarizer=RecordedSummarizer()).exhaust()
            file_rows += agreement_rows(conversation, result)
            replay_steps |= {
                (event_family(e.kind), e.step)
                for e in result.events
                if e.changes and event_family(e.kind) is not None
            }
        in_file = [
            r for r in file_rows if r["original_step"] is not None and r["original_step"] > 0
        ]
        original = sorted("micro" if r["kind_key"] == "microcompact" else "whole" for r in in_file)
        equal += original == sorted(str(family) for family, _ in replay_steps)
        rows += in_file
    return rows, files, equal


@pytest.fixture(scope="module")
def vendored() -> Bench:
    """The section run once on the vendored set (the default directory)."""
    with pytest.MonkeyPatch.context() as mp:
        return _bench(mp, DATA)


def _share(part: int, whole: int) -> str:
    return str(round(part / whole, 4)) if whole else "n/a"


@pytest.mark.parametrize("strategy", ["claude_code", "codex"])
def test_agreement_lines_match_agreement_rows(vendored: Bench, strategy: str) -> None:
    lines, _, _ = vendored
    rows, files, equal = _direct(strategy)
    assert rows, "the vendored set holds in-file compactions of this agent"
    same = sum(r["step_difference"] == 0 for r in rows)
    near = sum(r["step_difference"] is not None and abs(r["step_difference"]) <= 1 for r in rows)
    errors = [
        abs(r["replay_tokens"] - r["original_tokens"]) / r["original_tokens"]
        for r in rows
        if r["replay_tokens"] is not None and r["original_tokens"]
    ]
    assert lines[("agreement_compactions", strategy)] == str(len(rows))
    assert lines[("agreement_same_step_share", strategy)] == _share(same, len(rows))
    own = sum(r["step_difference"] == 0 and not r["decided_by"] for r in rows)
    assert lines[("agreement_same_step_own_count_share", strategy)] == _share(own, len(rows))
    assert lines[("agreement_within_1_step_share", strategy)] == _share(near, len(rows))
    assert lines[("agreement_count_equal_share", strategy)] == _share(equal, files)
    median = str(round(statistics.median(errors), 4)) if errors else "n/a"
    assert lines[("agreement_pre_tokens_median_error", strategy)] == median
    for key in ("same_step", "same_step_own_count", "within_1_step", "count_equal", "import_clean"):
        value = lines[(f"agreement_{key}_share", strategy)]
        assert value == "n/a" or 0.0 <= float(value) <= 1.0


def test_agreement_import_clean_share_counts_clean_files(vendored: Bench) -> None:
    lines, _, _ = vendored
    verdicts = [
        agreement.import_clean(importers.parse(path.read_bytes(), name=path.name))
        for path in sorted(DATA.rglob("full.jsonl"))
    ]
    assert lines[("agreement_files", "")] == str(len(verdicts))
    assert lines[("agreement_import_clean_share", "")] == _share(sum(verdicts), len(verdicts))


def _msg(role: Role, *blocks: Block, mid: str = "", flags: frozenset[str] = frozenset()) -> Message:
    return Message(role, blocks, id=mid, flags=flags)


CALL = Block(BlockKind.TOOL_USE, tool_name="Read", tool_id="t1", tool_input={"p": "a"})
RESULT = Block(BlockKind.TOOL_RESULT, text="ok", tool_id="t1")
ASK = Block(BlockKind.TEXT, text="fix the parser")


def _file(*conversations: Conversation) -> ParsedFile:
    return ParsedFile("claude-code", conversations)


def test_import_clean_judges_the_three_faults_of_issue_30() -> None:
    main = Conversation("s", "t", (_msg(Role.USER, ASK), _msg(Role.ASSISTANT, CALL, mid="m1"),
                                   _msg(Role.USER, RESULT)))  # fmt: skip
    assert agreement.import_clean(_file(main))
    # A result whose call precedes the file: the agent's own, clean.
    early = Conversation("s", "t", (_msg(Role.USER, RESULT), _msg(Role.ASSISTANT, ASK, mid="m2")))
    assert agreement.import_clean(_file(early))
    # The call is in the file but its result was split off into another conversation.
    split = Conversation("s", "t", main.messages[:2])
    piece = Conversation("s~alt", "alt", (_msg(Role.USER, RESULT),), parent_id="s",
                         metadata=((ALTERNATE_OF, "s"),))  # fmt: skip
    assert not agreement.import_clean(_file(split, piece))
    # An alternate that repeats a response of its parent thread (a parallel call's line).
    again = Conversation("s~alt", "alt", (_msg(Role.ASSISTANT, CALL, mid="m1"),), parent_id="s",
                         metadata=((ALTERNATE_OF, "s"),))  # fmt: skip
    assert not agreement.import_clean(_file(main, again))
    # A real rewind: a newly typed request as an alternate is clean.
    rewind = Conversation("s~alt", "alt", (_msg(Role.USER, ASK), _msg(Role.ASSISTANT, ASK, mid="m9")),
                          parent_id="s", metadata=((ALTERNATE_OF, "s"),))  # fmt: skip
    assert agreement.import_clean(_file(main, rewind))
    # A main thread cut at a compaction: a second main conversation opens with its summary.
    summary = _msg(Role.USER, Block(BlockKind.TEXT, text="This session is being continued"),
                   flags=frozenset({"compact_summary"}))  # fmt: skip
    after = Conversation("s~2", "t", (summary, _msg(Role.ASSISTANT, ASK, mid="m3")))
    assert not agreement.import_clean(_file(main, after))
    # A file that starts after a compaction holds its summary first: clean.
    assert agreement.import_clean(_file(Conversation("s", "t", after.messages)))


def test_agreement_version_table_sums_to_the_strategy_lines(vendored: Bench) -> None:
    lines, table, printed = vendored
    for strategy in ("claude_code", "codex"):
        versions = [r for r in table if r["strategy"] == strategy and "version" in r]
        assert all(r["version"] and r["version"] != "?" for r in versions)  # every file says
        assert sum(r["compactions"] for r in versions) == int(
            lines[("agreement_compactions", strategy)]
        )
        for r in versions:
            assert f"{strategy:<28} {r['version']:<10}" in printed


def test_agreement_reads_flat_files_beside_checkpoints_and_the_bytes_decide(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    source = DATA / "entireio-cli" / "ca" / "fca7ea73ac" / "0" / "full.jsonl"
    shutil.copy(source, tmp_path / "session.jsonl")  # flat: the format is sniffed
    other = tmp_path / "aa" / "0123456789" / "0"
    other.mkdir(parents=True)
    shutil.copy(source, other / "full.jsonl")
    # An agent name the bytes contradict (early Entire mislabelled Claude Code files).
    (other / "metadata.json").write_text(json.dumps({"agent": "Copilot CLI"}))
    (tmp_path / "notes.txt").write_text("not a transcript")
    broken = tmp_path / "bb" / "0123456789" / "0"  # unreadable metadata: the file is sniffed
    broken.mkdir(parents=True)
    shutil.copy(source, broken / "full.jsonl")
    (broken / "metadata.json").write_text("{not json")
    lines, _, _ = _bench(monkeypatch, tmp_path)
    assert lines[("agreement_files", "")] == "3"
    assert lines[("agreement_compactions", "claude_code")] == "3"  # one in each copy
    assert "codex" in lines[("agreement_strategies_without_files", "")].split(",")
    assert ("agreement_compactions", "codex") not in lines


def test_agreement_refuses_a_missing_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CTXLAB_AGREEMENT_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="nowhere"):
        agreement.run(io.StringIO())


def test_agreement_kind_table_splits_the_compactions_by_kind(vendored: Bench) -> None:
    lines, table, _ = vendored
    for strategy in ("claude_code", "codex"):
        rows, _, _ = _direct(strategy)
        kinds = [r for r in table if r["strategy"] == strategy and "kind" in r]
        assert {r["kind"] for r in kinds} == {r["kind_key"] for r in rows}
        for shown in kinds:
            mine = [r for r in rows if r["kind_key"] == shown["kind"]]
            assert shown["compactions"] == len(mine)
            assert shown["same_step"] == sum(r["step_difference"] == 0 for r in mine)
    kinds = {r["kind"] for r in table if r["strategy"] == "claude_code" and "kind" in r}
    assert {"auto", "manual", "microcompact"} <= kinds  # what the vendored set holds


def test_default_run_covers_the_vendored_set_and_pi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CTXLAB_AGREEMENT_DIR", raising=False)
    out = io.StringIO()
    lines = {r["line"].split("=", 1)[0]: r["line"].split("=", 1)[1] for r in agreement.run(out)
             if "line" in r}  # fmt: skip
    # pi's real session (two compactions) is measured by default, beside the vendored set.
    assert int(lines["agreement_compactions[pi]"]) == 2
    assert int(lines["agreement_compactions[claude_code]"]) > 0
    assert lines["agreement_replay_failures"] == "0"
    assert all(str(d) in out.getvalue() for d in agreement.DEFAULT_DIRS)


def test_several_directories_joined_by_pathsep(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for target, source in ((one, DATA / "agentv"), (two, agreement.DATA_DIR / "pi")):
        shutil.copytree(source, target)
    lines, _, _ = _bench(monkeypatch, Path(f"{one}{os.pathsep}{two}"))
    assert lines[("agreement_compactions", "pi")] == "2"
    assert int(lines[("agreement_compactions", "codex")]) >= 1


def test_a_sub_agent_session_exported_alone_is_replayed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An OpenCode sub-agent session (its ``parentID`` names a session not in the file) is
    the file's own conversation: replayed and counted under its version (a file whose
    threads all have a parent was counted as agreeing without a replay)."""
    source = Path(__file__).parents[1] / "data" / "opencode" / "nimbus-1.2.26" / "prune-pass.json"
    doc = json.loads(source.read_bytes())
    doc["info"]["parentID"] = "ses_not_in_this_file"
    data = json.dumps(doc).encode()
    (tmp_path / "sub.json").write_bytes(data)
    parsed = importers.parse(data, name="sub.json")
    assert [c.parent_id for c in agreement.top_threads(parsed)] == ["ses_not_in_this_file"]
    lines, rows, _ = _bench(monkeypatch, tmp_path)
    assert lines[("agreement_files", "")] == "1"
    versions = [(r["strategy"], r["version"], r["files"]) for r in rows if "version" in r]
    assert versions == [("opencode", "1.2.26", 1)]


def test_a_thread_is_not_its_own_parent() -> None:
    """Entire redacts an OpenCode session's id and parentID alike ("REDACTED")."""
    source = Path(__file__).parents[1] / "data" / "opencode" / "nimbus-1.2.26" / "prune-pass.json"
    doc = json.loads(source.read_bytes())
    doc["info"]["id"] = doc["info"]["parentID"] = "REDACTED"
    parsed = importers.parse(json.dumps(doc).encode(), name="redacted.json")
    assert [c.id for c in agreement.top_threads(parsed)] == ["REDACTED"]
