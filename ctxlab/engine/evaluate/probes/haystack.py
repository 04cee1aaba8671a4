"""``probe_scoring.score_text`` over many contexts of one transcript, each message once.

The contexts a shared probe set is scored against (``shared_probes``) are the requests of
several runs at many points: mostly the same messages again and again, and on a long
transcript megabytes each. ``score_text`` normalises the whole joined context for every
probe; ``ContextScorer`` normalises each distinct part (a message version, a summary)
once, keyed by the object itself, and gives the same scores:

- ``normalise`` works line by line or character by character (NFKC, line-number prefixes,
  lower case, quotes, whitespace), so the normalised join of the parts is the join of
  the normalised parts with one space, empty ones left out; line-number prefixes are
  dropped from every part when any part holds a ``→`` or a tab, as on the joined text;
- a term (``[a-z0-9_]{3,}``) never spans that space, so the context's terms are the
  union of its parts' terms.

Given the transcript (``ContextScorer(originals)``) and each part's source index, a
recall answer is anchored to the call it answered: when the same normalised line is
also in another tool output of the transcript (*ambiguous*: on a Codex rollout every
sandbox refusal reads the same), it counts only in the version of its own source
message, or in a part (a message, a summary) that also names the call the question
names (``probes.asked_about``). An answer no other output holds counts anywhere, as in
``score_text``. Own probes (``score_replay``, ``original_scores``) and shared probes
(``shared_probes.score_run``) are scored this one way.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ...core.model import Conversation, Message
from ...core.records import Event, StepRecord
from ..extract import LINE_NUMBER_RE
from ..lost import message_text
from .questions import Probe, asked_about, generate, original_compactions
from .scoring import (
    _TERM_RE,
    ContextParts,
    Score,
    _path_tail,
    _present,
    fold,
    iter_indexed_parts,
    normalise,
    original_parts,
    score_by,
)

# between the outputs in ``_raw_outputs``: a word without it never spans two of them
_SEPARATOR = "\x00"


@dataclass(slots=True)
class _Part:
    nfkc: str
    marked: bool  # holds "→" or a tab: line-number prefixes go from every part
    plain: str
    _stripped: str | None = None
    _terms: dict[bool, frozenset[str]] = field(default_factory=dict)

    def text(self, strip: bool) -> str:
        if not strip or self.marked:  # a marked part is stripped in ``plain`` already
            return self.plain
        if self._stripped is None:
            self._stripped = fold(LINE_NUMBER_RE.sub("", self.nfkc))
        return self._stripped

    def terms(self, strip: bool) -> frozenset[str]:
        found = self._terms.get(strip)
        if found is None:
            found = self._terms[strip] = frozenset(_TERM_RE.findall(self.text(strip)))
        return found


class ContextScorer:
    """Scores probes against contexts given as parts (``probe_scoring.iter_context_parts``).
    Holds every part it has seen (its memo is keyed by identity): one per comparison.
    ``originals``: the transcript's messages, to anchor recall answers (module docstring)."""

    def __init__(self, originals: Sequence[Message] | None = None) -> None:
        self._memo: dict[int, tuple[Message | str, _Part]] = {}
        self._originals = originals
        self._others: dict[tuple[str, int], int] = {}
        self._raw: tuple[str, list[int], list[int]] | None = None  # ``_raw_outputs``

    def _part(self, part: Message | str) -> _Part:
        found = self._memo.get(id(part))
        if found is not None:
            return found[1]
        text = part if isinstance(part, str) else message_text(part)
        nfkc = unicodedata.normalize("NFKC", text)
        marked = "→" in nfkc or "\t" in nfkc
        plain = fold(LINE_NUMBER_RE.sub("", nfkc) if marked else nfkc)
        made = _Part(nfkc, marked, plain)
        self._memo[id(part)] = (part, made)  # the part kept alive: its id stays its own
        return made

    def other_outputs(self, probe: Probe) -> int:
        """How many other tool outputs of the transcript hold a recall probe's answer (0
        when none, or when the scorer has no transcript or the probe is not recall)."""
        if probe.kind != "recall" or self._originals is None:
            return 0
        originals = self._originals
        return max(
            (self._others_holding(a, probe.source, originals) for a in probe.answers), default=0
        )

    def _others_holding(self, answer: str, source: int, originals: Sequence[Message]) -> int:
        key = (answer, source)
        found = self._others.get(key)
        if found is None:
            needle = normalise(answer)  # ``_present``'s test, the needle normalised once
            tail = _path_tail(needle)
            # (the tail drops empty path segments: it need not be in the needle)
            candidates = self._may_hold(needle, originals)
            if tail:
                candidates = sorted({*candidates, *self._may_hold(tail, originals)})
            found = 0
            for i in candidates:
                if i == source:
                    continue
                text = self._part(originals[i]).plain
                if (needle and needle in text) or (tail and tail in text):
                    found += 1
            self._others[key] = found
        return found

    def _may_hold(self, needle: str, originals: Sequence[Message]) -> list[int]:
        """The tool outputs of the transcript that may hold ``needle`` (normalised): those
        whose raw text, NFKC and lower case, holds its longest space-free word. Normalising every
        output of a long transcript to count the few holding an answer cost more than the
        rest of the probes. Exact superset: ``fold`` only lower-cases, turns quotes (never
        in a folded word) into spaces and collapses whitespace, and a line-number prefix
        starts after a newline, so a word of ``plain`` is a substring of one line of it."""
        word = max(needle.split(), key=len, default="")
        if not word:
            return []  # an empty needle (and tail) is in no text
        joined, starts, indexes = self._raw_outputs(originals)
        if _SEPARATOR in word:
            return indexes
        hits: list[int] = []
        at = joined.find(word)
        while at >= 0:
            k = bisect_right(starts, at) - 1
            hits.append(indexes[k])
            at = joined.find(word, starts[k + 1]) if k + 1 < len(starts) else -1
        return hits

    def _raw_outputs(self, originals: Sequence[Message]) -> tuple[str, list[int], list[int]]:
        """Every tool output of the transcript NFKC and lower case, joined by
        ``_SEPARATOR`` (made once: one C-level scan per answer), the start of each, and
        its message index."""
        if self._raw is None:
            indexes = [i for i, m in enumerate(originals) if m.tool_results]
            texts = [
                unicodedata.normalize("NFKC", message_text(originals[i])).lower() for i in indexes
            ]
            starts: list[int] = []
            at = 0
            for text in texts:
                starts.append(at)
                at += len(text) + len(_SEPARATOR)
            self._raw = (_SEPARATOR.join(texts), starts, indexes)
        return self._raw

    def score(
        self,
        probes: Sequence[Probe],
        parts: Sequence[Message | str],
        indexes: Sequence[int | None] | None = None,
    ) -> list[Score]:
        """``[score_text(p, joined parts) for p in probes]``, without joining or
        normalising the context more than once; with ``indexes`` (each part's source
        message) and the transcript, recall answers are anchored (module docstring)."""
        normed = [self._part(p) for p in parts]
        strip = any(n.marked for n in normed)
        haystack: list[str] = []  # joined once, when an exact-kind probe first asks

        def present(answer: str) -> bool:
            if not haystack:
                haystack.append(" ".join(t for n in normed if (t := n.text(strip))))
            return _present(answer, haystack[0])

        def has_term(term: str) -> bool:
            return any(term in n.terms(strip) for n in normed)

        def anchored(probe: Probe) -> Callable[[str], bool]:
            texts = [n.text(strip) for n in normed]
            own = [t for t, i in zip(texts, indexes or (), strict=True) if i == probe.source]
            call = normalise(asked_about(probe.question))

            def found(answer: str) -> bool:
                if any(_present(answer, t) for t in own):
                    return True
                if not present(answer):
                    return False
                if not self._others_holding(answer, probe.source, self._originals or ()):
                    return True  # no other output says it: wherever it is, it is this one
                return bool(call) and any(call in t and _present(answer, t) for t in texts)

            return found

        out = []
        for probe in probes:
            if probe.kind == "recall" and indexes is not None and self._originals is not None:
                out.append(score_by(probe, anchored(probe), has_term))
            else:
                out.append(score_by(probe, present, has_term))
        return out

    def score_parts(self, probes: Sequence[Probe], context: ContextParts) -> list[Score]:
        return self.score(probes, context.parts, context.indexes)


