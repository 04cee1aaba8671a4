"""The compare step view's message rows, rendered in Python (``compare/step_rows.py``),
are the markup the template's loop rendered, every transcript value escaped; and the
page shows them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.template import Context, Template
from inspect_helpers import make_run

from replay_app.compare import step_rows
from replay_app.compare.compare_steps import FateCell, MessageLine, StepAcross

# The loop compare_step.html held before the rows were rendered in Python.
LOOP = """{% load budget_tags vocabulary_tags %}
{% for line in view.messages %}
  <tr data-index="{{ line.index }}" id="message-{{ line.index }}" class="{% if line.differs %}differs{% endif %}{% if message == line.index %} focus-message{% endif %}"{% if message == line.index %} aria-current="true"{% endif %}>
    <th class="sticky-col"><span class="mono">#{{ line.index }}</span> <span class="small muted">{{ line.role }} · {{ line.tokens|tokens }} tok</span><div class="small preview">{{ line.preview|truncatechars:120 }}</div></th>
    {% for cell in line.cells %}<td data-fate="{{ cell.fate|default:'' }}">{% if cell %}{% include "replay_app/steps/_fate_badge.html" with fate=cell.fate reason=cell.reason %}{% if cell.event is not None %} <span class="small" title="{{ cell.kind|event_meaning }}">{{ cell.kind|event_label }} #{{ cell.event }}</span><div class="small reason">{{ cell.reason }}</div>{% endif %}{% else %}<span class="muted small">—</span>{% endif %}</td>{% endfor %}
  </tr>
{% endfor %}"""  # noqa: E501


def _squeezed(html: str) -> str:
    return re.sub(r">\s+<", "><", html.strip())


def _view() -> StepAcross:
    hostile = "<script>alert('x')</script> & \"quoted\" " + "long " * 40
    lines = [
        MessageLine(0, "system", "You are <b>helpful</b>", 12, [FateCell("kept", None, "", "")]),
        MessageLine(
            1,
            "tool",
            hostile,
            12345,
            [FateCell("summarized", 3, "summary", "why <not> & 'so'"), None],
        ),  # fmt: skip
        MessageLine(
            2,
            "user",
            "",
            0,
            [FateCell("truncated", 7, "no_such_kind", ""), FateCell("kept", None, "", "")],
        ),  # fmt: skip
    ]
    return StepAcross(5, None, 10, [], lines, 1, 1, 3, False)


@pytest.mark.parametrize("message", [None, 1])
def test_rows_are_the_loops_markup(message: int | None) -> None:
    view = _view()
    expected = Template(LOOP).render(Context({"view": view, "message": message}))
    got = step_rows.rows_html(view, message)
    assert _squeezed(got) == _squeezed(expected)
    assert "<script>" not in got and "&lt;script&gt;" in got


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_memo")
def test_the_step_view_shows_the_rows(client: Any, user: Any, transcript: Any) -> None:
    runs = [make_run(user, transcript, s) for s in ("cowagent", "copaw")]
    client.force_login(user)
    ids = ",".join(str(r.pk) for r in runs)
    html = client.get("/compare/", {"runs": ids, "step": 4, "message": 1}).content.decode()
    data = client.get("/compare/", {"runs": ids, "step": 4, "format": "json"}).json()
    shown = re.findall(r'<tr data-index="(\d+)" id="message-\1"', html)
    assert shown and [int(i) for i in shown] == [m["index"] for m in data["runs"][0]["messages"]]
    assert 'class=" focus-message" aria-current="true"' in html or (
        'class="differs focus-message" aria-current="true"' in html
    )


@pytest.mark.parametrize("seed", range(3))
def test_previews_are_cut_as_truncatechars_cuts_them(seed: int) -> None:
    import random

    from django.utils.text import Truncator

    rng = random.Random(seed)
    alphabet = ["a", " ", "<", "&", "\n", "é", "字", "😀", "e\u0301", "\u0301"]
    texts = ["x" * n for n in (0, 119, 120, 121, 200)]
    texts += [
        "".join(
            rng.choice(alphabet[: rng.choice((5, 8, 10))]) for _ in range(rng.randrange(100, 201))
        )
        for _ in range(500)
    ]
    for text in texts:
        expected = text if len(text) <= 120 else Truncator(text).chars(120)
        assert step_rows._preview(text) == expected
