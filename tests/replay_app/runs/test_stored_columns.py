"""Every column ``stored_counts`` names is a field of the stored message, filled by the
import with the engine's own counts of the (masked) messages the rows hold."""

from __future__ import annotations

from typing import Any

import pytest
from replay_testdata import FULL_SESSION_FOUR, import_transcript

from ctxlab.engine.strategies import stored_counts
from sessions_app.models import Message

pytestmark = pytest.mark.django_db


def test_every_stored_count_is_a_message_column() -> None:
    fields = {f.name for f in Message._meta.get_fields()}
    assert set(stored_counts.COLUMNS) <= fields


def test_the_import_stores_each_column_as_the_engine_counts_it(user: Any) -> None:
    session = FULL_SESSION_FOUR
    transcript = import_transcript(user, session.read_bytes(), name=session.name)
    conversation = transcript.to_conversation()
    expected = stored_counts.counted(conversation.messages)
    rows = transcript.messages.order_by("index").values_list(*stored_counts.COLUMNS)
    got = stored_counts.from_rows(list(rows))
    for column in stored_counts.COLUMNS:
        assert list(got[column]) == list(expected[column]), column
    assert all(v is not None for e in stored_counts.ESTIMATES for v in got[e.column])
