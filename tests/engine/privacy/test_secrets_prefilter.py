"""The secrets pre-filter never changes what is found: ``find_secrets`` (anchors first) equals
``find_secrets_exhaustive`` (every pattern over the whole text) on generated secret-bearing
texts and on every corpus file."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab.engine.privacy import secrets
from ctxlab.engine.privacy.secrets import (
    anchor_starts,
    find_secrets,
    find_secrets_exhaustive,
    naive_anchor_starts,
)

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
CORPUS_FILES = sorted(
    p for p in CORPUS.rglob("*") if p.is_file() and p.name not in {"MANIFEST.tsv", "NOTICE.md"}
)

# Pieces that make (or nearly make) secrets, in several cases and with the non-ASCII letters
# IGNORECASE equates with ASCII ones (Kelvin sign, long s, dotted/dotless i).
FRAGMENTS = [
    "sk-ant-api03-",
    "sk-proj-",
    "sk-",
    "AKIA",
    "ASIA",
    "akia",
    "AIza",
    "ghp_",
    "github_pat_",
    "xoxb-",
    "eyJ",
    "eyJhbGciOiJIUzI1NiJ9.",
    "-----BEGIN RSA PRIVATE KEY-----\n",
    "-----END RSA PRIVATE KEY-----",
    "-----BEGIN PRIVATE KEY-----",
    "Authorization: Bearer ",
    "proxy-authorization=",
    "AUTHORIZATION: token ",
    "Bearer ",
    "bearer ",
    "Set-Cookie: ",
    "cookie=",
    "COOKIE: ",
    "api_key=",
    "API-KEY: ",
    "apikey",
    "PASSWORD=",
    "passwd: ",
    "pwd=",
    "client_secret: '",
    "access_key=",
    "token: ",
    "TOKEN=",
    "\u017fecret=",  # long s
    "to\u212aen: ",  # Kelvin sign
    "pa\u017f\u017fword=",
    "AP\u0130_KEY=",  # dotted capital I
    "ap\u0131_key=",  # dotless i
    "…[masked openai_key]",
    "postgres://app:",
    "://:",
    "@db",
    "SG.",
    "npm_",
    "https://hooks.slack.com/services/",
    "curl -b '",
    ' --cookie "',
    "sessionid=",
    "PHPSESSID=",
    "_TOKEN=",
    '_API_KEY: "',
    "PGPASSWORD=",
    "AccountKey=",
    "sk_live_",
    "curl -u admin:",
    "discord_token = '",
    "Basic ",
    "BASIC\t",
    '"auth": "',
    "auth=",
    "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t",
    "ewogICJ0eXBlIjogInNlcnZpY2VfYWNjb3VudCIs",
    "eyJhdXRocyI6",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    "MHcCAQEEI",
    "ZGVwbG95OlMzY3IzdA==",
    "_KEY_B64=",
    "kind: Secret\ndata:\n  ",
    "\u0130\u0130",  # lower() lengthens it: positions shift
    '"',
    "'",
    " ",
    "\n",
    "=",
    ": ",
    ".",
    "-",
    "_",
]
NOISE = st.text(
    alphabet=st.sampled_from("aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7+/=_-xX0AKIZ"), max_size=48
)
PIECE = st.one_of(st.sampled_from(FRAGMENTS), NOISE, st.text(max_size=6))
SECRET_TEXT = st.lists(PIECE, max_size=24).map("".join)


@settings(max_examples=1500, deadline=None)
@given(SECRET_TEXT)
def test_prefilter_generated_texts_match_exhaustive_scan(text: str) -> None:
    assert find_secrets(text) == find_secrets_exhaustive(text)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_prefilter_arbitrary_texts_match_exhaustive_scan(text: str) -> None:
    assert find_secrets(text) == find_secrets_exhaustive(text)


@pytest.mark.parametrize(
    "text",
    [
        "AKIAIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q AKIAIOSFODNN7EXAMPLE",  # overlapping anchors
        "xx proxy-authorization: Bearer abc123def456ghi789",
        "Set-Cookie: sessionid=8f7a6b5c4d3e2f1a; csrftoken=Zx9",
        "\u0130\u0130\u0130 then api_key=hQ8vT2pL9zK4mWq7",
        "\u017fecret=hQ8vT2pL9zK4mWq7xx and to\u212aen: rk9Xf2Lq8Pz3Wd7Vb1Nc",
    ],
    ids=["overlap", "proxy-auth", "set-cookie", "lengthening-lower", "ignorecase-letters"],
)
def test_prefilter_edge_cases_find_the_secret(text: str) -> None:
    hits = find_secrets(text)
    assert hits and hits == find_secrets_exhaustive(text)


@pytest.mark.parametrize(
    "text",
    ["", "plain prose about nothing in particular", "x" * 10_000, "日本語のテキスト"],
    ids=["empty", "prose", "long", "non-ascii"],
)
def test_prefilter_clean_texts_have_no_anchor(text: str) -> None:
    assert anchor_starts(text) == {}


def test_prefilter_fold_covers_every_ignorecase_letter() -> None:
    """Every non-ASCII character an IGNORECASE pattern reads as an ASCII letter is folded."""
    letter = re.compile("(?i)[a-z]")
    equated = {
        chr(cp) for cp in range(128, sys.maxunicode + 1) if letter.fullmatch(chr(cp)) is not None
    }
    folded = {c for c in equated if secrets._folded(c).isascii()}
    assert equated and equated == folded


@pytest.mark.parametrize("path", CORPUS_FILES, ids=[p.name for p in CORPUS_FILES])
def test_prefilter_corpus_file_matches_exhaustive_scan(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", errors="replace")
    assert find_secrets(text) == find_secrets_exhaustive(text)


@settings(max_examples=500, deadline=None)
@given(SECRET_TEXT)
def test_prefilter_automaton_finds_every_literal_str_find_does(text: str) -> None:
    assert anchor_starts(text) == naive_anchor_starts(text)
