"""Provider credential rules read from gitleaks' published configuration (data, not code).

``data/gitleaks/gitleaks.toml`` is gitleaks' default rule set, unmodified (MIT, see
``data/gitleaks/NOTICE.md``). This module loads it into ``DataRule`` objects for
``secrets.py``. What is honoured, per rule: ``regex`` (translated from Go's syntax: a
``(?i)`` in mid-pattern becomes a scoped ``(?i:…)`` group, ``\\z`` becomes ``\\Z``),
``secretGroup`` (else the first group, else the whole match), ``entropy`` (Shannon bits per
character of the secret), ``keywords`` and the allowlists' ``regexes`` (against the secret
or the match) and ``stopwords``. Rules that only make sense for a file path (``path``) or
that ctxlab's own patterns already cover better (``SKIPPED``) are not used.

Keywords are what keep the scan fast: a rule runs only on texts holding one of its
keywords, and (so that the pre-filter is exact, see ``secrets.find_secrets_exhaustive``) a
match counts only if it holds one of them too.
"""

from __future__ import annotations

import math
import re
import tomllib
import warnings
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

RULES_FILE = Path(__file__).resolve().parents[1] / "data" / "gitleaks" / "gitleaks.toml"

# generic-api-key: ctxlab's credential_assignment does this with fewer false positives on
# prose. jwt / private-key / the cloud and provider rules below: ctxlab's own patterns (with
# their look-alike tests) cover them. Keywords of two characters ("ey", "sk", "s.") would
# send nearly every text through the rule.
SKIPPED = frozenset(
    {
        "generic-api-key",
        "jwt",
        "jwt-base64",
        "private-key",
        "aws-access-token",
        "gcp-api-key",
        "github-pat",
        "github-fine-grained-pat",
        "anthropic-api-key",
        "anthropic-admin-api-key",
        "openai-api-key",
        "curl-auth-header",
    }
)
MIN_KEYWORD = 3
# Keywords that are everyday code ("test_", "api-", "live_" …): a rule needing one would be
# tried at thousands of places per file, for tokens (Lob, Authress, 1Password secret keys,
# Octopus, Fly.io, Harness, GoCardless) rarely pasted into an agent session.
NOISY_KEYWORDS = frozenset(
    {"test_", "live_", "ext_", "sc_", "api-", "a3-", "fm1", "pat.", "sat.", "_pub"}
)


@dataclass(frozen=True, slots=True)
class DataRule:
    id: str
    pattern: re.Pattern[str]
    group: int | None  # None: the first group that matched, else the whole match
    keywords: tuple[str, ...]  # lower-case literals
    entropy: float
    allow_secret: tuple[re.Pattern[str], ...]
    allow_match: tuple[re.Pattern[str], ...]
    stopwords: tuple[str, ...]

    def secret_span(self, match: re.Match[str]) -> tuple[int, int]:
        if self.group is not None and self.group <= (match.re.groups or 0):
            if match.start(self.group) >= 0:
                return match.span(self.group)
            return match.span()
        for index in range(1, (match.re.groups or 0) + 1):
            if match.start(index) >= 0:
                return match.span(index)
        return match.span()

    def accepts(self, match: re.Match[str], start: int, end: int) -> bool:
        """gitleaks' own filters: keyword inside the match, entropy, allowlists."""
        text = match.string
        whole = text[match.start() : match.end()]
        folded = whole.lower()
        if not any(k in folded for k in self.keywords):
            return False
        secret = text[start:end]
        if not secret or (self.entropy and shannon(secret) < self.entropy):
            return False
        lowered = secret.lower()
        if any(word in lowered for word in self.stopwords):
            return False
        if any(p.search(secret) for p in self.allow_secret):
            return False
        return not any(p.search(whole) for p in self.allow_match)


