"""The "recorded" summariser: the original agent's own compaction summaries, reused.

When the imported transcript carries the original agent's compactions (Claude Code
``compact_boundary`` followed by its ``isCompactSummary`` message, Codex ``compacted``
records, ... as importers list them in ``Conversation.compactions``), a replay can answer
its summary requests with those real summaries instead of a stand-in: a request at source
message ``i`` takes the not-yet-used original compaction whose boundary is nearest to
``i`` (each is used once). A request with none left, or made outside a replay, falls back
to the offline summariser. ``trigger_agreement`` lines the replay's compactions up with the
original's (step and tokens) for the run page.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..core.catalogue import canonical_event, is_compaction, original_kind_label, relation_label
from ..core.model import BlockKind, Conversation, OriginalCompaction, Role
from ..core.records import ReplayResult
from ..core.summary_request import SummaryRequest, SummaryResponse, SummaryUsage, approx_tokens
from .offline import OfflineSummarizer

# Wrappers the originals put around the model's summary in the message they keep
# (Claude Code getCompactUserSummaryMessage 2.1.88 / 2.0; Codex SUMMARY_PREFIX + "\n";
# pi COMPACTION_SUMMARY_PREFIX / _SUFFIX, below).
_PREAMBLES = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n",
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n",
)
_TAILS = (
    "\n\nIf you need specific details from before compaction",
    "\nContinue the conversation from where it left off",
    "\nPlease continue the conversation from where we left it off",
)


def summary_text(conversation: Conversation, compaction: OriginalCompaction) -> str:
    """The model's summary inside the message the original kept after compacting ("" when
    the transcript has no summary message for it)."""
    index = compaction.summary_index
    if index is None or not 0 <= index < len(conversation.messages):
        return ""
    message = conversation.messages[index]
    text = message.text
    if message.role is Role.ASSISTANT:  # a model's summary (OpenCode): not its reasoning
        text = "\n".join(
            b.text for b in message.blocks if b.kind is not BlockKind.THINKING and b.text
        )
    for preamble in _PREAMBLES:
        if text.startswith(preamble):
            text = text[len(preamble) :]
            cut = min((k for k in (text.find(t) for t in _TAILS) if k >= 0), default=-1)
            if cut >= 0:
                text = text[:cut]
            break
    else:
        from ..strategies._codex_rules import SUMMARY_PREFIX
        from ..strategies._pi_rules import COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX

        if text.startswith(SUMMARY_PREFIX + "\n"):
            text = text[len(SUMMARY_PREFIX) + 1 :]
        elif text.startswith(COMPACTION_SUMMARY_PREFIX) and text.endswith(
            COMPACTION_SUMMARY_SUFFIX
        ):  # pi (messages.ts): the summary is returned byte for byte, not stripped
            return text[len(COMPACTION_SUMMARY_PREFIX) : -len(COMPACTION_SUMMARY_SUFFIX)]
    return text.strip()


class RecordedSummarizer:
    """Answers with the original's own summaries (see the module docstring)."""

    name = "recorded"

    def __init__(self) -> None:
        self.fallback = OfflineSummarizer()
        self._used: set[int] = set()  # indexes into conversation.compactions
        self._conversation_id: int | None = None
        self._last = -1  # source index of the last request
        self.answers: list[dict[str, Any]] = []  # what each request was answered with

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        """The request of a replay of ``request.conversation`` at source message
        ``request.source_index``; outside a replay (no position) there is no boundary to
        match, and the offline stand-in answers."""
        conversation, source_index = request.conversation, request.source_index
        if conversation is None or source_index is None:
            return self.fallback.summarize(request)
        # A replay asks in source order: another conversation, or a position before the
        # last one, is a new replay, with every original summary unused again.
        if self._conversation_id != id(conversation) or source_index < self._last:
            self._conversation_id, self._used, self.answers = id(conversation), set(), []
        self._last = source_index
        candidates = [
            (abs(c.before_index - source_index), k)
            for k, c in enumerate(conversation.compactions)
            if k not in self._used and summary_text(conversation, c)
        ]
        if not candidates:
            self.answers.append({"source_index": source_index, "recorded": None})
            return self.fallback.summarize(request)
        _, k = min(candidates)
        self._used.add(k)
        text = summary_text(conversation, conversation.compactions[k])
        self.answers.append({"source_index": source_index, "recorded": k})
        usage = SummaryUsage(approx_tokens(request.input_text()), approx_tokens(text))
        return SummaryResponse(text=text, usage=usage, model=f"recorded:{k}")


