from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from sessions_app import services
from sessions_app.models import Message, Transcript, Upload

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
TAU_TASK = CORPUS / "openai-chat" / "taubench-gpt-4o-airline-task2-messages.json"
LIST_URL = reverse("transcript-list")
UPLOAD_URL = reverse("upload-create")


def post_files(client: Client, *files: tuple[str, bytes], **extra: Any) -> Any:
    uploads = [SimpleUploadedFile(name, data) for name, data in files]
    return client.post(UPLOAD_URL, {"files": uploads, "format": extra.pop("format", "")}, **extra)


# Login and ownership


def test_transcript_list_anonymous_redirects_to_login(client: Client) -> None:
    response = client.get(LIST_URL)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_transcript_list_empty(alice_client: Client) -> None:
    response = alice_client.get(LIST_URL)
    assert response.status_code == 200
    assert b"No transcripts yet" in response.content


@pytest.mark.parametrize(
    "url_name",
    ["transcript-detail", "upload-detail", "upload-download"],
)
@pytest.mark.parametrize("fmt", ["", "?format=json"], ids=["page", "json"])
def test_other_users_data_is_404(
    alice: Any, bob_client: Client, small_chat: bytes, url_name: str, fmt: str
) -> None:
    outcome = services.upload_import(owner=alice, name="chat.json", data=small_chat)
    assert outcome.upload is not None
    pk = Transcript.objects.get().pk if url_name == "transcript-detail" else outcome.upload.pk
    response = bob_client.get(reverse(url_name, args=[pk]) + fmt)
    assert response.status_code == 404


def test_transcript_list_shows_only_own_uploads(
    alice: Any, bob_client: Client, small_chat: bytes
) -> None:
    services.upload_import(owner=alice, name="alice-secret-file.json", data=small_chat)
    response = bob_client.get(LIST_URL)
    assert b"alice-secret-file" not in response.content
    assert bob_client.get(LIST_URL + "?format=json").json()["uploads"] == []


@pytest.mark.parametrize("url_name", ["upload-reparse", "upload-delete"])
def test_other_users_upload_actions_are_404(
    alice: Any, bob_client: Client, small_chat: bytes, url_name: str
) -> None:
    outcome = services.upload_import(owner=alice, name="chat.json", data=small_chat)
    assert outcome.upload is not None
    response = bob_client.post(reverse(url_name, args=[outcome.upload.pk]))
    assert response.status_code == 404
    assert Upload.objects.count() == 1


# Upload


def test_upload_create_single_file(alice_client: Client, small_chat: bytes) -> None:
    response = post_files(alice_client, ("chat.json", small_chat))
    assert response.status_code == 200
    assert b"imported" in response.content and b"openai-chat" in response.content
    assert Upload.objects.get().name == "chat.json"


