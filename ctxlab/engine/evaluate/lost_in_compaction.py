"""The grep side of "Lost in Compaction" (O. Gaste, working paper, May 2026;
github.com/profff/lost-in-compaction), reproduced from the study's own published contexts.

The study plants LongMemEval facts in a 190K-token conversation, compacts its oldest 5 / 25 /
50 / 98 % (levels C1-C4) into one Claude summary, re-pads the context to its size and asks
which facts survive: by LLM recall (a model answers, a model judges) and by **grep** (every
keyword of the fact appears, case-insensitively, somewhere in the compacted context). The
grep side is deterministic: given the compacted contexts the study published, it is a
function of their text. Here each context is read by ctxlab's own importer (OpenAI chat
messages), every message's text taken as the lab's pages take it (``lost.message_text``),
and each planted fact checked by the study's rule; the replicates' values are described by
``core.spread`` like every other replicate in the lab.

The data are not vendored (the study's licence says "Research use" and grants no
redistribution): ``open_study`` reads a clone of the repository, a bare mirror of it (read
from its git objects, no checkout) or a folder of its files.

Beside the study's rule the table gives how many compacted facts the **summary alone**
holds (every keyword in the summary message): grep's survival in the compacted zone is
mostly keywords the re-padding and the untouched part happen to contain ("Yes", "50"),
not what the summary kept.

The recall side (``recall``) needs a model: the study's questions, Q per prompt, are asked
after the whole compacted context through one of the lab's model summarisers (an
OpenAI-compatible endpoint or Claude), with the study's own prompts, ``replicates`` times,
and judged by the same model with the study's judge prompt (or offline, by the fact's
keywords in the answer). ``python -m ctxlab.engine lost-in-compaction`` runs either side.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from ..core.model import Role
from ..core.spread import MAX_REPLICATES, Spread, spread
from ..core.summary_request import PromptMessage, SummaryRequest, SummaryResponse
from ..cost.pricing import estimate_summary_cost
from ..importers import parse
from .lost import message_text

STUDY = "profff/lost-in-compaction"
STUDY_COMMIT = "8be3154"  # LOST_IN_COMPACTION.md as read for the published numbers below
LEVELS = ("C1", "C2", "C3", "C4")
FRACTION = {"C1": 0.05, "C2": 0.25, "C3": 0.50, "C4": 0.98}
DENSITY = {40: 0.21, 60: 0.32, 80: 0.42}  # dN: N facts in 190 kTok = δ facts/kTok
# §5.2, "The compacted zone is dead" (Claude Haiku 4.5, Q=5): grep survival and LLM recall
# of the facts inside the compacted zone, as the published min-max over the runs.
PUBLISHED_GREP: Mapping[str, tuple[float, float]] = {
    "C1": (0.50, 0.50),
    "C2": (0.82, 0.91),
    "C3": (0.83, 0.93),
    "C4": (0.59, 0.62),
}
PUBLISHED_RECALL_ZONE: Mapping[str, tuple[float, float]] = {
    "C1": (0.0, 0.0),
    "C2": (0.08, 0.18),
    "C3": (0.0, 0.07),
    "C4": (0.02, 0.04),
}
# §5.1: LLM recall of every fact at δ=0.42, Q=5 (C0: no compaction).
PUBLISHED_RECALL: Mapping[str, float] = {
    "C0": 0.788,
    "C1": 0.725,
    "C2": 0.588,
    "C3": 0.438,
    "C4": 0.075,
}
ROUNDING = 0.005  # the study prints whole percents
COMPACTION_MODEL = "claude-haiku-4-5-20251001"  # the §5 runs' compaction model
_CONTEXT = re.compile(r"^(?:.*/)?(compaction_v5_[^/]+)/contexts/d(\d+)_(C\d)\.json$")


class Tree(Protocol):
    """Files by path (``sources.entire``'s folder and git trees have this shape)."""

    def paths(self) -> Iterable[str]: ...

    def read(self, path: str) -> bytes: ...


@dataclass(frozen=True, slots=True)
class FolderTree:
    root: Path

    def paths(self) -> Iterator[str]:
        for path in self.root.rglob("*.json"):
            yield path.relative_to(self.root).as_posix()

    def read(self, path: str) -> bytes:
        return (self.root / path).read_bytes()


@dataclass(slots=True)
class GitTree:
    """A commit's files in a git repository (bare or not), read from its objects."""

    repo: Path
    ref: str = "HEAD"
    _blobs: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        listing = _git(self.repo, "ls-tree", "-r", "-z", self.ref)
        for entry in listing.split(b"\0"):
            head, _, path = entry.partition(b"\t")
            parts = head.split()
            if len(parts) == 3 and parts[1] == b"blob":
                self._blobs[path.decode()] = parts[2].decode()

    def paths(self) -> list[str]:
        return list(self._blobs)

    def read(self, path: str) -> bytes:
        return _git(self.repo, "cat-file", "blob", self._blobs[path])


def _git(repo: Path, *args: str) -> bytes:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, check=False, timeout=120
    )
    if done.returncode != 0:
        raise ValueError(f"git {args[0]} in {repo}: {done.stderr.decode(errors='replace')}")
    return done.stdout


