"""Agreement with real agents: replays against the compactions the agents really made.

Over directories of real sessions (``CTXLAB_AGREEMENT_DIR``, several joined by ``:``;
default the small vendored set ``tests/data/agreement/``, see its README, and pi's real
sessions in ``tests/data/pi/``), every file is imported
(``importers.parse``) and replayed by each strategy whose agent leaves its own compactions
in its transcripts, on the files of that agent's format, with the ``recorded`` summariser
(the original's own summaries at its boundaries). Each original compaction is paired with
the replay's (``recorded.agreements``).

The directory is either an Entire checkpoints tree (``<2hex>/<10hex>/<n>/full.jsonl`` with
``metadata.json`` beside it naming the agent: each session counted once however many
checkpoints hold it, ``sources.entire``) or a flat directory of transcripts (``*.jsonl`` /
``*.json``, format sniffed).

Result lines, per strategy (``name[strategy]=value``; ``n/a`` when nothing was measured):
``agreement_same_step_share``, ``agreement_same_step_own_count_share`` (the same step by the
replay's own count: not where the transcript left the count open and the original's act
settled it, ``Agreement.decided_by``), ``agreement_within_1_step_share`` (over in-file original
compactions: step > 0, not before the file's first request), ``agreement_count_equal_share``
(files where the replay compacted as often as the original did in the file, each family:
whole-context and microcompact), ``agreement_pre_tokens_median_error`` (median of
|replay tokens before - preTokens| / preTokens over paired in-file compactions with a
logged preTokens), ``agreement_compactions`` and ``agreement_import_clean_share`` (files
imported as the agent wrote them, see ``import_clean``; also once over every file); ``agreement_strategies_without_files`` names the
strategies no file was found for. A table per agent version is printed and returned as
rows (a compaction counts under the version that wrote it, a file under its transcript's;
``?``: the transcript names no version, as pi's sessions do not), then one per kind of
original compaction (auto, manual, microcompact ...).
"""

from __future__ import annotations

import os
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ctxlab.engine import importers
from ctxlab.engine.core.catalogue import AGREEMENT_MEASURES
from ctxlab.engine.core.model import Conversation, ParsedFile, TranscriptError
from ctxlab.engine.core.records import ReplayResult
from ctxlab.engine.importers.claude_code import ALTERNATE_OF
from ctxlab.engine.replay import Replay
from ctxlab.engine.sources import entire
from ctxlab.engine.strategies import STRATEGIES
from ctxlab.engine.summarize.recorded import (
    Agreement,
    RecordedSummarizer,
    agreements,
    conversation_version,
    event_family,
    original_family,
    replay_compactions,
)

DATA_DIR = Path(__file__).resolve().parents[2] / "tests" / "data"
DEFAULT_DIR = DATA_DIR / "agreement"
# The default run: the vendored set and pi's real sessions (vendored for the pi tests).
DEFAULT_DIRS = (DEFAULT_DIR, DATA_DIR / "pi")

# Strategy -> the importer formats whose transcripts carry that agent's own compactions.
# A strategy or format not (yet) in the library is left out when the section runs.
AGENT_FORMATS: dict[str, tuple[str, ...]] = {
    "claude_code": ("claude-code",),
    "codex": ("codex-rollout",),
    "gemini_cli": ("gemini-cli",),
    "opencode": ("opencode",),
    "openhands_condenser": ("openhands",),
    "anthropic_server_compaction": ("anthropic-messages", "api-cassettes"),
    "cline": ("cline",),
}
PI_FORMAT_PREFIX = "pi"  # pi's importer: FORMAT "pi" or "pi-<something>"

PROGRESS_EVERY = 100  # files between progress lines (the full dev sets take minutes)
SUFFIXES = (".jsonl", ".json")


def strategy_formats() -> dict[str, tuple[str, ...]]:
    """``AGENT_FORMATS`` of the strategies in the library, pi's when it is there."""
    found = {name: formats for name, formats in AGENT_FORMATS.items() if name in STRATEGIES}
    if "pi" in STRATEGIES:
        found["pi"] = tuple(
            f for f in importers.FORMATS if f == PI_FORMAT_PREFIX or f.startswith("pi-")
        )
    return found