def test_upload_create_many_files_each_reported(alice_client: Client, small_chat: bytes) -> None:
    response = post_files(
        alice_client,
        ("chat.json", small_chat),
        (TAU_TASK.name, TAU_TASK.read_bytes()),
        ("broken.json", b'[{"role": "user", "content": "hi"'),
        format="",
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count('class="upload-result') == 3
    assert "broken.json" in body and "not imported" in body
    assert Upload.objects.count() == 2


def test_upload_create_duplicate_is_reported(alice_client: Client, small_chat: bytes) -> None:
    post_files(alice_client, ("chat.json", small_chat))
    response = post_files(alice_client, ("again.json", small_chat))
    assert b"already imported" in response.content
    assert Upload.objects.count() == 1


BAD = {
    "truncated-json": (b'[\n{"role": "user",\n "content": "hi"', "line 3"),
    "binary": (bytes(range(256)) * 4, "expected"),
    "empty": (b"", "empty"),
    "latin-1": ('[{"role": "user", "content": "caf\xe9"}]'.encode("latin-1"), "byte"),
    "unknown-records": (b'{"foo": 1}\n{"bar": 2}\n', "bad.json"),
}


@pytest.mark.parametrize(("data", "needle"), BAD.values(), ids=BAD.keys())
def test_upload_create_bad_file_error_in_page(
    alice_client: Client, data: bytes, needle: str
) -> None:
    response = post_files(alice_client, ("bad.json", data))
    assert response.status_code == 400
    body = response.content.decode()
    assert "not imported" in body and "bad.json" in body and needle in body
    assert Upload.objects.count() == 0 and Message.objects.count() == 0


def test_upload_create_forced_wrong_format(alice_client: Client) -> None:
    response = post_files(
        alice_client, (TAU_TASK.name, TAU_TASK.read_bytes()), format="claude-code"
    )
    assert response.status_code == 400
    assert b"not imported" in response.content
    assert Upload.objects.count() == 0


def test_upload_create_over_limit_refused_by_handler(
    alice_client: Client, small_chat: bytes, settings: Any
) -> None:
    settings.CTXLAB_MAX_UPLOAD_BYTES = 64
    response = post_files(alice_client, ("big.json", small_chat), HTTP_HX_REQUEST="true")
    assert b"upload limit" in response.content and b"big.json" in response.content
    assert Upload.objects.count() == 0


def test_upload_create_json_twin(alice_client: Client, small_chat: bytes) -> None:
    response = alice_client.post(
        UPLOAD_URL + "?format=json", {"files": [SimpleUploadedFile("c.json", small_chat)]}
    )
    result = response.json()["results"][0]
    assert result["file"] == "c.json" and result["error"] is None
    assert result["conversations"][0]["tool_calls"] == 1


def test_upload_create_requires_csrf(alice: Any, small_chat: bytes) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = post_files(client, ("chat.json", small_chat))
    assert response.status_code == 403
    assert Upload.objects.count() == 0


# List


def test_transcript_list_search_and_sort(
    alice: Any, alice_client: Client, small_chat: bytes
) -> None:
    services.upload_import(owner=alice, name="small.json", data=small_chat)
    services.upload_import(owner=alice, name=TAU_TASK.name, data=TAU_TASK.read_bytes())

    by_size = alice_client.get(LIST_URL + "?format=json&sort=-size").json()["uploads"]
    assert [u["name"] for u in by_size] == [TAU_TASK.name, "small.json"]
    by_size_asc = alice_client.get(LIST_URL + "?format=json&sort=size").json()["uploads"]
    assert [u["name"] for u in by_size_asc] == ["small.json", TAU_TASK.name]
    found = alice_client.get(LIST_URL + "?format=json&q=taubench").json()["uploads"]
    assert [u["name"] for u in found] == [TAU_TASK.name]
    by_title = alice_client.get(LIST_URL + "?format=json&q=downgrade").json()["uploads"]
    assert [u["name"] for u in by_title] == [TAU_TASK.name]


def test_transcript_list_htmx_returns_table_fragment(
    alice: Any, alice_client: Client, small_chat: bytes
) -> None:
    services.upload_import(owner=alice, name="small.json", data=small_chat)
    response = alice_client.get(LIST_URL, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="upload-table")
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="upload-table"')
    assert "<html" not in body and "small.json" in body


def test_transcript_list_groups_many_conversations(alice: Any, alice_client: Client) -> None:
    path = CORPUS / "openai-chat" / "taubench-gpt-4o-airline.json"
    services.upload_import(owner=alice, name=path.name, data=path.read_bytes())
    body = alice_client.get(LIST_URL).content.decode()
    assert "200 conversations" in body
    assert body.count("<tr>") == 2  # header + the one upload row
    detail = alice_client.get(reverse("upload-detail", args=[Upload.objects.get().pk]))
    assert detail.content.decode().count('href="/transcripts/') >= 50
    assert b"Page 1 of 4" in detail.content


# Transcript page


def test_transcript_detail_page(alice: Any, alice_client: Client) -> None:
    services.upload_import(owner=alice, name=TAU_TASK.name, data=TAU_TASK.read_bytes())
    transcript = Transcript.objects.get()
    response = alice_client.get(transcript.get_absolute_url())
    body = response.content.decode()
    assert response.status_code == 200
    assert body.count('class="message-item') == 62
    assert '<details class="block block-tool-use">' in body  # tool calls collapsed
    assert "tokens" in body


def test_transcript_detail_pages_and_loader(alice: Any, alice_client: Client) -> None:
    services.upload_import(owner=alice, name=TAU_TASK.name, data=TAU_TASK.read_bytes())
    url = Transcript.objects.get().get_absolute_url()
    first = alice_client.get(url + "?per_page=25").content.decode()
    assert first.count('class="message-item') == 25
    assert 'hx-trigger="revealed"' in first and "page=2&amp;per_page=25" in first

    fragment = alice_client.get(
        url + "?page=3&per_page=25", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="message-page-3"
    ).content.decode()
    assert "<html" not in fragment
    assert fragment.count('class="message-item') == 12  # 62 = 25 + 25 + 12
    assert 'id="m50"' in fragment and 'hx-trigger="revealed"' not in fragment


def test_transcript_detail_json_twin(alice: Any, alice_client: Client) -> None:
    services.upload_import(owner=alice, name=TAU_TASK.name, data=TAU_TASK.read_bytes())
    transcript = Transcript.objects.get()
    data = alice_client.get(transcript.get_absolute_url() + "?format=json&per_page=40").json()
    assert data["count"] == 62 and data["pages"] == 2 and data["page"] == 1
    assert [m["index"] for m in data["messages"]] == list(range(40))
    assert data["transcript"]["tool_calls"] == transcript.tool_call_count
    second = alice_client.get(data["next"]).json()
    assert [m["index"] for m in second["messages"]] == list(range(40, 62))
    assert second["next"] is None
    assert sum(m["reference_tokens"] for m in data["messages"] + second["messages"]) == (
        transcript.reference_tokens
    )


def test_transcript_detail_usage_chart_when_reported(alice: Any, alice_client: Client) -> None:
    path = CORPUS / "claude-code" / "sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl"
    services.upload_import(owner=alice, name=path.name, data=path.read_bytes())
    transcript = Transcript.objects.get()
    body = alice_client.get(transcript.get_absolute_url()).content.decode()
    assert transcript.reported_peak_context
    assert 'id="usage-chart"' in body and "plotly/plotly.min.js" in body


def test_upload_download_returns_original_bytes(alice: Any, alice_client: Client) -> None:
    data = TAU_TASK.read_bytes()
    outcome = services.upload_import(owner=alice, name=TAU_TASK.name, data=data)
    assert outcome.upload is not None
    response = alice_client.get(reverse("upload-download", args=[outcome.upload.pk]))
    assert response.content == data
    assert "attachment" in response["Content-Disposition"]


def test_upload_delete_removes_everything(
    alice: Any, alice_client: Client, small_chat: bytes
) -> None:
    outcome = services.upload_import(owner=alice, name="chat.json", data=small_chat)
    assert outcome.upload is not None
    response = alice_client.post(reverse("upload-delete", args=[outcome.upload.pk]))
    assert response.status_code == 302
    assert Upload.objects.count() == Transcript.objects.count() == Message.objects.count() == 0


# Escaping and secrets


def test_transcript_text_is_escaped(alice: Any, alice_client: Client) -> None:
    payload = "<script>window.__xss=1</script><img src=x onerror=alert(1)>"
    data = json.dumps(
        [
            {"role": "user", "content": payload},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": payload, "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": payload},
        ]
    ).encode()
    services.upload_import(owner=alice, name=payload + ".json", data=data)
    pages = [
        alice_client.get(LIST_URL).content.decode(),
        alice_client.get(Transcript.objects.get().get_absolute_url()).content.decode(),
        alice_client.get(reverse("upload-detail", args=[Upload.objects.get().pk])).content.decode(),
    ]
    for body in pages:
        assert "<script>window.__xss" not in body
        assert "<img src=x" not in body
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in pages[1]


def test_secrets_are_masked_in_pages_and_json(alice: Any, alice_client: Client) -> None:
    key = "sk-ant-api03-" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz" * 2
    data = json.dumps(
        [
            {"role": "user", "content": f"my key is {key} please use it"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {
                            "name": "bash",
                            "arguments": json.dumps({"cmd": f"curl -H 'x-api-key: {key}'"}),
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ]
    ).encode()
    outcome = services.upload_import(owner=alice, name="leak.json", data=data)
    assert outcome.upload is not None and outcome.upload.secret_count == 2
    transcript = Transcript.objects.get()
    assert [(s["message"], s["block"], s["kind"]) for s in transcript.secrets] == [
        (0, 0, "anthropic_key"),
        (1, 0, "anthropic_key"),
    ]
    pages = [
        alice_client.get(transcript.get_absolute_url()).content.decode(),
        alice_client.get(transcript.get_absolute_url() + "?format=json").content.decode(),
        alice_client.get(LIST_URL).content.decode(),
    ]
    for body in pages:
        assert key not in body and key[10:30] not in body
    assert "[masked anthropic_key]" in pages[0] and 'id="secrets"' in pages[0]
    assert "my key is" in transcript.secrets[0]["context"]
    assert key not in json.dumps(
        services.load_conversation(transcript.pk).messages[1].blocks[0].tool_input
    )
    # The original bytes are kept untouched for the owner's download.
    assert key.encode() in bytes(Upload.objects.get().data)


def test_a_session_without_messages_says_so(alice: Any, alice_client: Client) -> None:
    # aider's chat history holds sessions that started and left (a header, no chat): the
    # real history in the corpus has dozens of them.
    data = (
        b"# aider chat started at 2024-08-06 08:28:28\n\n\n"
        b"# aider chat started at 2024-08-06 08:40:35\n\n#### fix the test\n\nDone.\n"
    )
    outcome = services.upload_import(owner=alice, name="history.md", data=data, format="aider")
    empty, chat = Transcript.objects.filter(upload=outcome.upload).order_by("position")
    assert (empty.message_count, chat.message_count > 0) == (0, True)
    assert 'id="no-messages"' in alice_client.get(f"/transcripts/{empty.pk}/").content.decode()
    assert 'id="no-messages"' not in alice_client.get(f"/transcripts/{chat.pk}/").content.decode()