def open_study(path: Path) -> Tree:
    """The study's files at ``path``: a git repository (a clone or a bare mirror) is read
    at its HEAD, anything else as a folder."""
    if (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir()):
        return GitTree(path)
    if path.is_dir():
        return FolderTree(path)
    raise ValueError(f"{path}: not a folder or git repository of {STUDY}")


@dataclass(frozen=True, slots=True)
class Condition:
    """One compacted context: its run folder, density (facts in 190 kTok) and level."""

    run: str
    density: int
    level: str
    context: str  # path of the context JSON in the tree
    meta: str  # path of its ``_meta.json``


def conditions(tree: Tree) -> list[Condition]:
    """Every compacted context of the single-pass experiment (§4-5) with its metadata."""
    paths = set(tree.paths())
    found = []
    for path in sorted(paths):
        match = _CONTEXT.match(path)
        meta = path[: -len(".json")] + "_meta.json"
        if match and meta in paths:
            run, density, level = match.groups()
            found.append(Condition(run, int(density), level, path, meta))
    return found


@dataclass(frozen=True, slots=True)
class FactResult:
    fact_id: str
    compacted: bool
    found: bool  # the study's rule: every keyword somewhere in the context
    in_summary: bool  # every keyword in the summary message alone


@dataclass(frozen=True, slots=True)
class ConditionResult:
    condition: Condition
    model: str  # the run's compaction model
    digest: str  # of the context's bytes: a context two runs share is counted once
    messages: int
    facts: tuple[FactResult, ...]

    def _share(self, compacted: bool | None, attr: str) -> float | None:
        chosen = [f for f in self.facts if compacted is None or f.compacted == compacted]
        return sum(getattr(f, attr) for f in chosen) / len(chosen) if chosen else None

    @property
    def grep_compacted(self) -> float | None:
        return self._share(True, "found")

    @property
    def summary_compacted(self) -> float | None:
        return self._share(True, "in_summary")

    @property
    def grep_all(self) -> float | None:
        return self._share(None, "found")


