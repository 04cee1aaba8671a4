"""One vocabulary: every event kind, finding kind and metric the lab shows, with its meaning.

- ``EVENTS``: each kind a strategy may emit, with a category (what it does to the context:
  compaction, restore, repair, failure, skip, info), a label and a one-line meaning.
  Strategies emit only these spellings; older spellings (stored runs, other modules) map
  through ``EVENT_ALIASES``. Metrics count compactions, restores and failures by category,
  never by guessing from the kind's name.
- ``FINDINGS``: each invariant check's kind with a label and a description.
- ``METRICS``: each metric key a run stores or a page computes, with label, unit, which
  direction is better, meaning and the rule that picks the "best" value among runs.

``docs/vocabulary.md`` is generated from this module (``python -m ctxlab.engine.core.catalogue``)
and a test keeps it in step.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .spread import SPREAD_RULE, clear_lead

Category = Literal["compaction", "restore", "repair", "failure", "skip", "info"]
Better = Literal["lower", "higher"] | None

CATEGORIES: dict[str, str] = {
    "compaction": "removes, shortens or replaces context to make the request smaller",
    "restore": "puts back what an earlier request-local reduction left out",
    "repair": "fixes the request's invariants (e.g. orphaned tool results), not to save tokens",
    "failure": "an attempted compaction or summary did not complete",
    "skip": "a compaction was due or prepared, but the strategy did nothing",
    "info": "a notice or a deferred result landing; no message is removed",
}


@dataclass(frozen=True, slots=True)
class EventKind:
    kind: str
    category: Category
    label: str
    meaning: str
    aliases: tuple[str, ...] = ()
    # Which ``Event.detail`` keys hold the size the strategy measured and the limit it
    # compared it with (first present wins: strategies name them in their own words).
    measured_keys: tuple[str, ...] = ()
    limit_keys: tuple[str, ...] = ()


_EVENTS: tuple[EventKind, ...] = (
    # --- compaction ----------------------------------------------------------------------
    EventKind("truncate", "compaction", "Truncated",
              "tool output or message text cut in place (head/tail kept); the cut persists"),
    EventKind("offload", "compaction", "Offloaded",
              "tool result replaced by a notice naming the file that holds the full text"),
    EventKind("tool_result_compact", "compaction", "Tool results compacted",
              "older tool results over the size limit cut, full text kept in files (CoPaw)"),
    EventKind("prune", "compaction", "Pruned",
              "old tool outputs replaced by a placeholder, newest outputs protected",
              measured_keys=("estimate",), limit_keys=("threshold",)),
    EventKind("clear_tool_uses", "compaction", "Tool results cleared",
              "every tool result but the newest few replaced by a placeholder", ("clear",),
              limit_keys=("trigger",)),
    EventKind("clear_thinking", "compaction", "Thinking cleared",
              "thinking blocks of older assistant turns left out of the request"),
    EventKind("drop", "compaction", "Dropped",
              "oldest messages or turns removed without a summary in the context",
              ("drop_turns",),
              measured_keys=("estimate",), limit_keys=("threshold", "limit")),
    EventKind("summarise", "compaction", "Summarised",
              "older messages replaced by a summary, recent messages kept", ("summarize",),
              measured_keys=("estimate", "tokens", "total_tokens"), limit_keys=("threshold",)),
    EventKind("compact", "compaction", "Compacted",
              "the whole history replaced by a summary (plus whatever the original keeps)",
              measured_keys=("estimate", "tokens", "total_tokens"), limit_keys=("threshold", "limit")),
    EventKind("trim", "compaction", "Trimmed (request view)",
              "messages outside the window left out of this request; the session keeps them",
              ("trim_request",),
              limit_keys=("window",)),
    EventKind("trim_partial", "compaction", "Partly trimmed (request view)",
              "a message partly inside the window cut to fit this request"),
    EventKind("force_compression", "compaction", "Forced compression",
              "oldest half of the turns dropped because the request exceeds the budget "
              "(PicoClaw)",
              measured_keys=("estimate", "reference"), limit_keys=("window",)),
    EventKind("compress_text_only", "compaction", "Compressed to text",
              "turns kept as their text only, tool calls and results removed (CowAgent)",
              measured_keys=("estimate",), limit_keys=("budget",)),
    EventKind("overflow_trim", "compaction", "Overflow trim",
              "after a context-length error: aggressive trim, then the request is retried"),
    EventKind("overflow_clear", "compaction", "Overflow clear",
              "the overflow persisted after trimming: history cleared and the request fails"),
    # --- restore ---------------------------------------------------------------------------
    EventKind("restore_request", "restore", "Restored (request view)",
              "messages or outputs an earlier request-local trim, prune or clear left out "
              "are sent again",
              ("prune_lifted",)),
    # --- repair ----------------------------------------------------------------------------
    EventKind("sanitize", "repair", "Sanitised",
              "orphaned or unanswered tool messages removed so the request stays valid"),
    # --- failure ---------------------------------------------------------------------------
    EventKind("summary_failed", "failure", "Summary failed",
              "the summariser call failed or returned nothing; the strategy took its "
              "failure path (see the event's outcome)",
              measured_keys=("estimate",), limit_keys=("threshold",)),
    EventKind("compact_failed", "failure", "Compaction failed",
              "a compaction could not complete, or could not make the request fit the "
              "window; this event changes no message (its outcome says what follows)",
              measured_keys=("tokens", "total_tokens", "reference"),
              limit_keys=("threshold", "limit", "window")),
    # --- skip ------------------------------------------------------------------------------
    EventKind("compact_skipped", "skip", "Compaction skipped",
              "the trigger fired but nothing could be compacted (reason in the event)",
              ("summarize_skipped", "summary_skipped", "clear_skipped"),
              measured_keys=("total_tokens",)),
    EventKind("summary_empty", "skip", "Summary empty",
              "the summariser answered that nothing was worth keeping; no summary written"),
    EventKind("summary_not_injected", "skip", "Summary not injected",
              "a background summary was written but had no message left to attach to"),
    # --- info ------------------------------------------------------------------------------
    EventKind("summary_injected", "info", "Summary injected",
              "a background summary landed, prepended to the first kept user message",
              ("summary_injection",)),
    EventKind("summary_checked", "info", "Summary checked",
              "the summary quality gate asked the summary for the compacted messages' facts "
              "and it kept enough of them (detail: asked, missing, score, min_score)"),
    EventKind("summary_rejected", "info", "Summary rejected",
              "the summary quality gate found too many of the compacted messages' facts "
              "missing from the summary; the event's outcome says what followed (asked "
              "again, original kept, or the missed facts appended)"),
    EventKind("warning", "info", "Warning",
              "the original shows the user a warning (e.g. Codex after a compaction)"),
)  # fmt: skip

EVENTS: dict[str, EventKind] = {e.kind: e for e in _EVENTS}
EVENT_ALIASES: dict[str, str] = {alias: e.kind for e in _EVENTS for alias in e.aliases}


def canonical_event(kind: str) -> str:
    """The catalogue spelling of ``kind`` (an alias maps to its kind; others unchanged)."""
    return EVENT_ALIASES.get(kind, kind)


def event_kind(kind: str) -> EventKind | None:
    """The catalogue row of ``kind`` or of the kind it is an alias of; None if unknown."""
    return EVENTS.get(canonical_event(kind))


def event_category(kind: str) -> Category | None:
    row = event_kind(kind)
    return row.category if row else None


def detail_number(
    kind: str, detail: Mapping[str, Any], *, limit: bool = False
) -> tuple[int | None, str]:
    """The size an event of ``kind`` measured (or, with ``limit``, the limit it compared it
    with) and the detail key it was under: (None, "") when the event names neither."""
    found = event_kind(kind)
    keys = () if found is None else (found.limit_keys if limit else found.measured_keys)
    for key in keys:
        value = detail.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value), key
    return None, ""


# The comparison that fired an event, when the strategy's trigger compares other
# quantities than its kind's usual ones (QwenPaw: the history against threshold - system -
# summary). A strategy names them in its event's detail; pages state them as they are.
TRIGGER_KEYS = ("trigger_measured", "trigger_limit")


@dataclass(frozen=True, slots=True)
class Trigger:
    """What an event's trigger compared: ``measured`` (named ``measured_name``) against
    ``limit`` (``limit_name``); either may be unknown (None)."""

    measured: int | None
    limit: int | None
    measured_name: str = "context"
    limit_name: str = "threshold"

    def words(self) -> str:
        """'context 27,410 ≥ threshold 26,214' (or what of it is known)."""
        if self.measured is not None and self.limit is not None:
            sign = "≥" if self.measured >= self.limit else "<"
            return f"{self.measured_name} {self.measured:,} {sign} {self.limit_name} {self.limit:,}"
        if self.measured is not None:
            return f"{self.measured_name} {self.measured:,}"
        return ""


def trigger_of(kind: str, detail: Mapping[str, Any]) -> Trigger:
    """The one reading of what fired an event: the comparison the strategy named
    (``trigger_measured`` / ``trigger_limit``, with ``_name`` words), else the kind's measured
    and limit keys (``detail_number``)."""
    measured, limit = (detail.get(k) for k in TRIGGER_KEYS)
    if isinstance(measured, int | float) and isinstance(limit, int | float):
        return Trigger(
            int(measured),
            int(limit),
            str(detail.get("trigger_measured_name") or "context"),
            str(detail.get("trigger_limit_name") or "threshold"),
        )
    value, _ = detail_number(kind, detail)
    bound, name = detail_number(kind, detail, limit=True)
    return Trigger(value, bound, "context", name or "threshold")


def is_compaction(kind: str) -> bool:
    return event_category(kind) == "compaction"


# What "#K" / "compaction K" means on every page, JSON twin, CSV and report.
COMPACTION_ORDINAL = (
    "“Compaction K” (shown as #K) is the run's K-th compaction event: the K-th event, in "
    "event order, whose kind is in the compaction category, so a run's last K is its "
    "Compactions metric (`compaction_count`). Skipped compactions (`compact_skipped`), "
    "restores, repairs and failures get no K. Events number every event of the run "
    "(“event #N”) and summaries every summariser call (“summary #N”); each names the "
    "compaction it belongs to. The compare page's row K, the step view's "
    "`&compaction=K` and the report's rows are compaction K of each run."
)


def compaction_ordinals(events: Iterable[tuple[int, str]]) -> dict[int, int]:
    """Event seq -> its compaction ordinal K (``COMPACTION_ORDINAL``), from the run's
    (seq, kind) pairs in seq order; events that are not compactions are absent. The one
    place a compaction is numbered."""
    out: dict[int, int] = {}
    for seq, kind in events:
        if is_compaction(kind):
            out[seq] = len(out) + 1
    return out


# Outcomes decided by what a summary says (its size, or that it is empty): a gemini_cli
# "inflated" failure, an empty summary, a summary larger than its input. With the offline
# (extractive) summariser they follow from its text, not from what a model would write.
SUMMARY_TEXT_EVENTS = frozenset(
    {"compact_failed", "summary_empty", "summary_checked", "summary_rejected"}
)
SUMMARY_TEXT_FINDINGS = frozenset({"summary_larger"})
OFFLINE_SUMMARIZERS = frozenset({"offline"})
OFFLINE_OUTCOME_NOTE = "this follows from the offline summary; a model's summary may differ"
NOTE_KEY = "note"  # the detail key that carries it


def offline_outcome_note(kind: str, summarizer: str, *, finding: bool = False) -> str:
    """The note an event or finding of ``kind`` carries when the summary it follows from
    (its ``summary_id``) was written by ``summarizer``: "" unless that is an offline one
    and the kind's outcome is decided by the summary's text."""
    kinds = SUMMARY_TEXT_FINDINGS if finding else SUMMARY_TEXT_EVENTS
    name = kind if finding else canonical_event(kind)
    return OFFLINE_OUTCOME_NOTE if summarizer in OFFLINE_SUMMARIZERS and name in kinds else ""


def is_restore(kind: str) -> bool:
    return event_category(kind) == "restore"


def is_failure(kind: str) -> bool:
    return event_category(kind) == "failure"


# Cost-ledger rows (``ledger.CompactionMark.label``) are the step's event kinds joined by
# "+", or one of these when no event explains the cache break.
LEDGER_MARKS: dict[str, str] = {
    "summary_swap": "the summary in the request changed without a compaction event",
    "summary_unapplied": "summary calls whose result never reached a request (the run ended)",
    "prefix_break": "the request's cached prefix broke at this step",
    "compaction": "a compaction (no kind recorded)",
}


def ledger_mark_label(label: str) -> str:
    """A ledger row's label in words: each event kind's label, or the mark's name."""
    return " + ".join(
        part.replace("_", " ") if part in LEDGER_MARKS else _event_label(part)
        for part in label.split("+")
    )


