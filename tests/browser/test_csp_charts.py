"""Under the real CSP (script-src 'self': no inline script, no eval) every chart draws from
its JSON data block via static/js/plots.js, on page load and after an htmx swap (the sweep
section polling), and the browser reports no CSP violation anywhere."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared test data
from replay_testdata import agent_chat, import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
USAGE_FILE = CORPUS / "claude-code" / "sniffly-fed8ce56-bc79-401f-a83e-af084253362f.jsonl"
EVIL = "</script><script>window.__xss = 1</script>"

# Runs before any page script (CDP, so the CSP does not apply to it): records every
# violation the page reports, whatever the console says.
WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(e.violatedDirective + " " + e.blockedURI + " " + (e.sample || ""));
});
"""


@pytest.fixture
def watched(page: Any) -> Any:
    page.console = []  # every console message, not only errors
    page.on("console", lambda msg: page.console.append(f"{msg.type}: {msg.text}"))
    page.add_init_script(WATCH)
    return page


def assert_clean(page: Any, where: str) -> None:
    assert page.evaluate("window.__csp") == [], where
    refused = [m for m in page.console if "Content Security Policy" in m or "Refused to" in m]
    assert refused == [], where
    assert page.errors == [], where
    assert page.evaluate("window.__xss") is None, where


def drawn(page: Any, plot_id: str) -> None:
    page.wait_for_selector(f"#{plot_id}.js-plotly-plot .main-svg")
    assert page.get_attribute(f"#{plot_id}", "data-plotted") == "true"


def test_charts_draw_under_strict_csp_on_every_chart_page(
    watched: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    from django.contrib.auth import get_user_model

    from replay_app.runs import executor, services
    from replay_app.runs.services import RunSpec
    from replay_app.sweeps import sweep
    from sessions_app import services as session_services

    page, base = watched, asgi_live_server.url
    login(base_url=base)
    user = get_user_model().objects.get(username="alice")
    upload = session_services.upload_import(
        owner=user, name=USAGE_FILE.name, data=USAGE_FILE.read_bytes()
    ).upload
    assert upload is not None
    usage = upload.transcripts.get()
    usage.compactions = [{"kind": EVIL, "before_index": 5}]
    usage.save(update_fields=["compactions"])
    transcript = import_transcript(user, agent_chat(turns=40, size=6000, seed=3))
    runs = []
    for strategy in ("cowagent", "picoclaw"):
        run = services.run_create(
            owner=user, transcript=transcript, spec=RunSpec(strategy=strategy), enqueue=False
        )
        runs.append(executor.run_execute(run=run))
    runs[0].label = EVIL
    runs[0].ground_truth = {"exact": list(range(runs[0].steps_total)), "exact_model": "m"}
    runs[0].save(update_fields=["label", "ground_truth"])

    page.goto(f"{base}{usage.get_absolute_url()}")
    drawn(page, "usage-chart")
    assert EVIL in (page.locator("#usage-chart .annotation").text_content() or "")
    assert_clean(page, "transcript")

    page.goto(f"{base}/runs/{runs[0].pk}/")
    drawn(page, "token-curve-plot")
    drawn(page, "truth-plot")
    # the PNG download is still plotly's modebar button
    assert page.locator("#token-curve-plot .modebar-btn[data-title*='png' i]").count() == 1
    page.locator("h1").click()
    page.keyboard.press("Home")  # the scrubber's htmx swap runs under the CSP too
    page.wait_for_selector('#step-context[data-step="0"]')
    assert_clean(page, "run")

    page.goto(f"{base}/compare/?runs={runs[0].pk},{runs[1].pk}")
    drawn(page, "compare-plot")
    assert EVIL in (page.locator("#compare-plot .legend").text_content() or "")
    assert_clean(page, "compare")

    # A sweep with one of two runs done: the chart is there on load with one point, and the
    # polled section swaps in a new chart once the other run finishes.
    group = services.group_create(
        owner=user,
        transcript=transcript,
        specs=sweep.specs(sweep.Base(strategy="qwenpaw"), "max_input_length", [20000, 60000]),
        enqueue=False,
    )
    first, second = group.runs.order_by("pk")
    executor.run_execute(run=first)
    page.goto(f"{base}/runs/groups/{group.pk}/")
    drawn(page, "sweep-plot")
    assert page.locator("#sweep-plot .scatterlayer .point").count() == 1
    page.evaluate("document.getElementById('sweep-plot').dataset.first = 'yes'")
    executor.run_execute(run=second)
    page.wait_for_selector("#sweep[data-finished=true]")
    drawn(page, "sweep-plot")
    assert page.get_attribute("#sweep-plot", "data-first") is None  # a swapped-in element
    assert page.locator("#sweep-plot .scatterlayer .point").count() == 2
    screenshot("sweep")
    assert_clean(page, "sweep")
    # plotly.min.js loaded once, on demand
    scripts = page.evaluate(
        "[...document.scripts].map(s => s.src).filter(s => s.includes('plotly'))"
    )
    assert len(scripts) == 1, scripts
