"""A comparison group's page and its JSON twin are built from one ``GroupPage`` (its sweep
section included): values set only on that object show in both."""

from __future__ import annotations

from typing import Any

import pytest

from replay_app.models import RunGroup
from replay_app.runs import services, views
from replay_app.runs.pages.group_page import GroupPage
from replay_app.sweeps import sweep

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

MARK = "group-name-set-on-the-page-object"


class MarkedPage(GroupPage):
    """Renames the group and keeps only its first two runs, on the object only."""

    def __init__(self, group: RunGroup) -> None:
        super().__init__(group)
        group.name = MARK
        self.runs = self.runs[:2]


def test_group_page_and_json_twin_read_one_object(
    auth_client: Any,
    user: Any,
    transcript: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    specs = sweep.specs(sweep.Base(strategy="qwenpaw"), "max_input_length", [20000, 60000, 131072])
    with django_capture_on_commit_callbacks(execute=True):
        group = services.group_create(owner=user, transcript=transcript, specs=specs)
    ids = list(group.runs.order_by("pk").values_list("pk", flat=True))
    monkeypatch.setattr(views, "GroupPage", MarkedPage)
    html = auth_client.get(group.get_absolute_url()).content.decode()
    data = auth_client.get(group.get_absolute_url(), {"format": "json"}).json()
    assert MARK in html and data["name"] == MARK
    assert [r["id"] for r in data["runs"]] == ids[:2]
    assert f'id="group-run-{ids[1]}"' in html and f'id="group-run-{ids[2]}"' not in html
    # The sweep section is the same object's: two values in the JSON and in the table.
    assert [row["value"] for row in data["sweep"]["rows"]] == [20000, 60000]
    assert f'data-run="{ids[1]}" data-value="60000"' in html
    assert f'data-run="{ids[2]}"' not in html
