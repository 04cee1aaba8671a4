"""The compare step view's per-request work (issue 33): its zones section and fate legend
are rendered in Python (``compare/step_rows.py``) as the template's loop rendered them,
every run's value escaped; the events' words come from one read per run
(``fatelog.event_words``, read with the fate log) and say what each event's changes say; and a view reads
the runs and their step rows in one query each, whatever the number of runs."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.template import Context, Template
from django.test.utils import CaptureQueriesContext
from inspect_helpers import make_run

from ctxlab.engine.core.catalogue import Trigger, trigger_of
from replay_app.compare import compare_steps, step_rows
from replay_app.models import Run, RunEvent
from replay_app.steps import fatelog

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

# The loops compare_step.html held before these parts were rendered in Python.
ZONES_LOOP = """{% load budget_tags vocabulary_tags %}
  {% for at in view.runs %}
    <div class="step-run run-colour-{{ forloop.counter0 }}" data-run="{{ at.run.pk }}">
      <h3><a href="{% url 'run-detail' at.run.pk %}">run {{ at.run.pk }} · {{ at.run.label }}</a> <span class="mono small muted">{{ at.run.strategy }}</span></h3>
      {% if at.step is None %}<p class="muted small">{% if view.compaction %}No compaction {{ view.compaction }} in this run.{% else %}No step {{ view.step }} in this run.{% endif %}</p>
      {% else %}
      <p class="small step-tokens">step {{ at.step }} · request <strong class="num">{{ at.tokens.strategy|tokens }}</strong> as the strategy counts it · <strong class="num">{{ at.tokens.reference|tokens }}</strong> (cl100k){% if at.tokens.reported is not None %} · <strong class="num">{{ at.tokens.reported|tokens }}</strong> reported{% endif %}{% if at.compaction %} · <strong>{{ at.compaction.kinds|event_labels }}</strong>: {{ at.compaction.trigger }}{% endif %}</p>
      {% include "replay_app/steps/_zone_bar.html" with zone=at.zone %}
      {% endif %}
    </div>
  {% endfor %}"""  # noqa: E501
LEGEND_LOOP = """<ul class="fate-legend plain">{% for f in fate_names %}<li>{% include "replay_app/steps/_fate_badge.html" with fate=f reason="" %}</li>{% endfor %}</ul>"""  # noqa: E501


def _squeezed(html: str) -> str:
    return re.sub(r">\s+<", "><", html.strip())


@pytest.fixture
def runs(user: Any, transcript: Any) -> list[Run]:
    made = [make_run(user, transcript, s) for s in ("cowagent", "copaw", "qwenpaw")]
    made[0].label = "<script>alert('x')</script> & \"quoted\""  # a label is the user's text
    return made


def _views(runs: list[Run]) -> list[compare_steps.StepAcross]:
    last = max(r.steps_total for r in runs) - 1
    most = max(len(compare_steps.compactions(r)) for r in runs)
    views = [compare_steps.step_across(runs, step=s) for s in (0, last // 2, last)]
    views += [compare_steps.step_across(runs, compaction=k) for k in range(1, most + 2)]
    return views


def test_zones_are_the_loops_markup(runs: list[Run]) -> None:
    views = _views(runs)
    assert any(at.compaction for v in views for at in v.runs)  # a run at its compaction
    assert any(at.step is None for v in views for at in v.runs)  # a run without one
    for view in views:
        expected = Template(ZONES_LOOP).render(Context({"view": view}))
        got = step_rows.zones_html(view)
        assert _squeezed(got) == _squeezed(expected)
        assert "<script>" not in got and "&lt;script&gt;alert(&#x27;x&#x27;)" in got


def test_the_legend_is_the_loops_markup() -> None:
    expected = Template(LEGEND_LOOP).render(Context({"fate_names": fatelog.FATES}))
    assert step_rows.fate_legend() == _squeezed(expected)


def _reasons_read_from_each_event(run: Run, cells: list[tuple[int, int]]) -> list[str]:
    """(message index, event seq) -> the reason, as the view read it before: each shown
    event's row and its changes."""
    out = []
    for index, seq in cells:
        kind, detail, changes, before = RunEvent.objects.values_list(
            "kind", "detail", "changes", "tokens_before"
        ).get(run=run, seq=seq)
        detail = detail or {}
        fired = trigger_of(kind, detail)
        if fired.measured is None:
            fired = Trigger(before or None, fired.limit, "context", fired.limit_name)
        reasons = {int(c["index"]): str(c.get("reason") or "") for c in changes}
        why = reasons.get(index) or str(detail.get("reason") or kind)
        out.append(f"{why}; {fired.words()}" if fired.words() else why)
    return out