Family = Literal["whole", "micro"]

# The replay events an original compaction is paired with, by family: a whole-context
# compaction (summary, condensation, truncation of the conversation) pairs with events that
# replace or drop history; a microcompaction (tool results cleared in place) with events that
# clear tool results. Cuts of one result as it arrives (truncate, offload) and request-view
# trims are neither: the originals log no boundary for them.
WHOLE_EVENTS = frozenset({"compact", "summarise", "drop", "force_compression"})
MICRO_EVENTS = frozenset({"clear_tool_uses", "prune", "microcompact"})


def original_family(kind: str) -> Family:
    return "micro" if "microcompact" in kind else "whole"


def event_family(kind: str) -> Family | None:
    kind = canonical_event(kind)
    if kind in MICRO_EVENTS or "microcompact" in kind:
        return "micro"
    return "whole" if kind in WHOLE_EVENTS else None


def original_kind_key(compaction: OriginalCompaction, *, readable: bool = True) -> str:
    """The catalogue key (``catalogue.ORIGINAL_KINDS``) of an original compaction."""
    kind = compaction.kind
    if original_family(kind) == "micro":
        return "microcompact"
    if kind == "compact_boundary":
        return "manual" if compaction.trigger == "manual" else "auto"
    if kind == "compacted":
        return "compacted" if readable else "compacted_encrypted"
    return kind


@dataclass(frozen=True, slots=True)
class ReplayCompaction:
    """One compacting event of a replay: its step, the strategy's count before it, its kind
    and detail (``decided_by`` when the original's act settled an uncertain count;
    ``rules_version``/``rules_reason`` when the strategy says which agent
    version's rules ran)."""

    step: int
    tokens: int
    kind: str = "compact"
    detail: tuple[tuple[str, str], ...] = ()


def in_file(original_step: int | None) -> bool:
    """The original compacted after at least one request of this file (not before its
    first step: a file that starts after a compaction)."""
    return original_step is not None and original_step > 0


def steps_apart(original_step: int | None, replay_step: int | None) -> int | None:
    """How many steps after the original's the replay compacted (negative: before)."""
    if original_step is None or replay_step is None:
        return None
    return replay_step - original_step


@dataclass(frozen=True, slots=True)
class Agreement:
    """One original compaction next to the replay's nearest compaction of its family."""

    original_kind: str
    original_step: int | None  # the replay step whose request the boundary precedes
    original_tokens: int | None  # the original's own count before compacting (preTokens)
    replay_step: int | None
    replay_tokens: int | None  # the replay's count before its compaction
    agree: bool
    kind_key: str = ""  # catalogue.ORIGINAL_KINDS
    trigger: str = ""  # auto / manual where the original says
    instructions: str = ""  # the user's focus text of a manual /compact
    cleared: int | None = None  # microcompact: how many tool results it cleared
    tokens_saved: int | None = None
    agent_version: str = ""  # the agent version that wrote the compaction
    replay_kind: str = ""
    rules_version: str = ""  # the agent version whose rules the replay's compaction ran
    rules_reason: str = ""
    # Why the replay's paired compaction followed the original's (the strategy's
    # ``decided_by``: the count the transcript leaves open reached the threshold only by
    # what the file cannot show); "" when the replay's own count decided.
    decided_by: str = ""

    @property
    def in_file(self) -> bool:
        return in_file(self.original_step)

    @property
    def step_difference(self) -> int | None:
        return steps_apart(self.original_step, self.replay_step)

    @property
    def relation_key(self) -> str:
        """A key of ``catalogue.RELATIONS``."""
        diff = self.step_difference
        if self.original_step is None:  # the replay may well have compacted before it
            return "after_last_step"
        if diff is None:
            return "not_reproduced"
        return "same_step" if diff == 0 else "earlier" if diff < 0 else "later"

    def relation(self) -> str:
        """The replay's trigger against the original's, in the catalogue's words."""
        return relation_label(self.relation_key, self.step_difference)

    def as_dict(self) -> dict[str, Any]:
        return {
            "original_kind": self.original_kind,
            "kind_key": self.kind_key,
            "kind_label": original_kind_label(self.kind_key),
            "trigger": self.trigger,
            "instructions": self.instructions,
            "cleared": self.cleared,
            "tokens_saved": self.tokens_saved,
            "agent_version": self.agent_version,
            "original_step": self.original_step,
            "original_tokens": self.original_tokens,
            "replay_step": self.replay_step,
            "replay_tokens": self.replay_tokens,
            "replay_kind": self.replay_kind,
            "rules_version": self.rules_version,
            "rules_reason": self.rules_reason,
            "decided_by": self.decided_by,
            "step_difference": self.step_difference,
            "agree": self.agree,
            "relation_key": self.relation_key,
            "relation": self.relation(),
        }


