"""Issue 31, item 15: a fate-matrix click lands on the clicked message. Every cell of the
compare page's matrix and every message of the message-by-message page links the step
view on that message (``compare_steps.message_link``: its page, ``#message-N``), whose row
carries that id and is highlighted; the matrix is one tab stop, each cell labelled."""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

import pytest
from inspect_helpers import make_run

from replay_app.compare import compare_steps

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]


@pytest.fixture
def two(user: Any, transcript: Any) -> list[Any]:
    return [make_run(user, transcript, s) for s in ("cowagent", "copaw")]


def _ids(runs: list[Any]) -> str:
    return ",".join(str(r.pk) for r in runs)


def _matrix(client: Any, runs: list[Any]) -> str:
    response = client.get(
        f"/compare/?runs={_ids(runs)}", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="compare-matrix"
    )
    assert response.status_code == 200
    return str(response.content.decode())


def test_matrix_cells_link_their_message_and_are_one_tab_stop(
    client: Any, user: Any, two: list[Any]
) -> None:
    client.force_login(user)
    html = _matrix(client, two)
    cells = re.findall(r'<a class="fate-cell[^>]*>', html)
    assert len(cells) > 20
    stops = [c for c in cells if 'tabindex="0"' in c]
    assert len(stops) == 1 and stops[0] == cells[0]  # one tab stop for the whole matrix
    assert all('tabindex="-1"' in c for c in cells[1:])
    for cell in cells:
        start = re.search(r'data-message="(\d+)"', cell)
        href = re.search(r'href="([^"]+)"', cell)
        label = re.search(r'aria-label="([^"]+)"', cell)
        assert start and href and label
        url = html_lib.unescape(href.group(1))
        assert url.endswith(f"&message={start.group(1)}#message-{start.group(1)}"), url
        assert html_lib.unescape(label.group(1)).startswith("run ")
    assert 'aria-describedby="fate-matrix-keys"' in html


def test_matrix_json_cells_carry_the_same_link(client: Any, user: Any, two: list[Any]) -> None:
    client.force_login(user)
    data = client.get(f"/compare/?runs={_ids(two)}&format=json").json()
    cell = data["matrix"]["runs"][str(two[0].pk)][3]
    assert cell["url"].endswith(f"&message={cell['start']}#message-{cell['start']}")


def test_a_click_lands_on_its_message_row_highlighted(
    client: Any, user: Any, two: list[Any]
) -> None:
    client.force_login(user)
    data = client.get(f"/compare/?runs={_ids(two)}&format=json").json()
    cells = data["matrix"]["runs"][str(two[0].pk)]
    message = compare_steps.STEP_MESSAGES + 5  # on the step view's second page
    assert cells[-1]["end"] > message
    target = compare_steps.message_link(cells[0]["url"].split("&message=")[0], message)
    page = client.get(target.split("#")[0]).content.decode()
    row = re.search(
        rf'<tr data-index="{message}" id="message-{message}" class="([^"]*)"([^>]*)>', page
    )
    assert row, "the step view has the clicked message's row, on its page"
    assert "focus-message" in row.group(1) and 'aria-current="true"' in row.group(2)
    assert page.count("focus-message") == 1


def test_matrix_detail_rows_link_the_step_view(client: Any, user: Any, two: list[Any]) -> None:
    client.force_login(user)
    url = f"/compare/matrix/?runs={_ids(two)}&start=10&end=20"
    data = client.get(url + "&format=json").json()
    first = data["messages"][0]
    assert first["index"] == 10 and first["url"].endswith("&message=10#message-10")
    page = client.get(url).content.decode()
    assert f'href="{html_lib.escape(first["url"])}"' in page


def test_a_message_after_the_steps_request_is_named_not_lost(
    client: Any, user: Any, two: list[Any]
) -> None:
    """The matrix's last cells can hold messages after the final request (the last answer):
    the step view says so instead of landing on a page without that row."""
    client.force_login(user)
    data = client.get(f"/compare/?runs={_ids(two)}&format=json").json()
    last = data["matrix"]["runs"][str(two[0].pk)][-1]
    messages = last["end"]
    step = client.get(last["url"].split("&message=")[0] + "&format=json").json()
    shown = step["count"]
    assert shown < messages, (shown, messages)  # the last answer follows the last request
    url = compare_steps.message_link(last["url"].split("&message=")[0], messages - 1)
    page = client.get(url.split("#")[0]).content.decode()
    assert 'id="message-after"' in page and f"Message #{messages - 1} comes after" in page
    early = compare_steps.message_link(last["url"].split("&message=")[0], 0)
    assert 'id="message-after"' not in client.get(early.split("#")[0]).content.decode()
