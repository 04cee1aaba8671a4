"""Likely credentials in transcript text: find them, mask them, count them per conversation.

Patterns are specific (provider key prefixes, PEM blocks, JWTs, Authorization/Cookie header
values) plus generic ``api_key=…``/``password: …`` assignments whose value looks random
(mixed letters and digits, high entropy). Plain hex strings (git SHAs, digests) and UUIDs
are never reported. Masking keeps a short prefix so a reader can tell keys apart by kind.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import ahocorasick

from ..core.model import Block, Conversation, Message, ToolDef
from . import encoded, secret_rules


@dataclass(frozen=True, slots=True)
class SecretHit:
    kind: str
    start: int
    end: int


# (kind, anchor, pattern, group holding the secret: 0 = whole match). The anchor names the
# literal every match of the pattern contains within its first few characters (see _ANCHORS).
_PATTERNS: tuple[tuple[str, str, re.Pattern[str], int], ...] = (
    (
        "private_key",
        "pem",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\n]{40,})"
        ),
        0,
    ),
    ("anthropic_key", "sk", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), 0),
    (
        "openai_key",
        "sk",
        re.compile(r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}"),
        0,
    ),
    ("aws_access_key", "aws", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"), 0),
    (
        "github_token",
        "gh",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
        0,
    ),
    ("slack_token", "slack", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), 0),
    ("google_api_key", "google", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), 0),
    (
        "bearer_token",
        "auth",
        re.compile(
            # Header, JSON key or escaped JSON inside a string ({\\"Authorization\\": …).
            r"(?i)\b(?:authorization|proxy-authorization)(?:\\?[\"'])?\s*[:=]\s*(?:\\?[\"'])?"
            r"(?:bearer|token|basic|digest|apikey|sso-key)\s+([A-Za-z0-9._~+/\-]{8,}=*)"
        ),
        1,
    ),
    ("bearer_token", "bearer", re.compile(r"\b[Bb]earer\s+([A-Za-z0-9._~+/\-]{20,}=*)"), 1),
    (
        "jwt",
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
        0,
    ),
    (
        "cookie",
        "cookie",
        re.compile(
            r"(?i)(?<![\w-])(?:set-)?cookie[\"']?\s*[:=]\s*[\"']?([^\s\"'<>][^\"'\n\r]{7,})"
        ),
        1,
    ),
    (
        "credential_assignment",
        "cred",
        re.compile(
            # No leading [\w\-]*: it only widened the match to the left (group 1 is the
            # value) and made the scan quadratic in word length (8 s on a 4 MB history).
            r"(?i)(?:api[_\-]?key|secret|passw(?:or)?d|pwd|token|access[_\-]?key"
            r"|private[_\-]?key|(?:signing|encryption|client|master)[_\-]key)[\w\-]*"
            r"[\"']?\s*(?:=|:)\s*[\"']?([^\s\"',;<>{}()\[\]]{8,})"
        ),
        1,
    ),
    # scheme://user:password@host: the password only (database and queue URLs, proxies).
    (
        "url_password",
        "url",
        re.compile(r"://[^\s:/?#@\"'<>\\]*:([^\s/?#@\"'<>\\]{3,200})@(?=[\w\[])"),
        1,
    ),
    # FOO_TOKEN=…, FOO_API_KEY: "…", PGPASSWORD=… (environment and config assignments).
    (
        "env_secret",
        "env",
        re.compile(
            r"(?:_(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?|AUTH)"
            r"|(?<=[A-Z0-9])PASSWORD)(?:_?B(?:ASE)?64|_ENC(?:ODED)?)?"
            r"(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?"
            r"([^\s\"'`;&|<>{}()\[\]$\\,]{8,})"
        ),
        1,
    ),
    # curl -b 'sessionid=…; csrftoken=…' / --cookie "…": the whole cookie jar.
    (
        "cookie",
        "curl_cookie",
        re.compile(r"[ \t\n\r](?:-b|--cookie)(?:\s+|=)'([^'\n]*=[^'\n]{6,})'"),
        1,
    ),
    (
        "cookie",
        "curl_cookie",
        re.compile(r'[ \t\n\r](?:-b|--cookie)(?:\s+|=)"([^"\n]*=[^"\n]{6,})"'),
        1,
    ),
    (
        "cookie",
        "curl_cookie",
        re.compile(r"[ \t\n\r](?:-b|--cookie)(?:\s+|=)([^\s'\"=]+=[^\s'\"]{6,})"),
        1,
    ),
    # Session cookies wherever they appear (sessionid=…, PHPSESSID=…, connect.sid=…).
    (
        "session_cookie",
        "session",
        re.compile(
            r"(?i)\b(?:(?:[a-z]{1,8}[_\-.]|j)?session(?:id|_id)?|phpsessid|connect\.sid)"
            r"=([A-Za-z0-9%._~+/\-]{12,}=*)"
        ),
        1,
    ),
    # Base64 credentials (encoded.py decides by what the value decodes to). "Basic …"
    # anywhere (user:password), an "auth" key or variable (docker's config.json), and values
    # that start like an encoded PEM block, JSON document, OpenSSH or DER private key.
    (
        "basic_auth",
        "basic",
        re.compile(r"(?i:\bbasic)[ \t]+([A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=\-_])"),
        1,
    ),
    (
        "encoded_credential",
        "authkey",
        re.compile(
            r"(?i)\bauth(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?"
            r"([A-Za-z0-9+/\-_]{8,}={0,2})(?![A-Za-z0-9+/=\-_])"
        ),
        1,
    ),
    (
        "encoded_credential",
        "b64",
        re.compile(
            r"(?<![A-Za-z0-9+/\-_])"
            r"(?:LS0tLS1CRUdJTi|eyJ|eyAi|ewog|ewoi|ew0K|b3BlbnNzaC1rZXktdjE|MI[IGH]|MHcC|MC4C)"
            r"[A-Za-z0-9+/\-_]{13,}(?:(?:\r?\n|\\r?\\n)[ \t]*[A-Za-z0-9+/\-_]{16,})*"
            # A wrapped body's short last line, alone on its line.
            r"(?:(?:\r?\n|\\r?\\n)[ \t]*[A-Za-z0-9+/]{1,15}={0,2}(?=\r?\n|\\[rn]|$|[\"'`]))?"
            r"={0,2}(?![A-Za-z0-9+/=\-_])"
        ),
        0,
    ),
    # Passwords given on a command line: mysql's glued -pSECRET, --password VALUE (the
    # "=" form is a credential_assignment), sshpass -p VALUE; and a .netrc line.
    (
        "cli_password",
        "mysql",
        re.compile(
            r"(?i)\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]*?[ \t]-p[\"']?([^\s\"'`|;&]{3,})"
        ),
        1,
    ),
    (
        "cli_password",
        "cli_pw",
        re.compile(r"(?i)(?:--pass(?:word|wd)?|\bsshpass[ \t]+-p)[ \t]+[\"']?([^\s\"'`|;&]{3,})"),
        1,
    ),
    (
        "netrc_password",
        "netrc",
        re.compile(r"(?i)\blogin[ \t]+\S+[ \t]+password[ \t]+([^\s\"'`]{3,})"),
        1,
    ),
    # Azure connection strings.
    (
        "azure_key",
        "azure",
        re.compile(r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)=([^;\s\"']{16,})"),
        1,
    ),
)

# Pre-filter. The detailed patterns over every text cost ~2 MB/s; most transcript text holds
# none of their literals. One pass of those literals (an Aho-Corasick automaton: one C-level
# walk finds all of 300 words, where a regex alternation would slow to ~2 MB/s) over the
# lower-cased text (lower-casing first
# is several times faster than an IGNORECASE scan) finds the texts, and the positions, that
# can hold a match; the detailed patterns are tried only there. Exact, not heuristic: every
# match of a pattern contains its anchor literal, and a match starts at most BACKOFF[name]
# characters before it ("proxy-" authorization, "set-" cookie). Case-sensitive anchors are
# matched case-insensitively: a superset. gitleaks' rules (secret_rules.py) are anchored by
# their keywords: by definition a match of theirs counts only if it starts at most
# DATA_BACKOFF characters before one of them (gitleaks requires the keyword in the text).
ANCHORS: dict[str, tuple[str, ...]] = {
    "pem": ("-----begin",),
    "sk": ("sk-",),
    "aws": ("akia", "asia", "abia", "acca"),
    "gh": (*(f"gh{c}_" for c in "pousr"), "github_pat_"),
    "slack": tuple(f"xox{c}-" for c in "abposr"),
    "google": ("aiza",),
    "jwt": ("eyj",),
    "bearer": ("bearer",),
    "auth": ("authorization",),
    "cookie": ("cookie",),
    "cred": (
        *(f"api{s}key" for s in ("_", "-", "")),
        *(f"private{s}key" for s in ("_", "-", "")),
        *(f"{w}{s}key" for w in ("signing", "encryption", "client", "master") for s in "_-"),
        "secret",
        "passw",
        "pwd",
        "token",
        *(f"access{s}key" for s in ("_", "-", "")),
    ),
    "url": ("://",),
    "env": ("_key", "_token", "_secret", "_pass", "_pwd", "_cred", "_auth", "password"),
    "curl_cookie": ("-b", "--cookie"),
    "session": ("session=", "sessionid=", "session_id=", "sessid=", "connect.sid="),
    "mysql": ("mysql", "mariadb"),
    "cli_pw": ("--pass", "sshpass"),
    "netrc": ("login",),
    "azure": ("accountkey=", "sharedaccesskey=", "sharedaccesssignature="),
    "basic": ("basic",),
    "authkey": tuple(f"auth{c}" for c in "\"':= \t\\"),
    "b64": (
        *("ls0tls1crudjti", "eyj", "eyai", "ewog", "ewoi", "ew0k", "b3blbnnzac1rzxktdje"),
        *("mii", "mig", "mih", "mhcc", "mc4c"),
    ),
}
ANCHOR_BACKOFF = 8
BACKOFF: dict[str, int] = {
    **{"url": 0, "env": 0, "curl_cookie": 1, "session": 9, "azure": 8},
    **{"basic": 0, "authkey": 0, "b64": 0, "mysql": 0, "cli_pw": 0, "netrc": 0},
}
DATA_BACKOFF = 64
DATA_RULES = secret_rules.load_rules()
DATA_ANCHORS: dict[str, tuple[str, ...]] = {f"rule:{r.id}": r.keywords for r in DATA_RULES}
_DATA_INDEX = {f"rule:{rule.id}": index for index, rule in enumerate(DATA_RULES)}
_ALL_ANCHORS: dict[str, tuple[str, ...]] = {**ANCHORS, **DATA_ANCHORS}


def _backoff(name: str) -> int:
    return DATA_BACKOFF if name.startswith("rule:") else BACKOFF.get(name, ANCHOR_BACKOFF)


def _automaton() -> ahocorasick.Automaton:
    """Every anchor literal -> (its length, the anchors it stands for)."""
    names: dict[str, list[str]] = {}
    for name, literals in _ALL_ANCHORS.items():
        for literal in literals:
            names.setdefault(literal, []).append(name)
    automaton = ahocorasick.Automaton()
    for literal, owners in names.items():
        automaton.add_word(literal, (len(literal), tuple(owners)))
    automaton.make_automaton()
    return automaton


_LITERALS = _automaton()
_BACKOFF_OF = {name: _backoff(name) for name in _ALL_ANCHORS}
# Non-ASCII characters that IGNORECASE patterns treat as ASCII letters but str.lower() does
# not turn into them (Kelvin sign, long s, dotted/dotless i): folded before lower-casing.
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_FOLD_CHARS = ("\u0130", "\u0131", "\u017f", "\u212a")
_EVERYWHERE: tuple[int, ...] = ()  # candidate list meaning "scan the whole text"


def _folded(text: str) -> str:
    if not text.isascii() and any(c in text for c in _FOLD_CHARS):
        text = text.translate(_FOLD)
    return text.lower()


def anchor_starts(text: str) -> dict[str, tuple[int, ...]]:
    """Anchor name -> the sorted positions where a match of its patterns may start.

    Empty when the text holds no anchor (the common case: one C-level regex pass). An empty
    tuple means "anywhere" (lower-casing lengthened a character, so positions shifted).
    """
    folded = _folded(text)
    found: dict[str, set[int]] = {}
    backoff = _BACKOFF_OF
    # Every occurrence, overlapping ones too ("AKIAIza…" holds two anchors).
    for end, (length, names) in _LITERALS.iter(folded):
        at = end - length + 1
        for name in names:
            found.setdefault(name, set()).update(range(max(0, at - backoff[name]), at + 1))
    if not found:
        return {}
    return _positions(text, folded, found)


def naive_anchor_starts(text: str) -> dict[str, tuple[int, ...]]:
    """``anchor_starts`` by ``str.find`` of every literal: the reference it is tested
    against (and what the exhaustive scan uses for gitleaks rules)."""
    folded = _folded(text)
    found: dict[str, set[int]] = {}
    for name, literals in _ALL_ANCHORS.items():
        for literal in literals:
            at = folded.find(literal)
            while at >= 0:
                found.setdefault(name, set()).update(range(max(0, at - _backoff(name)), at + 1))
                at = folded.find(literal, at + 1)
    return _positions(text, folded, found)


def _positions(text: str, folded: str, found: dict[str, set[int]]) -> dict[str, tuple[int, ...]]:
    if len(folded) != len(text):
        return dict.fromkeys(found, _EVERYWHERE)
    return {name: tuple(sorted(starts)) for name, starts in found.items()}


_HEX = re.compile(r"[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_PLACEHOLDER = re.compile(
    r"(?i)^(?:x{4,}|\*{3,}|your|example|placeholder|changeme|redacted|dummy|test)"
)
_MASK = re.compile(r"…\[masked [a-z0-9_]+\]")


def _entropy(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _random_looking(value: str) -> bool:
    """A generic assignment's value is reported only if it looks like a generated secret."""
    if _HEX.fullmatch(value) or _UUID.fullmatch(value) or _PLACEHOLDER.match(value):
        return False
    if value.startswith(("$", "%", "process.env", "os.environ", "env.")) or "…[masked" in value:
        return False
    has_alpha = any(c.isalpha() for c in value)
    has_digit = any(c.isdigit() for c in value)
    return has_alpha and has_digit and len(value) >= 12 and _entropy(value) >= 3.2


