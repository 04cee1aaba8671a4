from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command

from sessions_app.management.commands.load_demo import DEMO_FILES, LONG_NAME
from sessions_app.models import Message, Transcript, Upload

pytestmark = pytest.mark.django_db


def test_load_demo_is_idempotent_and_has_a_long_session(user: Any) -> None:
    err = io.StringIO()
    call_command("load_demo", "--user", user.username, stdout=io.StringIO(), stderr=err)
    assert err.getvalue() == ""
    counts = (Upload.objects.count(), Transcript.objects.count(), Message.objects.count())
    assert counts[0] == len(DEMO_FILES) + 1

    call_command("load_demo", "--user", user.username, stdout=io.StringIO(), stderr=err)
    assert (Upload.objects.count(), Transcript.objects.count(), Message.objects.count()) == counts

    long = Transcript.objects.get(upload__name=LONG_NAME)
    assert long.reference_tokens >= 300_000
    assert long.to_conversation().messages[0].role.value in {"system", "user"}
