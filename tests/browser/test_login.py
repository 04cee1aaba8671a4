"""Logging in through the real form in Chromium, and what the signed-in layout offers."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_login_anonymous_sees_login_form(page: Any, live_server: Any, screenshot: Any) -> None:
    page.goto(f"{live_server.url}/runs/")
    assert "/accounts/login/" in page.url
    assert page.locator("input[name=username]").is_visible()
    assert screenshot("login").stat().st_size > 0


def test_login_form_signs_in_and_shows_nav(
    page: Any, live_server: Any, django_user_model: Any, screenshot: Any
) -> None:
    django_user_model.objects.create_user(username="alice", password="alice-pass-123")
    page.goto(f"{live_server.url}/accounts/login/?next=/compare/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-pass-123")
    page.click("button[type=submit]")
    page.wait_for_selector("nav.site-nav")
    assert page.url == f"{live_server.url}/compare/"
    nav = page.locator("nav.site-nav a").all_inner_texts()
    assert nav == ["Transcripts", "Strategies", "Runs", "Compare", "Suites", "Prompts"]
    assert page.locator("nav.site-nav a[aria-current=page]").inner_text() == "Compare"
    assert page.locator(".user-name").inner_text() == "alice"
    # htmx (local static file) loaded and initialised under our CSP.
    assert page.evaluate("typeof window.htmx") == "object"
    assert page.errors == []
    screenshot("signed-in")


def test_login_wrong_password_stays_on_form(page: Any, live_server: Any, login: Any) -> None:
    login()  # creates alice
    page.click("text=Log out")
    page.wait_for_url("**/accounts/login/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "wrong")
    page.click("button[type=submit]")
    page.wait_for_selector("[role=alert]")  # the answer to the post, not a moment after it
    assert page.locator("[role=alert]").is_visible()
    assert page.locator("nav.site-nav").count() == 0


def test_logout_button_posts_and_returns_to_login(page: Any, login: Any) -> None:
    login()
    page.click("text=Log out")
    page.wait_for_url("**/accounts/login/")
    assert page.locator("input[name=username]").is_visible()


def test_plotly_local_copy_draws_under_csp(page: Any, live_server: Any, login: Any) -> None:
    login()
    page.add_script_tag(url=f"{live_server.url}/static/plotly/plotly.min.js")
    page.evaluate(
        """() => {
            const div = document.createElement("div");
            div.id = "probe-chart";
            document.querySelector("main").appendChild(div);
            return Plotly.newPlot(div, [{x: [1, 2, 3], y: [2, 1, 3], type: "bar"}]);
        }"""
    )
    page.wait_for_selector("#probe-chart .main-svg")
    assert [e for e in page.errors if "Content Security Policy" in e] == []


def test_login_through_daphne_asgi_server(page: Any, asgi_live_server: Any, login: Any) -> None:
    login(base_url=asgi_live_server.url)
    page.goto(f"{asgi_live_server.url}/runs/")
    assert page.locator("nav.site-nav a[aria-current=page]").inner_text() == "Runs"
    assert page.evaluate("typeof htmx.createWebSocket") == "function"  # hx-ws extension hook