def grep_condition(tree: Tree, condition: Condition, model: str = "") -> ConditionResult:
    """The study's grep on one compacted context, read through ctxlab's importer."""
    data = tree.read(condition.context)
    meta = json.loads(tree.read(condition.meta))
    parsed = parse(data, name=condition.context, format="openai-chat")
    (conversation,) = parsed.conversations
    texts = [message_text(m) for m in conversation.messages]
    # The study's text: each message's content, lower-cased, each followed by a newline.
    full = "".join(t.lower() + "\n" for t in texts)
    summary = texts[0].lower() if texts and texts[0].startswith("[Summary of ") else ""
    compacted = set((meta.get("compaction") or {}).get("facts_compacted") or ())
    facts = []
    for fact in meta.get("facts") or ():
        keywords = [str(k).lower() for k in fact.get("keywords") or ()]
        facts.append(
            FactResult(
                str(fact["fact_id"]),
                fact["fact_id"] in compacted,
                bool(keywords) and all(k in full for k in keywords),
                bool(keywords) and all(k in summary for k in keywords),
            )
        )
    return ConditionResult(
        condition,
        model,
        hashlib.blake2b(data, digest_size=16).hexdigest(),
        len(conversation.messages),
        tuple(facts),
    )


def run_models(tree: Tree) -> dict[str, str]:
    """Each run folder's compaction model (its ``config.json``)."""
    models = {}
    for path in tree.paths():
        run, _, name = path.rpartition("/")
        if name == "config.json" and run.startswith("compaction_v5_"):
            config = json.loads(tree.read(path))
            models[run] = str(config.get("compact_model") or config.get("model") or "")
    return models


def grep_all(tree: Tree) -> list[ConditionResult]:
    """Every condition, each distinct context once (a rerun of the questions on the same
    contexts is not a replicate of the compaction)."""
    models = run_models(tree)
    seen: set[str] = set()
    out = []
    for condition in conditions(tree):
        result = grep_condition(tree, condition, models.get(condition.run, ""))
        if result.digest not in seen:
            seen.add(result.digest)
            out.append(result)
    return out


@dataclass(frozen=True, slots=True)
class LevelRow:
    """One level of the table: our values over the replicates beside the published ones."""

    level: str
    grep: Spread | None  # compacted zone, the study's rule
    summary: Spread | None  # compacted zone, the summary alone
    grep_all: Spread | None  # every fact
    contexts: int
    published: tuple[float, float]
    recall_zone: tuple[float, float]
    recall: float

    @property
    def within(self) -> bool:
        """Our mean lies in the published min-max (whole percents: ± half a point)."""
        low, high = self.published
        return self.grep is not None and low - ROUNDING <= self.grep.mean <= high + ROUNDING

    def as_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "compacted_share": FRACTION[self.level],
            "contexts": self.contexts,
            "grep_compacted": None if self.grep is None else self.grep.as_dict(),
            "summary_compacted": None if self.summary is None else self.summary.as_dict(),
            "grep_all": None if self.grep_all is None else self.grep_all.as_dict(),
            "published_grep_compacted": list(self.published),
            "published_recall_compacted": list(self.recall_zone),
            "published_recall": self.recall,
            "within": self.within,
        }


def table(
    results: Sequence[ConditionResult],
    *,
    model: str = COMPACTION_MODEL,
    densities: Iterable[int] | None = None,
) -> list[LevelRow]:
    """Per level, the spread over every distinct context of the ``model``'s runs (all
    densities unless narrowed): the values the published ranges describe."""
    keep = set(densities) if densities is not None else None
    rows = []
    for level in LEVELS:
        chosen = [
            r
            for r in results
            if r.condition.level == level
            and r.model == model
            and (keep is None or r.condition.density in keep)
        ]
        rows.append(
            LevelRow(
                level,
                spread(r.grep_compacted for r in chosen),
                spread(r.summary_compacted for r in chosen),
                spread(r.grep_all for r in chosen),
                len(chosen),
                PUBLISHED_GREP[level],
                PUBLISHED_RECALL_ZONE[level],
                PUBLISHED_RECALL[level],
            )
        )
    return rows


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _range(s: Spread | None) -> str:
    if s is None:
        return "-"
    if s.n < 2 or s.low == s.high:
        return f"{_pct(s.mean)} (n={s.n})"
    return f"{_pct(s.mean)} [{_pct(s.low)}-{_pct(s.high)}] (n={s.n})"


