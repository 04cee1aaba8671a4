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
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from .extract import LINE_NUMBER_RE
from .lost import message_text
from .model import Message
from .probe_scoring import _TERM_RE, Score, _present, fold, score_by
from .probes import Probe


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
    Holds every part it has seen (its memo is keyed by identity): one per comparison."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Message | str, _Part]] = {}

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

    def score(self, probes: Sequence[Probe], parts: Sequence[Message | str]) -> list[Score]:
        """``[score_text(p, joined parts) for p in probes]``, without joining or
        normalising the context more than once."""
        normed = [self._part(p) for p in parts]
        strip = any(n.marked for n in normed)
        haystack: list[str] = []  # joined once, when an exact-kind probe first asks

        def present(answer: str) -> bool:
            if not haystack:
                haystack.append(" ".join(t for n in normed if (t := n.text(strip))))
            return _present(answer, haystack[0])

        def has_term(term: str) -> bool:
            return any(term in n.terms(strip) for n in normed)

        return [score_by(probe, present, has_term) for probe in probes]