def _event_label(kind: str) -> str:
    row = event_kind(kind)
    return row.label if row else f"{kind} (uncatalogued)"


# --- findings ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FindingKind:
    kind: str
    label: str
    meaning: str


_FINDINGS: tuple[FindingKind, ...] = (
    FindingKind("tool_pair_broken", "Tool pair broken",
                "a tool_use and its tool_result are not both in the request (they were "
                "paired in the original up to this step)"),
    FindingKind("latest_user_dropped", "Latest user message dropped",
                "the latest user message is not in the request"),
    FindingKind("system_modified", "System prompt changed",
                "the system prompt is missing from the request or was changed"),
    FindingKind("summary_larger", "Summary larger than its input",
                "a summary is larger (reference tokens) than the messages it replaced"),
    FindingKind("overflow", "Request over the window",
                "the request exceeds the window under the reference tokenizer (cl100k)"),
    # survival analysis (engine.survival, engine.instructions): per compaction, not per step
    FindingKind("instruction_summarised", "Instruction only summarised",
                "an instruction source (system prompt, CLAUDE.md/AGENTS.md, a skill, a user "
                "constraint) was replaced by a compaction and survives only as a paraphrase "
                "in the summary, not kept or re-attached verbatim"),
    FindingKind("instruction_dropped", "Instruction dropped",
                "an instruction source was replaced by a compaction and is neither in the "
                "request after it (kept or re-attached) nor paraphrased in the summary"),
)  # fmt: skip

