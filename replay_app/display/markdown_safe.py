"""Summaries as readable HTML: a small Markdown subset, escaped FIRST.

Summaries come from models fed untrusted transcripts, so every character is HTML-escaped
before any markup is added; only tags this module writes reach the page (no raw HTML, no
links, no attributes). Covered: ATX headings, bullet and numbered lists, fenced code,
**bold**, `code`, paragraphs. Anything else stays plain text.
"""

from __future__ import annotations

import difflib
import html
import re

_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_CODE = re.compile(r"`([^`\n]+)`")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*(\d{1,3})[.)]\s+(.*)$")
_XML_TAG = re.compile(r"^\s*&lt;/?[A-Za-z_][\w-]*&gt;\s*$")  # <summary> wrappers as labels


def _inline(escaped: str) -> str:
    """Inline markup over already-escaped text (the patterns cannot match a tag)."""
    parts = _CODE.split(escaped)
    out = []
    for i, part in enumerate(parts):
        out.append(f"<code>{part}</code>" if i % 2 else _BOLD.sub(r"<strong>\1</strong>", part))
    return "".join(out)


def render(text: str) -> str:
    """``text`` (a summary) as safe HTML."""
    out: list[str] = []
    para: list[str] = []
    items: list[str] = []
    list_tag = ""
    list_start = 1  # a numbered list's first number: "2. Key concepts" after a paragraph
    code: list[str] | None = None

    def flush() -> None:
        nonlocal list_tag
        if para:
            out.append("<p>" + "<br>".join(_inline(x) for x in para) + "</p>")
            para.clear()
        if items:
            start = f' start="{list_start}"' if list_tag == "ol" and list_start != 1 else ""
            out.append(f"<{list_tag}{start}>" + "".join(f"<li>{_inline(x)}</li>" for x in items)
                       + f"</{list_tag}>")  # fmt: skip
            items.clear()
            list_tag = ""

    for raw in text.splitlines():
        line = html.escape(raw, quote=True)
        if raw.lstrip().startswith("```"):
            if code is None:
                flush()
                code = []
            else:
                out.append("<pre><code>" + "\n".join(code) + "</code></pre>")
                code = None
            continue
        if code is not None:
            code.append(line)
            continue
        if not raw.strip():
            flush()
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            level = min(len(heading.group(1)) + 3, 6)  # h4-h6 inside a table cell
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            continue
        if _XML_TAG.match(line):
            flush()
            out.append(f'<p class="md-tag">{line.strip()}</p>')
            continue
        bullet, numbered = _BULLET.match(line), _NUMBERED.match(line)
        if bullet or numbered:
            tag = "ul" if bullet else "ol"
            if para or (items and tag != list_tag):
                flush()
            if not items and numbered:
                list_start = int(numbered.group(1))  # digits only: safe in the attribute
            list_tag = tag
            items.append(bullet.group(1) if bullet else numbered.group(2))  # type: ignore[union-attr]
            continue
        if items:
            flush()
        para.append(line)
    if code is not None:
        out.append("<pre><code>" + "\n".join(code) + "</code></pre>")
    flush()
    return "\n".join(out)


_WORDS = re.compile(r"\s+|[^\s]+")


def word_diff(a: str, b: str) -> str:
    """``a`` → ``b`` word by word as safe HTML: removed words in <del>, added in <ins>."""
    left, right = _WORDS.findall(a), _WORDS.findall(b)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append(html.escape("".join(left[i1:i2])))
            continue
        if i2 > i1:
            out.append(f"<del>{html.escape(''.join(left[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{html.escape(''.join(right[j1:j2]))}</ins>")
    return "".join(out)


def word_diff_sides(a: str, b: str) -> tuple[str, str]:
    """``a`` and ``b`` word by word as two safe HTML panes: ``a`` with the words ``b`` has
    not in <del>, ``b`` with the words ``a`` has not in <ins> (the side-by-side view)."""
    left, right = _WORDS.findall(a), _WORDS.findall(b)
    out_a: list[str] = []
    out_b: list[str] = []
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out_a.append(html.escape("".join(left[i1:i2])))
            out_b.append(html.escape("".join(right[j1:j2])))
            continue
        if i2 > i1:
            out_a.append(f"<del>{html.escape(''.join(left[i1:i2]))}</del>")
        if j2 > j1:
            out_b.append(f"<ins>{html.escape(''.join(right[j1:j2]))}</ins>")
    return "".join(out_a), "".join(out_b)