def _token_like(value: str) -> bool:
    return not _HEX.fullmatch(value) and any(c.isdigit() for c in value)


def find_secrets(text: str) -> list[SecretHit]:
    """Non-overlapping hits in text order (the earliest, then longest, match wins)."""
    if not text:
        return []
    starts = anchor_starts(text)
    if not starts:
        return []
    return _scan(text, starts)


def find_secrets_exhaustive(text: str) -> list[SecretHit]:
    """``find_secrets`` without the pre-filter: every pattern over the whole text.

    The reference the pre-filter is tested against; too slow for imports.
    """
    if not text:
        return []
    everywhere = dict.fromkeys(ANCHORS, _EVERYWHERE)
    data = {k: v for k, v in naive_anchor_starts(text).items() if k in DATA_ANCHORS}
    return _scan(text, {**everywhere, **data})


def _matches(
    pattern: re.Pattern[str], text: str, starts: tuple[int, ...]
) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)`` when every match starts at one of ``starts``.

    Same matches: finditer returns the leftmost match at or after the end of the previous
    one, and trying the candidate starts in order finds exactly that one.
    """
    if not starts:
        yield from pattern.finditer(text)
        return
    end = 0
    for start in starts:
        if start < end:
            continue
        match = pattern.match(text, start)
        if match is not None:
            yield match
            end = match.end()


def _scan(text: str, starts: dict[str, tuple[int, ...]]) -> list[SecretHit]:
    found: list[SecretHit] = []
    for kind, anchor, pattern, group in _PATTERNS:
        candidates = starts.get(anchor)
        if candidates is None:
            continue
        for match in _matches(pattern, text, candidates):
            value = match.group(group)
            start, end = match.span(group)
            if kind in _ASSIGNED_KINDS and _plausible(kind, _trimmed(value)):
                value = _trimmed(value)
                end = start + len(value)
            if not _plausible(kind, value):
                continue
            if _MASK.match(text, end) or "…[masked" in value:  # already masked
                continue
            found.append(SecretHit(kind, start, end))
    if "cred" in starts:  # every k8s Secret holds "secret": the anchor is exact
        found.extend(_k8s_secret_values(text))
    for index in sorted(_DATA_INDEX[name] for name in starts if name in _DATA_INDEX):
        rule, candidates = DATA_RULES[index], starts[f"rule:{DATA_RULES[index].id}"]
        for match in _matches(rule.pattern, text, candidates):
            start, end = rule.secret_span(match)
            if not rule.accepts(match, start, end) or "…[masked" in match.group():
                continue
            if _MASK.match(text, end):
                continue
            found.append(SecretHit(rule.id.replace("-", "_"), start, end))
    found.sort(key=lambda h: (h.start, -(h.end - h.start)))
    hits: list[SecretHit] = []
    for hit in found:
        if hits and hit.start < hits[-1].end:
            continue
        hits.append(hit)
    return hits


_URL_PLACEHOLDERS = frozenset({"pass", "password", "passwd", "pw", "pwd", "secret", "xxx"})


def _plausible(kind: str, value: str) -> bool:
    """Checks that keep look-alikes (counts, ids, placeholders, references) visible."""
    if kind == "credential_assignment":
        return _random_looking(value) or _encoded_text(value)
    if kind == "basic_auth":
        raw = encoded.decode(value)
        return raw is not None and encoded.is_user_password(raw)
    if kind == "encoded_credential":
        return _encoded_credential(value)
    if kind == "bearer_token":
        return _token_like(value)
    if kind == "cookie":
        return not value.startswith("<") and len(value.strip()) >= 8
    if kind == "url_password":
        return value.lower() not in _URL_PLACEHOLDERS and not _reference(value)
    if kind in ("env_secret", "cli_password", "netrc_password"):
        return _assigned(value)
    if kind == "session_cookie":
        return _assigned(value) and any(c.isdigit() for c in value)
    return True


_ASSIGNED_KINDS = frozenset({"credential_assignment", "env_secret"})
_CLOSING = re.compile(r"[`.,!?:;|]+$")
# Where an assigned value ends although its class goes on: the next URL query parameter
# ("?token=…&page=2") or an escaped line end or quote ("…\\n" inside a JSON string).
_VALUE_END = re.compile(r"&[\w.\-\[\]]+=|\\[nrt\"']")


def _trimmed(value: str) -> str:
    """An assigned value without what follows it: the next query parameter or an escaped
    line end; a backtick; ``.,!?:;|`` when what stays is base64 (none of them is in its
    alphabet; a password may end with them)."""
    cut = _VALUE_END.search(value)
    if cut is not None:
        value = value[: cut.start()]
    value = value.rstrip("`")
    closing = _CLOSING.search(value)
    if closing is None or closing.start() < 8:
        return value
    head = value[: closing.start()]
    return head if encoded.decode(head) is not None else value


def _encoded_credential(value: str) -> bool:
    """Base64 that decodes to a credential: user:password, a private key, a JSON document
    naming a secret, or a text holding one (``encoded.py``)."""
    raw = encoded.decode(value)
    if raw is None:
        return False
    if encoded.is_user_password(raw) or encoded.is_private_key(raw) or encoded.is_secret_json(raw):
        return True
    text = encoded.decoded_text(raw)
    return text is not None and bool(find_secrets(text))


def _encoded_text(value: str) -> bool:
    """A secret-named key's base64 value that decodes to printable text (k8s Secret data,
    ``password: aHVudGVyMg==``): the encoding hides the secret, not the name."""
    if _PLACEHOLDER.match(value) or _reference(value) or len(value) < 8 or value.isdigit():
        return False
    raw = encoded.decode(value)
    text = None if raw is None else encoded.decoded_text(raw)
    return text is not None and len(text) >= 4 and text.isascii() and text.isprintable()


# A Kubernetes Secret's data/stringData values are credentials whatever their keys are called
# (``tls.key``, ``.dockerconfigjson``, ``username``): YAML documents and kubectl's JSON.
_K8S_KIND_YAML = re.compile(r"(?m)(?:^|\s)kind:[ \t]*[\"']?Secret[\"']?[ \t]*\r?$")
_K8S_DATA_YAML = re.compile(r"(?m)^([ \t]*)(?:data|stringData):[ \t]*\r?$")
_K8S_ENTRY_YAML = re.compile(r"([ \t]+)[^\s:#][^:\n]*:[ \t]+[\"']?([^\s\"'|>][^\s\"']*)")
_K8S_KIND_JSON = re.compile(r'"kind"\s*:\s*"Secret"')
_K8S_DATA_JSON = re.compile(r'"(?:data|stringData)"\s*:\s*\{([^{}]*)\}')
_K8S_ENTRY_JSON = re.compile(r'"[^"\n]+"\s*:\s*"([^"\n]+)"')
_YAML_DOCUMENT = re.compile(r"(?m)^---[ \t]*\r?$")


def _k8s_secret_values(text: str) -> list[SecretHit]:
    if "Secret" not in text:
        return []
    hits: list[SecretHit] = []
    starts = [0, *(m.end() for m in _YAML_DOCUMENT.finditer(text))]
    ends = [*(m.start() for m in _YAML_DOCUMENT.finditer(text)), len(text)]
    for start, end in zip(starts, ends, strict=True):
        if _K8S_KIND_YAML.search(text, start, end):
            hits.extend(_k8s_yaml_values(text, start, end))
        if _K8S_KIND_JSON.search(text, start, end):
            for block in _K8S_DATA_JSON.finditer(text, start, end):
                for entry in _K8S_ENTRY_JSON.finditer(text, block.start(1), block.end(1)):
                    hits.append(SecretHit("k8s_secret", *entry.span(1)))
    return [h for h in hits if "…[masked" not in text[h.start : h.end + 9]]


def _k8s_yaml_values(text: str, start: int, end: int) -> list[SecretHit]:
    hits: list[SecretHit] = []
    for block in _K8S_DATA_YAML.finditer(text, start, end):
        indent = len(block.group(1).expandtabs())
        at = block.end() + 1
        while at < end:
            line_end = text.find("\n", at, end)
            line_end = end if line_end < 0 else line_end
            entry = _K8S_ENTRY_YAML.match(text, at, line_end)
            if entry is None or len(entry.group(1).expandtabs()) <= indent:
                break
            hits.append(SecretHit("k8s_secret", *entry.span(2)))
            at = line_end + 1
    return hits


def _reference(value: str) -> bool:
    return value.startswith(("$", "%", "{", "process.env", "os.environ", "env.", "ENV["))


def _assigned(value: str) -> bool:
    """A value assigned to a secret-named variable: masked unless it is clearly not one."""
    if _PLACEHOLDER.match(value) or _UUID.fullmatch(value) or _reference(value):
        return False
    if value.lower() in {"true", "false", "null", "none", "undefined"}:
        return False
    return any(c.isdigit() for c in value) or (len(value) >= 16 and _entropy(value) >= 3.5)


def _prefix(secret: str) -> str:
    return secret[: 6 if len(secret) >= 24 else 3]


def mask(text: str) -> str:
    """Each secret replaced by a short prefix + ``…[masked kind]`` (deterministic)."""
    hits = find_secrets(text)
    if not hits:
        return text
    out, pos = [], 0
    for hit in hits:
        out.append(text[pos : hit.start])
        out.append(f"{_prefix(text[hit.start : hit.end])}…[masked {hit.kind}]")
        pos = hit.end
    out.append(text[pos:])
    return "".join(out)


# Parsed JSON loses what made a value recognisable: {"Authorization": "Basic …"} or
# {"env": {"NPM_TOKEN": "…"}} scan as a bare "Basic …" / "…". A string value is scanned and
# masked with its key in front, as a header or an assignment would read ("key: value");
# {"name": "Authorization", "value": "…"} pairs (HAR, HTTP tool arguments) likewise.
_PAIR_KEYS = (("name", "value"), ("key", "value"))


def _label(mapping: dict[Any, Any], key: Any) -> str | None:
    """What a string value at ``mapping[key]`` is called: its key, or its pair's name."""
    for name_key, value_key in _PAIR_KEYS:
        if key == value_key and isinstance(mapping.get(name_key), str):
            return str(mapping[name_key])
    return key if isinstance(key, str) else None


