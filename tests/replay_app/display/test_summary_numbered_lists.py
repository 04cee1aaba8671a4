"""A summary's numbered sections keep their numbers on the page: "2. Key Technical
Concepts:" after a paragraph is a new list that starts at 2 (the trial's claude_code
summary page read "1. Primary Request…", "1. Key Technical Concepts:", "1. Files…")."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from replay_app.display.markdown_safe import render

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # shared helpers
from inspect_helpers import make_run  # noqa: E402
from replay_testdata import import_transcript  # noqa: E402

SESSION = Path(__file__).resolve().parents[2] / "data/corpus/claude-code/agentcmd-full-session-four.jsonl"  # fmt: skip


def _starts(html: str) -> list[int]:
    return [int(s or 1) for s in re.findall(r'<ol(?: start="(\d+)")?>', html)]


def test_numbered_sections_between_paragraphs_keep_their_numbers() -> None:
    text = "1. Primary Request:\nbuild it\n\n2. Key Concepts:\n- path: a.py\n\n3. Files:\n\n10) ten\n11) eleven"
    html = render(text)
    assert _starts(html) == [1, 2, 3, 10]
    assert "<li>ten</li><li>eleven</li>" in html
    assert _starts(render("7. <b>x</b>")) == [7] and "&lt;b&gt;" in render("7. <b>x</b>")


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_memo")
def test_a_claude_code_summary_page_numbers_its_sections_in_order(client: Any, user: Any) -> None:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    run = make_run(user, transcript, "claude_code", context_window=60_000)
    summary = run.summaries.order_by("seq").first()
    assert summary is not None
    # a numbered line whose previous line is not a numbered item starts a list
    lines = summary.output.splitlines()
    item = re.compile(r"^(\d+)\. ")
    starts = [
        int(m[1]) for prev, line in zip(["", *lines], lines, strict=False)
        if (m := item.match(line)) and not item.match(prev)
    ]  # fmt: skip
    assert starts[:3] == [1, 2, 3]  # the compact prompt's numbered sections
    client.force_login(user)
    html = client.get(f"/runs/{run.pk}/summaries/{summary.seq}/").content.decode()
    assert _starts(html) == starts