@dataclass(frozen=True, slots=True)
class Session:
    name: str  # relative to its directory
    read: Callable[[], bytes]
    format: str | None  # None: sniff
    note: str = ""  # an Entire agent name the bytes contradict


def sessions(root: Path) -> Iterator[Session]:
    """Every session under ``root`` once: an Entire checkpoints tree's sessions rebuilt
    across their checkpoints (``sources.entire``: a session committed three times is one
    session, not three files), then each other ``*.jsonl`` / ``*.json`` file, in path order."""
    tree = entire.open_tree(root)
    for found in entire.sessions(tree) if tree is not None else ():
        data = found.read()
        fmt, note = entire.format_of(found, data)
        yield Session(found.name, lambda data=data: data, fmt, note)  # type: ignore[misc]
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = path.relative_to(root).as_posix()
        if path.suffix in SUFFIXES and not (tree and entire.in_checkpoint(name)):
            yield Session(name, path.read_bytes, None)


@dataclass(slots=True)
class Tally:
    """What one strategy (or one agent version under it) measured."""

    files: int = 0
    clean: int = 0
    count_equal: int = 0
    replayed_files: int = 0
    failures: int = 0  # replays that raised (a bug: printed with the file's name)
    rows: list[Agreement] = field(default_factory=list)  # in-file original compactions

    def add_rows(self, rows: list[Agreement]) -> None:
        self.rows += [r for r in rows if r.in_file]

    @property
    def same_step(self) -> int:
        return sum(r.step_difference == 0 for r in self.rows)

    @property
    def same_step_own(self) -> int:
        """Same step by the replay's own count: not settled by the original's act."""
        return sum(r.step_difference == 0 and not r.decided_by for r in self.rows)

    @property
    def within_1(self) -> int:
        return sum(r.step_difference is not None and abs(r.step_difference) <= 1 for r in self.rows)

    @property
    def errors(self) -> list[float]:
        return [
            abs(r.replay_tokens - r.original_tokens) / r.original_tokens
            for r in self.rows
            if r.replay_tokens is not None and r.original_tokens
        ]

    def figures(self) -> dict[str, float | int | None]:
        errors = self.errors
        n = len(self.rows)
        return {
            "agreement_same_step_share": _share(self.same_step, n),
            "agreement_same_step_own_count_share": _share(self.same_step_own, n),
            "agreement_within_1_step_share": _share(self.within_1, n),
            "agreement_count_equal_share": _share(self.count_equal, self.replayed_files),
            "agreement_pre_tokens_median_error": (
                round(statistics.median(errors), 4) if errors else None
            ),
            "agreement_compactions": n,
            "agreement_import_clean_share": _share(self.clean, self.files),
        }


def _by_kind(rows: list[Agreement]) -> dict[str, list[Agreement]]:
    """Rows by the original's kind (auto, manual, microcompact ...: catalogue keys)."""
    kinds: dict[str, list[Agreement]] = {}
    for r in rows:
        kinds.setdefault(r.kind_key, []).append(r)
    return kinds


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _version_order(item: tuple[tuple[str, str], Tally]) -> tuple[str, list[tuple[int, str]]]:
    """Strategy, then version by its numbers (2.1.5 before 2.1.12)."""
    (strategy, version), _ = item
    parts = [(int(p), "") if p.isdigit() else (-1, p) for p in re.split(r"[.\-]", version)]
    return strategy, parts


def _text(value: float | int | None) -> str:
    return "n/a" if value is None else str(value)