def _keyed(label: str | None, value: str) -> str:
    return value if label is None else f"{label}: {value}"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        out: list[str] = []
        for k, v in value.items():
            if isinstance(k, str):
                out.append(k)
            out.extend([_keyed(_label(value, k), v)] if isinstance(v, str) else _strings(v))
        return out
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _mask_keyed(label: str | None, value: str) -> str:
    """``value`` masked as it reads after its label; the label itself is never changed."""
    if label is None:
        return mask(value)
    head = f"{label}: "
    masked = mask(head + value)
    return masked[len(head) :] if masked.startswith(head) else mask(value)


def _mask_value(value: Any) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {
            (mask(k) if isinstance(k, str) else k): (
                _mask_keyed(_label(value, k), v) if isinstance(v, str) else _mask_value(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_mask_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_mask_value(v) for v in value)
    return value


def _block_kinds(block: Block) -> list[str]:
    texts = [block.text, block.tool_name, *_strings(block.tool_input)]
    kinds = [hit.kind for t in texts for hit in find_secrets(t)]
    for part in block.parts:
        kinds.extend(_block_kinds(part))
    return kinds


def scan_conversation(conv: Conversation) -> list[tuple[int, int, str]]:
    """``(message index, block index, kind)`` for every secret in the conversation."""
    return [
        (mi, bi, kind)
        for mi, message in enumerate(conv.messages)
        for bi, block in enumerate(message.blocks)
        for kind in _block_kinds(block)
    ]


def _mask_block(block: Block) -> Block:
    return replace(
        block,
        text=mask(block.text),
        tool_name=mask(block.tool_name),
        tool_input=_mask_value(block.tool_input),
        parts=tuple(_mask_block(p) for p in block.parts),
    )


def _mask_message(message: Message) -> Message:
    if not any(_block_kinds(b) for b in message.blocks):
        return message
    return replace(message, blocks=tuple(_mask_block(b) for b in message.blocks))


def mask_conversation(conv: Conversation) -> Conversation:
    """A copy with every text, tool input, the title, tool definitions and metadata masked
    (unchanged values reused)."""
    return replace(mask_extras(conv), messages=tuple(_mask_message(m) for m in conv.messages))


def _tool_texts(tool: ToolDef) -> list[str]:
    return [tool.name, tool.description, *_strings(tool.parameters)]


def scan_extras(conv: Conversation) -> list[tuple[str, int, str]]:
    """``(where, index, kind)`` for secrets outside the messages: tool definitions
    (``"tools"``, tool index) and metadata (``"metadata"``, pair index). The title is
    masked too (``mask_extras``) but not counted: it repeats a message's text."""
    found: list[tuple[str, int, str]] = []
    for index, tool in enumerate(conv.tools):
        found.extend(
            ("tools", index, hit.kind) for t in _tool_texts(tool) for hit in find_secrets(t)
        )
    for index, (key, value) in enumerate(conv.metadata):
        found.extend(("metadata", index, hit.kind) for t in (key, value) for hit in find_secrets(t))
    return found


def mask_extras(conv: Conversation) -> Conversation:
    """The title, tool definitions and metadata masked (messages untouched)."""
    tools = tuple(
        replace(
            tool,
            name=mask(tool.name),
            description=mask(tool.description),
            parameters=_mask_value(tool.parameters),
        )
        for tool in conv.tools
    )
    metadata = tuple((mask(key), mask(value)) for key, value in conv.metadata)
    return replace(conv, title=mask(conv.title), tools=tools, metadata=metadata)
