"""The compare page links its message-by-message fate matrix (``/compare/matrix/``), and the
link opens that page for the same runs."""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

import pytest
from inspect_helpers import make_run

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]


def test_compare_page_links_the_matrix_detail(client: Any, user: Any, transcript: Any) -> None:
    runs = [make_run(user, transcript, s) for s in ("cowagent", "copaw")]
    ids = ",".join(str(r.pk) for r in runs)
    client.force_login(user)
    page = client.get(f"/compare/?runs={ids}").content.decode()
    found = re.search(r'<a href="([^"]+)" id="matrix-detail-link">', page)
    assert found, "the compare page links the matrix detail"
    url = html_lib.unescape(found.group(1))
    assert url.startswith("/compare/matrix/?") and f"runs={ids}" in url
    detail = client.get(url)
    assert detail.status_code == 200
    data = client.get(url + "&format=json").json()
    assert data["runs"] == [r.pk for r in runs] and data["messages"][0]["index"] == 0
