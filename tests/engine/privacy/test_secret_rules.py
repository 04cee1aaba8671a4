"""gitleaks' rule file read as data: Go regexes translated, rules loaded, filters honoured."""

from __future__ import annotations

import re
import tomllib

import pytest

from ctxlab.engine.privacy import secret_rules
from ctxlab.engine.privacy.secret_rules import load_rules, translate


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"\b(SG\.(?i)[a-z0-9]{4})\b", r"\b(SG\.(?i:[a-z0-9]{4}))\b"),
        (r"(?i)abc", r"(?i)abc"),
        (r"x(a(?i)b|c)d", r"x(a(?i:b)|c)d"),
        (r"a(?:\s|\z)", r"a(?:\s|\Z)"),
    ],
)
def test_translate_go_flags_and_end_of_text(go: str, python: str) -> None:
    assert translate(go) == python
    re.compile(python)


def test_rules_load_and_skip_what_is_documented() -> None:
    rules = load_rules()
    ids = {r.id for r in rules}
    with secret_rules.RULES_FILE.open("rb") as handle:
        every = {r["id"] for r in tomllib.load(handle)["rules"]}
    assert len(rules) > 180 and ids <= every
    assert not ids & secret_rules.SKIPPED
    assert {"sendgrid-api-token", "npm-access-token", "slack-webhook-url"} <= ids
    assert all(min(map(len, r.keywords)) >= secret_rules.MIN_KEYWORD for r in rules)


def test_rule_filters_entropy_and_allowlist() -> None:
    (npm,) = [r for r in load_rules() if r.id == "npm-access-token"]
    low = npm.pattern.search("npm_" + "a" * 36 + " ")
    assert low is not None and not npm.accepts(low, *npm.secret_span(low))  # entropy 0
    (curl,) = [r for r in load_rules() if r.id == "curl-auth-user"]
    ok = curl.pattern.search("curl -u admin:S3cretPw1 https://x")
    placeholder = curl.pattern.search("curl -u admin:password https://x")
    assert ok is not None and curl.accepts(ok, *curl.secret_span(ok))
    assert placeholder is not None and not curl.accepts(placeholder, *curl.secret_span(placeholder))
