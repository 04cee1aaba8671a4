from __future__ import annotations

import pytest

from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from ctxlab.engine.privacy.secrets import find_secrets, mask, mask_conversation, scan_conversation

ANTHROPIC = "sk-ant-api03-" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9fG1hJ3kL5mN7pQ9r-AA"
OPENAI = "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HECdnH\n"
    "lWu2/a1gB9JW5TBQ+AVpum9Okx7KfqkfBKL9mcHgSVhRk9ZbgOUt3XU5gUCVMTrb\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "kind", "secret"),
    [
        (f"export ANTHROPIC_API_KEY={ANTHROPIC}", "anthropic_key", ANTHROPIC),
        (f"client = OpenAI(api_key='{OPENAI}')", "openai_key", OPENAI),
        ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n", "aws_access_key", "AKIAIOSFODNN7EXAMPLE"),
        ("token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + " ok", "github_token",
         "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
        ("pat: github_pat_11ABCDEFG0123456789_abcdefghijKLMNOP", "github_token",
         "github_pat_11ABCDEFG0123456789_abcdefghijKLMNOP"),
        ("SLACK=xoxb-123456789012-abcdefABCDEF", "slack_token", "xoxb-123456789012-abcdefABCDEF"),
        ("key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q&x", "google_api_key",
         "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
        ("Authorization: Bearer abc123def456ghi789", "bearer_token", "abc123def456ghi789"),
        (f'{{"authorization": "Bearer {JWT}"}}', "bearer_token", JWT),
        (f"session={JWT}", "jwt", JWT),
        ("Cookie: sessionid=8f7a6b5c4d3e2f1a; csrftoken=Zx9", "cookie",
         "sessionid=8f7a6b5c4d3e2f1a; csrftoken=Zx9"),
        (f"key file:\n{PEM}\n", "private_key", PEM),
        ('DB_PASSWORD="hQ8#vT2!pL9zK4mW"', "credential_assignment", "hQ8#vT2!pL9zK4mW"),
        ("stripe_secret: rk9Xf2Lq8Pz3Wd7Vb1Nc", "credential_assignment", "rk9Xf2Lq8Pz3Wd7Vb1Nc"),
    ],
    ids=["anthropic", "openai", "aws", "github", "github-pat", "slack", "google", "bearer",
         "bearer-json", "jwt", "cookie", "pem", "password", "secret"],
)  # fmt: skip
def test_secrets_positive(text: str, kind: str, secret: str) -> None:
    (hit,) = find_secrets(text)
    assert (hit.kind, text[hit.start : hit.end]) == (kind, secret)
    masked = mask(text)
    assert secret not in masked and f"…[masked {kind}]" in masked
    assert masked.startswith(text[: hit.start])  # the key name / header stays readable
    assert mask(masked) == masked  # idempotent, deterministic


@pytest.mark.parametrize(
    "text",
    [
        "commit 9d356847d46ece3a0bbd3bd64eef89afc78dae74 fixes it",
        "session 01997e76-d124-7592-9cac-2ec05abbca08 started",
        "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "token = 9d356847d46ece3a0bbd3bd64eef89afc78dae74",
        "password = os.environ['DB_PASSWORD']",
        "api_key=YOUR_API_KEY_HERE",
        "api_key: <REDACTED>",
        "the password field must be at least 8 characters long",
        "max_tokens: 4096, input_tokens: 12072",
        "cookie: <REDACTED>",
        "He was the bearer of bad news for everybody involved",
        "see https://docs.example/tokens-and-secrets for details",
        "const tokenCount = computeTokens(messages);",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    ],
    ids=["git-sha", "uuid", "sha256", "hex-token", "env-ref", "placeholder", "redacted",
         "prose", "token-counts", "cookie-redacted", "bearer-prose", "url", "code", "public-key"],
)  # fmt: skip
def test_secrets_negative(text: str) -> None:
    assert find_secrets(text) == []
    assert mask(text) == text


def test_secrets_mask_keeps_short_prefix_and_other_text() -> None:
    text = f"a {ANTHROPIC} b {OPENAI} c"
    assert mask(text) == "a sk-ant…[masked anthropic_key] b sk-pro…[masked openai_key] c"


def _conv() -> Conversation:
    call = Block(
        BlockKind.TOOL_USE,
        tool_id="t1",
        tool_name="Bash",
        tool_input={"command": f"curl -H 'Authorization: Bearer {JWT}' x", "n": 3},
    )
    result = Block(
        BlockKind.TOOL_RESULT,
        tool_id="t1",
        text="ok",
        parts=(Block(BlockKind.TEXT, text=f"OPENAI_API_KEY={OPENAI}"),),
    )
    return Conversation(
        id="c",
        title=f"key {ANTHROPIC}",
        messages=(
            Message(Role.USER, (Block(BlockKind.TEXT, text="hello, commit abcdef1234567"),)),
            Message(Role.ASSISTANT, (Block(BlockKind.TEXT, text="running"), call)),
            Message(Role.TOOL, (result,)),
        ),
    )


def test_secrets_scan_conversation_locates_hits() -> None:
    assert scan_conversation(_conv()) == [(1, 1, "bearer_token"), (2, 0, "openai_key")]


def test_secrets_mask_conversation_returns_masked_copy() -> None:
    conv = _conv()
    masked = mask_conversation(conv)
    assert scan_conversation(masked) == []
    assert masked.messages[0] is conv.messages[0]  # untouched messages are reused
    assert JWT not in masked.messages[1].blocks[1].tool_input["command"]
    assert masked.messages[1].blocks[1].tool_input["n"] == 3
    assert OPENAI not in masked.messages[2].blocks[0].parts[0].text
    assert ANTHROPIC not in masked.title
    assert JWT in conv.messages[1].blocks[1].tool_input["command"]  # original unchanged


@pytest.mark.parametrize(
    ("text", "kind", "secret"),
    [
        ("postgres://app:Pg9naHVck6pbd4@db:5432/app", "url_password", "Pg9naHVck6pbd4"),
        ("mongodb+srv://admin:Zq8pL2mWx@cluster0.ab.mongodb.net/t", "url_password", "Zq8pL2mWx"),
        ("redis://:r3d1sP4ss@cache:6379/0", "url_password", "r3d1sP4ss"),
        ("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 ok",
         "sendgrid_api_token",
         "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"),
        ("npm_abcdefghijklmnopqrstuvwxyz0123456789 ", "npm_access_token",
         "npm_abcdefghijklmnopqrstuvwxyz0123456789"),
        ("hook https://hooks.slack.com/services/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",
         "slack_webhook_url",
         "https://hooks.slack.com/services/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"),
        ('{"Authorization": "Basic dXNlcjpwYXNzd29yZA=="}', "bearer_token", "dXNlcjpwYXNzd29yZA=="),
        ('{\\"authorization\\": \\"Basic dXNlcjpwYXNzd29yZA==\\"}', "bearer_token",
         "dXNlcjpwYXNzd29yZA=="),
        ("curl -b 'sessionid=k2j3h4g5f6d7s8a9; csrftoken=Zx9abcdefgh' https://x", "cookie",
         "sessionid=k2j3h4g5f6d7s8a9; csrftoken=Zx9abcdefgh"),
        ("PHPSESSID=9f8e7d6c5b4a3f2e1d0c", "session_cookie", "9f8e7d6c5b4a3f2e1d0c"),
        ("export GITHUB_TOKEN=hunter2hunter2", "env_secret", "hunter2hunter2"),
        ('"STRIPE_KEY": "rk9Xf2Lq8Pz3Wd7V"', "env_secret", "rk9Xf2Lq8Pz3Wd7V"),
        ("AccountName=x;AccountKey=abcdEFGH1234abcdEFGH1234abcdEFGH==;", "azure_key",
         "abcdEFGH1234abcdEFGH1234abcdEFGH=="),
        ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe_access_token", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ],
    ids=["postgres", "mongodb-srv", "redis-no-user", "sendgrid", "npm", "slack-webhook",
         "basic-json", "basic-escaped-json", "curl-cookie-jar", "phpsessid", "env-token",
         "env-key-json", "azure", "stripe"],
)  # fmt: skip
def test_secrets_positive_families(text: str, kind: str, secret: str) -> None:
    (hit,) = find_secrets(text)
    assert (hit.kind, text[hit.start : hit.end]) == (kind, secret)
    assert secret not in mask(text) and mask(mask(text)) == mask(text)


@pytest.mark.parametrize(
    "text",
    [
        "see postgres://user:pass@host:5432/dbname",
        "postgres://app:${DB_PASSWORD}@db/app",
        "ssh://git@github.com:22/o/r.git",
        "toolu_01A09q90qw90lq917835lq9X",
        '"sessionId": "01997e76-d124-7592-9cac-2ec05abbca08"',
        "ANTHROPIC_API_KEY=YOUR_API_KEY_HERE",
        "GITHUB_TOKEN=$GITHUB_TOKEN",
        "MAX_TOKENS=4096",
        "VUE_APP_KEY=vue-todo-list",
        "the linear model fits; test_value = 3",
        "git checkout -b feature/new-branch-2",
    ],
    ids=["url-placeholder", "url-env-ref", "ssh-user-only", "toolu", "session-uuid",
         "env-placeholder", "env-ref", "env-number", "env-words", "prose", "git-branch"],
)  # fmt: skip
def test_secrets_negative_families(text: str) -> None:
    assert find_secrets(text) == []


def test_secrets_tool_definitions_and_metadata_are_masked() -> None:
    from ctxlab.engine.core.model import ToolDef
    from ctxlab.engine.privacy.secrets import scan_extras

    conv = Conversation(
        id="c",
        title="t",
        messages=(),
        tools=(ToolDef("deploy", f"auth {OPENAI}", {"default": f"x {ANTHROPIC}"}),),
        metadata=(("env", f"OPENAI_API_KEY={OPENAI}"), ("cwd", "/srv")),
    )
    assert scan_extras(conv) == [
        ("tools", 0, "openai_key"),
        ("tools", 0, "anthropic_key"),
        ("metadata", 0, "openai_key"),
    ]
    masked = mask_conversation(conv)
    assert scan_extras(masked) == []
    assert OPENAI not in repr(masked) and ANTHROPIC not in repr(masked)
    assert masked.metadata[1] == ("cwd", "/srv")
