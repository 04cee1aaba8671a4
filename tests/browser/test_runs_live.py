"""The replay lab in a real browser: upload, compare the five presets, watch progress live.

The server is Daphne in a forked process (``daphne.testing.DaphneProcess``, what
ChannelsLiveServerTestCase uses) serving the real ASGI app with websockets; the embedded
Celery worker is started inside that process, so tasks and progress messages flow exactly
as with ``make run`` (memory:// broker, in-memory channel layer).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

PRESETS = ["qwenpaw", "copaw", "cowagent", "picoclaw", "baseagent"]


def _agent_transcript(path: Path) -> Path:
    rnd = random.Random(7)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing tests"},
    ]
    for i in range(150):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{i}.py"})},
        }
        messages.append({"role": "assistant", "content": f"step {i}", "tool_calls": [call]})
        body = "\n".join(f"{j}: {rnd.randint(0, 10**9)} /srv/f{j}.py" for j in range(220))
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": body})
    messages.append({"role": "assistant", "content": "Done."})
    path.write_text(json.dumps(messages))
    return path


def test_compare_five_presets_progress_live_to_results(
    page: Any, asgi_worker_server: Any, login: Any, screenshot: Any, tmp_path: Path
) -> None:
    base = asgi_worker_server.url
    login(base_url=base)

    page.goto(f"{base}/transcripts/")
    page.set_input_files(
        "#upload-form input[type=file]", str(_agent_transcript(tmp_path / "agent.json"))
    )
    page.click("#upload-form button[type=submit]")
    page.click("#upload-results .upload-ok a[href^='/transcripts/']")
    page.click("#replay-link")

    for name in PRESETS:
        assert page.locator(f"#run-form input[name=presets][value={name}]").is_checked()
    screenshot("form")
    # Watch the socket open, so the bars are known to move through it.
    page.add_init_script(
        """
        window.wsPercents = [];
        document.addEventListener('htmx:wsOpen', () => document.body.dataset.ws = 'open');
        document.addEventListener('htmx:wsAfterMessage', (e) => {
            for (const m of e.detail.message.matchAll(/data-percent="(\\d+)"/g)) {
                window.wsPercents.push(Number(m[1]));
            }
        });
        """
    )
    page.click("#start-runs")
    page.wait_for_url("**/runs/groups/*/")
    page.wait_for_selector("body[data-ws=open]", state="attached")
    bars = page.locator("#group-live .run-progress")
    assert bars.count() == 5
    # Every bar reaches 100 % through websocket fragments (no reload happens here).
    page.wait_for_function(
        """() => [...document.querySelectorAll('#group-live .run-progress')]
                 .every(el => el.dataset.status === 'done' && el.dataset.percent === '100')""",
    )
    assert page.locator("#group-live progress[value='100']").count() == 5
    percents = page.evaluate("window.wsPercents")
    # Bars moved through the socket: values below 100 arrived before the final ones.
    assert percents.count(100) >= 5 and min(percents) < 100, percents
    # Runs still going at page load had their Cancel rendered; it follows the live status
    # away, and no Retry shows for a run that succeeded.
    assert page.locator("#group-live form.when-active").count() > 0
    assert page.locator("#group-live .when-active:visible").count() == 0
    assert page.locator("#group-live .when-retryable:visible").count() == 0
    # The results table fills in place once every run has finished: no reload, no click.
    url = page.url
    page.wait_for_selector("#group-metrics")
    assert page.url == url
    screenshot("progress-done")
    headers = page.locator("#group-metrics thead th").all_inner_texts()
    assert headers[1:] == PRESETS
    assert page.locator("#group-metrics tr[data-metric=peak_reference] td").count() == 5
    screenshot("results")

    page.click("#group-metrics thead a >> nth=0")
    page.wait_for_selector("#run-metrics .metrics-table")
    assert page.locator("#run-live .run-progress").get_attribute("data-status") == "done"
    screenshot("run")
    assert page.errors == []
