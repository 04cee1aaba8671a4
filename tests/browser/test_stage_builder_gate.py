"""The summary quality gate in the stage builder, in a real browser: added by its kind, its
reject action chosen from a list, its fractional score typed, an out-of-range score shown
with the engine's message, and the gated configuration saved. No console error."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def settled(page: Any) -> None:
    page.wait_for_function(
        "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"
    )


def stages_json(page: Any) -> list[dict[str, Any]]:
    return json.loads(page.input_value("#id_stages"))


def wait_for_gate(page: Any, key: str, value: Any) -> None:
    """The JSON's gate (second stage) holds ``value`` under ``key`` and htmx is idle."""
    page.wait_for_function(
        """([key, value]) => {
            const text = document.querySelector('#id_stages');
            if (!text || document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling'))
                return false;
            try { return JSON.stringify(JSON.parse(text.value)[1][key]) === JSON.stringify(value); }
            catch (e) { return false; }
        }""",
        arg=[key, value],
    )


def test_compose_a_gated_summarise_with_the_builder(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    login()
    page.goto(f"{live_server.url}/strategies/new/?preset=custom")
    page.wait_for_selector("#stage-builder")
    page.fill("#id_name", "gated summary")
    page.select_option("#id_builder_kind", "summary_gate")
    page.click("#stage-builder button[value=add]")
    page.wait_for_selector("#id_stage-1-on_reject")
    settled(page)
    assert stages_json(page)[1] == {"stage": "summary_gate", "min_score": 0.6,
                                    "max_questions": 10, "on_reject": "accept_with_appendix"}  # fmt: skip

    page.select_option("#id_stage-1-on_reject", "retry")  # a change posts the builder
    wait_for_gate(page, "on_reject", "retry")
    assert page.input_value("#id_stage-1-on_reject") == "retry"

    page.fill("#id_stage-1-min_score", "1.5")
    page.keyboard.press("Tab")
    page.wait_for_selector("#stages-errors .errorlist")
    settled(page)
    assert "summary_gate option 'min_score' must be <= 1.0" in page.inner_text("#stages-errors")
    page.fill("#id_stage-1-min_score", "0.75")
    page.keyboard.press("Tab")
    page.wait_for_function("() => !document.querySelector('#stages-errors .errorlist')")
    wait_for_gate(page, "min_score", 0.75)
    screenshot("gate")

    page.click("form.config-form button.button-primary:not(.implicit-submit)")
    page.wait_for_url("**/strategies/*/")
    assert page.locator(".messages").inner_text().startswith("Saved configuration")
    assert stages_json(page)[1] == {"stage": "summary_gate", "min_score": 0.75,
                                    "max_questions": 10, "on_reject": "retry"}  # fmt: skip
    assert page.errors == []