FINDINGS: dict[str, FindingKind] = {f.kind: f for f in _FINDINGS}


# --- survival categories -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FactCategory:
    key: str
    label: str
    meaning: str


_FACT_CATEGORIES: tuple[FactCategory, ...] = (
    FactCategory("instructions", "Instructions",
                 "sentences the user typed that ask for something or constrain it"),
    FactCategory("paths", "File paths", "absolute, relative and bare file paths"),
    FactCategory("commands", "Commands",
                 "shell commands the agent ran (tool call command, `$ cmd` lines)"),
    FactCategory("errors", "Error lines", "lines with an error mark (KeyError:, FAILED, ...)"),
    FactCategory("identifiers", "Identifiers",
                 "multi-part names in code (snake_case, CamelCase) and record codes"),
    FactCategory("numbers", "Numbers with units",
                 "300 ms, 1.5 GB, 85%, $1,200 and versions such as 15.5.2"),
    FactCategory("urls", "URLs", "http(s) addresses"),
    FactCategory("decisions", "Decisions",
                 "assistant sentences that choose or reject an approach (use X, rather than Y)"),
    FactCategory("open_tasks", "Open tasks",
                 "to-do items (TodoWrite, update_plan) not completed when compacted"),
)  # fmt: skip

FACT_CATEGORIES: dict[str, FactCategory] = {c.key: c for c in _FACT_CATEGORIES}


# --- agreement with the original agent ---------------------------------------------------
# What the run and compare pages say about a compaction the transcript's own agent made
# (``engine.recorded``), and how the replay's trigger relates to it. A label may hold
# ``{steps}`` ("1 step", "3 steps").