def shannon(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def translate(go_regex: str) -> str:
    """A Go (RE2) regular expression as Python's ``re`` reads it."""
    pattern = go_regex.replace("\\z", "\\Z")
    while True:
        at = _mid_flag(pattern)
        if at < 0:
            return pattern
        close = _group_end(pattern, at + 4)
        pattern = pattern[:at] + "(?i:" + pattern[at + 4 : close] + ")" + pattern[close:]


def _mid_flag(pattern: str) -> int:
    """Index of the first ``(?i)`` that is not at the very start (Python refuses those)."""
    at = pattern.find("(?i)", 1)
    while at > 0 and _escaped(pattern, at):
        at = pattern.find("(?i)", at + 1)
    return at


def _escaped(pattern: str, at: int) -> bool:
    slashes = 0
    while at - slashes - 1 >= 0 and pattern[at - slashes - 1] == "\\":
        slashes += 1
    return slashes % 2 == 1


def _group_end(pattern: str, start: int) -> int:
    """Where the group enclosing ``start`` closes (or the end): a flag's scope in Go."""
    depth, i, in_class = 0, start, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "]" or pattern[i + 1 : i + 3] == "^]":
                i += 2 if pattern[i + 1] == "]" else 3
                continue
        elif c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return i
            depth -= 1
        elif c == "|" and depth == 0:
            # An alternative ends the flag's scope too: (?i) applies to its branch only.
            return i
        i += 1
    return len(pattern)


# gitleaks ends most tokens with this class (backtick, quote, space, ";", an escaped line
# end or the end of text), so a key followed by "." or "," in prose ("my key is npm_….")
# was not found. A token ends where its alphabet ends: any character that cannot continue
# it (not a letter or digit) closes it, punctuation and brackets included.
GITLEAKS_END = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
TOKEN_END = r"(?![0-9A-Za-z])"


def relaxed_end(regex: str) -> str:
    """``regex`` with gitleaks' token-end class replaced by ``TOKEN_END``."""
    return regex.replace(GITLEAKS_END, TOKEN_END)


def _compile(regex: str) -> re.Pattern[str] | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "possible nested set": harmless
        try:
            return re.compile(translate(relaxed_end(regex)))
        except re.error:
            return None


def _allowlists(
    rule: dict[str, object],
) -> tuple[list[re.Pattern[str]], list[re.Pattern[str]], list[str]]:
    secret_res: list[re.Pattern[str]] = []
    match_res: list[re.Pattern[str]] = []
    stop: list[str] = []
    raw = rule.get("allowlists", [])
    for allow in raw if isinstance(raw, list) else []:
        if not isinstance(allow, dict) or allow.get("paths") or allow.get("condition") == "AND":
            continue  # path-based: transcripts have no file paths to test
        target = allow.get("regexTarget", "secret")
        for text in allow.get("regexes", []):
            compiled = _compile(text)
            if compiled is None:
                continue
            if target == "secret":
                secret_res.append(compiled)
            elif target == "match":
                match_res.append(compiled)
        stop.extend(str(w).lower() for w in allow.get("stopwords", []))
    return secret_res, match_res, stop


@cache
def load_rules(path: Path = RULES_FILE) -> tuple[DataRule, ...]:
    with path.open("rb") as handle:
        document = tomllib.load(handle)
    rules = []
    for rule in document.get("rules", []):
        rule_id = str(rule.get("id", ""))
        keywords = tuple(str(k).lower() for k in rule.get("keywords", []))
        if (
            rule_id in SKIPPED
            or "path" in rule
            or not rule.get("regex")
            or not keywords
            or min(len(k) for k in keywords) < MIN_KEYWORD
            or NOISY_KEYWORDS.intersection(keywords)
        ):
            continue
        pattern = _compile(str(rule["regex"]))
        if pattern is None:
            continue
        secret_res, match_res, stop = _allowlists(rule)
        group = rule.get("secretGroup")
        rules.append(
            DataRule(
                id=rule_id,
                pattern=pattern,
                group=int(group) if group else None,
                keywords=keywords,
                entropy=float(rule.get("entropy", 0) or 0),
                allow_secret=tuple(secret_res),
                allow_match=tuple(match_res),
                stopwords=tuple(stop),
            )
        )
    return tuple(rules)
