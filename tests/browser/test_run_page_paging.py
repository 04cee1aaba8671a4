"""The run page's paged lists in a real browser: htmx swaps the next events page and the
next summaries page in place, and "show the full output" loads a summary's whole text."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def _agent_chat(turns: int = 60, size: int = 8000) -> bytes:
    rnd = random.Random(1)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing tests in src/app.py"},
    ]
    for i in range(turns):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{i}.py"})},
        }
        messages.append({"role": "assistant", "content": f"Reading {i}", "tool_calls": [call]})
        body = "\n".join(f"line {j}: value={rnd.randint(0, 10**6)}" for j in range(size // 30))
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": body[:size]})
    messages.append({"role": "assistant", "content": "All tests pass now."})
    return json.dumps(messages).encode()


def _run(username: str) -> Any:
    from django.contrib.auth import get_user_model

    from replay_app.models import RunSummary
    from replay_app.runs import executor, services
    from replay_app.runs.pages import runpage
    from sessions_app import services as session_services

    user = get_user_model().objects.get(username=username)
    outcome = session_services.upload_import(owner=user, name="agent.json", data=_agent_chat())
    assert outcome.upload is not None, outcome.error
    run = services.run_create(
        owner=user,
        transcript=outcome.upload.transcripts.get(),
        spec=services.RunSpec(strategy="qwenpaw"),
        enqueue=False,
    )
    run = executor.run_execute(run=run)
    assert run.status == "done", run.error
    assert run.events_count > runpage.EVENTS_PER_PAGE
    RunSummary.objects.filter(run=run).delete()
    RunSummary.objects.bulk_create(
        RunSummary(
            run=run,
            seq=seq,
            step=seq,
            input="in",
            output=f"summary {seq} " + "y" * 3 * runpage.SUMMARY_PREVIEW_CHARS + f" END{seq}",
        )
        for seq in range(runpage.SUMMARIES_PER_PAGE + 5)
    )
    return run


def test_run_page_pages_in_place(
    page: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    from replay_app.runs.pages import runpage

    login(base_url=asgi_live_server.url)
    run = _run("alice")
    seqs = list(run.events.order_by("seq").values_list("seq", flat=True))
    url = f"{asgi_live_server.url}/runs/{run.pk}/"
    page.goto(url)
    rows = page.locator("#run-events tbody tr")
    assert rows.count() == runpage.EVENTS_PER_PAGE

    # events: the next page swaps in place (no navigation)
    page.locator("#run-events a[rel=next]").click()
    page.wait_for_selector(f"#event-{seqs[runpage.EVENTS_PER_PAGE]}")
    assert page.url == url
    assert rows.count() == min(len(seqs) - runpage.EVENTS_PER_PAGE, runpage.EVENTS_PER_PAGE)
    assert page.locator(f"#event-{seqs[0]}").count() == 0

    # summaries: a preview, then the whole output on demand
    page.locator("#summary-0 > summary").click()
    assert "END0" not in (page.locator("#summary-0-output").text_content() or "")
    page.locator("#summary-0-output a.show-full").click()
    page.wait_for_selector("#summary-0-output .summary-output:has-text('END0')")
    screenshot("summary-full")

    # summaries: the next page swaps in place too
    page.locator("#run-summaries a[rel=next]").click()
    page.wait_for_selector(f"#summary-{runpage.SUMMARIES_PER_PAGE}", state="attached")
    assert page.locator("#summary-0").count() == 0 and page.url == url
    assert page.errors == []
