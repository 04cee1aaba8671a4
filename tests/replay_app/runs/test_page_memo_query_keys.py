"""The whole-page memo of finished runs is keyed by the query parameters the page reads
(``whole_page.QUERIES``): scrubbing ``?step=N`` without JavaScript, or adding a parameter
the page ignores, keeps nothing (one page per step filled the memo and its disk files),
and the same parameters in another order are one entry."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import QueryDict
from inspect_helpers import make_run, view_with_templates

from replay_app import memo
from replay_app.runs.pages import whole_page

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]


def _rendered(client: Any, url: str) -> list[str]:
    return view_with_templates(client, url)[1]


def _page_keys() -> set[str]:
    return {k for k in memo.MEMO.items if k.startswith(("page-", "html-"))}


def test_scrubbed_steps_and_unread_parameters_fill_nothing(
    client: Any, user: Any, transcript: Any
) -> None:
    run = make_run(user, transcript, "cowagent")
    client.force_login(user)
    url = f"/runs/{run.pk}/"
    assert "replay_app/runs/run_detail.html" in _rendered(client, url)
    kept = _page_keys()
    assert any(k.startswith("page-run?#") for k in kept)  # the plain page is kept
    for step in (1, 2, 3, 2):
        # each step is rendered (its scrubber differs) and nothing more is kept
        assert "replay_app/runs/run_detail.html" in _rendered(client, f"{url}?step={step}")
        assert "replay_app/runs/run_detail.html" in _rendered(client, f"{url}?mpage={step}")
    for junk in ("utm=a", "utm=b", "x=1&page=1"):
        assert "replay_app/runs/run_detail.html" in _rendered(client, f"{url}?{junk}")
    assert _page_keys() == kept


def test_the_same_parameters_in_another_order_are_one_page(
    client: Any, user: Any, transcript: Any
) -> None:
    run = make_run(user, transcript, "cowagent")
    client.force_login(user)
    url = f"/runs/{run.pk}/"
    assert "replay_app/runs/run_detail.html" in _rendered(client, f"{url}?page=1&kind=drop")
    assert _rendered(client, f"{url}?kind=drop&page=1") == []  # from the memo
    assert len([k for k in _page_keys() if k.startswith("page-run")]) == 1


def test_the_compare_page_keeps_no_fate_matrix_step(
    client: Any, user: Any, transcript: Any
) -> None:
    first, second = (make_run(user, transcript, s) for s in ("cowagent", "qwenpaw"))
    client.force_login(user)
    url = f"/compare/?runs={first.pk},{second.pk}"
    assert "replay_app/compare/compare.html" in _rendered(client, url)
    kept = _page_keys()
    for at in (0, 1, 2):
        assert "replay_app/compare/compare.html" in _rendered(client, f"{url}&at={at}")
    assert _page_keys() == kept
    assert _rendered(client, url) == []


def test_memo_query_names_only_what_the_page_reads() -> None:
    def key(text: str) -> str | None:
        return whole_page.memo_query(QueryDict(text), "run")

    assert key("") == ""
    assert key("spage=2&kind=drop&kind=trim") == "kind=drop&kind=trim&spage=2"
    assert key("step=4") is None and key("kind=drop&mpage=2") is None
    assert key("kind=drop&fbclid=x") is None
    assert whole_page.memo_query(QueryDict("runs=2,1&at=3"), "compare") is None
    assert whole_page.memo_query(QueryDict("runs=2,1"), "compare") == "runs=2%2C1"