def import_clean(parsed: ParsedFile) -> bool:
    """The file imported as the agent wrote it (judged from the parsed structure, the three
    faults real 2.1.x sessions once showed): no tool result left unpaired although its call is in the file, no
    alternate branch that is only a piece of the thread it forks from (a parallel call's
    result or another line of a response already there), and no main conversation cut at
    a compaction (a second main thread that starts with the compaction's summary). A
    result whose call precedes the file, a real rewind and a context cleared on purpose
    are the agent's own and stay clean."""
    conversations = parsed.conversations
    calls = {b.tool_id for c in conversations for m in c.messages for b in m.tool_uses}
    for conversation in conversations:
        own = {b.tool_id for m in conversation.messages for b in m.tool_uses}
        for message in conversation.messages:
            if any(b.tool_id in calls - own for b in message.tool_results if b.tool_id):
                return False
    by_id = {c.id: c for c in conversations}
    for conversation in conversations:
        parent = by_id.get(dict(conversation.metadata).get(ALTERNATE_OF) or "")
        if parent is not None and conversation.messages:
            first = conversation.messages[0]
            repeated = {m.id for m in parent.messages if m.id}
            if (first.tool_results and not first.text.strip()) or first.id in repeated:
                return False
    mains = [c for c in conversations if c.parent_id is None]
    return not any(c.messages and "compact_summary" in c.messages[0].flags for c in mains[1:])


def top_threads(parsed: ParsedFile) -> list[Conversation]:
    """The file's own threads: those whose parent is not in the file. A sub-agent thread
    beside its parent is the parent's business; a sub-agent session exported alone (an
    OpenCode session with a ``parentID``, its own prompt loop with its own prune and
    compaction) is the file's whole conversation. A thread is not its own parent (Entire
    redacts an OpenCode session's ``id`` and ``parentID`` alike: both "REDACTED")."""
    ids = {c.id for c in parsed.conversations}
    return [
        c
        for c in parsed.conversations
        if c.parent_id is None or c.parent_id == c.id or c.parent_id not in ids
    ]


def counts_equal(rows: list[Agreement], results: list[ReplayResult]) -> bool:
    """The replay compacted as often as the original did in the file, in each family (a
    replay step with two compacting events of one family counts once, as pairing does)."""
    original = Counter(original_family(r.original_kind) for r in rows if r.in_file)
    replayed = Counter(
        family
        for family, _ in {
            (event_family(c.kind), c.step) for r in results for c in replay_compactions(r)
        }
        if family is not None
    )
    return original == replayed


def _all_sessions(roots: Sequence[Path]) -> Iterator[Session]:
    for root in roots:
        yield from sessions(root)


def measure(
    roots: Sequence[Path], out: TextIO
) -> tuple[dict[str, Tally], dict[tuple[str, str], Tally], Tally]:
    """Import and replay every session under ``roots``: per strategy, per (strategy, agent
    version), and the import tally over every file of an agent with a strategy."""
    wanted = strategy_formats()
    by_strategy = {name: Tally() for name in wanted}
    by_version: dict[tuple[str, str], Tally] = {}
    overall = Tally()
    for session in _all_sessions(roots):
        data = session.read()
        name = session.name
        try:
            fmt = session.format or importers.detect(data, name)
        except TranscriptError:
            continue  # not a transcript of any format: no agent to measure
        strategies = [s for s, formats in wanted.items() if fmt in formats]
        if not strategies:
            continue
        overall.files += 1
        if overall.files % PROGRESS_EVERY == 0:
            out.write(f"  {overall.files} files ...\n")
            out.flush()
        try:
            parsed = importers.parse(data, name=name, format=fmt)
        except Exception as exc:  # noqa: BLE001 - a crash on one real file is a refusal too
            reason = str(exc) if isinstance(exc, TranscriptError) else repr(exc)
            out.write(f"  refused: {name}: {reason}\n")
            for s in strategies:
                by_strategy[s].files += 1
            continue
        clean = import_clean(parsed)
        overall.clean += clean
        mains = top_threads(parsed)
        version = next((conversation_version(c) for c in mains if conversation_version(c)), "")
        for s in strategies:
            rows: list[list[Agreement]] = []
            results: list[ReplayResult] = []
            for conversation in mains:
                try:
                    result = Replay(conversation, s, summarizer=RecordedSummarizer()).exhaust()
                except Exception as exc:  # noqa: BLE001 - one broken replay must not end the run
                    out.write(f"  replay failed: {name} [{s}]: {exc!r}\n")
                    by_strategy[s].failures += 1
                    continue
                rows.append(agreements(conversation, result))
                results.append(result)
            flat = [r for conv_rows in rows for r in conv_rows]
            equal = counts_equal(flat, results)
            for tally in (by_strategy[s], by_version.setdefault((s, version or "?"), Tally())):
                tally.files += 1
                tally.clean += clean
                tally.replayed_files += 1
                tally.count_equal += equal
            by_strategy[s].add_rows(flat)
            # each compaction under the version that wrote it (else the file's)
            for r in flat:
                by_version.setdefault((s, r.agent_version or version or "?"), Tally()).add_rows([r])
    return by_strategy, by_version, overall


