"""Issue 31, item 15: two ticked summaries diff section by section (Goal beside Goal) on
the page and in its JSON twin, read from one object; secrets are masked before the diff;
the compare page's diff button sits in a sticky bar right under the ticks."""

from __future__ import annotations

import re
from typing import Any

import pytest
from inspect_helpers import make_run

from replay_app.models import RunSummary

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

SECRET = "sk-ant-api03-" + "Q" * 80


@pytest.fixture
def picks(user: Any, transcript: Any) -> dict[str, list[str]]:
    run = make_run(user, transcript, "copaw")
    summaries = list(RunSummary.objects.filter(run=run).order_by("seq")[:2])
    assert len(summaries) == 2
    first, second = summaries
    first.output = "## Goal\nFix the tests\n\n## Next Steps\n1. part 19\n"
    first.save(update_fields=["output"])
    second.output = (
        "## Goal\nFix the tests and the db\n\n## Critical Context\n- key "
        f"{SECRET}\n\n## Next Steps\n1. part 40\n"
    )
    second.save(update_fields=["output"])
    return {"pick": [f"{run.pk}:{first.seq}", f"{run.pk}:{second.seq}"]}


def test_summary_diff_section_by_section_json_and_page(
    client: Any, user: Any, picks: dict[str, list[str]]
) -> None:
    client.force_login(user)
    data = client.get("/compare/diff/", {**picks, "format": "json"}).json()
    sections = [
        (s["heading"], s["left"] is not None, s["right"] is not None) for s in data["sections"]
    ]
    assert sections == [
        ("Goal", True, True),
        ("Next Steps", True, True),
        ("Critical Context", False, True),
    ]
    assert SECRET not in str(data) and SECRET[:12] not in data["right"]["output"]
    html = client.get("/compare/diff/", picks).content.decode()
    assert SECRET not in html
    rows = re.findall(r'<tr data-section="([^"]+)"', html)
    assert rows == [s[0] for s in sections]
    goal = html[html.index('<tr data-section="Goal"') :]
    goal = goal[: goal.index("</tr>")]
    assert "<ins> and the db</ins>" in goal and "<del>" not in goal
    assert "no such section" in html[html.index('data-section="Critical Context"') :]


def test_diff_button_in_a_sticky_bar_under_the_ticks(
    client: Any, user: Any, picks: dict[str, list[str]]
) -> None:
    client.force_login(user)
    run = picks["pick"][0].split(":")[0]
    other = make_run(user, RunSummary.objects.get(run_id=run, seq=0).run.transcript, "cowagent")
    html = client.get(
        f"/compare/?runs={run},{other.pk}",
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="compare-summaries",
    ).content.decode()
    form = html[html.index('id="summary-diff-form"') : html.index("</form>")]
    assert 'class="diff-bar" id="diff-bar"' in form and 'id="diff-chosen"' in form
    assert 'aria-live="polite"' in form