def test_each_cell_says_what_its_events_changes_say(runs: list[Run]) -> None:
    last = max(r.steps_total for r in runs) - 1
    view = compare_steps.step_across(runs, step=last, page=1, per_page=10**6)
    checked = 0
    for col, run in enumerate(runs):
        cells = [
            (line.index, line.cells[col])
            for line in view.messages
            if line.cells[col] is not None and line.cells[col].event is not None  # type: ignore[union-attr]
        ]
        pairs = [(index, cell.event) for index, cell in cells if cell and cell.event is not None]
        expected = _reasons_read_from_each_event(run, pairs)
        assert [cell.reason for _, cell in cells if cell] == expected
        kinds = dict(RunEvent.objects.filter(run=run).values_list("seq", "kind"))
        assert all(cell.kind == kinds[cell.event] for _, cell in cells if cell and cell.event)
        checked += len(cells)
    assert checked > 0  # some message had a fate set by an event


def _queries(client: Any, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as seen:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in seen.captured_queries]


def test_a_view_reads_runs_and_steps_once_whatever_their_number(
    client: Any, user: Any, runs: list[Run]
) -> None:
    client.force_login(user)
    step = max(r.steps_total for r in runs) - 1
    for ids in (f"{runs[0].pk},{runs[1].pk}", ",".join(str(r.pk) for r in runs)):
        client.get(f"/compare/?runs={ids}&step={step}&format=json")  # per-run values built
        sql = _queries(client, f"/compare/?runs={ids}&step={step - 1}&format=json")
        run_reads = [q for q in sql if 'FROM "replay_app_run"' in q]
        step_reads = [q for q in sql if 'FROM "replay_app_runstep"' in q]
        event_reads = [q for q in sql if 'FROM "replay_app_runevent"' in q]
        assert (len(run_reads), len(step_reads), len(event_reads)) == (1, 1, 0), sql
        assert '"params"' not in run_reads[0] and '"metrics"' not in run_reads[0]
        assert '"context"' not in step_reads[0]  # the step page's message list: not read


def test_the_page_shows_the_json_twins_figures(client: Any, user: Any, runs: list[Run]) -> None:
    client.force_login(user)
    ids = ",".join(str(r.pk) for r in runs)
    step = max(r.steps_total for r in runs) // 2
    html = client.get(f"/compare/?runs={ids}&step={step}").content.decode()
    data = client.get(f"/compare/?runs={ids}&step={step}&format=json").json()
    for block, twin in zip(html.split('<div class="step-run ')[1:], data["runs"], strict=True):
        assert f'data-run="{twin["id"]}"' in block
        counts = re.findall(r'<strong class="num">([\d,]+)</strong>', block)[:2]
        tokens = twin["tokens"]
        assert counts == [f"{tokens['strategy']:,}", f"{tokens['reference']:,}"]
        assert f'data-window="{twin["zone_bar"]["window"]}"' in block
        drawn = re.findall(r'data-zone="(\w+)" data-tokens="(\d+)"', block)
        assert drawn == [(d["key"], str(d["tokens"])) for d in twin["zone_bar"]["bar"]]


