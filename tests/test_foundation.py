"""The project's ground rules, seen through HTTP: login everywhere, CSRF, headers, assets."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.admin.models import ADDITION, LogEntry
from django.core.management import call_command
from django.http import Http404
from django.test import Client

from ctxlab.web.ownership import get_owned_or_404, owned

NAV_PAGES = ["/", "/transcripts/", "/strategies/", "/runs/", "/compare/"]
BASE_DIR = Path(settings.BASE_DIR)


# Login ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", NAV_PAGES, ids=lambda p: p.strip("/") or "home")
def test_login_required_anonymous_get_redirects_to_login(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={path}"


def test_login_required_admin_redirects_to_admin_login(client: Client) -> None:
    response = client.get("/admin/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_login_page_renders_for_anonymous(client: Client) -> None:
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert b'name="username"' in response.content
    assert b'name="password"' in response.content


@pytest.mark.django_db
def test_healthz_open_without_login(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "writable"}


@pytest.mark.django_db
def test_login_form_logs_in_and_redirects(client: Client, user: Any) -> None:
    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "alice-pass-123", "next": "/runs/"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/runs/"
    assert client.get("/runs/").status_code == 200


@pytest.mark.django_db
def test_login_form_wrong_password_shows_error(client: Client, user: Any) -> None:
    response = client.post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert b"didn't match" in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("path", NAV_PAGES, ids=lambda p: p.strip("/") or "home")
def test_nav_pages_render_for_user_with_nav(auth_client: Client, path: str) -> None:
    response = auth_client.get(path)
    assert response.status_code == 200
    body = response.content.decode()
    for label, href in [
        ("Transcripts", "/transcripts/"),
        ("Strategies", "/strategies/"),
        ("Runs", "/runs/"),
        ("Compare", "/compare/"),
    ]:
        assert f'href="{href}"' in body and label in body
    assert 'action="/accounts/logout/"' in body


@pytest.mark.django_db
def test_logout_is_a_post_and_ends_the_session(auth_client: Client) -> None:
    response = auth_client.post("/accounts/logout/")
    assert response.status_code == 302
    assert auth_client.get("/runs/").status_code == 302


@pytest.mark.django_db
def test_admin_index_reachable_by_staff(client: Client, staff_user: Any) -> None:
    client.force_login(staff_user)
    response = client.get("/admin/")
    assert response.status_code == 200
    assert b"ctxlab administration" in response.content


@pytest.mark.django_db
def test_admin_index_refused_to_non_staff(auth_client: Client) -> None:
    response = auth_client.get("/admin/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


# CSRF and headers ------------------------------------------------------------------------


@pytest.mark.django_db
def test_csrf_login_post_without_token_refused(user: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123"})
    assert response.status_code == 403


@pytest.mark.django_db
def test_csrf_logout_post_without_token_refused(user: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post("/accounts/logout/").status_code == 403
    assert client.get("/runs/").status_code == 200  # still logged in


@pytest.mark.django_db
def test_csrf_token_in_body_hx_headers(auth_client: Client) -> None:
    body = auth_client.get("/").content.decode()
    assert 'hx-headers=\'{"X-CSRFToken": "' in body


@pytest.mark.django_db
def test_security_headers_present(auth_client: Client) -> None:
    response = auth_client.get("/")
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    csp = response["Content-Security-Policy"]
    assert "default-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert "http" not in csp  # no external origin allowed anywhere


def test_session_and_csrf_cookies_httponly() -> None:
    assert settings.SESSION_COOKIE_HTTPONLY is True
    assert settings.CSRF_COOKIE_HTTPONLY is True


# Offline assets ---------------------------------------------------------------------------


class _AssetCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "script" and attributes.get("src"):
            self.urls.append(attributes["src"] or "")
        if tag == "link" and attributes.get("href"):
            self.urls.append(attributes["href"] or "")


def _asset_urls(html: str) -> list[str]:
    parser = _AssetCollector()
    parser.feed(html)
    return parser.urls


def _external(url: str) -> bool:
    return url.lower().startswith(("http:", "https:", "//"))


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('<script src="/static/x.js"></script>', []),
        ('<script src="https://cdn.example/x.js"></script>', ["https://cdn.example/x.js"]),
        ('<link rel="stylesheet" href="//fonts.example/css">', ["//fonts.example/css"]),
        ('<link href="http://x/y.css">', ["http://x/y.css"]),
    ],
    ids=["local", "https-script", "protocol-relative-link", "http-link"],
)
def test_asset_scanner_flags_external_urls(html: str, expected: list[str]) -> None:
    assert [u for u in _asset_urls(html) if _external(u)] == expected


@pytest.mark.django_db
def test_no_external_script_or_style_on_any_page(client: Client, staff_user: Any) -> None:
    pages = {"/accounts/login/": client.get("/accounts/login/")}
    client.force_login(staff_user)
    for path in [*NAV_PAGES, "/admin/", "/admin/password_change/", "/accounts/password_change/"]:
        pages[path] = client.get(path)
    pages["/accounts/logout/"] = client.post("/accounts/logout/", follow=True)
    for path, response in pages.items():
        assert response.status_code == 200, path
        urls = _asset_urls(response.content.decode())
        assert urls, f"{path} loads no assets at all (scanner broken?)"
        assert [u for u in urls if _external(u)] == [], path


def _template_files() -> list[Path]:
    roots = [BASE_DIR / "templates", *BASE_DIR.glob("*_app/templates")]
    return sorted(p for root in roots for p in root.rglob("*.html"))


def test_no_external_script_or_style_in_template_sources() -> None:
    # Catches templates no page reaches yet: look at the raw source.
    offenders = {}
    for path in _template_files():
        urls = [u for u in _asset_urls(path.read_text()) if _external(u)]
        if urls:
            offenders[str(path.relative_to(BASE_DIR))] = urls
    assert offenders == {}


@pytest.mark.parametrize(
    "path",
    [
        "/static/django_htmx/htmx-2.min.js",
        "/static/django_htmx/ext/hx-ws-2.min.js",
        "/static/plotly/plotly.min.js",
        "/static/css/ctxlab.css",
    ],
    ids=["htmx", "htmx-ws", "plotly", "css"],
)
@pytest.mark.django_db  # closing the response fires request_finished, which checks the DB
def test_static_asset_served_locally(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert int(response["Content-Length"]) > 1000
    response.close()


@pytest.mark.django_db
def test_base_loads_htmx_with_ws_extension(auth_client: Client) -> None:
    urls = _asset_urls(auth_client.get("/").content.decode())
    assert "/static/django_htmx/htmx-2.min.js" in urls
    assert "/static/django_htmx/ext/hx-ws-2.min.js" in urls


# Ownership ---------------------------------------------------------------------------------


def _log_entry(user: Any, message: str) -> LogEntry:
    # LogEntry is a real model with a user FK: a stand-in for any owned row.
    return LogEntry.objects.create(user=user, action_flag=ADDITION, object_repr=message)


@pytest.mark.django_db
def test_owned_returns_only_the_users_rows(user: Any, other_user: Any) -> None:
    mine = _log_entry(user, "mine")
    _log_entry(other_user, "theirs")
    assert list(owned(LogEntry.objects, user, field="user")) == [mine]


@pytest.mark.django_db
def test_owned_anonymous_sees_nothing(user: Any) -> None:
    from django.contrib.auth.models import AnonymousUser

    _log_entry(user, "mine")
    assert list(owned(LogEntry.objects, AnonymousUser(), field="user")) == []


@pytest.mark.django_db
def test_get_owned_or_404_others_row_is_404(user: Any, other_user: Any) -> None:
    theirs = _log_entry(other_user, "theirs")
    with pytest.raises(Http404):
        get_owned_or_404(LogEntry.objects, user, field="user", pk=theirs.pk)
    assert get_owned_or_404(LogEntry.objects, other_user, field="user", pk=theirs.pk) == theirs


@pytest.mark.django_db
def test_get_owned_or_404_malformed_pk_is_404(user: Any) -> None:
    with pytest.raises(Http404):
        get_owned_or_404(LogEntry.objects, user, field="user", pk="not-a-number")


# ensure_local_user ------------------------------------------------------------------------


@pytest.mark.django_db
def test_ensure_local_user_creates_default_once(
    django_user_model: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CTXLAB_USER", raising=False)
    monkeypatch.delenv("CTXLAB_PASSWORD", raising=False)
    call_command("ensure_local_user")
    first = capsys.readouterr().out
    call_command("ensure_local_user")
    second = capsys.readouterr().out
    user = django_user_model.objects.get()
    assert user.username == "ctxlab" and user.is_superuser
    assert user.check_password("ctxlab")
    assert "username: ctxlab" in first and "password: ctxlab" in first
    assert "exists" in second


@pytest.mark.django_db
def test_ensure_local_user_reads_env(
    django_user_model: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXLAB_USER", "lab")
    monkeypatch.setenv("CTXLAB_PASSWORD", "s3cret-Pass")
    call_command("ensure_local_user")
    out = capsys.readouterr().out
    assert django_user_model.objects.get().check_password("s3cret-Pass")
    assert "s3cret-Pass" not in out  # a password from the environment is never echoed


# Every endpoint, present and future -------------------------------------------------------

_SAMPLE = {
    "int": "1",
    "str": "x",
    "slug": "x",
    "path": "x/y",
    "uuid": "00000000-0000-0000-0000-000000000001",
}


def _routes() -> list[tuple[str, Any]]:
    """(sample path, view) for every route-style URL pattern, converters filled with samples."""
    from django.urls import URLPattern, URLResolver, get_resolver
    from django.urls.resolvers import RoutePattern

    found: list[tuple[str, Any]] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for entry in patterns:
            if not isinstance(entry.pattern, RoutePattern):
                continue  # regex patterns (admin's app index) are covered by the admin tests
            route = str(entry.pattern)
            for name, converter in entry.pattern.converters.items():
                kind = type(converter).__name__.replace("Converter", "").lower()
                value = _SAMPLE.get(kind, "1")
                route = route.replace(f"<{kind}:{name}>", value).replace(f"<{name}>", value)
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix + route)
            elif isinstance(entry, URLPattern):
                found.append(("/" + prefix + route, entry.callback))

    walk(get_resolver().url_patterns, "")
    return found


def test_every_endpoint_requires_login(client: Client) -> None:
    checked, open_views = [], []
    for path, view in _routes():
        if getattr(view, "login_required", True) is False:
            open_views.append(path)  # explicitly exempt with @login_not_required
            continue
        response = client.get(path)
        assert response.status_code == 302, f"{path} answered {response.status_code} anonymously"
        assert "/login/" in response["Location"], f"{path} → {response['Location']}"
        checked.append(path)
    assert "/transcripts/" in checked and "/admin/" in checked
    assert sorted(open_views) == ["/accounts/login/", "/admin/login/", "/healthz"]