def score_replay(
    found: Sequence[Probe],
    steps: Sequence[StepRecord],
    events: Sequence[Event],
    summaries: Mapping[int, str],
    originals: Sequence[Message],
    scorer: ContextScorer | None = None,
) -> dict[str, Score]:
    """A run's own probes, each scored against the request right after its compaction."""
    scorer = scorer if scorer is not None else ContextScorer(originals)
    by_step: dict[int, list[Probe]] = {}
    for p in found:
        by_step.setdefault(p.step, []).append(p)
    out: dict[str, Score] = {}
    for step, context in iter_indexed_parts(steps, events, summaries, originals, by_step):
        for p, score in zip(by_step[step], scorer.score_parts(by_step[step], context), strict=True):
            out[p.key] = score
    return out


def original_scores(
    conversation: Conversation, scorer: ContextScorer | None = None
) -> tuple[list[Probe], dict[str, Score]]:
    """The probes of the transcript's own compactions, scored offline against what the
    agent saw right after each (``probe_scoring.original_context``)."""
    messages = conversation.messages
    boundaries = [(c.before_index, c.summary_index) for c in conversation.compactions]
    found = generate(original_compactions(messages, boundaries), messages)
    scorer = scorer if scorer is not None else ContextScorer(messages)
    contexts = {b: original_parts(messages, b, s) for b, s in boundaries}
    out: dict[str, Score] = {}
    for p in found:
        context = contexts.get(p.step, ContextParts([], []))
        out[p.key] = scorer.score_parts([p], context)[0]
    return found, out
