"""A parameter sweep in a real browser: the run form links to the sweep form, the parameter
list follows the chosen strategy (htmx), a bad value is refused beside its field, the
sweep's runs execute on a real worker and the group page's sweep table and chart fill in
(polled fragment) until every run is done; the compare link opens the compare page."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared test data
from replay_testdata import agent_chat, import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

VALUES = [20000, 40000, 80000, 131072]


def _swapped(page: Any, selector: str, text: str) -> None:
    """Wait until the element shows ``text`` (value or text) and htmx has settled the swap:
    a select swapped in reacts to changes only once htmx has processed it."""
    page.wait_for_function(
        """([selector, text]) => {
            const el = document.querySelector(selector);
            const shown = el && (el.value === text || el.textContent.includes(text));
            return shown && !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling');
        }""",
        arg=[selector, text],
    )


def test_sweep_form_to_table_chart_and_compare(
    page: Any, asgi_worker_server: Any, login: Any, screenshot: Any
) -> None:
    from django.contrib.auth import get_user_model

    base = asgi_worker_server.url
    login(base_url=base)
    user = get_user_model().objects.get(username="alice")
    transcript = import_transcript(user, agent_chat(turns=120, size=8000, seed=5))

    page.goto(f"{base}/runs/new/?transcript={transcript.pk}")
    page.click("#sweep-link a")
    page.wait_for_selector("#sweep-form")
    assert page.input_value("#id_transcript") == str(transcript.pk)
    # The parameter list follows the strategy (htmx swaps the block).
    page.select_option("#id_base", "preset:copaw")
    _swapped(page, "#id_param", "memory_compact_ratio")
    page.select_option("#id_base", "preset:qwenpaw")
    _swapped(page, "#id_param", "compact_threshold_ratio")
    page.select_option("#id_param", "max_input_length")
    _swapped(page, "#param-help", "In qwenpaw: 131072")

    page.fill("#id_values", "20000, 99")
    page.click("#start-sweep")
    error = page.locator("#field-values .errorlist")
    error.wait_for()
    assert "max_input_length=99 is out of range (1024..1e+07)" in error.inner_text()
    screenshot("form-error")

    page.fill("#id_values", ", ".join(map(str, VALUES)))
    page.click("#start-sweep")
    page.wait_for_url("**/runs/groups/*/")
    page.wait_for_selector("#sweep-table")
    page.wait_for_selector("#sweep[data-finished=true]")
    values = page.locator("#sweep-table tbody tr").evaluate_all(
        "rows => rows.map(r => Number(r.dataset.value))"
    )
    assert values == VALUES
    assert page.locator("#sweep-table td.best[data-metric=peak_reference]").count() == 1
    page.wait_for_selector("#sweep-plot .main-svg")  # plotly drew the chart
    assert page.locator("#sweep-plot .scatterlayer .point").count() == len(VALUES)
    screenshot("group")

    page.click("#sweep-compare-link")
    page.wait_for_selector("#compare-metrics")
    assert page.locator(".compare-runs .compare-run").count() == len(VALUES)
    # The refused form answered 400, which Chromium logs; nothing else went wrong.
    assert [e for e in page.errors if "status of 400" not in e] == [], page.errors
