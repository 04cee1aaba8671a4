from __future__ import annotations

import json

import pytest

from sessions_app.models import Message
from sessions_app.services import upload_import


@pytest.mark.django_db
def test_upload_import_lone_surrogate_stored_as_replacement(user) -> None:
    data = json.dumps([{"role": "user", "content": "title \ud800 here"}]).encode()
    outcome = upload_import(owner=user, name="s.json", data=data)
    assert outcome.error is None
    message = Message.objects.get(transcript__upload__owner=user)
    assert "\ufffd" in message.preview
    assert bytes(outcome.upload.data) == data  # the original bytes are kept as they were
