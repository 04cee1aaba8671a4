"""Issue 15, "Secrets are masked everywhere": a generated transcript with one credential of
each kind (in messages, tool arguments, tool results, tool definitions, metadata and the
title) is imported through the real service and replayed; no page, JSON twin or CSV export
shows any raw value or even its middle 16 characters. Look-alikes stay visible."""

from __future__ import annotations

import json
import random
import string
from typing import Any

import pytest
from django.test import Client

from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role, ToolDef
from replay_app.models import RunStatus
from replay_app.runs import executor, services
from replay_app.runs.services import RunSpec
from sessions_app import services as session_services

pytestmark = pytest.mark.django_db

RND = random.Random(15)
ALNUM = string.ascii_letters + string.digits


def _r(n: int, alphabet: str = ALNUM) -> str:
    return "".join(RND.choice(alphabet) for _ in range(n))


def _b64(n: int) -> str:
    return _r(n, ALNUM + "+/")


# kind -> (the text that carries it, the raw secret). Every secret is >= 20 characters, so
# its middle 16 characters are a meaningful probe.
SECRETS: dict[str, tuple[str, str]] = {}


def _add(kind: str, secret: str, template: str) -> None:
    SECRETS[kind] = (template.format(s=secret), secret)


_add("postgres", "Pg" + _r(20), "DATABASE_URL=postgres://app:{s}@db.internal:5432/app")
_add("mysql", "My" + _r(20), "mysql -e x mysql://root:{s}@127.0.0.1:3306/shop")
_add("mongodb_srv", "Mo" + _r(20), "mongodb+srv://admin:{s}@cluster0.ab1cd.mongodb.net/test")
_add("redis", "Rd" + _r(20), "REDIS_URL=redis://:{s}@cache:6379/0")
_add("amqp", "Aq" + _r(20), "broker amqp://guest:{s}@rabbit//")
_add("sendgrid", "SG." + _r(22) + "." + _r(43), "SENDGRID_KEY_VALUE {s}")
_add("npm", "npm_" + _r(36).lower(), "//registry.example/:_authToken={s}\n")
_add(
    "slack_webhook",
    "https://hooks.slack.com/services/T" + _r(8).upper() + "/B" + _r(8).upper() + "/" + _r(24),
    "post to {s} when done",
)
_add("basic_json", _b64(30) + "==", '{{"headers": {{"Authorization": "Basic {s}"}}}}')
_add("bearer", _r(40), "curl -H 'Authorization: Bearer {s}' https://api.example")
_add(
    "curl_cookie",
    "sessionid=" + _r(32).lower() + "; csrftoken=" + _r(32),
    "curl -b '{s}' https://app.example/admin/",
)
_add("cookie_header", "sid=" + _r(30), "Cookie: {s}")
_add("env_token", _r(28), "export GITHUB_TOKEN={s}")
_add("env_key", _r(28), "STRIPE_KEY={s}")
_add("env_secret", _r(28), 'CLIENT_SECRET="{s}"')
_add("json_password", _r(24), '{{"db_password": "{s}"}}')
_add(
    "private_key",
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    + "\n".join(_b64(64) for _ in range(4))
    + "\n-----END OPENSSH PRIVATE KEY-----",
    "id_ed25519:\n{s}\n",
)
_add("aws_access", "AKIA" + _r(16, string.ascii_uppercase + string.digits), "aws_id {s}")
_add("aws_secret", _b64(40), "aws_secret_access_key = {s}")
_add("gcp", "AIza" + _r(35), "maps key {s}")
_add("azure", _b64(86) + "==", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={s};")
_add("anthropic", "sk-ant-api03-" + _r(93) + "AA", "key {s}")
_add("openai", "sk-proj-" + _r(48), "OpenAI(api_key='{s}')")
_add("github", "ghp_" + _r(36), "git clone https://{s}@github.com/o/r")
_add("slack_bot", "xoxb-" + _r(12, string.digits) + "-" + _r(24), "SLACK {s}")
_add("stripe", "sk_live_" + _r(24), "stripe.api_key = {s}")
_add("gitlab", "glpat-" + _r(20), "token {s} for gitlab")
_add("huggingface", "hf_" + _r(34, string.ascii_letters), "HF {s}")
_add(
    "jwt",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ" + _r(30) + "." + _r(43),
    "session token {s}",
)

LOOK_ALIKES = [
    "9d356847d46ece3a0bbd3bd64eef89afc78dae74",  # git SHA
    "01997e76-d124-7592-9cac-2ec05abbca08",  # UUID
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # sha256
    "toolu_01A09q90qw90lq917835lq9X",  # tool-call id
    "YOUR_API_KEY_HERE",
]


def _conversation() -> Conversation:
    kinds = list(SECRETS)
    messages = [
        Message(Role.SYSTEM, (Block(BlockKind.TEXT, text="You are a coding agent."),)),
        Message(
            Role.USER,
            (Block(BlockKind.TEXT, text="Look-alikes: " + " ".join(LOOK_ALIKES)),),
        ),
    ]
    for i, kind in enumerate(kinds):
        text, _ = SECRETS[kind]
        filler = "\n".join(f"line {j}: value {j * 7}" for j in range(120))
        call = Block(
            BlockKind.TOOL_USE,
            tool_id=f"toolu_{i:02d}",
            tool_name="Bash",
            tool_input={"command": text, "n": i},
        )
        messages += [
            Message(Role.USER, (Block(BlockKind.TEXT, text=f"Step {i}: {text}"),)),
            Message(Role.ASSISTANT, (Block(BlockKind.TEXT, text=f"Running {kind}"), call)),
            Message(
                Role.TOOL,
                (Block(BlockKind.TOOL_RESULT, tool_id=f"toolu_{i:02d}", text=f"{text}\n{filler}"),),
            ),
            Message(Role.ASSISTANT, (Block(BlockKind.TEXT, text=f"Done: {text}"),)),
        ]
    tool_text, _ = SECRETS["env_token"]
    return Conversation(
        id="secrets-everywhere",
        title="deploy with " + SECRETS["openai"][0],
        messages=tuple(messages),
        tools=(
            ToolDef(
                name="deploy",
                description="Deploys. Auth: " + SECRETS["bearer"][0],
                parameters={"type": "object", "default": SECRETS["postgres"][0]},
            ),
        ),
        metadata=(("env", tool_text), ("cwd", "/srv/app")),
    )


def _probes(secret: str) -> list[str]:
    middle = (len(secret) - 16) // 2
    return [secret, secret[middle : middle + 16]]


def _leaks(body: str) -> list[str]:
    body = body.replace("\\/", "/")  # JSON may escape slashes
    return [
        kind for kind, (_, secret) in SECRETS.items() for probe in _probes(secret) if probe in body
    ]


@pytest.fixture
def imported(user: Any) -> Any:
    outcome = session_services.conversation_import(
        owner=user,
        name="secrets.json",
        conversations=[_conversation()],
        source_format="openai-chat",
    )
    assert outcome.error is None and outcome.upload is not None
    return outcome.upload.transcripts.get()


def test_every_kind_is_found_and_counted(imported: Any) -> None:
    kinds_found = {s["kind"] for s in imported.secrets}
    in_messages = [s for s in imported.secrets if s["message"] is not None]
    # each kind appears 4 times in the messages (user text, tool input, result, reply)
    assert len(in_messages) >= 4 * len(SECRETS), sorted(kinds_found)
    places = {s.get("where") for s in imported.secrets if s["message"] is None}
    assert places == {"tool definition deploy", "metadata env"}  # the title: masked, not counted
    assert imported.secret_count == len(imported.secrets)


def test_no_page_or_export_shows_a_secret(client: Client, user: Any, imported: Any) -> None:
    client.force_login(user)
    runs = []
    for strategy, params in [
        ("qwenpaw", {"max_input_length": 4096}),
        ("cowagent", {"agent_max_context_tokens": 300, "agent_max_context_turns": 2}),
        ("baseagent", {"model_context_limit": 8000, "output_token_max": 1000}),
    ]:
        run = services.run_create(
            owner=user,
            transcript=imported,
            spec=RunSpec(strategy=strategy, params=params),
            enqueue=False,
        )
        run = executor.run_execute(run=run)
        assert run.status == RunStatus.DONE, run.error
        runs.append(run)
    t = imported.pk
    urls = [
        "/transcripts/",
        f"/transcripts/{t}/",
        f"/transcripts/{t}/?format=json",
        f"/transcripts/{t}/?page=2",
        f"/transcripts/files/{imported.upload_id}/",
        f"/transcripts/files/{imported.upload_id}/?format=json",
        "/runs/",
        "/compare/?runs=" + ",".join(str(r.pk) for r in runs),
        "/compare/?format=json&runs=" + ",".join(str(r.pk) for r in runs),
        "/compare/?format=csv&runs=" + ",".join(str(r.pk) for r in runs),
    ]
    summaries = 0
    for run in runs:
        urls += [
            f"/runs/{run.pk}/",
            f"/runs/{run.pk}/?format=json",
            f"/runs/{run.pk}/?format=csv",
            f"/runs/{run.pk}/lost/",
            f"/runs/{run.pk}/offloads/",
        ]
        urls += [f"/runs/{run.pk}/steps/{s}/" for s in range(0, run.steps_total, 7)]
        urls += [f"/runs/{run.pk}/steps/{s}/?format=json" for s in range(0, run.steps_total, 7)]
        for seq in run.summaries.values_list("seq", flat=True):
            summaries += 1
            urls += [
                f"/runs/{run.pk}/summaries/{seq}/",
                f"/runs/{run.pk}/summaries/{seq}/?format=json",
            ]
    assert summaries, "no strategy summarised: the summary pages went untested"
    checked = 0
    for url in urls:
        response = client.get(url)
        if response.status_code == 404 and "offloads" in url:
            continue
        assert response.status_code == 200, url
        body = b"".join(response) if response.streaming else response.content
        assert _leaks(body.decode()) == [], url
        checked += 1
    assert checked > 20
    # and the messages themselves still show the look-alikes and the key names
    page = client.get(f"/transcripts/{t}/?format=json").content.decode()
    for look_alike in LOOK_ALIKES:
        assert look_alike in page, look_alike
    assert "GITHUB_TOKEN=" in json.dumps(json.loads(page))


def test_import_warnings_quoting_the_file_are_masked(user: Any) -> None:
    token = SECRETS["github"][1]
    warning = {"message": f"tool arguments are not JSON: 'curl -H {token}'", "where": "line 2"}
    from sessions_app.secrets_glue import mask_strings

    masked = mask_strings({"warnings": [warning]})
    assert token not in json.dumps(masked)
    assert masked["warnings"][0]["where"] == "line 2"


def test_secret_only_in_the_title_is_masked(user: Any) -> None:
    secret = SECRETS["openai"][1]
    conversation = Conversation(
        id="t",
        title=f"key {secret}",
        messages=(Message(Role.USER, (Block(BlockKind.TEXT, text="hello"),)),),
    )
    outcome = session_services.conversation_import(
        owner=user, name="t.json", conversations=[conversation], source_format="openai-chat"
    )
    assert outcome.upload is not None
    transcript = outcome.upload.transcripts.get()
    assert secret not in transcript.title and "[masked openai_key]" in transcript.title
