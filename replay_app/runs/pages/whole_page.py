"""A finished run's whole page, rendered once per query and user, then served from the memo.

"Per query" is per the parameters the page reads (``QUERIES``, sorted): a query that
scrubs to a step or names anything else is rendered every view and kept nowhere (nor are
its sections, ``memo_query`` in ``{% memo_runs %}``).

Its sections were already memoised (``{% memo_runs %}``); what each view still paid was
the run row with its transcript, configuration and group joined (~1.5 ms of CPU) and the
template engine walking ``base.html``, the header and the memo tags (~1.8 ms) of ~5.3 ms
in a page process. A finished run's page depends only on the run, the query string, who
looks at it (name and staff flag: only the run's owner ever gets past the ownership check)
and two per-request values:

* the CSRF token: rendered as a random marker, and each view's own token is put in its
  place when the page is sent (a marker no transcript can contain: it is drawn per build);
* queued messages (``django.contrib.messages``): a view with messages renders the page
  as before and keeps nothing.

Access control is the view's: the run is fetched with ``get_owned_or_404`` before this
module is asked for anything.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.messages import get_messages
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import render as render_template
from django.urls import get_script_prefix
from django.utils.html import conditional_escape

from replay_app import memo

# Fields the memo key reads (``memo._cache_key``): all a finished run's view needs before
# it knows whether its page is kept.
KEY_FIELDS = ("id", "owner_id", "status", "created_at", "finished_at")


@dataclass(frozen=True)
class Query:
    reads: frozenset[str]  # every parameter the page (or a section of it) reads
    scrubs: frozenset[str]  # ... of which these pick a step: never memoised


QUERIES = {
    "run": Query(
        reads=frozenset({"page", "kind", "summary", "spage", "fkind", "fpage", "step", "mpage"}),
        scrubs=frozenset({"step", "mpage"}),  # the step scrubber's step and its message page
    ),
    "compare": Query(reads=frozenset({"runs", "spage", "at"}), scrubs=frozenset({"at"})),
    # The compare step view (and its JSON twin) is a page per step: the page users scrub
    # across runs, each step kept as it is viewed (the memo's byte caps bound them).
    "compare-step": Query(
        reads=frozenset({"runs", "step", "compaction", "page", "only", "message", "format"}),
        scrubs=frozenset(),
    ),
}


def memo_query(query: Any, name: str) -> str | None:
    """The memo key's query part for page ``name`` (a ``QUERIES`` key), or None: render
    this query fresh and keep nothing (``memo.query_key``)."""
    shape = QUERIES[name]
    return memo.query_key(query, reads=shape.reads, scrubs=shape.scrubs)


def _viewer(request: HttpRequest) -> str:
    """Who looks at a page, as far as a page shows it (name and staff flag)."""
    user: Any = request.user
    return f"{user.pk}:{user.get_username()}:{int(user.is_staff)}"


class _NotKept(Exception):  # noqa: N818 (a signal, not an error)
    def __init__(self, response: HttpResponse) -> None:
        self.response = response


def _kept(request: HttpRequest) -> bool:
    """Views whose page may come from the memo: plain GETs without queued messages."""
    if request.method != "GET" or getattr(request, "htmx", False):
        return False
    return not len(get_messages(request))  # loads the messages without using them up


def page(
    request: HttpRequest,
    runs: Any,
    name: str,
    render: Callable[[dict[str, Any]], HttpResponse],
) -> HttpResponse:
    """``render(extra_context)`` as the response, its body memoised while ``runs`` (a run
    or a list of them) stay finished. ``extra_context`` must reach the template (it holds
    the CSRF marker)."""
    runs = list(runs) if isinstance(runs, list | tuple) else [runs]
    query = memo_query(request.GET, name)
    if query is None or not all(memo.keeps(run) for run in runs) or not _kept(request):
        return render({})
    key = f"page-{name}?{query}#{_viewer(request)}"

    def build() -> tuple[str, tuple[bytes, ...]]:
        marker = secrets.token_hex(16)
        response = render({"csrf_token": marker})
        if response.status_code != 200 or response.streaming:
            raise _NotKept(response)
        return response["Content-Type"], tuple(response.content.split(marker.encode()))

    try:
        content_type, parts = memo.cached_many(runs, key, build)
    except _NotKept as not_kept:
        return not_kept.response
    token = get_token(request).encode()  # a fresh mask per view, as the template's tag
    return HttpResponse(token.join(parts), content_type=content_type)


# --- a page per query around one frame ---------------------------------------------------


def framed(
    request: HttpRequest,
    runs: Any,
    name: str,
    template: str,
    context: dict[str, Any],
    slots: dict[str, str],
    extra: dict[str, Any],
) -> HttpResponse:
    """``render(request, template, {**context, **slots, **extra})`` for ``page``'s
    ``render``, where the frame around ``slots`` is the same for every query of the runs.

    A page per query (the compare step view: a page per step a user scrubs to) rendered
    the template engine's walk of ``base.html``, the header and the head's static tags
    (~1 ms of a ~5 ms view) for every step. The frame is rendered once per runs, viewer,
    path and script prefix with a marker in each slot, then each query's values go in
    its place, escaped as the template's ``{{ slot }}`` escapes them (a slot is used
    only as a plain ``{{ name }}``: ``conditional_escape``, what autoescape applies).
    ``context`` must be the same for every query of the runs; ``extra`` is ``page``'s
    (a memoised view's CSRF marker): a view ``page`` does not keep (unfinished runs,
    queued messages, htmx) renders the whole template as before."""
    if "csrf_token" not in extra:
        return render_template(request, template, {**context, **slots, **extra})
    runs = list(runs) if isinstance(runs, list | tuple) else [runs]
    names = tuple(sorted(slots))
    where = f"{template}:{','.join(names)}@{get_script_prefix()}{request.path}"
    key = f"frame-{name}:{where}#{_viewer(request)}"

    def build() -> tuple[str, tuple[bytes | str, ...]]:
        marks = {secrets.token_hex(16): slot for slot in (*names, "csrf_token")}
        response = render_template(
            request, template, {**context, **{v: k for k, v in marks.items()}}
        )
        if response.status_code != 200 or response.streaming:
            raise _NotKept(response)
        pieces = re.split(f"({'|'.join(marks)})".encode(), response.content)
        # odd pieces are markers: the name of what goes there
        parts = tuple(marks[p.decode()] if i % 2 else p for i, p in enumerate(pieces))
        if sorted(p for p in parts if isinstance(p, str) and p != "csrf_token") != list(names):
            raise ValueError(f"{template}: each slot once, as {{{{ slot }}}} ({names})")
        return response["Content-Type"], parts

    try:
        content_type, parts = memo.cached_many(runs, key, build)
    except _NotKept as not_kept:
        return not_kept.response
    values = {n: str(conditional_escape(slots[n])).encode() for n in names}
    values["csrf_token"] = str(extra["csrf_token"]).encode()
    body = b"".join(p if isinstance(p, bytes) else values[p] for p in parts)
    return HttpResponse(body, content_type=content_type)
