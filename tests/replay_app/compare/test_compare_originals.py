"""The original agent's own compactions on the run and compare pages: the compare page
has "the original" as a run-like row (its steps, from the transcript) beside each run's
paired steps, and both pages and their JSON twins read one object (a value set only on
it shows in both). Transcript text (a manual /compact's focus text) is escaped."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from replay_testdata import executed_group, import_transcript

from replay_app.compare import originals

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_memo")]

RECORDED = Path(__file__).resolve().parents[2] / "data" / "recorded"
FOCUS = '<b>keep</b> the "API" notes'


@pytest.fixture
def runs(user: Any) -> list[Any]:
    """Two recorded-summariser runs of the synthetic Claude Code session: one whose window
    makes it compact where the agent did, one that never compacts."""
    name = "claude-code-compacted.jsonl"
    transcript = import_transcript(user, (RECORDED / name).read_bytes(), name=name)
    windows = (60_000, 1_000_000)
    return executed_group(
        user, transcript, [("claude_code", {"context_window": w}) for w in windows]
    )


def _section(html: str, marker: str) -> str:
    return html.split(marker, 1)[1].split("</table>", 1)[0]


def _row_cells(section: str, key: str) -> list[str]:
    body = re.search(rf'<tr data-row="{key}"[^>]*>(.*?)</tr>', section, re.S)
    assert body, f"no row {key}"
    cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", body.group(1), re.S)
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", c)).strip() for c in cells]


def test_compare_has_the_original_as_a_row(auth_client: Any, runs: list[Any]) -> None:
    near, far = runs
    url = f"/compare/?runs={near.pk},{far.pk}"
    html = auth_client.get(url).content.decode()
    table = _section(html, 'data-table="originals-compare"')
    # row, compactions, #1's step, same step, within ±1, not reproduced
    original = _row_cells(table, "original")
    assert original[1:3] == ["1", "6"]
    assert _row_cells(table, str(near.pk))[2:5] == ["6", "1", "1"]
    assert _row_cells(table, str(far.pk))[2:6] == ["—", "0", "0", "1"]
    data = json.loads(auth_client.get(url + "&format=json").content)["originals"]
    assert data["original"]["steps"] == [6] and data["original"]["compactions"] == 1
    assert data["runs"][str(near.pk)]["steps"] == [6]
    assert data["runs"][str(far.pk)]["not_reproduced"] == 1
    assert data["compactions"][0]["kind_label"] == "auto-compaction"


def test_compare_without_original_compactions_has_no_section(
    auth_client: Any, user: Any, transcript: Any
) -> None:
    from inspect_helpers import make_run

    a, b = make_run(user, transcript, "cowagent"), make_run(user, transcript, "qwenpaw")
    url = f"/compare/?runs={a.pk},{b.pk}"
    assert 'id="compare-originals"' not in auth_client.get(url).content.decode()
    assert json.loads(auth_client.get(url + "&format=json").content)["originals"] is None


def test_run_page_and_twin_read_one_object(
    auth_client: Any, runs: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    near, _ = runs
    build = originals.run_rows

    def marked(run: Any) -> list[originals.OriginalRow]:
        (row,) = build(run)
        manual = originals.original_row(
            {
                **row.as_dict(),
                "kind_key": "manual",
                "instructions": FOCUS,
                "agent_version": "9.9.9-marked",
                "rules_version": "2.1.14",
                "rules_reason": "the transcript's version",
                "decided_by": "the original's compaction: <count> uncertain",
            }
        )
        micro = originals.original_row(
            {"kind_key": "microcompact", "cleared": 7, "tokens_saved": 21_000, "original_step": 3}
        )
        return [manual, micro]

    monkeypatch.setattr(originals, "run_rows", marked)
    html = auth_client.get(near.get_absolute_url()).content.decode()
    table = _section(html, 'data-table="original-compactions"')
    assert "manual /compact" in table and "9.9.9-marked" in table
    assert "&lt;b&gt;keep&lt;/b&gt; the &quot;API&quot; notes" in table  # escaped, not markup
    assert "<b>keep</b>" not in html
    assert 'data-cleared="7"' in table and "7 tool results cleared" in table
    assert "21,000 tokens saved" in table and "the transcript&#x27;s version" in table
    assert 'data-relation="not_reproduced"' in table  # the micro row has no replay step
    assert "settled by the original&#x27;s compaction: &lt;count&gt; uncertain" in table
    assert table.count('class="small muted decided-by"') == 1  # the micro row: its own count
    data = json.loads(auth_client.get(near.get_absolute_url() + "?format=json").content)
    manual, micro = data["original_compactions"]
    assert (manual["instructions"], manual["agent_version"]) == (FOCUS, "9.9.9-marked")
    assert manual["decided_by"] == "the original's compaction: <count> uncertain"
    assert micro["decided_by"] == ""
    assert (micro["cleared"], micro["relation"]) == (7, "not reproduced")
