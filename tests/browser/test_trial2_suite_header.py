"""A suite's page says how big it is in words a new user reads right: configurations ×
transcripts = runs (it said "4 configurations × 8 runs", as if each configuration had 8)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "suites_app"))  # shared test data
from suite_report_testdata import make_suite  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)


def test_suite_header_counts_configurations_transcripts_and_runs(
    page: Any, asgi_live_server: Any, login: Any
) -> None:
    from django.contrib.auth import get_user_model

    login(base_url=asgi_live_server.url)
    suite = make_suite(get_user_model().objects.get(username="alice"))
    transcripts = suite.items.values("transcript_id").distinct().count()
    runs = suite.items.count()
    assert (len(suite.configs), transcripts, runs) == (4, 2, 8)
    page.goto(f"{asgi_live_server.url}/suites/{suite.pk}/")
    assert page.locator("#suite-size").inner_text() == ("4 configurations × 2 transcripts = 8 runs")
    assert page.errors == []