# The main block compare_step.html held before it was written in Python (its parts already
# rendered by zones_html, fate_legend and rows_html, compared above).
MAIN = """{% load budget_tags vocabulary_tags %}
<p class="small"><a href="{% url 'run-compare' %}?runs={{ ids }}">&larr; Compare runs {{ ids }}</a> · <a href="?runs={{ ids }}{% if view.compaction %}&amp;compaction={{ view.compaction }}{% else %}&amp;step={{ view.step }}{% endif %}&amp;format=json">JSON</a></p>
<h1 id="step-title">{% if view.compaction %}Compaction {{ view.compaction }} of each run{% else %}Step {{ view.step }} <span class="muted small">of 0–{{ view.steps|add:-1 }}</span>{% endif %}</h1>
<nav class="step-nav" id="step-nav" aria-label="Steps">
  {% if view.prev_step is not None %}<a rel="prev" id="step-prev" href="?runs={{ ids }}&amp;step={{ view.prev_step }}{% if view.only_differences %}&amp;only=diff{% endif %}">&larr; step {{ view.prev_step }}</a>{% endif %}
  {% if view.next_step is not None %}<a rel="next" id="step-next" href="?runs={{ ids }}&amp;step={{ view.next_step }}{% if view.only_differences %}&amp;only=diff{% endif %}">step {{ view.next_step }} &rarr;</a>{% endif %}
  {% if view.compaction %}{% if view.compaction > 1 %}<a rel="prev" id="step-prev" href="?runs={{ ids }}&amp;compaction={{ view.compaction|add:-1 }}">&larr; compaction {{ view.compaction|add:-1 }}</a>{% endif %}<a rel="next" id="step-next" href="?runs={{ ids }}&amp;compaction={{ view.compaction|add:1 }}">compaction {{ view.compaction|add:1 }} &rarr;</a>{% endif %}
  <form method="get" class="inline-form"><input type="hidden" name="runs" value="{{ ids }}"><label>step <input type="number" name="step" min="0" max="{{ view.steps|add:-1 }}" value="{{ view.step|default_if_none:'' }}" class="step-input"></label>{% if view.only_differences %}<input type="hidden" name="only" value="diff">{% endif %}<button type="submit">Go</button></form>
  <span class="small muted">← → keys step through</span>
</nav>

<section class="panel" id="step-zones">
  <h2>Context zones</h2>
  <div class="step-runs">
  {{ zones_html }}
  </div>
</section>

<section class="panel" id="step-messages">
  <h2>Source messages and their fate</h2>
  {% if message is not None and message >= view.count %}<p class="message message-info" id="message-after" role="status">Message #{{ message }} comes after the request of this step (which sends {% if view.count %}#0–#{{ view.count|add:-1 }}{% else %}no message{% endif %}): no run has it in context yet, so it is not listed here.</p>{% endif %}
  <p class="small muted">One row per message of the transcript before the request; one column per run: the fate at that run's step, the event that set it and why. <a href="?runs={{ ids }}{% if view.compaction %}&amp;compaction={{ view.compaction }}{% else %}&amp;step={{ view.step }}{% endif %}{% if not view.only_differences %}&amp;only=diff{% endif %}" id="toggle-differences">{% if view.only_differences %}Show every message{% else %}Show only messages whose fate differs{% endif %}</a></p>
  {{ fate_legend }}
  {% if view.messages %}
  <div class="table-wrap step-table-wrap"><table class="step-table">
    <thead><tr><th class="sticky-col">message</th>{% for at in view.runs %}<th class="run-colour-{{ forloop.counter0 }}">run {{ at.run.pk }} · {{ at.run.label }}</th>{% endfor %}</tr></thead>
    <tbody>
    {{ rows_html }}
    </tbody>
  </table></div>
  {% if view.pages > 1 %}<nav class="pagination">{% if view.page > 1 %}<a href="?runs={{ ids }}{% if view.compaction %}&amp;compaction={{ view.compaction }}{% else %}&amp;step={{ view.step }}{% endif %}{% if view.only_differences %}&amp;only=diff{% endif %}&amp;page={{ view.page|add:-1 }}#step-messages">&larr; earlier messages</a>{% endif %}<span>Page {{ view.page }} of {{ view.pages }}</span>{% if view.page < view.pages %}<a href="?runs={{ ids }}{% if view.compaction %}&amp;compaction={{ view.compaction }}{% else %}&amp;step={{ view.step }}{% endif %}{% if view.only_differences %}&amp;only=diff{% endif %}&amp;page={{ view.page|add:1 }}#step-messages">later messages &rarr;</a>{% endif %}</nav>{% endif %}
  {% else %}<p class="muted small">{% if view.only_differences %}Every run gives every message the same fate here.{% else %}No message before this request.{% endif %}</p>{% endif %}
</section>
"""  # noqa: E501


def test_the_main_block_is_the_templates_markup(runs: list[Run]) -> None:
    ids = ",".join(str(r.pk) for r in runs)
    last = max(r.steps_total for r in runs) - 1
    most = max(len(compare_steps.compactions(r)) for r in runs)
    cases: list[tuple[compare_steps.StepAcross, int | None]] = [
        (compare_steps.step_across(runs, step=0), None),
        (compare_steps.step_across(runs, step=last), 3),
        (compare_steps.step_across(runs, step=last // 2, page=2, per_page=4), 10**6),
        (compare_steps.step_across(runs, step=last, page=1, per_page=4), 1),
        (compare_steps.step_across(runs, step=last, only_differences=True), None),
        (compare_steps.step_across(runs, step=last, only_differences=True, per_page=2), 0),
        (compare_steps.step_across(runs, step=0, only_differences=True), None),
        (compare_steps.step_across(runs, compaction=1), None),
        (compare_steps.step_across(runs, compaction=most + 1), None),
    ]
    if most > 1:
        cases.append((compare_steps.step_across(runs, compaction=2, page=1, per_page=3), 2))
    assert any(v.pages > 2 and 1 < v.page < v.pages for v, _ in cases)  # both page links
    assert any(not v.messages for v, _ in cases)
    for view, message in cases:
        context = {
            "view": view, "ids": ids, "message": message, "zones_html": step_rows.zones_html(view),
            "fate_legend": step_rows.fate_legend(), "rows_html": step_rows.rows_html(view, message),
        }  # fmt: skip
        expected = Template(MAIN).render(Context(context))
        got = step_rows.main_html(view, ids, message)
        assert _squeezed(got) == _squeezed(expected)


def test_the_fate_log_reads_the_events_words_in_its_pass(runs: list[Run]) -> None:
    from replay_app import memo

    run = runs[2]
    alone = fatelog._event_words(run)
    memo.MEMO.clear()
    fatelog.fate_log(run)
    with CaptureQueriesContext(connection) as seen:
        words = fatelog.event_words(run)
    assert words == alone and len(words) > 0
    assert not [q for q in seen.captured_queries if "replay_app_runevent" in q["sql"]]
