"""Issue 31, item 15: two summaries compared section by section (Goal vs Goal). A summary
is cut at its headings, whatever their form; sections pair by heading read loosely; each
pair is diffed into two escaped panes."""

from __future__ import annotations

from replay_app.display.markdown_safe import word_diff_sides
from replay_app.display.summary_sections import (
    BEFORE,
    heading_key,
    pair_sections,
    split_sections,
)

CLAUDE = """<analysis>
thinking about it
</analysis>
<summary>
1. Primary Request and Intent:
   Fix the failing tests
2. Key Technical Concepts:
   - pytest
</summary>"""

COPAW = """(offline, no model was called)

## 目标 (Goal)
Fix the failing tests in src/app.py

## 下一步 (Next Steps)
1. Continue with part 19
"""

COPAW_LATER = """(offline, no model was called)

## 目标 (Goal)
Fix the failing tests in src/app.py and src/db.py

## 关键上下文 (Critical Context)
- path: /srv/app/f0.py

## 下一步 (Next Steps)
1. Continue with part 40
"""


def test_headings_of_every_form_cut_sections() -> None:
    md = split_sections(COPAW)
    assert [s.heading for s in md] == [BEFORE, "目标 (Goal)", "下一步 (Next Steps)"]
    assert md[1].body.strip() == "Fix the failing tests in src/app.py"
    tagged = split_sections(CLAUDE)
    assert [s.heading for s in tagged] == [
        "analysis",
        "summary",
        "Primary Request and Intent",
        "Key Technical Concepts",
    ]
    assert tagged[2].body.strip() == "Fix the failing tests"
    bold = split_sections("**Goal:**\nship it\n\nGoal\n\n**Next**\nrelease\nDone:\n- a")
    assert [s.key for s in bold] == ["goal", "next", "done"]
    assert split_sections("no headings here\nat all") == [
        split_sections("no headings here\nat all")[0]
    ]
    assert split_sections("no headings here")[0].heading == BEFORE


def test_heading_keys_read_loosely() -> None:
    assert heading_key("2. Goal:") == heading_key("**goal**") == heading_key("目标 (Goal)")
    assert heading_key("Next Steps") == "next steps" != heading_key("Goal")


def test_sections_pair_by_heading_in_order() -> None:
    pairs = pair_sections(COPAW, COPAW_LATER)
    assert [(p.key, p.left is not None, p.right is not None) for p in pairs] == [
        (heading_key(BEFORE), True, True),
        ("goal", True, True),
        ("next steps", True, True),
        ("critical context", False, True),  # only the later summary has it
    ]
    assert pairs[0].same and not pairs[1].same
    goal = pairs[1]
    assert "<del>" not in goal.left_html and "<ins> and src/db.py</ins>" in goal.right_html
    nxt = pairs[2]
    assert "<del>19</del>" in nxt.left_html and "<ins>40</ins>" in nxt.right_html
    assert pairs[3].as_json()["left"] is None


def test_side_by_side_diff_escapes_everything() -> None:
    left, right = word_diff_sides("<b>x</b> kept", "<img src=x onerror=alert(1)> kept")
    assert "<b>" not in left and "<img" not in right
    assert "&lt;img" in right and right.endswith(" kept")