def format_table(rows: Sequence[LevelRow]) -> str:
    head = (
        f"{'level':<9} {'grep, compacted zone (ours)':<32} {'published':<12} {'within':<7}"
        f" {'summary alone (ours)':<28} {'published LLM recall zone / all':<20}"
    )
    lines = [head]
    for r in rows:
        low, high = r.published
        pub = f"{low:.0%}" if low == high else f"{low:.0%}-{high:.0%}"
        rz_low, rz_high = r.recall_zone
        recall = f"{rz_low:.0%}-{rz_high:.0%} / {r.recall:.1%}"
        lines.append(
            f"{r.level + f' ({FRACTION[r.level]:.0%})':<9} {_range(r.grep):<32} {pub:<12} "
            f"{'yes' if r.within else 'NO':<7} {_range(r.summary):<28} {recall}"
        )
    return "\n".join(lines)


# --- the recall side: a model answers the study's questions over a compacted context ------
# The study's own prompts (benchmark_recall_v5.py @ STUDY_COMMIT), so an answer here is
# asked and judged as the paper's were: Q questions per prompt, answers as a JSON array,
# an LLM judge saying whether each answer recalls the expected information.
RECALL_SYSTEM = (
    "You are a helpful assistant working on a complex software project. "
    "Answer questions precisely from memory."
)
RECALL_PROMPT = """Answer each of the following questions based ONLY on what you know from our conversation.
Be specific: include exact numbers, names, paths, versions.
If you don't remember or aren't sure, say "I don't recall".

{questions}

Reply with a JSON array of objects, one per question:
[{{"id": "LM_0001", "answer": "your answer"}}, ...]

IMPORTANT: Return ONLY the JSON array, no other text."""  # noqa: E501
JUDGE_PROMPT = """Evaluate whether each answer is correct.

{entries}

For each entry, check:
1. "recalled": Does the answer demonstrate knowledge of the expected information? "I don't recall" = false.
2. "accurate": Does the answer match the expected answer? Partial matches or wrong values = false.
   Example: expected "17 days", answer "10 days" → recalled=true (knows about days), accurate=false (wrong number).

Reply with ONLY a JSON array:
[{{"id": "LM_0001", "recalled": true/false, "accurate": true/false, "notes": "brief reason"}}, ...]"""  # noqa: E501
JUDGE_SYSTEM = "You are an objective evaluator. Answer ONLY with valid JSON."
ANSWER_TOKENS = 4_096
JUDGES = ("model", "keywords")  # the study's LLM judge, or its keywords found in the answer


