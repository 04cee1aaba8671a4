"""Issue 32.1: every credential kind is found whatever surrounds it, and structured values
(headers, env assignments) are recognised in parsed JSON as in text."""

from __future__ import annotations

import json

import pytest

from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.privacy.secrets import find_secrets, mask, mask_conversation, scan_conversation

# One planted value per kind (made up, shaped like the real thing).
NPM = "npm_Zq7x2Lk9Pw4Rt6Yb1Nc8Vd3Fg5Hj0Ms2Ke4Q"
SENDGRID = "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"
GITHUB = "ghp_4Fq8Lm2Xz9Rt6Wb1Nc7Vd3Kg5Hj0Ps2Ye4Qa"
ANTHROPIC = "sk-ant-api03-Zq7x2Lk9Pw4Rt6Yb1Nc8Vd3Fg5Hj0Ms2Ke4Q"
AWS = "AKIAZ7Q2LK9PW4RT6YB1"
SLACK = "xoxb-2048-1337-Zq7x2Lk9Pw4Rt6Yb1Nc8Vd3F"
KINDS = [NPM, SENDGRID, GITHUB, ANTHROPIC, AWS, SLACK]
AROUND = [
    ("", ""),
    ("key ", "."),
    ("key ", ","),
    ("(", ")"),
    ("[", "]"),
    ("{", "}"),
    ('"', '"'),
    ("'", "'"),
    ("`", "`"),
    ("<", ">"),
    ("x=", ";"),
    ("", "\n"),
    ("", "\r\n"),
    ("", "\\n"),
    ("use ", "!"),
    ("see ", "?"),
    ("", ":"),
    ("", "|"),
]


@pytest.mark.parametrize("secret", KINDS, ids=["npm", "sendgrid", "github", "anthropic",
                                               "aws", "slack"])  # fmt: skip
@pytest.mark.parametrize("before,after", AROUND)
def test_credential_end_is_any_character_outside_its_alphabet(
    secret: str, before: str, after: str
) -> None:
    text = f"{before}{secret}{after}"
    masked = mask(text)
    assert secret not in masked, masked
    assert masked.startswith(before) and masked.endswith(after)


@pytest.mark.parametrize("secret", [NPM, GITHUB])
def test_a_longer_token_is_not_cut_into_a_shorter_one(secret: str) -> None:
    # The same alphabet continuing: not this kind's token (nothing half-masked).
    assert not [h for h in find_secrets(secret + "Zq7x") if h.kind.startswith("npm")]


def _call(arguments: object) -> Conversation:
    block = Block(BlockKind.TOOL_USE, tool_name="http_request", tool_id="c1", tool_input=arguments)
    return Conversation("c", "t", (Message(Role.ASSISTANT, (block,)),))


@pytest.mark.parametrize(
    "arguments,secret",
    [
        ({"headers": {"Authorization": "Basic dXNlcjpzM2NyZXQtcGFzc3dvcmQ="}},
         "dXNlcjpzM2NyZXQtcGFzc3dvcmQ="),
        ({"headers": [{"name": "Authorization", "value": "Bearer Zq7x2Lk9Pw4Rt6Yb1Nc8Vd3Fg"}]},
         "Zq7x2Lk9Pw4Rt6Yb1Nc8Vd3Fg"),
        ({"env": {"DEPLOY_TOKEN": "Zq7x2Lk9Pw4Rt6Yb"}}, "Zq7x2Lk9Pw4Rt6Yb"),
        ({"config": {"password": "hunter2-but-longer"}}, "hunter2-but-longer"),
        ({"url": "postgres://app:pa55word-x@db:5432/app"}, "pa55word-x"),
    ],
    ids=["basic-header", "har-pair", "env", "password-key", "url"],
)  # fmt: skip
def test_structured_values_in_parsed_json_are_masked(arguments: object, secret: str) -> None:
    conversation = _call(arguments)
    assert scan_conversation(conversation), "not found"
    masked = mask_conversation(conversation).messages[0].blocks[0].tool_input
    text = json.dumps(masked)
    assert secret not in text
    # Keys and the pair's name stay readable; only the value is masked.
    assert "masked" in text
    for key in ("headers", "Authorization", "env", "DEPLOY_TOKEN", "config", "password"):
        if key in json.dumps(arguments):
            assert key in text


def test_plain_json_values_stay_as_they_are() -> None:
    arguments = {"path": "/src/app.py", "description": "the token parser", "type": "string"}
    conversation = _call(arguments)
    assert not scan_conversation(conversation)
    assert mask_conversation(conversation).messages[0].blocks[0].tool_input == arguments


# Passwords on a command line and in a .netrc line: masked; the flags' everyday uses and
# references to variables stay as they are.
@pytest.mark.parametrize(
    "text,secret",
    [
        ("mysql -h db -uroot -pXk29vLq8 app", "Xk29vLq8"),
        ("mysqldump --single-transaction -u me -p'Sup3rS3cret99' db", "Sup3rS3cret99"),
        ("sshpass -p hunter22x ssh deploy@host", "hunter22x"),
        ("./manage --password Tr0ub4dor3x --user bob", "Tr0ub4dor3x"),
        ("machine api.example.com login bob password Xk29vLq8pMw3nZ", "Xk29vLq8pMw3nZ"),
    ],
)
def test_command_line_and_netrc_passwords_are_masked(text: str, secret: str) -> None:
    assert secret not in mask(text)


@pytest.mark.parametrize(
    "text",
    [
        "mkdir -p build/out",
        "git log -p HEAD~3",
        "mysql -u root -p mydb",
        "mysql -u root -p$MYSQL_PWD db",
        'psql --password "$PW"',
        "login: please enter your password now",
        "machine x login bob password $NETRC_PW",
    ],
)
def test_flags_and_references_that_are_not_passwords_stay(text: str) -> None:
    assert mask(text) == text
