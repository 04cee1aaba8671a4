"""The original session, step by step, and what its next compaction would take.

For one imported transcript (no replay): at each model call of the agent itself,

- ``zones``: what the request held, ``/context``-style, from what the transcript proves:
  the reported usage (prompt tokens) split into the fixed part the transcript does not show
  (system prompt + tools + attachments, *measured once*: the first reported usage minus the
  agent's estimate of the file's messages before it; ``stages.originals.outside_context``,
  the rule the ``claude_code`` strategy uses), instruction files (CLAUDE.md / AGENTS.md
  contents the log carries), the agent's last summary, the messages (the rest of the
  reported usage) and, beyond the request, the agent's auto-compact buffer (window -
  threshold) and what is free. A file that starts after a compaction or mid-session cannot
  tell the fixed part from earlier conversation: all of it is "not in this file", never a
  guessed system prompt. A step without reported usage is drawn from the estimate and says
  so. The zones are the same dict every replay step stores (``Zones.as_dict``), drawn by the
  one zone model of the pages (``replay_app.steps.zone_bar.zone_model``).
- ``forecast``: "if the agent compacted now": the messages its own strategy (the version
  the transcript names) would summarise, the facts and instruction sources among them by
  category (the survival machinery's at-risk set: ``extract.message_facts`` and
  ``survival.extra_facts``; ``instructions.sources``) and the turns left before its
  auto-compact threshold at the session's recent growth (``forecast.turns_to_trigger``).

``forecast_hits`` measures that last number against the agent's real compactions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.model import Conversation, Message, Role
from ..stages.originals import first_kept, outside_context, starts_after_compaction
from ..stages.own_counts import ReasoningTally
from . import instructions, survival
from .forecast import (
    HORIZON,
    Hit,
    TurnsEstimate,
    claude_code_threshold,
    oracle_turns,
    reattached,
    turns_to_trigger,
)

# Importer formats whose agent's auto-compact ctxlab models (a strategy of the same agent).
AGENT_OF_FORMAT = {
    "claude-code": "claude_code",
    "codex-rollout": "codex",
    "gemini-cli": "gemini_cli",
}
MICROCOMPACT = "microcompact"
GEMINI = "gemini_cli"
# Gemini CLI's session files record no compression: one is read from the reported usage
# (the prompt at or over the threshold, the next one smaller).
INFERRED_COMPRESSION = "compression"
RISK_EXAMPLES = 5  # facts named per category (the counts stay exact)

# The labels of the zones in the original's own terms (the zone keys are the replay's).
LABELS = {
    "unseen": "System prompt + tools (not in the transcript)",
    "instruction_files": "Instruction files",
    "summary": "Agent's summary",
    "compactable": "Messages",
    "output_reserve": "Auto-compact buffer",
}
# Gemini CLI's own words: it compresses at a fraction of the model's token limit.
GEMINI_LABELS = {**LABELS, "output_reserve": "Above the compression threshold"}
HINTS = {
    "unseen": (
        "the first reported usage minus the agent's estimate of the file's messages before "
        "it: system prompt, tool definitions, MCP servers and attachments, which the "
        "transcript does not hold; one measured figure, not split further"
    ),
    "not_in_file": (
        "the file starts after a compaction or mid-session: the reported usage holds "
        "context the file does not (earlier conversation, and the system prompt, which "
        "cannot be told apart from it)"
    ),
    "instruction_files": "CLAUDE.md / AGENTS.md / rules files the transcript carries",
    "compactable": "the rest of the reported usage: the conversation's messages",
    "output_reserve": "window minus the auto-compact threshold: the output reserve and buffer",
}
GEMINI_HINTS = {
    **HINTS,
    "output_reserve": (
        "the model's token limit minus the compression threshold (a fraction of it): Gemini "
        "CLI compresses once the last prompt reaches the threshold"
    ),
}


def labels_for(agent: str) -> tuple[dict[str, str], dict[str, str]]:
    """The zones' labels and hints in the agent's own terms."""
    return (GEMINI_LABELS, GEMINI_HINTS) if agent == GEMINI else (LABELS, HINTS)


@dataclass(frozen=True, slots=True)
class AgentRules:
    """The agent's own auto-compact geometry for this transcript."""

    agent: str  # a strategy name ("claude_code", "codex"), "" when not modelled
    version: str
    rules: str  # the version range whose rules apply
    window: int
    threshold: int | None
    why: str  # where the window and threshold come from

    def as_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "version": self.version,
            "rules": self.rules,
            "window": self.window,
            "threshold": self.threshold,
            "why": self.why,
            "event": self.event,
        }

    @property
    def event(self) -> str:
        """What the agent calls its own compaction."""
        return "compression" if self.agent == GEMINI else "auto-compact"


