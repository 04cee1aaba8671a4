"""Issue 32.1, the base64 stretch on every surface: a transcript carrying each shape of base64
credential (HTTP Basic, docker's "auth", a base64 service-account key, a base64 private key,
``*_KEY_B64=`` and ``SECRET=`` assignments, a secret-named JSON value, a ``?token=`` URL and a
k8s Secret's data) is imported and replayed; no transcript page, JSON twin, run, step and
summary page, CSV, downloaded comparison report or admin page shows a raw value or its middle
16 characters. Ordinary base64 (an image) stays visible."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from django.test import Client

from ctxlab.engine.core.model import Block, BlockKind, Conversation, Message, Role
from replay_app.models import RunStatus
from replay_app.runs import executor, services
from replay_app.runs.services import RunSpec
from sessions_app import services as session_services

pytestmark = pytest.mark.django_db


def b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


SERVICE_ACCOUNT = b64(
    json.dumps(
        {
            "type": "service_account",
            "project_id": "audit-project-7",
            "private_key_id": "f3a9c1d27b",
            "client_email": "deploy@audit-project-7.iam.gserviceaccount.com",
        },
        indent=2,
    )
)
PEM = b64(
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n"
    "-----END PRIVATE KEY-----\n"
)
BASIC = b64("svc-deploy:Vq8#mZ2!rT6pL0xw")
DOCKER = b64("robot$audit:Zq7x2Lk9Pw4Rt6Yb1Nc8")
KEY_B64 = b64("signing-key-Hf83kQp2Lz9Wm4Tx")
SECRET_ENV = b64("app-secret-Nc8Vd3Fg5Hj0Ms2K")
JSON_SECRET = b64("client-secret-Rt6Yb1Nc8Vd3F")
URL_TOKEN = b64("tok:Lk9Pw4Rt6Yb1Nc8Vd3Fg5")
K8S_PASSWORD = b64("k8s-db-password-Zq7x2Lk9")
K8S_USER = b64("audit-db-user-Wm4Tx8Lz")
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

# (text a message carries, the raw value that must not show)
PLANTED: dict[str, tuple[str, str]] = {
    "basic": (f"curl -u x https://ci.example -H 'X-Auth: Basic {BASIC}'.", BASIC),
    "docker": (json.dumps({"auths": {"ghcr.io": {"auth": DOCKER}}}), DOCKER),
    "service_account": (f"the key file, base64: {SERVICE_ACCOUNT}.", SERVICE_ACCOUNT),
    "pem": (f"echo {PEM} | base64 -d > key.pem", PEM),
    "key_b64": (f"export SIGNING_KEY_B64={KEY_B64}\n", KEY_B64),
    "secret_env": (f"SECRET={SECRET_ENV};", SECRET_ENV),
    "json_secret": (json.dumps({"client_secret": JSON_SECRET}), JSON_SECRET),
    "url_token": (f"GET https://api.example.com/v2/items?token={URL_TOKEN}&page=3", URL_TOKEN),
    "k8s": (
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  password: {K8S_PASSWORD}\n",
        K8S_PASSWORD,
    ),
    "k8s_user": (f"kind: Secret\ndata:\n  db.user: {K8S_USER}\n", K8S_USER),
}
# Parsed tool arguments: the key is all that says what the value is.
ARGUMENTS = {
    "headers": {"Authorization": f"Basic {BASIC}"},
    "auth": DOCKER,
    "credentials": SERVICE_ACCOUNT,
    "PRIVATE_KEY_B64": PEM,
}


def _conversation() -> Conversation:
    messages = [Message(Role.SYSTEM, (Block(BlockKind.TEXT, text="You are a coding agent."),))]
    messages.append(Message(Role.USER, (Block(BlockKind.TEXT, text=f"logo: {PNG}"),)))
    for i, (kind, (text, _)) in enumerate(PLANTED.items()):
        filler = "\n".join(f"line {j}: value {j * 7}" for j in range(120))
        call = Block(
            BlockKind.TOOL_USE,
            tool_id=f"toolu_{i:02d}",
            tool_name="http_request",
            tool_input={"command": text, **ARGUMENTS},
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
    return Conversation(
        id="base64-everywhere",
        title="deploy " + PLANTED["basic"][0],
        messages=tuple(messages),
        metadata=(("docker", PLANTED["docker"][0]),),
    )


def _leaks(body: str) -> list[str]:
    body = body.replace("\\/", "/").replace("\\u002B", "+").replace("&#x2B;", "+")
    found = []
    for kind, (_, secret) in PLANTED.items():
        middle = (len(secret) - 16) // 2
        if secret in body or secret[middle : middle + 16] in body:
            found.append(kind)
    return found


def _get(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return (b"".join(response) if response.streaming else response.content).decode()


def test_no_surface_shows_a_base64_credential(user: Any, staff_user: Any) -> None:
    outcome = session_services.conversation_import(
        owner=user, name="b64.json", conversations=[_conversation()], source_format="openai-chat"
    )
    assert outcome.error is None and outcome.upload is not None
    transcript = outcome.upload.transcripts.get()
    assert {s["kind"] for s in transcript.secrets} >= {
        "basic_auth",
        "encoded_credential",
        "k8s_secret",
    }
    runs = []
    for strategy, params in [
        ("qwenpaw", {"max_input_length": 4096}),
        ("baseagent", {"model_context_limit": 8000, "output_token_max": 1000}),
    ]:
        run = services.run_create(
            owner=user, transcript=transcript, spec=RunSpec(strategy=strategy, params=params),
            enqueue=False,
        )  # fmt: skip
        run = executor.run_execute(run=run)
        assert run.status == RunStatus.DONE, run.error
        runs.append(run)
    ids = ",".join(str(r.pk) for r in runs)
    t = transcript.pk
    urls = [
        f"/transcripts/{t}/",
        f"/transcripts/{t}/?format=json",
        f"/transcripts/{t}/?page=2",
        f"/transcripts/files/{transcript.upload_id}/?format=json",
        f"/compare/?runs={ids}",
        f"/compare/?format=json&runs={ids}",
        f"/compare/?format=csv&runs={ids}",
        f"/compare/?format=report&runs={ids}",
    ]
    summaries = 0
    for run in runs:
        urls += [f"/runs/{run.pk}/", f"/runs/{run.pk}/?format=json", f"/runs/{run.pk}/?format=csv"]
        urls += [f"/runs/{run.pk}/steps/{s}/?format=json" for s in range(0, run.steps_total, 9)]
        for seq in run.summaries.values_list("seq", flat=True):
            summaries += 1
            urls += [f"/runs/{run.pk}/summaries/{seq}/", f"/runs/{run.pk}/summaries/{seq}/?format=json"]  # fmt: skip
    assert summaries, "no strategy summarised: the summary pages went untested"
    client = Client()
    client.force_login(user)
    for url in urls:
        assert _leaks(_get(client, url)) == [], url
    page = _get(client, f"/transcripts/{t}/?format=json")
    assert PNG in page.replace("\\/", "/")  # ordinary base64 stays
    assert "SIGNING_KEY_B64=" in page and "client_secret" in page  # the names stay

    admin = Client()
    admin.force_login(staff_user)
    message = transcript.messages.order_by("index")[3]
    summary = runs[0].summaries.first()
    admin_urls = [
        "/admin/sessions_app/transcript/",
        f"/admin/sessions_app/transcript/{t}/change/",
        f"/admin/sessions_app/upload/{transcript.upload_id}/change/",
        f"/admin/sessions_app/message/?transcript__id__exact={t}",
        f"/admin/sessions_app/message/{message.pk}/change/",
        "/admin/replay_app/runsummary/",
    ]
    if summary is not None:
        admin_urls.append(f"/admin/replay_app/runsummary/{summary.pk}/change/")
    for url in admin_urls:
        assert _leaks(_get(admin, url)) == [], url
