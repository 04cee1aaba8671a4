"""'What was lost' on the compare page in a real browser, on a real Claude Code corpus
session: facts by category (no JSON-escape artefacts, no line-number prefixes), each fact's
link opens the transcript at the message that held it, each event's link the run's events
table at its row."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay_app"))  # shared test data
from replay_testdata import import_transcript  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
SESSION = "claude-code/agentcmd-full-session-four.jsonl"
# what the old extractor listed from '\n' inside tool inputs and 'cat -n' prefixes
ARTEFACT = re.compile(r"^(?:n[A-Z]\w*|\d+→?|\s*\d+\t.*)$")


def _runs(username: str) -> list[Any]:
    from django.contrib.auth import get_user_model

    from replay_app.runs import executor, services

    user = get_user_model().objects.get(username=username)
    transcript = import_transcript(user, (CORPUS / SESSION).read_bytes(), name=Path(SESSION).name)
    runs = []
    for strategy, params in (
        ("qwenpaw", {"max_input_length": 4096}),
        ("baseagent", {"model_context_limit": 8000, "output_token_max": 1000}),
    ):
        run = services.run_create(
            owner=user,
            transcript=transcript,
            spec=services.RunSpec(strategy=strategy, params=params),
            enqueue=False,
        )
        runs.append(executor.run_execute(run=run))
        assert runs[-1].status == "done", runs[-1].error
    return runs


def test_what_was_lost_links_facts_to_messages_and_events(
    page: Any, asgi_live_server: Any, login: Any, screenshot: Any
) -> None:
    base = asgi_live_server.url  # ASGI: the run page opens its live-progress websocket
    login(base_url=base)
    runs = _runs("alice")
    page.goto(f"{base}/compare/?runs={runs[0].pk},{runs[1].pk}")
    section = page.locator("#compare-lost")
    section.wait_for()
    for details in section.locator("details.lost-event").all()[:6]:
        details.locator("summary").click()  # open: the facts are inside
    kinds = set(section.locator("dl.lost-facts dt").all_text_contents())
    assert kinds >= {"paths", "identifiers"}, kinds
    assert kinds <= {
        "instructions", "paths", "commands", "errors", "identifiers", "numbers", "urls"
    }  # fmt: skip
    values = section.locator(".lost-fact code").all_text_contents()
    assert values and not [v for v in values if ARTEFACT.match(v)], values[:50]
    screenshot("lost")
    section.screenshot(path=str(screenshot("page").with_name("lost-section.png")))

    fact = section.locator(".lost-fact").first
    value = fact.locator("code").text_content() or ""
    index = (fact.locator("a.lost-source").text_content() or "").removeprefix("msg ")
    fact.locator("a.lost-source").click()
    page.wait_for_url(re.compile(rf"/transcripts/\d+/\?page=\d+#m{index}$"))
    message = page.locator(f"#m{index}")
    message.wait_for()
    assert message.is_visible()
    # the message holds the fact (tool inputs are shown decoded, outputs as text)
    assert value.split("\n")[0][:40] in (message.text_content() or ""), value
    screenshot("message")

    page.go_back()
    section.wait_for()
    first = section.locator("details.lost-event").first
    if first.get_attribute("open") is None:
        first.locator("summary").click()
    event_link = first.locator("a.lost-event-link")  # in the body: no link inside <summary>
    href = event_link.get_attribute("href") or ""
    seq = href.rsplit("#event-", 1)[1]
    event_link.click()
    page.wait_for_url(re.compile(rf"/runs/\d+/\?page=\d+#event-{seq}$"))
    row = page.locator(f"#event-{seq}")
    row.wait_for()
    assert row.is_visible()
    assert page.errors == []
