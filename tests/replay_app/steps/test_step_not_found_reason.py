"""A step past a run's last one says so on the 404 page, with the run's range (the trial's
/runs/1/steps/999/ read only "nothing here, or it belongs to another account" while the
comparison's step view named the range); another user's run and an unknown address keep
the plain page, naming nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings
from inspect_helpers import make_run

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]


@override_settings(DEBUG=False)
def test_a_step_out_of_range_names_the_runs_steps(
    client: Any, user: Any, other_user: Any, small_transcript: Any
) -> None:
    run = make_run(user, small_transcript, "qwenpaw")
    last = run.steps_total - 1
    client.force_login(user)
    response = client.get(f"/runs/{run.pk}/steps/{last + 5}/")
    assert response.status_code == 404
    body = response.content.decode()
    assert f"run {run.pk} has no step {last + 5} (steps 0 to {last})" in body
    assert 'id="not-found-reason"' in body
    client.force_login(other_user)
    for url in (f"/runs/{run.pk}/steps/{last + 5}/", "/no/such/page/"):
        other = client.get(url)
        assert other.status_code == 404
        text = other.content.decode()
        assert "nothing here" in text and "has no step" not in text
        assert "Resolver404" not in text and "Http404" not in text