@dataclass(frozen=True, slots=True)
class AgreementWord:
    key: str
    label: str
    meaning: str


_ORIGINAL_KINDS: tuple[AgreementWord, ...] = (
    AgreementWord("auto", "auto-compaction",
                  "the agent compacted on its own when its count reached its threshold "
                  "(Claude Code compact_boundary, trigger auto)"),
    AgreementWord("manual", "manual /compact",
                  "the user typed /compact (with the focus text shown, if any): an act, not a "
                  "threshold, so no trigger can predict it"),
    AgreementWord("microcompact", "microcompact",
                  "older tool results cleared in place, the conversation kept (Claude Code "
                  "microcompact_boundary: the cleared results are named)"),
    AgreementWord("compacted", "Codex compaction",
                  "Codex replaced its history (compacted item) with the summary it carries"),
    AgreementWord("compacted_encrypted", "Codex compaction (encrypted, no readable summary)",
                  "Codex replaced its history by the earlier user messages and an encrypted "
                  "compaction item: the item's message is empty, there is no summary to read"),
    AgreementWord("compaction", "pi compaction",
                  "pi replaced the entries before its first kept entry by a summary (its "
                  "compaction entry: summary, tokensBefore, read and modified files)"),
    AgreementWord("opencode_compaction", "OpenCode compaction",
                  "OpenCode summarised the session, on its own when the reported context "
                  "overflowed (auto) or on /compact (manual): a request with a compaction part "
                  "answered by a summary message; later requests start at that request"),
    AgreementWord("copilot_compaction", "Copilot CLI compaction",
                  "GitHub Copilot CLI summarised the conversation (session.compaction_complete: "
                  "its summary, the tokens and messages before and removed), on its own at its "
                  "threshold or on a context-limit error (auto) or on /compact (manual)"),
    AgreementWord("copilot_truncation", "Copilot CLI truncation",
                  "GitHub Copilot CLI dropped the oldest messages to fit its token limit "
                  "(session.truncation: messages and tokens removed), no summary"),
    AgreementWord("copilot_context_cleared", "Copilot CLI /clear",
                  "the user cleared GitHub Copilot CLI's context (session.context_cleared): "
                  "an act, not a threshold"),
    AgreementWord("compact_request", "compaction request (HTTP traffic)",
                  "a Claude Code compaction seen in its HTTP traffic (claude-trace): a request "
                  "closed by the compact prompt, answered by the summary the continued session "
                  "opens with; manual when /compact carried focus text, else auto or manual"),
    AgreementWord("server_compaction", "server-side compaction",
                  "the API compacted the context itself (a compaction block in the response)"),
    AgreementWord("condensation", "condensation",
                  "OpenHands' condenser replaced events by a summary (V0 condensation action, "
                  "V1 SDK Condensation event: the forgotten events and the summary)"),
)  # fmt: skip

_RELATIONS: tuple[AgreementWord, ...] = (
    AgreementWord("same_step", "same step",
                  "the replay compacted at the step the original did"),
    AgreementWord("later", "{steps} later",
                  "the replay's nearest compaction came after the original's"),
    AgreementWord("earlier", "{steps} earlier",
                  "the replay's nearest compaction came before the original's"),
    AgreementWord("not_reproduced", "not reproduced",
                  "the replay has no compaction of this kind left to pair with it"),
    AgreementWord("after_last_step", "after the last replayed request",
                  "the original compacted after the file's last request: no step to compare"),
)  # fmt: skip

ORIGINAL_KINDS: dict[str, AgreementWord] = {w.key: w for w in _ORIGINAL_KINDS}
RELATIONS: dict[str, AgreementWord] = {w.key: w for w in _RELATIONS}


def original_kind_label(key: str) -> str:
    """The words for an original compaction's kind key (an unknown key is shown as is)."""
    word = ORIGINAL_KINDS.get(key)
    return word.label if word else key.replace("_", " ")


def relation_label(key: str, steps: int | None = None) -> str:
    """The words for a relation key; ``steps`` fills "{steps}" (its absolute value)."""
    word = RELATIONS.get(key)
    if word is None:
        return key.replace("_", " ")
    n = abs(steps or 0)
    return word.label.format(steps=f"{n} step{'' if n == 1 else 's'}")


# ``manage.py bench --only agreement`` (ctxlab/benchmarks/agreement.py): each line's words.
_AGREEMENT_MEASURES: tuple[AgreementWord, ...] = (
    AgreementWord("agreement_same_step_share", "same step",
                  "in-file original compactions (step > 0) the replay reproduced at the same "
                  "step"),
    AgreementWord("agreement_same_step_own_count_share", "same step by its own count",
                  "in-file original compactions the replay reproduced at the same step by "
                  "its own count, not where the transcript left the count open and the "
                  "original's compaction settled it (the strategy's decided_by)"),
    AgreementWord("agreement_within_1_step_share", "within ±1 step",
                  "in-file original compactions the replay reproduced within one step"),
    AgreementWord("agreement_count_equal_share", "same number of compactions",
                  "files where the replay compacted as often as the original did in the file"),
    AgreementWord("agreement_pre_tokens_median_error", "count error before compacting",
                  "median of |replay tokens before - original preTokens| / preTokens over "
                  "paired compactions whose original logged preTokens"),
    AgreementWord("agreement_compactions", "compactions measured",
                  "in-file original compactions the shares are taken over"),
    AgreementWord("agreement_import_clean_share", "clean imports",
                  "files imported with no refusal, no tool result left unpaired although "
                  "its call is in the file, no alternate branch that is a piece of its own "
                  "thread (a parallel result, another line of one response) and no main "
                  "thread cut at a compaction"),
)  # fmt: skip

