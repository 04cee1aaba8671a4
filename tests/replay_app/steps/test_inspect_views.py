"""Run inspection pages: curve, step scrubber fragment, diffs, offloads, summaries, JSON twins."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from inspect_helpers import make_run
from replay_testdata import import_transcript

from ctxlab.engine.core.records import fates_at
from ctxlab.engine.replay import run as replay_run
from replay_app.models import Run, RunEvent, RunOffload, RunStep
from replay_app.runs import textstore

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def cow_run(user: Any, transcript: Any) -> Run:
    return make_run(user, transcript, "cowagent")


@pytest.fixture
def qwen_run(user: Any, transcript: Any) -> Run:
    return make_run(user, transcript, "qwenpaw")


def change_with(run: Run, fate: str) -> tuple[RunEvent, dict[str, Any]]:
    for event in RunEvent.objects.filter(run=run).order_by("seq"):
        for change in event.changes:
            if change["fate"] == fate:
                return event, change
    raise AssertionError(f"no {fate} change in run {run.pk}")


def fates_on_page(html: str) -> dict[int, str]:
    return {int(i): f for i, f in re.findall(r'data-index="(\d+)" data-fate="([a-z]+)"', html)}


# --- the run page ------------------------------------------------------------------------


def test_run_page_has_curve_scrubber_and_summaries(client: Any, user: Any, cow_run: Run) -> None:
    client.force_login(user)
    html = client.get(f"/runs/{cow_run.pk}/").content.decode()
    assert 'id="token-curve-plot"' in html
    assert "plotly/plotly.min.js" in html
    assert '"toImageButtonOptions"' in html  # the PNG button's options
    assert 'id="step-slider"' in html and f'max="{cow_run.steps_total - 1}"' in html
    assert 'id="step-context"' in html
    # each summary beside its input, loaded on demand
    assert f'hx-get="/runs/{cow_run.pk}/summaries/0/"' in html
    assert html.count('class="zone-bar zone-bar-large"') == 1


def test_run_page_step_param_renders_that_step_without_js(
    client: Any, user: Any, cow_run: Run
) -> None:
    client.force_login(user)
    html = client.get(f"/runs/{cow_run.pk}/?step=3").content.decode()
    assert 'data-step="3"' in html
    assert f'href="/runs/{cow_run.pk}/?step=2#scrubber"' in html  # prev link works as a link
    assert f'href="/runs/{cow_run.pk}/?step=4#scrubber"' in html


# --- the step fragment -------------------------------------------------------------------


def test_step_fragment_htmx_is_only_the_fragment(client: Any, user: Any, cow_run: Run) -> None:
    client.force_login(user)
    fragment = client.get(f"/runs/{cow_run.pk}/steps/2/", **HX).content.decode()
    page = client.get(f"/runs/{cow_run.pk}/steps/2/").content.decode()
    assert fragment.lstrip().startswith('<div id="step-context"')
    assert "<html" not in fragment
    assert "<html" in page and 'id="step-context"' in page


def test_step_fragment_fates_and_zones_match_the_engine(
    client: Any, user: Any, cow_run: Run
) -> None:
    client.force_login(user)
    result = textstore.replay_result(cow_run)
    drop = next(e for e in result.events if any(c.fate.value == "dropped" for c in e.changes))
    step = drop.step
    record = result.steps[step]
    expected = fates_at(result.events, step)
    pages = -(-record.source_index // 50)
    seen: dict[int, str] = {}
    for page in range(1, pages + 1):
        html = client.get(f"/runs/{cow_run.pk}/steps/{step}/?mpage={page}", **HX).content.decode()
        seen.update(fates_on_page(html))
    assert sorted(seen) == list(range(record.source_index))
    for index, fate in seen.items():
        want = expected[index][0].fate.value if index in expected else "kept"
        assert fate == want, index
    assert "dropped" in seen.values()
    html = client.get(f"/runs/{cow_run.pk}/steps/{step}/", **HX).content.decode()
    zones = dict(re.findall(r'data-zone="([a-z_]+)" data-tokens="(\d+)"', html))
    for key, value in record.zones.as_dict().items():
        if key not in ("window", "threshold") and value:
            assert int(zones[key]) == value, key


def test_step_json_twin(client: Any, user: Any, cow_run: Run) -> None:
    client.force_login(user)
    data = client.get(f"/runs/{cow_run.pk}/steps/5/?format=json").json()
    row = RunStep.objects.get(run=cow_run, index=5)
    assert data["step"] == 5
    assert data["zones"] == row.zones
    assert data["tokens"]["reference"] == row.tokens_reference
    assert len(data["messages"]) == min(50, row.source_index)
    assert {m["fate"] for m in data["messages"]} <= {
        "kept",
        "truncated",
        "offloaded",
        "pruned",
        "summarised",
        "dropped",
    }


def test_step_page_paginates_messages(client: Any, user: Any, cow_run: Run) -> None:
    client.force_login(user)
    last = RunStep.objects.filter(run=cow_run).order_by("-index").first()
    assert last is not None and last.source_index > 50
    first = client.get(f"/runs/{cow_run.pk}/steps/{last.index}/?mpage=1&format=json").json()
    assert [m["index"] for m in first["messages"]] == list(range(50))
    assert first["pages"] == -(-last.source_index // 50)


def test_step_missing_is_404(client: Any, user: Any, cow_run: Run) -> None:
    client.force_login(user)
    assert client.get(f"/runs/{cow_run.pk}/steps/9999/").status_code == 404


# --- diffs and offloads ------------------------------------------------------------------


def test_diff_of_truncated_message(client: Any, user: Any, cow_run: Run) -> None:
    client.force_login(user)
    event, change = change_with(cow_run, "truncated")
    url = f"/runs/{cow_run.pk}/messages/{change['index']}/diff/?event={event.seq}"
    fragment = client.get(url, **HX).content.decode()
    assert "<html" not in fragment
    assert 'class="diff-del"' in fragment
    assert "truncated" in fragment
    data = client.get(url + "&format=json").json()
    assert data["fate"] == "truncated"
    assert len(data["modified"]) < len(data["original"])
    assert any(line.startswith("-") for line in data["diff"])


def test_step_list_offers_diff_for_modified_messages(client: Any, user: Any, qwen_run: Run) -> None:
    client.force_login(user)
    event, change = change_with(qwen_run, "offloaded")
    index = change["index"]
    html = client.get(
        f"/runs/{qwen_run.pk}/steps/{event.step}/?mpage={index // 50 + 1}", **HX
    ).content.decode()
    assert f"/runs/{qwen_run.pk}/messages/{index}/diff/?event={event.seq}" in html
    assert f"/runs/{qwen_run.pk}/offloads/?path=" in html


def test_offload_text_is_plain_text(client: Any, user: Any, qwen_run: Run) -> None:
    client.force_login(user)
    offload = RunOffload.objects.filter(run=qwen_run).first()
    assert offload is not None
    response = client.get(f"/runs/{qwen_run.pk}/offloads/", {"path": offload.path})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    # stored by reference into the transcript: the page shows the engine's full text
    replayed = replay_run(qwen_run.transcript.to_conversation(), "qwenpaw", params=qwen_run.params)
    assert offload.text == "" and offload.text_parts
    assert response.content.decode() == replayed.offloads[offload.path]


def test_offload_unknown_path_404(client: Any, user: Any, qwen_run: Run) -> None:
    client.force_login(user)
    assert client.get(f"/runs/{qwen_run.pk}/offloads/", {"path": "nope"}).status_code == 404


# --- summaries and losses ----------------------------------------------------------------


def test_summary_next_to_its_input(client: Any, user: Any, cow_run: Run) -> None:
    client.force_login(user)
    summary = cow_run.summaries.order_by("seq").first()
    assert summary is not None
    html = client.get(f"/runs/{cow_run.pk}/summaries/{summary.seq}/").content.decode()
    assert "summary-input" in html and "summary-output" in html
    fragment = client.get(f"/runs/{cow_run.pk}/summaries/{summary.seq}/", **HX).content.decode()
    assert fragment.startswith('<pre class="summary-text summary-input" tabindex="0"')
    data = client.get(f"/runs/{cow_run.pk}/summaries/{summary.seq}/?format=json").json()
    # the exact input the engine gave the summariser, though stored by reference
    replayed = replay_run(cow_run.transcript.to_conversation(), "cowagent", params=cow_run.params)
    assert data["input"] == replayed.summaries[summary.seq].input
    assert data["output"] == summary.output
    assert summary.input == "" and summary.input_parts


def test_run_lost_json_has_retention(client: Any, user: Any, cow_run: Run) -> None:
    client.force_login(user)
    data = client.get(f"/runs/{cow_run.pk}/lost/?format=json").json()
    assert data["events"], "cowagent dropped messages"
    assert data["retention"] is None or 0 <= data["retention"] <= 1
    assert data["at_risk"] == data["retained"] + data["lost"]
    assert client.get(f"/runs/{cow_run.pk}/lost/").status_code == 200


# --- escaping and isolation --------------------------------------------------------------

XSS = "<script>alert('x')</script><img src=x onerror=alert(1)>"


def test_transcript_text_is_escaped_everywhere(client: Any, user: Any) -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": f"{XSS} " + "pad " * 3000},
        {"role": "assistant", "content": f"a {XSS}"},
        {"role": "user", "content": f"again {XSS} " + "pad " * 3000},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "more " * 3000},
        {"role": "assistant", "content": "c"},
    ]
    transcript = import_transcript(user, json.dumps(messages).encode(), name="xss.json")
    run = make_run(user, transcript, "cowagent", agent_max_context_tokens=4000)
    client.force_login(user)
    pages = [
        client.get(f"/runs/{run.pk}/").content.decode(),
        client.get(f"/runs/{run.pk}/steps/2/?mpage=1", **HX).content.decode(),
        client.get(f"/runs/{run.pk}/messages/1/diff/").content.decode(),
        client.get(f"/runs/{run.pk}/lost/").content.decode(),
    ]
    for html in pages:
        assert "<script>alert" not in html
        assert "<img src=x" not in html
    assert "&lt;script&gt;alert" in pages[1]


@pytest.mark.parametrize(
    "path",
    [
        "/runs/{pk}/",
        "/runs/{pk}/steps/0/",
        "/runs/{pk}/steps/0/?format=json",
        "/runs/{pk}/messages/1/diff/",
        "/runs/{pk}/offloads/?path=x",
        "/runs/{pk}/summaries/0/",
        "/runs/{pk}/lost/?format=json",
    ],
)
def test_other_users_run_is_404(client: Any, other_user: Any, cow_run: Run, path: str) -> None:
    client.force_login(other_user)
    assert client.get(path.format(pk=cow_run.pk)).status_code == 404
