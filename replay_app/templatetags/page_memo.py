"""``{% memo_runs runs "name" vary... %}…{% endmemo_runs %}``: a page section of finished
runs rendered once and kept in ``replay_app.memo`` (in memory, and in the served
processes' shared files), keyed by the runs, the name and the ``vary`` values (e.g.
``request.GET|memo_query:"run"``). While any of the runs is unfinished, or a ``vary``
value is None (a query not kept, ``whole_page.memo_query``), the section renders every
time. Only for sections whose HTML depends on nothing else: no CSRF token, no user, no
messages.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.template.base import FilterExpression, NodeList, Parser, Token

from replay_app import memo
from replay_app.runs.pages import whole_page

register = template.Library()


class MemoRunsNode(template.Node):
    def __init__(
        self,
        nodelist: NodeList,
        runs: FilterExpression,
        name: str,
        vary: list[FilterExpression],
    ) -> None:
        self.nodelist = nodelist
        self.runs = runs
        self.name = name
        self.vary = vary

    def render(self, context: template.Context) -> Any:
        runs = self.runs.resolve(context)
        runs = list(runs) if isinstance(runs, list | tuple) else [runs]
        values = [v.resolve(context) for v in self.vary]
        if any(value is None for value in values):
            return self.nodelist.render(context)
        vary = "&".join(str(value) for value in values)
        return memo.cached_many(
            runs, f"html-{self.name}?{vary}", lambda: self.nodelist.render(context)
        )


@register.filter
def memo_query(query: Any, page: str) -> str | None:
    """``request.GET|memo_query:"run"``: the part of the query a memoised section of that
    page is keyed by, or None (not kept: a step scrubbed to, a parameter the page does
    not read)."""
    return whole_page.memo_query(query, page)


@register.tag("memo_runs")
def memo_runs(parser: Parser, token: Token) -> MemoRunsNode:
    bits = token.split_contents()
    if len(bits) < 3 or bits[2][0] not in "\"'":
        raise template.TemplateSyntaxError('usage: {% memo_runs runs "name" [vary ...] %}')
    nodelist = parser.parse(("endmemo_runs",))
    parser.delete_first_token()
    vary = [parser.compile_filter(bit) for bit in bits[3:]]
    return MemoRunsNode(nodelist, parser.compile_filter(bits[1]), bits[2][1:-1], vary)