AGREEMENT_MEASURES: dict[str, AgreementWord] = {w.key: w for w in _AGREEMENT_MEASURES}


# --- metrics -----------------------------------------------------------------------------

# A run that re-compacts this often while still near its threshold (thrash events per
# replayed step) is not eligible for "best" on a guarded metric: a setting that compacts at
# nearly every step can always look small, which is not what "best" means. The firing rate
# alone is no guide: tool results trimmed or offloaded as they arrive fire at every tool
# step whatever the window (QwenPaw fires at ~95 of 100 steps at any size).
PATHOLOGICAL_THRASH_SHARE = 0.25

# The best rule in words: one source for each metric's ``best_rule`` and for the sentence
# the compare page, its CSV's header notes and the downloaded report state next to their
# tables (``BEST_RULE``; ``not_eligible`` names what keeps a run out).
THRASH_RULE = (
    "runs that thrash (re-compact near the threshold) at ≥ "
    f"{PATHOLOGICAL_THRASH_SHARE:.0%} of their steps are not eligible"
)
OVERFLOW_RULE = "runs with steps in overflow are not eligible unless every run has some"
BEST_RULE = (
    "Best (marked) in a row with a better direction: the lowest or highest value, unless "
    f"all are equal; {OVERFLOW_RULE} (every row but the overflow counts); for sizes and "
    f"token sums, {THRASH_RULE}; {SPREAD_RULE}."
)

# A run whose requests went over the window at some step did not keep its context in the
# window: the provider would have refused those calls, so its other figures (fewest
# compactions, most facts kept, lowest cost) describe a session that could not happen and
# win nothing, unless every run overflows.
OVERFLOW_KEY = "overflow_steps"
# Over the window in each count: the reference tokenizer's (cl100k, ``OVERFLOW_KEY``) and the
# strategy's own (what its trigger compares: reported usage where it reads it). A run is in
# overflow when either count says so; neither figure is judged by the overflow rule itself.
OVERFLOW_STRATEGY_KEY = "overflow_steps_strategy"
OVERFLOW_KEYS: tuple[str, ...] = (OVERFLOW_KEY, OVERFLOW_STRATEGY_KEY)


@dataclass(frozen=True, slots=True)
class Metric:
    key: str
    label: str
    unit: str
    better: Better
    meaning: str
    # Guarded metrics (sizes and token sums) crown only runs whose firing rate and thrash
    # are not pathological, see ``best_rule``.
    guarded: bool = False

    @property
    def unit_note(self) -> str:
        return unit_note(self.label, self.unit)

    @property
    def best_rule(self) -> str:
        if self.better is None:
            return "no best: neither direction is better"
        rule = (
            f"the {'lowest' if self.better == 'lower' else 'highest'} value, unless all are equal"
        )
        if self.guarded:
            rule += f"; {THRASH_RULE}"
        if self.key not in OVERFLOW_KEYS:
            rule += f"; {OVERFLOW_RULE}"
        return rule