def _replay(item: ReplayCompaction | tuple[int, int]) -> ReplayCompaction:
    return item if isinstance(item, ReplayCompaction) else ReplayCompaction(*item)


def trigger_agreement(
    compactions: Sequence[OriginalCompaction],
    step_sources: Sequence[int],
    replay_compactions: Iterable[ReplayCompaction | tuple[int, int]],
    *,
    readable: Sequence[bool] = (),
    version: str = "",
) -> list[Agreement]:
    """Each original compaction against the replay's compactions (``ReplayCompaction``s or
    ``(step, tokens before)`` pairs, which are whole-context): the original's step is the
    first replay step at or after its boundary; the replay compaction of the same family
    (``original_family``/``event_family``) nearest to it is paired (each once, the first of
    a step) and they agree when the steps are equal. ``readable[k]``: whether original
    ``k`` left a summary one can read; ``version``: the agent version when a compaction
    does not say its own."""
    by_family: dict[Family, dict[int, ReplayCompaction]] = {"whole": {}, "micro": {}}
    for item in map(_replay, replay_compactions):
        family = event_family(item.kind)
        if family is not None:
            by_family[family].setdefault(item.step, item)
    free = {f: sorted(steps.values(), key=lambda r: r.step) for f, steps in by_family.items()}
    rows: list[Agreement] = []
    for k, c in enumerate(compactions):
        original_step = next(
            (s for s, src in enumerate(step_sources) if src >= c.before_index), None
        )
        pool = free[original_family(c.kind)]
        pick = None
        if original_step is not None and pool:
            pick = min(pool, key=lambda r: (abs(r.step - original_step), r.step))
            pool.remove(pick)
        detail = dict(pick.detail) if pick is not None else {}
        micro = original_family(c.kind) == "micro"
        rows.append(
            Agreement(
                original_kind=c.kind,
                original_step=original_step,
                original_tokens=c.pre_tokens,
                replay_step=pick.step if pick else None,
                replay_tokens=pick.tokens if pick else None,
                agree=pick is not None and pick.step == original_step,
                kind_key=original_kind_key(c, readable=readable[k] if k < len(readable) else True),
                trigger=c.trigger,
                instructions=c.instructions,
                cleared=len(c.cleared_tool_ids) if micro and c.cleared_tool_ids else None,
                tokens_saved=c.tokens_saved,
                agent_version=c.agent_version or version,
                replay_kind=pick.kind if pick else "",
                rules_version=detail.get("rules_version", ""),
                rules_reason=detail.get("rules_reason", ""),
                decided_by=detail.get("decided_by", ""),
            )
        )
    return rows


def conversation_version(conversation: Conversation) -> str:
    """The agent version the transcript names (Claude Code ``version``, Codex
    ``cli_version``, OpenCode ``opencode_version``), "" when it names none."""
    meta = dict(conversation.metadata)
    return meta.get("version") or meta.get("cli_version") or meta.get("opencode_version") or ""


def replay_compactions(result: ReplayResult) -> list[ReplayCompaction]:
    """The replay's compacting events (those that changed the context)."""
    return [
        ReplayCompaction(
            e.step,
            e.tokens_before,
            e.kind,
            tuple(
                (key, str(e.detail[key]))
                for key in ("rules_version", "rules_reason", "decided_by")
                if e.detail.get(key) not in (None, "")
            ),
        )
        for e in result.events
        if is_compaction(e.kind) and e.changes
    ]


def agreements(conversation: Conversation, result: ReplayResult) -> list[Agreement]:
    """``trigger_agreement`` of a finished replay of ``conversation``."""
    return trigger_agreement(
        conversation.compactions,
        [s.source_index for s in result.steps],
        replay_compactions(result),
        readable=[bool(summary_text(conversation, c)) for c in conversation.compactions],
        version=conversation_version(conversation),
    )


def agreement_rows(conversation: Conversation, result: ReplayResult) -> list[dict[str, Any]]:
    """``agreements`` as stored beside a run's metrics (``original_compactions``); [] when
    the transcript holds no original compaction."""
    if not conversation.compactions:
        return []
    return [row.as_dict() for row in agreements(conversation, result)]