def agent_rules(conversation: Conversation, fmt: str, version: str = "") -> AgentRules:
    """The auto-compact rules the agent that wrote ``conversation`` ran (``version``: the
    CLI version in force, default the transcript's)."""
    agent = AGENT_OF_FORMAT.get(fmt, "")
    meta = dict(conversation.metadata)
    if agent == "claude_code":
        from ..strategies.claude_code import DEFAULT_WINDOW, ClaudeCodeStrategy

        strategy = ClaudeCodeStrategy()
        found = version or meta.get("version") or meta.get("first_version", "")
        rules, used, reason = strategy.resolve_rules(found, f"the transcript's version {found}")
        shown, shown_why = strategy.window_shown(conversation, rules)
        window = shown or DEFAULT_WINDOW
        threshold = claude_code_threshold(window, rules.output_reserve, rules.buffer)
        why = (
            f"Claude Code {used} ({reason}; rules {rules.label}): {window:,} window "
            f"- {rules.output_reserve:,} output reserve - {rules.buffer:,} buffer"
            + (f"; {shown_why}" if shown_why else "")
        )
        return AgentRules(agent, used, rules.label, window, threshold, why)
    if agent == "codex":
        from ..strategies import _codex_versions as cv
        from ..strategies.codex import DEFAULT_WINDOW as CODEX_WINDOW
        from ..strategies.codex import CodexStrategy, rollout_rules

        found = version or meta.get("cli_version", "")
        crules, rules_why = rollout_rules(conversation, found)
        reported = int(meta.get("model_context_window", "0") or 0)
        window = cv.context_window_from_reported(reported) if reported else CODEX_WINDOW
        if crules is cv.LEGACY:
            limit = CodexStrategy().auto_compact_limit(window)
        else:
            limit = cv.auto_compact_limit(window, 0, crules.auto_compact_percent)
        source = f"the rollout's model_context_window {reported:,}" if reported else "default"
        why = f"Codex {found or '?'} ({rules_why}): {window:,} window ({source}), limit {limit:,}"
        return AgentRules(agent, found, crules.name, window, limit, why)
    if agent == GEMINI:
        from ..strategies import _gemini_cli_rules as gr
        from ..strategies.gemini_cli import GeminiCliStrategy

        limit = int(GeminiCliStrategy().params["token_limit"])
        started = meta.get("startTime", "")
        fraction, source = gr.default_threshold(started)
        threshold = gr.threshold_tokens(fraction, limit)
        when = f"a session started {started[:10]}" if started else "no start date: today's"
        why = (
            f"Gemini CLI (its session file names no version; {when} default, {source}): "
            f"compresses when the last prompt reaches {fraction:g} of the {limit:,}-token "
            f"limit, {threshold:,}"
        )
        return AgentRules(agent, "", f"compressionThreshold {fraction:g}", limit, threshold, why)
    return AgentRules("", "", "", 0, None, "ctxlab does not model this agent's auto-compact")


def _counter(agent: str) -> Any:
    """The agent's own message estimator (Claude Code: length / 4 per block)."""
    if agent == "codex":
        from ..strategies.codex import CodexStrategy

        return CodexStrategy().count_message
    if agent == GEMINI:
        from ..strategies.gemini_cli import GeminiCliStrategy

        return GeminiCliStrategy().count_message
    from ..strategies.claude_code import ClaudeCodeStrategy

    return ClaudeCodeStrategy().count_message


# --- the agent's own count ---------------------------------------------------------------