class Asker(Protocol):
    """A model summariser of the lab (``OpenAISummarizer``, ``AnthropicSummarizer``): one
    request in, its text out, each replicate its own call (``replicate`` keys the cache)."""

    model: str
    replicate: int

    def summarize(self, request: SummaryRequest) -> SummaryResponse: ...

    def totals(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class StudyFact:
    fact_id: str
    question: str
    answer: str
    keywords: tuple[str, ...]
    compacted: bool


@dataclass(frozen=True, slots=True)
class RecallResult:
    """One condition's recall over its replicates: per replicate the share of facts
    recalled (every fact, the compacted zone, the rest), and what was sent."""

    condition: Condition
    judge: str
    questions_per_prompt: int
    facts: int
    per_replicate: tuple[dict[str, float | None], ...]
    unanswered: int  # answers missing from a reply (counted as not recalled)
    llm: dict[str, Any]

    def spread_of(self, zone: str) -> Spread | None:
        return spread(r[zone] for r in self.per_replicate)

    def as_dict(self) -> dict[str, Any]:
        def described(zone: str) -> dict[str, Any] | None:
            s = self.spread_of(zone)
            return None if s is None else s.as_dict()

        return {
            "run": self.condition.run,
            "density": self.condition.density,
            "level": self.condition.level,
            "judge": self.judge,
            "questions_per_prompt": self.questions_per_prompt,
            "facts": self.facts,
            "replicates": [dict(r) for r in self.per_replicate],
            "recall": described("all"),
            "recall_compacted": described("compacted"),
            "recall_remaining": described("remaining"),
            "unanswered": self.unanswered,
            "published_recall": PUBLISHED_RECALL.get(self.condition.level),
            "published_recall_compacted": list(PUBLISHED_RECALL_ZONE[self.condition.level]),
            "llm": self.llm,
        }


def study_facts(tree: Tree, condition: Condition) -> list[StudyFact]:
    meta = json.loads(tree.read(condition.meta))
    compacted = set((meta.get("compaction") or {}).get("facts_compacted") or ())
    return [
        StudyFact(
            str(f["fact_id"]),
            str(f.get("question") or ""),
            str(f.get("answer") or ""),
            tuple(str(k) for k in f.get("keywords") or ()),
            f["fact_id"] in compacted,
        )  # fmt: skip
        for f in meta.get("facts") or ()
    ]


def context_messages(tree: Tree, condition: Condition) -> tuple[PromptMessage, ...]:
    """The compacted context as the conversation history the question follows."""
    parsed = parse(tree.read(condition.context), name=condition.context, format="openai-chat")
    (conversation,) = parsed.conversations
    return tuple(
        PromptMessage("assistant" if m.role is Role.ASSISTANT else "user", message_text(m))
        for m in conversation.messages
    )


def recall_requests(
    history: tuple[PromptMessage, ...], facts: Sequence[StudyFact], q: int
) -> list[tuple[list[StudyFact], SummaryRequest]]:
    """The question prompts: ``q`` facts per prompt, after the whole context."""
    out = []
    for start in range(0, len(facts), q):
        batch = list(facts[start : start + q])
        questions = "\n".join(f"- [{f.fact_id}] {f.question}" for f in batch)
        request = SummaryRequest(
            strategy="lost-in-compaction",
            system=RECALL_SYSTEM,
            messages=(*history, PromptMessage("user", RECALL_PROMPT.format(questions=questions))),
            max_output_tokens=ANSWER_TOKENS,
            temperature=0.0,
            purpose="probe",
        )
        out.append((batch, request))
    return out


def judge_request(batch: Sequence[tuple[StudyFact, str]]) -> SummaryRequest:
    entries = "\n\n".join(
        f'[{f.fact_id}]\nQuestion: {f.question}\nExpected: {f.answer}\nGiven answer: "{a}"'
        for f, a in batch
    )
    return SummaryRequest(
        strategy="lost-in-compaction-judge",
        system=JUDGE_SYSTEM,
        messages=(PromptMessage("user", JUDGE_PROMPT.format(entries=entries)),),
        max_output_tokens=ANSWER_TOKENS,
        temperature=0.0,
        purpose="probe-judge",
    )


def json_items(text: str) -> dict[str, dict[str, Any]]:
    """A reply's JSON array of ``{"id": ...}`` objects by id ({} when it holds none)."""
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end <= start:
        return {}
    try:
        items = json.loads(text[start : end + 1])
    except ValueError:
        return {}
    if not isinstance(items, list):
        return {}
    return {str(i["id"]): i for i in items if isinstance(i, dict) and "id" in i}


def keyword_recalled(fact: StudyFact, answer: str) -> bool:
    """The offline judge: every keyword of the fact in the answer (the grep rule)."""
    lowered = answer.lower()
    return bool(fact.keywords) and all(k.lower() in lowered for k in fact.keywords)


def estimate_calls(facts: int, q: int, replicates: int, judge: str) -> int:
    per = -(-facts // q)
    return per * replicates * (2 if judge == "model" else 1)


def recall(
    tree: Tree,
    condition: Condition,
    llm: Asker,
    *,
    replicates: int = 3,
    questions_per_prompt: int = 5,
    judge: str = "model",
    limit: int | None = None,
) -> RecallResult:
    """Ask the model the study's questions over the compacted context, ``replicates``
    times (each replicate its own calls), and judge each answer; per replicate, the share
    of facts recalled. A failed call fails the whole measure (``SummarizerError``)."""
    if judge not in JUDGES:
        raise ValueError(f"judge: one of {', '.join(JUDGES)}, not {judge!r}")
    if not 1 <= replicates <= MAX_REPLICATES or questions_per_prompt < 1:
        raise ValueError(f"replicates: 1 to {MAX_REPLICATES}; questions per prompt: 1 or more")
    facts = study_facts(tree, condition)[: limit if limit else None]
    history = context_messages(tree, condition)
    requests = recall_requests(history, facts, questions_per_prompt)
    per_replicate: list[dict[str, float | None]] = []
    unanswered = 0
    for replicate in range(replicates):
        llm.replicate = replicate
        recalled: dict[str, bool] = {}
        for batch, request in requests:
            answers = json_items(llm.summarize(request).text)
            given = [(f, str((answers.get(f.fact_id) or {}).get("answer") or "")) for f in batch]
            unanswered += sum(1 for f in batch if f.fact_id not in answers)
            if judge == "keywords":
                recalled.update((f.fact_id, keyword_recalled(f, a)) for f, a in given)
                continue
            verdicts = json_items(llm.summarize(judge_request(given)).text)
            for f, a in given:
                verdict = verdicts.get(f.fact_id) or {}
                recalled[f.fact_id] = bool(a) and verdict.get("recalled") is True
        per_replicate.append(
            {
                zone: _recall_share(facts, recalled, zone)
                for zone in ("all", "compacted", "remaining")
            }
        )
    llm.replicate = 0
    return RecallResult(
        condition, judge, questions_per_prompt, len(facts), tuple(per_replicate), unanswered,
        {"model": llm.model, **llm.totals()},
    )  # fmt: skip


def _recall_share(
    facts: Sequence[StudyFact], recalled: Mapping[str, bool], zone: str
) -> float | None:
    chosen = [f for f in facts if zone == "all" or f.compacted == (zone == "compacted")]
    return sum(recalled.get(f.fact_id, False) for f in chosen) / len(chosen) if chosen else None


def find_condition(tree: Tree, name: str) -> Condition:
    """``RUN/dN_CL`` (or ``dN_CL`` when one run has it) among the study's conditions."""
    run, _, label = name.rpartition("/")
    matches = [
        c for c in conditions(tree)
        if f"d{c.density}_{c.level}" == label and (not run or c.run == run)
    ]  # fmt: skip
    if not matches:
        raise ValueError(
            f"no condition {name!r} in the study (e.g. compaction_v5_R4_20260224_1353/d80_C4)"
        )
    if len(matches) > 1:
        runs = ", ".join(sorted(c.run for c in matches))
        raise ValueError(f"{label} is in several runs: name one ({runs})")
    return matches[0]


def estimate_usd(
    llm: Any,
    tree: Tree,
    condition: Condition,
    *,
    replicates: int,
    q: int,
    judge: str,
    limit: int | None = None,
) -> tuple[int, int, Decimal | None]:
    """(calls, input tokens of one question prompt, USD upper bound or None when the
    model has no known price); a local endpoint costs 0. Tokens are the study's own
    estimate (characters / 4)."""
    facts = len(study_facts(tree, condition)[: limit if limit else None])
    calls = estimate_calls(facts, q, replicates, judge)
    tokens = sum(len(m.text) for m in context_messages(tree, condition)) // 4
    if getattr(llm, "local", False):
        return calls, tokens, Decimal(0)
    info = getattr(llm, "info", None)
    if info is None:
        return calls, tokens, None
    asks = estimate_calls(facts, q, replicates, "keywords")
    usd = estimate_summary_cost(asks, tokens, ANSWER_TOKENS, info)
    if judge == "model":
        usd += estimate_summary_cost(calls - asks, 200 * q, ANSWER_TOKENS, info)
    return calls, tokens, usd
