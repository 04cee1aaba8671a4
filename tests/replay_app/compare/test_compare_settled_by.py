"""The compare page's table of the original's compactions says which run's paired
compaction the original settled (``decided_by``: the transcript cannot show the whole
count there): a mark on that run's step and a note under the table, the same values as
its JSON twin (``runs[pk].decided_by``). It said nothing before, while the run page said
"settled by …". Real Claude Code 2.1.49 lines (tests/data/claude-code-2.1.49, FSM1/cipher-box,
MIT) whose boundary the file cannot show reaching the threshold."""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from replay_testdata import executed_group, import_transcript

from replay_app.compare import originals

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

SESSION = (
    Path(__file__).resolve().parents[2] / "data" / "claude-code-2.1.49" / "unwritten-result.jsonl"
)
HOSTILE = 'the original\'s <b>act</b> & "quotes"'


@pytest.fixture
def runs(user: Any) -> list[Any]:
    transcript = import_transcript(user, SESSION.read_bytes(), name=SESSION.name)
    specs = [("claude_code", {}), ("claude_code", {"context_window": 1_000_000})]
    return executed_group(user, transcript, specs)


def _table(page: str) -> str:
    return page.split('id="compare-originals"', 1)[1].split("</section>", 1)[0]


def _text(fragment: str) -> str:
    return html_lib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", fragment))).strip()


def test_the_settled_run_is_marked_as_its_twin_says(auth_client: Any, runs: list[Any]) -> None:
    settled, own = runs
    url = f"/compare/?runs={settled.pk},{own.pk}"
    data = json.loads(auth_client.get(url + "&format=json").content)["originals"]
    (why,) = data["runs"][str(settled.pk)]["decided_by"]
    # the unwritten Read result, and the boundary's logical parent: a line never written
    assert "the count is uncertain by 1 tool result counted but not written before it" in why
    assert why.endswith("and a line counted but not written (the boundary's logical parent)")
    assert data["runs"][str(own.pk)]["decided_by"] == [""]
    table = _table(auth_client.get(url).content.decode())
    cell = re.search(
        rf'<tr data-row="{settled.pk}".*?<td class="num settled" title="([^"]*)">6<sup', table, re.S
    )
    assert cell is not None and html_lib.unescape(cell.group(1)) == f"settled by {why}"
    assert table.count('class="num settled"') == 1  # not the 1M-window run, not the original
    (note,) = re.findall(r'<p class="small muted settled-note">(.*?)</p>', table, re.S)
    assert _text(note).startswith(f"* run {settled.pk} · claude_code, #1: settled by {why}")


def test_the_note_is_escaped_and_read_from_the_page_object(
    auth_client: Any, runs: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value set only on the rows the page object reads shows in the page (escaped, as
    transcript-derived text) and in its twin (as written)."""
    settled, own = runs
    build = originals.run_rows

    def marked(run: Any) -> list[originals.OriginalRow]:
        rows = build(run)
        if run.pk != own.pk:
            return rows
        return [originals.original_row({**r.as_dict(), "decided_by": HOSTILE}) for r in rows]

    monkeypatch.setattr(originals, "run_rows", marked)
    url = f"/compare/?runs={settled.pk},{own.pk}"
    page = auth_client.get(url).content.decode()
    assert "<b>act</b>" not in page
    table = _table(page)
    assert (
        'title="settled by the original&#x27;s &lt;b&gt;act&lt;/b&gt; &amp; &quot;quotes&quot;"'
        in table
    )
    assert table.count('class="small muted settled-note"') == 2
    data = json.loads(auth_client.get(url + "&format=json").content)["originals"]
    assert data["runs"][str(own.pk)]["decided_by"] == [HOSTILE]