class _Counts:
    """The count the agent compares with its threshold right after each of its responses,
    by the rule its replay strategy uses (imported, never restated here):

    - Claude Code: ``_claude_code_versions.count_after_response`` (the usage, the final
      output the file does not hold, in 2.1.64 and 2.1.69+ the response's own later lines);
    - Codex 0.118+: the usage (``total_token_usage``) plus the encrypted reasoning of the
      replies before the turn's user message since the last compaction
      (``codex.reasoning_tokens`` at the version's own factor: the count's next check, mid
      turn or before the next user message, adds exactly those); legacy rollouts: the
      usage minus the reasoning (``tokens_in_context_window``);
    - Gemini CLI: the last prompt's reported tokens.
    """

    def __init__(self, now: SessionNow) -> None:
        self.now = now
        self.agent = now.rules.agent
        # Codex: the reasoning of the replies before the turn's user message, and since
        # (the strategy's own tally: ``stages.own_counts.ReasoningTally``)
        self.reasoning = ReasoningTally()
        self._claude: dict[str, Any] = {}  # version -> the claude_code version rules

    def reset(self) -> None:
        """An agent compaction: the earlier replies' reasoning is gone."""
        self.reasoning.reset()

    def after(self, message: Message, own: int, version: str) -> int | None:
        """The count right after ``message`` (an assistant response; ``own``: the agent's
        estimate of it), None without reported usage. Call for every message in order
        (``user`` for the others)."""
        usage = message.usage
        if self.agent == GEMINI:
            return usage.prompt_tokens if usage is not None and usage.prompt_tokens else None
        if usage is None or not usage.context_tokens:
            self._reply(message, version)
            return None
        if self.agent == "codex":
            rules = self._codex(version)
            self._reply(message, version)
            if rules.name == "legacy":
                return usage.context_tokens - usage.reasoning
            return usage.context_tokens + self.reasoning.settled
        from ..strategies import _claude_code_versions as cv
        from ..strategies.claude_code import later_tokens

        rules = self._claude.get(version)
        if rules is None:
            rules = self._claude[version] = cv.rules_for(self.now.rules_for(version).version)
        later = later_tokens(message) if rules.later_blocks else 0
        return cv.count_after_response(rules, usage.context_tokens, usage.output, own, later)

    def user(self, message: Message) -> None:
        """A message that is not a response (Codex: a real user message settles the
        reasoning of the replies before it)."""
        if self.agent != "codex":
            return
        from ..strategies.codex import is_real_user_message

        if is_real_user_message(message):
            self.reasoning.user()

    def _codex(self, version: str) -> Any:
        from ..strategies import _codex_versions as cv

        return cv.BY_NAME[self.now.rules_for(version).rules]

    def _reply(self, message: Message, version: str) -> None:
        if self.agent != "codex" or "replacement_history" in message.flags:
            return  # (the original's replacement history: its reasoning is not counted)
        from ..strategies.codex import reasoning_tokens

        self.reasoning.reply(reasoning_tokens(message, self._codex(version)))


# --- steps ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Boundary:
    """One of the agent's own compactions, as the page marks it."""

    before_index: int
    kind: str
    trigger: str
    pre_tokens: int | None
    version: str
    inferred: bool = False  # not in the file: read from the reported usage (Gemini CLI)
    # a partial compaction (Claude Code ``preservedSegment``): the first message it kept,
    # written before the boundary (``stages.originals.first_kept``); None: it kept none
    kept_from: int | None = None


@dataclass(frozen=True, slots=True)
class OriginalStep:
    """One model call of the agent itself."""

    step: int  # 0-based among the file's calls
    message: int  # the assistant message (its response)
    span_start: int  # first message since the agent's last compaction
    reported: int | None  # the request's prompt tokens as the provider reported them
    count: int | None  # the agent's count after it (``_Counts``), the forecast's input
    zones: dict[str, Any]
    estimated: bool  # no reported usage at this step: the zones are the estimate
    compacted_before: Boundary | None  # an agent compaction right before this call
    version: str
    # first message of the agent's history when it keeps part of it at a compaction
    # (Gemini CLI keeps the newest 30 %); else span_start
    history_start: int = -1

    def tokens(self) -> dict[str, int | None]:
        return {"strategy": self.reported, "reference": None, "reported": self.reported}