_METRICS: tuple[Metric, ...] = (
    # --- replay (engine metrics.compute_metrics) -------------------------------------------
    Metric("steps", "Steps", "steps", None, "inference calls replayed"),
    Metric("peak_strategy", "Peak context (own estimate)", "tokens", "lower",
           "max request tokens as the strategy counts them (what its trigger compares: "
           "reported usage where it reads it)", True),
    Metric("peak_reference", "Peak context (cl100k)", "tokens", "lower",
           "max request tokens under the reference tokenizer", True),
    Metric("peak_reported", "Peak reported usage", "tokens", None,
           "max prompt tokens the provider reported in the original transcript"),
    Metric("input_tokens_total", "Σ input tokens", "tokens", "lower",
           "reference request tokens summed over all steps (what the agent is billed for)",
           True),
    Metric("input_tokens_total_strategy", "Σ input tokens (own estimate)", "tokens", "lower",
           "request tokens summed over all steps under the strategy's estimator", True),
    Metric("events", "Events by kind", "events", None, "every event, counted by kind"),
    Metric("compactions", "Compactions by kind", "events", None,
           "events in the compaction category, counted by kind"),
    Metric("compaction_count", "Compactions", "events", "lower",
           "events in the compaction category (restores, repairs, failures and skips are "
           "not compactions)"),
    Metric("restore_count", "Restores", "events", None,
           "events that put back what a request-local reduction left out"),
    Metric("failure_count", "Failed compactions", "events", "lower",
           "events in the failure category (a summary or compaction that did not complete)"),
    Metric("messages_removed", "Messages removed", "messages", "lower",
           "distinct messages summarised or dropped"),
    Metric("messages_modified", "Messages modified", "messages", "lower",
           "distinct messages truncated, offloaded or pruned"),
    Metric("tokens_removed", "Tokens removed", "tokens", "lower",
           "reference tokens of the removed messages"),
    Metric("summaries", "Summaries", "calls", None, "summariser calls made"),
    Metric("summary_failures", "Summary failures", "calls", "lower",
           "summariser calls that failed"),
    Metric("summary_input_tokens", "Summary input tokens", "tokens", "lower",
           "tokens sent to the summariser", True),
    Metric("summary_output_tokens", "Summary output tokens", "tokens", "lower",
           "tokens the summariser returned", True),
    Metric("overflow_steps", "Steps in overflow (cl100k)", "steps", "lower",
           "steps whose replayed request, counted with the reference tokenizer (cl100k), "
           "exceeds the window (the 'overflow' finding); the same request in the strategy's "
           "own count is 'Steps in overflow (own estimate)'", True),
    Metric("overflow_steps_strategy", "Steps in overflow (own estimate)", "steps", "lower",
           "steps whose replayed request, as the strategy counts it (what 'Peak context (own "
           "estimate)' reads: reported usage where it reads it), exceeds the window", True),
    Metric("findings", "Findings by kind", "findings", None,
           "broken invariants, counted by kind (one per kind per step at most)"),
    Metric("findings_total", "Findings", "findings", "lower",
           "broken invariants of all kinds (one per kind per step at most)"),
    Metric("firing_per_100_steps", "Firing / 100 steps", "per 100 steps", "lower",
           "steps with at least one compaction, per 100 steps"),
    Metric("mean_steps_between", "Mean steps between", "steps", "higher",
           "mean gap between steps with a compaction"),
    Metric("thrash", "Thrash", "events", "lower",
           "compactions firing again within 3 steps while the context stayed near the "
           "threshold (≥ 90 % of it after the previous one)"),
    Metric("threshold", "Threshold", "tokens", None,
           "the size at which the strategy compacts, under its own estimator"),
    Metric("original_compactions", "The original's own compactions", "rows", None,
           "where the transcript's agent really compacted, next to this replay's nearest "
           "compaction (engine.recorded.agreement_rows)"),
    # --- what was lost (replay_app.inspect) ------------------------------------------------
    Metric("retention", "Fact retention", "ratio", "higher",
           "facts of touched messages still in context after each compaction / facts at risk; "
           "every event that changed a message counts (truncations, offloads, prunes too), "
           "regex facts and instructions only. Same survival rule as Fact survival "
           "(engine.lost.kept_by_summary or still in a message in context)"),
    Metric("facts_lost", "Facts lost", "facts", "lower",
           "facts at risk that nothing kept, summed over compactions"),
    # --- survival by category (engine.survival) --------------------------------------------
    Metric("survival", "Fact survival", "ratio", "higher",
           "facts of what each compaction replaced (all categories) still available to the "
           "model right after it (summary, kept tail, re-attached) / facts at risk; "
           "compactions only, adding decisions and open tasks to Fact retention's facts. "
           "Same survival rule as Fact retention, so a fact listed under What was lost is "
           "never counted kept here"),
    Metric("first_summary_persistence", "First-summary facts at the end", "ratio", "higher",
           "share of the first summary's facts still available after the last compaction "
           "(drift across summaries; none with fewer than two compactions)"),
    Metric("drift_total", "Drifted facts", "facts", "lower",
           "facts a summary carried that the next compaction lost, summed over compactions"),
    Metric("instruction_losses", "Instructions lost", "findings", "lower",
           "instruction sources only summarised or dropped by a compaction "
           "(instruction_summarised + instruction_dropped)"),
    # --- probes (engine.probes, engine.probe_scoring; judge_app) -----------------------------
    Metric("probe_score", "Probe score (offline)", "ratio", "higher",
           "mean over the run's own probes (questions about what its compactions removed: "
           "they differ per run) of how much of each rule-known answer is still in the "
           "compacted context"),
    Metric("probe_score_recall", "Recall probes", "ratio", "higher",
           "offline score of 'what was the error message when …?' probes (error line found "
           "verbatim after normalising)"),
    Metric("probe_score_artifact", "Artifact probes", "ratio", "higher",
           "offline score of 'which files were modified / which command ran the tests?' "
           "probes (share of the paths/commands found)"),
    Metric("probe_score_continuation", "Continuation probes", "ratio", "higher",
           "offline score of 'what was the open task?' probes (share of the request's key "
           "terms found)"),
    Metric("probe_score_decision", "Decision probes", "ratio", "higher",
           "offline score of 'which approach was rejected and why?' probes (share of the "
           "sentence's key terms found)"),
    Metric("shared_probe_questions", "Shared questions", "questions", None,
           "questions of a comparison's shared probe set: the union of its runs' own probes "
           "(one per kind, question and answer), each asked of every run at the same request"),
    Metric("shared_probe_asked", "Asked", "questions", None,
           "shared questions asked of this run: those where it made a request at or after "
           "the question's position"),
    Metric("shared_probe_answered", "Answered", "questions", "higher",
           "shared questions whose answer is recoverable (offline score >= 0.8) from the "
           "run's context in force at that request"),
    Metric("shared_probe_score", "Shared probe score", "ratio", "higher",
           "mean offline score over the shared questions asked of this run: every run of "
           "the comparison is asked the same questions at the same requests"),
    Metric("probe_score_claude", "Probe score (Claude)", "ratio", "higher",
           "mean over the probes Claude answered from the compacted context: containment for "
           "recall/artifact, a 0–5 rubric judge (/5) for continuation/decision"),
    Metric("probe_cost_usd", "Probe scoring $", "USD", "lower",
           "what the Claude probe answer and judge calls cost (cache hits are free)"),
    Metric("tokens_saved", "Σ input tokens saved", "tokens", "higher",
           "cl100k input tokens of every request with nothing compacted minus the run's "
           "(input_tokens_total); its share of the former is shown beside it"),
    # --- after-effects of the original's compactions (engine.aftereffects) ----------------
    Metric("aftereffect_files_reread", "Files re-read", "files", "lower",
           "files the agent read again, within its next 20 turns after a real compaction, "
           "that it had read or written before it"),
    Metric("aftereffect_commands_repeated", "Commands repeated", "commands", "lower",
           "shell commands run again (same first line) after a real compaction"),
    Metric("aftereffect_questions", "Questions to the user", "sentences", "lower",
           "sentences after a real compaction asking the user what to do ('what would you "
           "like me to do?')"),
    Metric("aftereffect_apologies", "Apologies / restarts", "sentences", "lower",
           "apologies, restarts and 'I don't have the context' after a real compaction"),
    Metric("aftereffect_turns_to_same_files", "Turns to the same files", "turns", None,
           "assistant turns after a real compaction until the agent touches a file it had "
           "touched before (median per transcript; 'never' within the window)"),
    # --- money and ground truth (replay_app.costs) -----------------------------------------
    Metric("llm_cost_usd", "Summary calls $", "USD", "lower",
           "what the summary calls cost (cache hits are free)", True),
    Metric("llm_calls", "Summary calls", "calls", None,
           "summariser calls (paid + cached + failed)"),
    Metric("llm_cache_hits", "Summary cache hits", "calls", None,
           "summaries served from the database cache"),
    Metric("ledger_request_cost", "Requests $ (cached)", "USD", "lower",
           "agent requests priced with prompt caching", True),
    Metric("ledger_uncached_cost", "Requests $ (no cache)", "USD", "lower",
           "the same requests without caching", True),
    Metric("ledger_write_tokens", "Cache write tokens", "tokens", "lower",
           "tokens written to the prompt cache", True),
    Metric("ledger_read_tokens", "Cache read tokens", "tokens", None,
           "tokens read from the prompt cache"),
    Metric("ledger_invalidated_tokens", "Invalidated tokens", "tokens", "lower",
           "cached tokens compactions invalidated"),
    Metric("ledger_extra_cost", "Compaction extra $", "USD", "lower",
           "re-writes − lost reads + summary calls"),
    Metric("ledger_total_cost", "Total $", "USD", "lower",
           "requests (cached) + summary calls", True),
    Metric("overflow_flags", "Hidden overflows", "steps", "lower",
           "steps the strategy's own estimate said fit under its limit but the provider's "
           "count (reported, or calibrated from reported usage) says would not; unlike "
           "'Steps in overflow', the strategy never saw these"),
)  # fmt: skip

