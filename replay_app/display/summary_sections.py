"""Two summaries compared section by section (Goal vs Goal), not only as one text.

A summary is split into sections at its headings, whatever form the summariser gave them:
Markdown headings (``## Goal``), a bold line (``**Goal:**``), a numbered title line
(``1. Primary Request and Intent:``), a short title line ending in a colon (``Goal:``) and
XML-ish wrappers (``<analysis>``, ``<summary>``). Sections of the two summaries are paired
by their heading read loosely (case, numbering, punctuation and markup aside); a section
only one side has is paired with nothing. Each pair is diffed word by word into two
panes: the left text with its removed words marked, the right with its added words.

Everything is escaped here (``markdown_safe.word_diff_sides``): only ``<del>`` and
``<ins>`` reach the page. Callers mask secrets before (``SummaryDiff`` in
``replay_app.compare.views``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from replay_app.display.markdown_safe import word_diff, word_diff_sides

_ATX = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BOLD_LINE = re.compile(r"^\s*\*\*([^*\n]{1,80}?)\*\*\s*:?\s*$")
_NUMBERED_TITLE = re.compile(r"^\s*\d{1,2}[.)]\s+([A-Z][^:\n]{1,70}):\s*$")
_COLON_TITLE = re.compile(r"^\s*([A-Z\u4e00-\u9fff][\w &/'()\u4e00-\u9fff-]{0,40})\s*[:：]\s*$")
_GLOSS = re.compile(r"\(([A-Za-z][A-Za-z &/'-]*)\)\s*$")  # "目标 (Goal)": read as "Goal"
_XML = re.compile(r"^\s*<(/?)([A-Za-z_][\w-]*)>\s*$")

BEFORE = "(before the first heading)"


@dataclass(frozen=True, slots=True)
class Section:
    heading: str  # as written (without its markup); BEFORE for the text ahead of any
    body: str

    @property
    def key(self) -> str:
        return heading_key(self.heading)


def heading_key(heading: str) -> str:
    """A heading read loosely: ``## 2. Goal:``, ``**goal**`` and ``目标 (Goal)`` (a heading
    with its English gloss) are one section."""
    text = re.sub(r"^\s*\d{1,2}[.)]\s*", "", heading.strip())
    gloss = _GLOSS.search(text)
    if gloss:
        text = gloss.group(1)
    return " ".join(re.sub(r"[^\w\u4e00-\u9fff]+", " ", text.casefold()).split())


def _heading(line: str) -> str | None:
    for pattern in (_ATX, _BOLD_LINE, _NUMBERED_TITLE, _COLON_TITLE):
        found = pattern.match(line)
        if found:
            return found.group(1).strip().strip("*").strip()
    found = _XML.match(line)
    if found and not found.group(1):  # an opening wrapper names a section; its end does not
        return found.group(2)
    return None


def split_sections(text: str) -> list[Section]:
    """``text`` cut at its headings, in order (text ahead of the first heading, if any,
    is the BEFORE section). No heading at all: one BEFORE section, the whole text."""
    sections: list[Section] = []
    heading, body = BEFORE, []
    for line in text.splitlines():
        found = _heading(line)
        if found is None:
            if not _XML.match(line):  # a closing wrapper belongs to no section
                body.append(line)
            continue
        if heading != BEFORE or "".join(body).strip():
            sections.append(Section(heading, "\n".join(body).strip("\n")))
        heading, body = found, []
    if heading != BEFORE or "".join(body).strip() or not sections:
        sections.append(Section(heading, "\n".join(body).strip("\n")))
    return sections


@dataclass(frozen=True, slots=True)
class SectionPair:
    key: str
    left: Section | None
    right: Section | None
    left_html: str  # the left body, removed words in <del> (escaped)
    right_html: str  # the right body, added words in <ins> (escaped)

    @property
    def heading(self) -> str:
        return (self.left or self.right or Section(BEFORE, "")).heading

    @property
    def same(self) -> bool:
        return (
            self.left is not None
            and self.right is not None
            and self.left.body.split() == self.right.body.split()
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "heading": self.heading,
            "left_heading": self.left.heading if self.left else None,
            "right_heading": self.right.heading if self.right else None,
            "left": self.left.body if self.left else None,
            "right": self.right.body if self.right else None,
            "same": self.same,
        }


def pair_sections(a: str, b: str) -> list[SectionPair]:
    """The sections of ``a`` in its order, each beside ``b``'s section of the same heading;
    then ``b``'s sections ``a`` has not (a repeated heading pairs with its repeat)."""
    left, right = split_sections(a), split_sections(b)
    unused = list(range(len(right)))
    pairs: list[SectionPair] = []
    for section in left:
        match = next((j for j in unused if right[j].key == section.key), None)
        other = None
        if match is not None:
            unused.remove(match)
            other = right[match]
        pairs.append(_pair(section, other))
    pairs.extend(_pair(None, right[j]) for j in unused)
    return pairs


def _pair(left: Section | None, right: Section | None) -> SectionPair:
    left_html, right_html = word_diff_sides(left.body if left else "", right.body if right else "")
    key = (left or right or Section(BEFORE, "")).key
    return SectionPair(key, left, right, left_html, right_html)


@dataclass(frozen=True, slots=True)
class SummaryTexts:
    """Two summary texts (already masked) diffed whole and section by section."""

    left: str
    right: str

    @property
    def whole_html(self) -> str:
        return word_diff(self.left, self.right)

    @property
    def sections(self) -> list[SectionPair]:
        return pair_sections(self.left, self.right)