def run(out: TextIO) -> list[dict[str, Any]]:
    given = os.environ.get("CTXLAB_AGREEMENT_DIR")
    roots = [Path(p) for p in given.split(os.pathsep) if p] if given else list(DEFAULT_DIRS)
    for root in roots:
        if not root.is_dir():
            raise FileNotFoundError(f"CTXLAB_AGREEMENT_DIR={str(root)!r} is not a directory")
    out.write(f"agreement with the original agents over {', '.join(map(str, roots))}\n")
    start = time.perf_counter()
    by_strategy, by_version, overall = measure(roots, out)
    seconds = time.perf_counter() - start
    out.write(
        f"{overall.files} file{'' if overall.files == 1 else 's'} of agents with a strategy, "
        f"{seconds:.1f} s\n"
        f"{'strategy':<28} {'version':<10} {'files':>5} {'clean':>5} {'comp':>5} "
        f"{'same':>5} {'own':>5} {'±1':>5} {'count=':>6} {'tok err':>8}\n"
    )
    rows: list[dict[str, Any]] = []
    for (strategy, version), tally in sorted(by_version.items(), key=_version_order):
        fig = tally.figures()
        out.write(
            f"{strategy:<28} {version:<10} {tally.files:>5} {tally.clean:>5} "
            f"{len(tally.rows):>5} {tally.same_step:>5} {tally.same_step_own:>5} "
            f"{tally.within_1:>5} "
            f"{tally.count_equal:>6} {_text(fig['agreement_pre_tokens_median_error']):>8}\n"
        )
        rows.append(
            {
                "strategy": strategy,
                "version": version,
                "files": tally.files,
                "compactions": len(tally.rows),
                "same_step": tally.same_step,
                "same_step_own_count": tally.same_step_own,
                "within_1_step": tally.within_1,
                "count_equal": tally.count_equal,
                "pre_tokens_median_error": fig["agreement_pre_tokens_median_error"],
            }
        )
    out.write(f"{'strategy':<28} {'kind':<22} {'comp':>5} {'same':>5} {'±1':>5} {'tok err':>8}\n")
    for strategy, tally in by_strategy.items():
        for kind, kind_rows in sorted(_by_kind(tally.rows).items()):
            part = Tally(rows=kind_rows)
            error = part.figures()["agreement_pre_tokens_median_error"]
            out.write(
                f"{strategy:<28} {kind:<22} {len(kind_rows):>5} {part.same_step:>5} "
                f"{part.within_1:>5} {_text(error):>8}\n"
            )
            rows.append(
                {
                    "strategy": strategy,
                    "kind": kind,
                    "compactions": len(kind_rows),
                    "same_step": part.same_step,
                    "within_1_step": part.within_1,
                    "pre_tokens_median_error": error,
                }
            )
    for key, word in AGREEMENT_MEASURES.items():  # what each result line measures
        out.write(f"  {key}: {word.meaning}\n")
    for strategy, tally in by_strategy.items():
        if tally.files:
            rows += [
                {"line": f"{key}[{strategy}]={_text(value)}"}
                for key, value in tally.figures().items()
            ]
    failures = sum(tally.failures for tally in by_strategy.values())
    rows.append({"line": f"agreement_replay_failures={failures}"})
    idle = [strategy for strategy, tally in by_strategy.items() if not tally.files]
    rows.append({"line": f"agreement_strategies_without_files={','.join(idle) or '-'}"})
    rows.append(
        {"line": f"agreement_import_clean_share={_text(_share(overall.clean, overall.files))}"}
    )
    rows.append({"line": f"agreement_files={overall.files}"})
    return rows