METRICS: dict[str, Metric] = {m.key: m for m in _METRICS}


def unit_note(label: str, unit: str) -> str:
    """The unit worth printing beside ``label``: none when the label already says it
    ("Steps in overflow" in steps, "Total $" in USD, "Firing / 100 steps" per 100 steps)."""
    if unit == "USD":
        return "" if "$" in label else unit
    said = unit.removeprefix("per ").rstrip("s")
    return "" if said and said in label.lower() else unit


def metric(key: str) -> Metric:
    """The catalogue row of ``key``; KeyError names the key when it has none."""
    try:
        return METRICS[key]
    except KeyError:
        raise KeyError(
            f"metric {key!r} has no catalogue row (ctxlab/engine/core/catalogue.py)"
        ) from None


# --- the "best" rule ---------------------------------------------------------------------


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def pathological(metrics: Mapping[str, Any] | None) -> bool:
    """Whether a run re-compacts so often near its threshold (``thrash`` per step) that a
    guarded metric's small value says nothing good about it."""
    if not metrics:
        return False
    steps = _number(metrics.get("steps")) or 0.0
    thrash = _number(metrics.get("thrash")) or 0.0
    return steps > 0 and thrash / steps >= PATHOLOGICAL_THRASH_SHARE


def overflowed(metrics: Mapping[str, Any] | None) -> bool:
    """Whether a run sent a request over its window at some step, in cl100k or in its own
    count (``OVERFLOW_KEYS``)."""
    if not metrics:
        return False
    return any((_number(metrics.get(key)) or 0.0) > 0 for key in OVERFLOW_KEYS)


def not_eligible(runs: Sequence[Mapping[str, Any] | None]) -> list[list[str]]:
    """Per run, what keeps it from being best (``BEST_RULE``), in words ([]: nothing):
    steps in overflow (unless every run has some; then none is kept out for it) and, on
    sizes and token sums, thrash."""
    all_overflow = bool(runs) and all(overflowed(m) for m in runs)
    out: list[list[str]] = []
    for m in runs:
        reasons = []
        if overflowed(m) and not all_overflow:
            reasons.append("steps in overflow")
        if pathological(m):
            reasons.append(
                f"thrash at ≥ {PATHOLOGICAL_THRASH_SHARE:.0%} of its steps (sizes and sums)"
            )
        out.append(reasons)
    return out