@dataclass(slots=True)
class SessionNow:
    """Every call of the original, with the agent's rules."""

    conversation: Conversation
    fmt: str
    rules: AgentRules
    steps: list[OriginalStep] = field(default_factory=list)
    boundaries: list[Boundary] = field(default_factory=list)
    overhead_note: str = ""
    _by_version: dict[str, AgentRules] = field(default_factory=dict)

    def rules_for(self, version: str) -> AgentRules:
        """The rules of the CLI ``version`` ("" or the transcript's: ``rules``), once each."""
        if not version or version == self.rules.version:
            return self.rules
        if version not in self._by_version:
            self._by_version[version] = agent_rules(self.conversation, self.fmt, version)
        return self._by_version[version]

    def rules_at(self, step: OriginalStep) -> AgentRules:
        return self.rules_for(step.version)

    def counts_before(self, step: OriginalStep) -> list[int]:
        """The counts since the agent's last compaction, up to this step."""
        out: list[int] = []
        for s in reversed(self.steps[: step.step + 1]):  # back to the compaction only
            if s.span_start != step.span_start:
                break
            if s.count is not None:
                out.append(s.count)
        return out[::-1]


def _boundaries(conversation: Conversation, rules: AgentRules) -> list[Boundary]:
    if rules.agent == GEMINI and not conversation.compactions and rules.threshold:
        return inferred_compressions(conversation.messages, rules.threshold)
    return [
        Boundary(
            c.before_index,
            c.kind,
            c.trigger,
            c.pre_tokens,
            c.agent_version,
            kept_from=first_kept(c),
        )  # fmt: skip
        for c in sorted(conversation.compactions, key=lambda c: c.before_index)
    ]


def inferred_compressions(messages: Sequence[Message], threshold: int) -> list[Boundary]:
    """Gemini CLI's automatic compressions, which its session files do not record: before
    a request whose reported prompt is smaller than the previous one's when that one was at
    or over ``threshold`` (Gemini CLI compares the last prompt's count with it before each
    request; what it compresses is the history before the pending input, the messages after
    that previous response)."""
    out: list[Boundary] = []
    previous: tuple[int, int] | None = None  # (message, prompt tokens) of the last response
    for index, message in enumerate(messages):
        usage = message.usage
        if message.role is not Role.ASSISTANT or usage is None or not usage.prompt_tokens:
            continue
        prompt = usage.prompt_tokens
        if previous is not None and previous[1] >= threshold and prompt < previous[1]:
            out.append(
                Boundary(previous[0] + 1, INFERRED_COMPRESSION, "auto", previous[1], "", True)
            )
        previous = (index, prompt)
    return out


def gemini_cut(messages: Sequence[Message], start: int, end: int, summarised: bool) -> int:
    """Where Gemini CLI's compression would cut the history ``messages[start:end]``: the
    first message it keeps (``end``: it takes all), by its own split
    (``findCompressSplitPoint`` at 1 - ``preserve_threshold``, over each ``Content``'s JSON
    length, before a user turn that is not a tool result). An earlier compression's snapshot
    pair is in the history but its text is not in the file: counted empty. Tool outputs over
    the 50k-token budget, cut to previews before the split, are counted whole."""
    from ..strategies import _gemini_cli_rules as gr
    from ..strategies.gemini_cli import GeminiCliStrategy

    items: list[gr.Item] = []
    if summarised:
        items += [gr.Item("user", ({"text": ""},)), gr.Item("model", ({"text": gr.ACK},))]
    for i in range(start, end):
        if messages[i].role is not Role.SYSTEM:
            items.append(gr.Item(gr.gemini_role(messages[i]), tuple(gr.parts_of(messages[i])), i))
    if not any(c.index >= 0 for c in items):
        return end
    preserve = float(GeminiCliStrategy().params["preserve_threshold"])
    split = gr.find_compress_split_point(items, 1 - preserve)
    kept = [c.index for c in items[split:] if c.index >= 0]
    return kept[0] if kept else end


