"""What a page process does before it listens (``ctxlab.serving.page_pool.warm_up``,
``ctxlab.serving.page_server.warm_request``), so the first request after a start pays nothing
more than the next: URL maps built for every namespace, a request answered in-process."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.core.wsgi import get_wsgi_application
from django.urls import clear_url_caches, resolvers, reverse

from ctxlab.serving import page_server
from ctxlab.serving.page_pool import warm_up


def test_no_url_map_is_built_after_the_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_url_caches()
    assert warm_up() > 10  # templates compiled
    built: list[Any] = []
    original = resolvers.URLResolver._populate

    def spy(self: Any) -> None:
        built.append(self)
        original(self)

    monkeypatch.setattr(resolvers.URLResolver, "_populate", spy)
    urls: list[str] = []
    # a request thread's reverse(), namespaced too ({% url 'admin:index' %} in base.html)
    thread = threading.Thread(target=lambda: urls.extend([reverse("admin:index"), reverse("run-list")]))  # fmt: skip
    thread.start()
    thread.join()
    assert urls == ["/admin/", "/runs/"]
    assert built == []  # the admin's namespace took ~80 ms in the first request


@pytest.mark.django_db
def test_warm_request_answers_the_login_page_in_process() -> None:
    # Database access allowed, as in a page process: Django's request_started handler
    # checks a connection already opened (by an earlier database test in this pytest
    # process), which pytest-django refused in a test without the mark, so the test
    # passed alone and failed after a database test.
    assert page_server.warm_request(get_wsgi_application(), "/accounts/login/") == 200
