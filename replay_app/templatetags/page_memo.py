"""``{% memo_runs runs "name" vary... %}…{% endmemo_runs %}``: a page section of finished
runs rendered once and kept in ``replay_app.memo`` (in memory, and in the served
processes' shared files), keyed by the runs, the name and the ``vary`` values (e.g.
``request.GET.urlencode``). While any of the runs is unfinished the section renders every
time. Only for sections whose HTML depends on nothing else: no CSRF token, no user, no
messages.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.template.base import FilterExpression, NodeList, Parser, Token

from replay_app import memo

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
        vary = "&".join(str(v.resolve(context)) for v in self.vary)
        return memo.cached_many(
            runs, f"html-{self.name}?{vary}", lambda: self.nodelist.render(context)
        )


@register.tag("memo_runs")
def memo_runs(parser: Parser, token: Token) -> MemoRunsNode:
    bits = token.split_contents()
    if len(bits) < 3 or bits[2][0] not in "\"'":
        raise template.TemplateSyntaxError('usage: {% memo_runs runs "name" [vary ...] %}')
    nodelist = parser.parse(("endmemo_runs",))
    parser.delete_first_token()
    vary = [parser.compile_filter(bit) for bit in bits[3:]]
    return MemoRunsNode(nodelist, parser.compile_filter(bits[1]), bits[2][1:-1], vary)
