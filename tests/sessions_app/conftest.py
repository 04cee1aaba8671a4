from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from sessions_app import services

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
TAU_TASK = CORPUS / "openai-chat" / "taubench-gpt-4o-airline-task2-messages.json"


@pytest.fixture
def alice(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="alice", password="pw-alice-123")


@pytest.fixture
def bob(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="bob", password="pw-bob-123")


@pytest.fixture
def alice_client(alice: Any) -> Client:
    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def bob_client(bob: Any) -> Client:
    client = Client()
    client.force_login(bob)
    return client


def chat_json(*messages: dict[str, Any]) -> bytes:
    import json

    return json.dumps(list(messages)).encode()


@pytest.fixture
def small_chat() -> bytes:
    return chat_json(
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "List files"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
        {"role": "assistant", "content": "Two files."},
    )


@pytest.fixture
def tau_upload(alice: Any) -> services.ImportOutcome:
    outcome = services.upload_import(owner=alice, name=TAU_TASK.name, data=TAU_TASK.read_bytes())
    assert outcome.ok, outcome.error
    return outcome
