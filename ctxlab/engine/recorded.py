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
from typing import Any

from .catalogue import is_compaction
from .model import Conversation, OriginalCompaction
from .records import ReplayResult
from .summarizers import (
    SUMMARIZERS,
    OfflineSummarizer,
    SummaryRequest,
    SummaryResponse,
    SummaryUsage,
    approx_tokens,
)

# Wrappers the originals put around the model's summary in the message they keep
# (Claude Code getCompactUserSummaryMessage 2.1.88 / 2.0; Codex SUMMARY_PREFIX + "\n").
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
    text = conversation.messages[index].text
    for preamble in _PREAMBLES:
        if text.startswith(preamble):
            text = text[len(preamble) :]
            cut = min((k for k in (text.find(t) for t in _TAILS) if k >= 0), default=-1)
            if cut >= 0:
                text = text[:cut]
            break
    else:
        from .strategies._codex_rules import SUMMARY_PREFIX

        if text.startswith(SUMMARY_PREFIX + "\n"):
            text = text[len(SUMMARY_PREFIX) + 1 :]
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


SUMMARIZERS["recorded"] = RecordedSummarizer


@dataclass(frozen=True, slots=True)
class Agreement:
    """One original compaction next to the replay's nearest compaction."""

    original_kind: str
    original_step: int | None  # the replay step whose request the boundary precedes
    original_tokens: int | None  # the original's own count before compacting (preTokens)
    replay_step: int | None
    replay_tokens: int | None  # the replay's count before its compaction
    agree: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "original_kind": self.original_kind,
            "original_step": self.original_step,
            "original_tokens": self.original_tokens,
            "replay_step": self.replay_step,
            "replay_tokens": self.replay_tokens,
            "step_difference": (
                None
                if self.original_step is None or self.replay_step is None
                else self.replay_step - self.original_step
            ),
            "agree": self.agree,
            "relation": self.relation(),
        }

    def relation(self) -> str:
        """The replay's trigger against the original's, in words."""
        if self.original_step is None:  # the replay may well have compacted before it
            return "after the last replayed request: no step to compare"
        if self.replay_step is None:
            return "the replay did not compact"
        diff = self.replay_step - self.original_step
        if diff == 0:
            return "same step"
        steps = f"{abs(diff)} step{'s' if abs(diff) != 1 else ''}"
        return f"replay {steps} {'earlier' if diff < 0 else 'later'}"


def trigger_agreement(
    compactions: Sequence[OriginalCompaction],
    step_sources: Sequence[int],
    replay_compactions: Iterable[tuple[int, int]],
) -> list[Agreement]:
    """Each original compaction against the replay's compactions (``(step, tokens
    before)``, one per compacting event): the original's step is the first replay step at
    or after its boundary; the replay compaction nearest to it is paired (each once) and
    they agree when the steps are equal."""
    replay = sorted(dict(replay_compactions).items())
    free = list(range(len(replay)))
    rows: list[Agreement] = []
    for c in compactions:
        original_step = next(
            (s for s, src in enumerate(step_sources) if src >= c.before_index), None
        )
        pick = None
        if original_step is not None and free:
            pick = min(free, key=lambda k: (abs(replay[k][0] - original_step), k))
            free.remove(pick)
        step, tokens = replay[pick] if pick is not None else (None, None)
        rows.append(
            Agreement(
                original_kind=c.kind,
                original_step=original_step,
                original_tokens=c.pre_tokens,
                replay_step=step,
                replay_tokens=tokens,
                agree=step is not None and step == original_step,
            )
        )
    return rows


def agreement_rows(conversation: Conversation, result: ReplayResult) -> list[dict[str, Any]]:
    """``trigger_agreement`` of a finished replay, as stored beside its metrics
    (``original_compactions``); [] when the transcript holds no original compaction."""
    if not conversation.compactions:
        return []
    replay = [
        (e.step, e.tokens_before) for e in result.events if is_compaction(e.kind) and e.changes
    ]
    steps = [s.source_index for s in result.steps]
    return [row.as_dict() for row in trigger_agreement(conversation.compactions, steps, replay)]