def session_now(conversation: Conversation, fmt: str) -> SessionNow:
    """The original step by step (module docstring)."""
    rules = agent_rules(conversation, fmt)
    out = SessionNow(conversation, fmt, rules, boundaries=_boundaries(conversation, rules))
    gemini = rules.agent == GEMINI
    messages = conversation.messages
    count_message = _counter(rules.agent or "claude_code")
    sizes = [0 if m.role is Role.SYSTEM else int(count_message(m)) for m in messages]
    sources = instructions.sources(messages)
    rules_at = {s.message for s in sources if s.kind == "project_rules"}
    # running sums, so a step's span is two lookups (index i: the messages before i)
    totals, summaries, rule_sizes = [0], [0], [0]
    for i, m in enumerate(messages):
        totals.append(totals[-1] + sizes[i])
        summaries.append(summaries[-1] + (sizes[i] if "compact_summary" in m.flags else 0))
        rule_sizes.append(rule_sizes[-1] + (sizes[i] if i in rules_at else 0))
    by_start = {b.before_index: b for b in out.boundaries}
    continued = starts_after_compaction(conversation)
    overhead: int | None = None
    not_in_file = 0
    start = 0
    version = ""
    pending: Boundary | None = None
    seen = 0  # estimate of the file's messages before the first reported call
    reset_seen = False
    history = 0  # Gemini CLI: the first message of its history
    snapshot = False  # ... and whether it holds an earlier compression's snapshot
    counts = _Counts(out)
    for index, message in enumerate(messages):
        boundary = by_start.get(index)
        if boundary is not None:
            if gemini:
                history, snapshot = gemini_cut(messages, history, index, snapshot), True
            # the context since: what it kept (before the boundary), its summary, later lines
            start = index if boundary.kept_from is None else boundary.kept_from
            pending = boundary
            version = boundary.version or version
            if boundary.kind != MICROCOMPACT:
                reset_seen = True  # earlier conversation is gone from the context
                counts.reset()
        if message.role is not Role.ASSISTANT:
            seen += sizes[index]
            counts.user(message)
            continue
        usage = message.usage
        reported = usage.prompt_tokens if usage is not None and usage.prompt_tokens else None
        if reported is not None and overhead is None:
            split = outside_context(reported, seen, continued)
            overhead, not_in_file = split.overhead, split.not_in_file
            if split.reason:
                out.overhead_note = split.reason
        summary = summaries[index] - summaries[start]
        rule_files = rule_sizes[index] - rule_sizes[start]
        estimate = totals[index] - totals[start]
        fixed = overhead or 0
        own = max(estimate - summary - rule_files, 0)  # the agent's estimate of the rest
        if reported is not None:
            # context not in the file, at most what the reported usage leaves beyond the
            # file's own messages (a microcompaction clears some of it too)
            known = fixed + summary + rule_files
            outside = 0 if reset_seen else min(not_in_file, max(reported - known - own, 0))
            rest = max(reported - known - outside, 0)
        else:
            outside, rest = (0 if reset_seen else not_in_file), own
        step_rules = out.rules_for(version)
        threshold = step_rules.threshold
        zones: dict[str, Any] = {
            "system": 0,
            "tools": 0,
            "unseen": fixed,
            "instruction_files": rule_files,
            "summary": summary,
            "compactable": rest,
            "reserved_recent": 0,
            "output_reserve": (step_rules.window - threshold) if threshold else 0,
            "free": 0,
            "window": step_rules.window,
            "threshold": threshold,
        }
        if outside:
            zones["not_in_file"] = outside
        # the count the agent compares with its threshold, by its strategy's rule
        count = counts.after(message, sizes[index], version)
        out.steps.append(
            OriginalStep(
                step=len(out.steps),
                message=index,
                span_start=start,
                reported=reported,
                count=count,
                zones=zones,
                estimated=reported is None,
                compacted_before=pending,
                version=version or out.rules.version,
                history_start=history if gemini else start,
            )
        )
        pending = None
        seen += sizes[index]
    return out


# --- the forecast -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Forecast:
    """If the agent compacted right after ``step``."""

    step: int
    span: tuple[int, int]  # source messages [start, end) its compaction would take
    summarised: int  # how many messages it would summarise
    kept: tuple[int, ...]  # messages of the span the agent keeps (Codex: user messages)
    how: str  # what the agent's compaction does, in words
    facts: dict[str, int]  # category -> facts at risk
    examples: dict[str, list[str]]
    instructions: list[dict[str, Any]]  # the instruction sources in what would go
    turns: TurnsEstimate

    @property
    def instructions_at_risk(self) -> list[dict[str, Any]]:
        """Those the agent does not put back by itself after compacting."""
        return [i for i in self.instructions if not i["reattached"]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "span": list(self.span),
            "summarised": self.summarised,
            "kept": list(self.kept),
            "how": self.how,
            "facts_at_risk": self.facts,
            "fact_examples": self.examples,
            "instructions_in_span": self.instructions,
            "instructions_at_risk_count": len(self.instructions_at_risk),
            "turns_to_auto_compact": self.turns.as_dict(),
        }


