"""Composing a custom strategy in a real browser: the strategies page links to the stage
builder; stages are added, moved, removed and tuned through htmx swaps (one by keyboard),
an out-of-range option shows the engine's message, and the saved configuration is listed.
No console error (a CSP violation would be one)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def settled(page: Any) -> None:
    """htmx has finished every request and swap."""
    page.wait_for_function(
        "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"
    )


def kinds(page: Any) -> list[str]:
    return page.locator("#stage-builder li.stage[data-kind]").evaluate_all(
        "items => items.map(li => li.dataset.kind)"
    )


def stages_json(page: Any) -> list[dict[str, Any]]:
    return json.loads(page.input_value("#id_stages"))


def wait_for_kinds(page: Any, expected: list[str]) -> None:
    page.wait_for_function(
        """(expected) => {
            const items = [...document.querySelectorAll('#stage-builder li.stage[data-kind]')];
            return JSON.stringify(items.map(li => li.dataset.kind)) === JSON.stringify(expected)
                && !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling');
        }""",
        arg=expected,
    )


def add_stage(page: Any, kind: str, expected: list[str]) -> None:
    page.select_option("#id_builder_kind", kind)
    page.click("#stage-builder button[value=add]")
    wait_for_kinds(page, expected)


def test_compose_custom_strategy_with_the_builder(
    page: Any, live_server: Any, login: Any, screenshot: Any
) -> None:
    login()
    page.goto(f"{live_server.url}/strategies/")
    page.click("#compose-custom a.button")
    page.wait_for_selector("#stage-builder")
    assert kinds(page) == ["summarise"]
    page.fill("#id_name", "tool diet")

    add_stage(page, "clear_tool_results", ["summarise", "clear_tool_results"])
    # By keyboard: choose the kind, tab to the Add button, press Enter.
    page.focus("#id_builder_kind")
    page.select_option("#id_builder_kind", "truncate_tool_results")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    wait_for_kinds(page, ["summarise", "clear_tool_results", "truncate_tool_results"])

    page.focus("#stage-2-up")  # by keyboard; the focus stays in the builder after the swap
    page.keyboard.press("Enter")
    wait_for_kinds(page, ["summarise", "truncate_tool_results", "clear_tool_results"])
    assert page.evaluate("document.activeElement.id") == "stage-2-up"
    page.click("#stage-builder button[value='remove:0']")
    wait_for_kinds(page, ["truncate_tool_results", "clear_tool_results"])
    page.click("#stage-builder button[value='down:0']")
    wait_for_kinds(page, ["clear_tool_results", "truncate_tool_results"])

    # An option edit reaches the JSON on change; a bad value shows the engine's message.
    page.fill("#id_stage-0-keep", "-1")
    page.keyboard.press("Tab")
    page.wait_for_selector("#stages-errors .errorlist")
    settled(page)
    assert "clear_tool_results option 'keep' must be >= 0" in page.inner_text("#stages-errors")
    screenshot("error")
    page.fill("#id_stage-0-keep", "2")
    page.keyboard.press("Tab")
    page.wait_for_function("() => !document.querySelector('#stages-errors .errorlist')")
    settled(page)
    assert stages_json(page)[0] == {"stage": "clear_tool_results", "keep": 2,
                                    "placeholder": "[cleared]"}  # fmt: skip
    page.fill("#id_stage-1-max_bytes", "1500")  # saved without waiting for the sync
    screenshot("builder")

    page.click("form.config-form button.button-primary:not(.implicit-submit)")
    page.wait_for_url("**/strategies/*/")
    assert page.locator(".messages").inner_text().startswith("Saved configuration")
    assert kinds(page) == ["clear_tool_results", "truncate_tool_results"]
    assert stages_json(page)[1]["max_bytes"] == 1500

    page.goto(f"{live_server.url}/strategies/")
    row = page.locator("#config-table tr", has_text="tool diet")
    assert "custom" in row.inner_text()
    screenshot("listed")
    assert page.errors == []
