"""The upload result counts in words that fit the number ('1 message, 1 tool call', not
'1 messages, 1 tool calls'); a page header of a one-message conversation likewise."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def _upload(client: Client, name: str, messages: list[dict[str, Any]]) -> str:
    data = json.dumps({"messages": messages}).encode()
    response = client.post(
        reverse("upload-create"),
        {"files": [SimpleUploadedFile(name, data)], "format": ""},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    return str(response.content.decode())


def test_counts_are_singular_for_one_and_plural_for_more(alice_client: Client) -> None:
    one = _upload(alice_client, "one.json", [{"role": "user", "content": "hello"}])
    assert "1 message, 0 tool calls" in one
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    two = _upload(
        alice_client,
        "two.json",
        [
            {"role": "user", "content": "list files"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
        ],
    )
    assert "2 messages, 1 tool call<" in two