HOW = {
    "claude_code": (
        "auto-compact summarises every message since its last compaction into one summary "
        "message (compactConversation); files it re-reads afterwards are not modelled"
    ),
    "codex": (
        "compaction replaces the history with a summary and keeps the user's own messages "
        "(collect_user_messages, up to 20,000 tokens)"
    ),
    GEMINI: (
        "compression replaces the oldest 70 % of the history (by JSON characters, cut before "
        "a user turn) with a <state_snapshot> and keeps the newest 30 % "
        "(ChatCompressionService); tool outputs past a 50k-token budget are first cut to "
        "previews, not modelled here"
    ),
}


def _kept(agent: str, messages: Sequence[Message], span: range) -> tuple[int, ...]:
    if agent != "codex":
        return ()
    from ..strategies.codex import is_real_user_message

    return tuple(i for i in span if is_real_user_message(messages[i]))


def forecast(now: SessionNow, step: OriginalStep) -> Forecast:
    """What the agent's own compaction would take right after ``step`` (module docstring)."""
    messages = now.conversation.messages
    rules = now.rules_at(step)
    if rules.agent == GEMINI:
        # the history before the next request's input: its oldest part goes
        snapshot = any(b.before_index <= step.message for b in now.boundaries)
        start = step.history_start
        span = range(start, gemini_cut(messages, start, step.message + 1, snapshot))
    else:
        later = [s.message for s in now.steps if s.step > step.step]
        end = later[0] if later else len(messages)
        nxt = [b.before_index for b in now.boundaries if step.message < b.before_index <= end]
        end = min([end, *nxt])
        span = range(step.span_start, end)
    kept = _kept(rules.agent, messages, span)
    going = [i for i in span if i not in set(kept) and messages[i].role is not Role.SYSTEM]
    risk = survival.facts_at_risk(messages, going)
    facts: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    for kind, value in sorted(risk):
        facts[kind] = facts.get(kind, 0) + 1
        shown = examples.setdefault(kind, [])
        if len(shown) < RISK_EXAMPLES:
            shown.append(value)
    going_set = set(going)
    at_risk = [
        {
            "kind": s.kind,
            "label": s.label,
            "message": s.message,
            "reattached": reattached(rules.agent, s.kind),
        }
        for s in instructions.sources(messages)
        if s.message in going_set
    ]
    turns = turns_to_trigger(now.counts_before(step), rules.threshold)
    return Forecast(
        step=step.step,
        span=(span.start, span.stop),
        summarised=len(going),
        kept=kept,
        how=HOW.get(rules.agent, "ctxlab does not model this agent's compaction"),
        facts={c: facts[c] for c in survival.CATEGORIES if c in facts},
        examples={c: examples[c] for c in survival.CATEGORIES if c in examples},
        instructions=at_risk,
        turns=turns,
    )


# --- the measurement ----------------------------------------------------------------------


def forecast_hits(
    conversation: Conversation, fmt: str, name: str = "", horizon: int = HORIZON
) -> list[Hit]:
    """For each automatic compaction of the agent with at least ``horizon`` calls before
    it since the previous one: the turns ``turns_to_trigger`` predicted ``horizon`` calls
    earlier, against ``horizon`` (the calls that really came before it)."""
    now = session_now(conversation, fmt)
    if now.rules.threshold is None:
        return []
    hits = []
    for boundary in now.boundaries:
        if boundary.kind == MICROCOMPACT or boundary.trigger != "auto":
            continue
        before = [
            s
            for s in now.steps
            if s.message < boundary.before_index and s.count is not None
            and not any(
                s.message < b.before_index < boundary.before_index for b in now.boundaries
            )
            and s.span_start <= s.message
        ]  # fmt: skip
        before = [s for s in before if s.span_start == before[-1].span_start] if before else []
        if len(before) < horizon + 1:
            continue
        at = before[-1 - horizon]
        threshold = now.rules_at(at).threshold
        estimate = turns_to_trigger(now.counts_before(at), threshold)
        span = [s.count for s in before if s.count is not None]
        oracle = oracle_turns(span, len(span) - 1 - horizon, threshold) if threshold else None
        hits.append(
            Hit(
                name,
                boundary.before_index,
                estimate.turns,
                horizon,
                estimate.low,
                estimate.high,
                oracle,
            )  # fmt: skip
        )
    return hits


def forecast_turns(now: SessionNow, step: OriginalStep) -> int | None:
    return turns_to_trigger(now.counts_before(step), now.rules_at(step).threshold).turns
