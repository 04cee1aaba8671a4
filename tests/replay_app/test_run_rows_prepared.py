"""The run pages' per-view rows by prepared queries (``replay_app.run_rows``): what the
querysets they replace give, and the ownership check of ``get_owned_or_404``."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import Http404
from inspect_helpers import make_run

from replay_app import run_rows
from replay_app.models import Run, RunStep
from sessions_app.models import Message

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]


@pytest.fixture
def run(user: Any, transcript: Any) -> Run:
    return make_run(user, transcript, "cowagent")


def test_owned_run_is_the_owners_run_only(run: Run, user: Any, other_user: Any) -> None:
    full = Run.objects.get(pk=run.pk)
    fields = [f.attname for f in Run._meta.concrete_fields]
    loaded = run_rows.owned_run(
        user, run.pk, run_rows.run_fields(without=("ledger", "ground_truth"))
    )
    assert loaded.get_deferred_fields() == {"ledger", "ground_truth"}
    assert [getattr(loaded, f) for f in fields] == [getattr(full, f) for f in fields]  # lazily
    keyed = run_rows.owned_run(
        user, run.pk, run_rows.run_fields(only=("status", "finished_at", "created_at"))
    )
    assert keyed.status == full.status and keyed.finished_at == full.finished_at
    assert "params" in keyed.get_deferred_fields() and keyed.owner_id == user.pk
    for viewer, pk in ((other_user, run.pk), (AnonymousUser(), run.pk), (user, run.pk + 999)):
        with pytest.raises(Http404):
            run_rows.owned_run(viewer, pk, run_rows.run_fields(only=("status",)))


def test_step_and_message_rows_are_the_querysets_rows(run: Run) -> None:
    assert run.steps_total > 3
    for step in (0, run.steps_total // 2, run.steps_total - 1):
        expected = RunStep.objects.filter(run=run, index=step).values_list(*run_rows.STEP_COLUMNS)
        assert run_rows.step_row(run, step) == expected.get()
    assert run_rows.step_row(run, run.steps_total + 5) is None
    count = run.transcript.message_count
    for start, end in ((0, 50), (3, 7), (count - 2, count + 50), (count + 1, count + 9)):
        expected_rows = Message.objects.filter(
            transcript_id=run.transcript_id, index__gte=start, index__lt=end
        ).order_by("index")
        assert run_rows.message_rows(run.transcript_id, start, end) == list(
            expected_rows.values_list(*run_rows.MESSAGE_COLUMNS)
        )


def test_step_pages_of_other_users_runs_are_404(
    client: Any, run: Run, user: Any, other_user: Any
) -> None:
    client.force_login(user)
    assert client.get(f"/runs/{run.pk}/steps/1/").status_code == 200
    assert client.get(f"/runs/{run.pk}/").status_code == 200
    client.force_login(other_user)
    assert client.get(f"/runs/{run.pk}/steps/1/").status_code == 404
    assert client.get(f"/runs/{run.pk}/").status_code == 404


def test_a_warmed_process_compiles_nothing_in_its_views(
    client: Any, run: Run, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxlab.serving import page_pool
    from ctxlab.serving.prepared import Prepared

    page_pool.warm_queries()  # what a page process does before it listens
    compiled: list[Any] = []
    original = Prepared._compile

    def spy(self: Prepared, using: str) -> Any:
        compiled.append(self)
        return original(self, using)

    monkeypatch.setattr(Prepared, "_compile", spy)
    for prepared in [*run_rows._SHAPES]:
        run_rows._run_query(prepared)._compiled.clear()  # as in a fresh process...
    run_rows._step_query()._compiled.clear()
    page_pool.warm_queries()  # ... warmed again
    warmed = len(compiled)
    client.force_login(user)
    for url in (f"/runs/{run.pk}/", f"/runs/{run.pk}/steps/2/", f"/runs/{run.pk}/steps/3/"):
        assert client.get(url).status_code == 200
    assert warmed >= 3 and len(compiled) == warmed  # every view's lookup was ready