def best_flags(
    values: Sequence[Any],
    better: Better,
    *,
    guarded: bool = False,
    runs: Sequence[Mapping[str, Any] | None] | None = None,
    overflow_guard: bool = False,
    families: Sequence[Hashable] | None = None,
) -> list[bool]:
    """Which values are the best: the lowest or highest number, none when there is no
    direction or all numbers are equal. With each value's run metrics in ``runs``:
    ``guarded`` makes pathological runs not eligible (the best is among the others), and
    ``overflow_guard`` runs that overflowed, unless every run did. ``families``: which
    values are replicates of one configuration (``spread.clear_lead``: best only by a lead
    larger than the replicates' spread)."""
    numbers = [_number(v) for v in values]
    if not better or len({n for n in numbers if n is not None}) < 2:
        return [False] * len(values)
    if guarded and runs is not None:
        numbers = [None if pathological(m) else n for n, m in zip(numbers, runs, strict=True)]
    if overflow_guard and runs is not None and not all(overflowed(m) for m in runs):
        numbers = [None if overflowed(m) else n for n, m in zip(numbers, runs, strict=True)]
    eligible = [n for n in numbers if n is not None]
    if not eligible:
        return [False] * len(values)
    if families is not None and len(set(families)) < len(families):
        return clear_lead(numbers, families, better)
    target = min(eligible) if better == "lower" else max(eligible)
    return [n == target for n in numbers]


def metric_best_flags(
    key: str,
    values: Sequence[Any],
    runs: Sequence[Mapping[str, Any] | None],
    families: Sequence[Hashable] | None = None,
) -> list[bool]:
    """``best_flags`` with ``key``'s direction and guard from the catalogue (``families``:
    which runs are replicates of one configuration)."""
    row = metric(key)
    return best_flags(
        values, row.better, guarded=row.guarded, runs=runs,
        overflow_guard=key not in OVERFLOW_KEYS, families=families,
    )  # fmt: skip


# --- docs ---------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def vocabulary_markdown() -> str:
    """``docs/vocabulary.md``: every event kind, finding kind and metric, from this module."""
    lines = [
        "# Vocabulary",
        "",
        "Generated from `ctxlab/engine/core/catalogue.py` by "
        "`python -m ctxlab.engine.core.catalogue > docs/vocabulary.md`; a test fails when the two "
        "disagree. Every page, JSON twin and CSV takes its labels, units and directions from "
        "the same table.",
        "",
        "## Event categories",
        "",
        "| category | meaning |",
        "|---|---|",
        *(f"| {name} | {meaning} |" for name, meaning in CATEGORIES.items()),
        "",
        "Compactions, restores and failures are counted by category: the metrics "
        "`compaction_count`, `firing_per_100_steps` and `thrash` count compaction events only. "
        + COMPACTION_ORDINAL
        + " "
        "*Measured in* / *limit in*: the event detail keys holding the size the strategy "
        "measured and the limit it compared it with (first present wins), as the compare "
        "page's trigger column reads them.",
        "",
        "## Event kinds",
        "",
        "| kind | category | label | meaning | older spellings | measured in | limit in |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in _EVENTS:
        old = ", ".join(f"`{a}`" for a in e.aliases)
        measured = ", ".join(f"`{k}`" for k in e.measured_keys)
        limit = ", ".join(f"`{k}`" for k in e.limit_keys)
        lines.append(
            f"| `{e.kind}` | {e.category} | {e.label} | {_cell(e.meaning)} | {old} | "
            f"{measured} | {limit} |"
        )
    lines += ["", "## Finding kinds", "", "| kind | label | meaning |", "|---|---|---|"]
    lines += [f"| `{f.kind}` | {f.label} | {_cell(f.meaning)} |" for f in _FINDINGS]
    lines += ["", "## Fact categories (survival)", "", "| key | label | meaning |", "|---|---|---|"]
    lines += [f"| `{c.key}` | {c.label} | {_cell(c.meaning)} |" for c in _FACT_CATEGORIES]
    lines += [
        "",
        "## Agreement with the original agent",
        "",
        "Where the transcript's own agent compacted, next to the replay's compactions "
        "(`engine.recorded`; the run and compare pages, `manage.py bench --only agreement`).",
        "",
        "| kind of original compaction | label | meaning |",
        "|---|---|---|",
        *(f"| `{w.key}` | {_cell(w.label)} | {_cell(w.meaning)} |" for w in _ORIGINAL_KINDS),
        "",
        "| relation | label | meaning |",
        "|---|---|---|",
        *(f"| `{w.key}` | {_cell(w.label)} | {_cell(w.meaning)} |" for w in _RELATIONS),
        "",
        "| bench line | label | meaning |",
        "|---|---|---|",
        *(f"| `{w.key}` | {_cell(w.label)} | {_cell(w.meaning)} |" for w in _AGREEMENT_MEASURES),
    ]
    lines += [
        "",
        "## Metrics",
        "",
        "“Steps in overflow (cl100k)” (`overflow_steps`), “Steps in overflow (own "
        "estimate)” (`overflow_steps_strategy`) and “Hidden overflows” (`overflow_flags`) "
        "count different things: the first two, requests the replay actually sent over the "
        "window, in the reference tokenizer's count and in the strategy's own (the count "
        "of “Peak context (own estimate)”); the third, requests the strategy believed fit "
        "but the provider's count would not.",
        "",
        "| key | label | unit | better | meaning | best value |",
        "|---|---|---|---|---|---|",
    ]
    for m in _METRICS:
        lines.append(
            f"| `{m.key}` | {_cell(m.label)} | {m.unit} | {m.better or '—'} | "
            f"{_cell(m.meaning)} | {_cell(m.best_rule)} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(vocabulary_markdown(), end="")
