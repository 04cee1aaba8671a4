"""The upload list (``/transcripts/``) and one upload's page each render one page object and
serialise that same object as their JSON twin: a value set only on the object (after it was
read from the database) shows in both, and is gone once the builder is restored."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from sessions_app import services, upload_pages
from sessions_app.upload_pages import UploadListPage, UploadPage

pytestmark = pytest.mark.django_db

MARK = "value-set-on-the-page-object"


def test_upload_list_and_json_twin_read_one_object(
    alice: Any,
    alice_client: Client,
    small_chat: bytes,
    tau_upload: services.ImportOutcome,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert services.upload_import(owner=alice, name="first.json", data=small_chat).ok
    assert tau_upload.upload is not None
    second = tau_upload.upload.name
    build = upload_pages.upload_list_page

    def marked(user: Any, query: str, sort: str, page_number: str) -> UploadListPage:
        listing = build(user, query, sort, page_number)
        uploads = list(listing.page.object_list)[:1]  # narrowed on the object only
        uploads[0].name = MARK
        listing.page.object_list = uploads
        listing.sort = "name"
        return listing

    monkeypatch.setattr(upload_pages, "upload_list_page", marked)
    url = reverse("transcript-list")
    html = alice_client.get(url).content.decode()
    data = alice_client.get(url, {"format": "json"}).json()
    assert [u["name"] for u in data["uploads"]] == [MARK] and data["sort"] == "name"
    assert f">{MARK}</a>" in html and "first.json" not in html and second not in html
    monkeypatch.undo()
    plain = alice_client.get(url, {"format": "json"}).json()
    assert sorted(u["name"] for u in plain["uploads"]) == sorted(["first.json", second])
    assert plain["sort"] == "-created" and MARK not in alice_client.get(url).content.decode()


def test_upload_page_and_json_twin_read_one_object(
    tau_upload: services.ImportOutcome, alice_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    upload = tau_upload.upload
    assert upload is not None
    build = upload_pages.upload_page

    def marked(upload: Any, query: str, page_number: str) -> UploadPage:
        found = build(upload, query, page_number)
        transcripts = list(found.page.object_list)
        transcripts[0].title = MARK
        transcripts[0].message_count = 4242
        found.page.object_list = transcripts
        found.upload.name = "upload-" + MARK
        return found

    monkeypatch.setattr(upload_pages, "upload_page", marked)
    url = reverse("upload-detail", args=[upload.pk])
    html = alice_client.get(url).content.decode()
    data = alice_client.get(url, {"format": "json"}).json()
    assert data["transcripts"][0]["title"] == MARK and data["transcripts"][0]["messages"] == 4242
    assert data["upload"]["name"] == "upload-" + MARK
    assert f">{MARK}</a>" in html and "4,242" in html and f'<h1 class="mono">upload-{MARK}' in html
    monkeypatch.undo()
    plain = alice_client.get(url, {"format": "json"}).json()
    assert MARK not in str(plain) and plain["upload"]["name"] == upload.name
    assert plain["transcripts"][0]["messages"] == upload.transcripts.get().message_count != 4242
