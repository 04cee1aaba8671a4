"""The compare step view of finished runs (``/compare/?runs=…&step=N``) is memoised like
the other finished-run pages (``whole_page``): rendered once per query and viewer, its
JSON twin too; each step is its own page; and a page of it reads only its own messages'
fates (not every message's before the request)."""

from __future__ import annotations

from typing import Any

import pytest
from inspect_helpers import make_run, view_with_templates

from ctxlab.engine.core.fatelog import FateLog
from replay_app.compare import compare_steps
from replay_app.models import Run

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]


@pytest.fixture
def runs(user: Any, transcript: Any) -> list[Run]:
    return [make_run(user, transcript, s) for s in ("cowagent", "copaw")]


def _url(runs: list[Run], **query: Any) -> str:
    ids = ",".join(str(r.pk) for r in runs)
    extra = "".join(f"&{k}={v}" for k, v in query.items())
    return f"/compare/?runs={ids}{extra}"


def test_the_step_view_is_rendered_once_per_step(client: Any, user: Any, runs: list[Run]) -> None:
    client.force_login(user)
    url = _url(runs, step=5)
    first, rendered = view_with_templates(client, url)
    assert "replay_app/compare/compare_step.html" in rendered
    again, rendered_again = view_with_templates(client, url)
    assert rendered_again == []  # the page came from the memo
    assert 'id="step-title"' in again and "Step 5" in again
    other, rendered_other = view_with_templates(client, _url(runs, step=6))
    # another step, another page, in the same frame (base.html is not rendered again)
    assert rendered_other == [] and "Step 6" in other and "at step 6 · ctxlab" in other


def test_the_json_twin_is_memoised_beside_the_page(
    client: Any, user: Any, runs: list[Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    client.force_login(user)
    url = _url(runs, step=4, format="json")
    first = client.get(url).json()
    built: list[int] = []
    real = compare_steps.step_across

    def counted(*args: Any, **kwargs: Any) -> Any:
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(compare_steps, "step_across", counted)
    assert client.get(url).json() == first and built == []
    client.get(_url(runs, step=4))  # the HTML page is another entry
    assert built == [1]


def test_the_memoised_step_view_is_only_its_owners(
    client: Any, user: Any, other_user: Any, runs: list[Run]
) -> None:
    client.force_login(user)
    view_with_templates(client, _url(runs, step=3))
    client.force_login(other_user)
    assert client.get(_url(runs, step=3)).status_code == 404


def test_a_page_reads_only_its_messages_fates(
    runs: list[Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    step = max(r.steps_total for r in runs) - 1
    whole = compare_steps.step_across(runs, step=step, page=1, per_page=4)
    everything = compare_steps.step_across(runs, step=step, page=1, per_page=10**6)
    assert whole.count > 4 and whole.pages > 1
    expect = [(m.index, [c.fate if c else None for c in m.cells]) for m in everything.messages]
    asked: list[Any] = []
    real = FateLog.fates_at

    def spy(self: FateLog, at: int, indexes: Any = None) -> Any:
        asked.append(indexes)
        return real(self, at, indexes)

    monkeypatch.setattr(FateLog, "fates_at", spy)
    for page in range(1, whole.pages + 1):
        view = compare_steps.step_across(runs, step=step, page=page, per_page=4)
        got = [(m.index, [c.fate if c else None for c in m.cells]) for m in view.messages]
        assert got == expect[(page - 1) * 4 : page * 4]
    assert asked and all(indexes is not None and len(indexes) <= 4 for indexes in asked)
