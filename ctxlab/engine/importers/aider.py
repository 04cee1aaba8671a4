"""Aider chat history (``.aider.chat.history.md``) and the website flavour of it.

The file is Markdown appended session after session: ``# aider chat started at <ts>`` opens a
session (one conversation each). Aider writes the user's input as ``#### `` lines and its own
output (command line, banners, "Applied edit", lint/test output, token reports) as ``> ``
lines, both ending with a Markdown hard break (two spaces). Everything else is the model's
reply, SEARCH/REPLACE edit blocks included.

Roles: ``####`` runs are user messages, model text is assistant, and aider's ``>`` output is a
tool message holding one tool_result block with no call id (``raw_type="aider_output"``):
aider ran it, not the model, so there is no tool_use to pair with; marking it as tool output
lets strategies mask it like any observation. A ``####``/``>`` line that follows model text
without the hard break is a Markdown header/quote inside the reply, so it stays assistant
text. ``Tokens: N sent, M received`` reports become the usage of the reply before them
(aider rounds them: ``12.7k``). Text before the first session header (a history whose start
was cut) is kept as its own conversation; the website flavour's prose around the transcript
``<div>`` goes to metadata. One pass over the lines: linear time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core.model import (
    Block,
    BlockKind,
    Conversation,
    Message,
    ParsedFile,
    Role,
    SourcePos,
    TranscriptError,
    Usage,
)
from ._common import WarningTally, decode_text, require_content, short_title
from ._kit import title_from

FORMAT = "aider"
LABEL = "Aider chat history (.aider.chat.history.md)"

_HEADER = "# aider chat started at "
_EXPECTED = "an aider chat history: '# aider chat started at' sessions with '#### ' user lines"
_DIV_OPEN = '<div class="chat-transcript"'
# aider's own announcement ("Model: gpt-4o with whole edit format"): the id is a model name,
# so a program's output that also starts "Models: ['a', 'b']" does not set it, and markers
# aider appends to the name (⚡ prompt caching, ∞ infinite output) are not part of it.
_MODEL = re.compile(r"^(?:Main model|Models?): ([A-Za-z0-9][\w.:/@+-]*)(?=[\s⚡∞♾]|$)")
_TOKENS = re.compile(r"^Tokens: (.*)")
_COUNT = re.compile(r"([\d.,]+)(k?)\s+(sent|received|cache write|cache hit|cached)")

USER, TOOL, ASSISTANT = "u", "t", "a"
_ROLE = {USER: Role.USER, TOOL: Role.TOOL, ASSISTANT: Role.ASSISTANT}


@dataclass(slots=True)
class _Run:
    kind: str
    line: int  # 1-based line of the first line
    lines: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Session:
    line: int
    started: str = ""  # header timestamp, as in the file
    runs: list[_Run] = field(default_factory=list)


def _tokens(number: str, kilo: str) -> int:
    try:
        value = float(number.replace(",", ""))
    except ValueError:
        return 0
    return int(round(value * 1000)) if kilo else int(value)


def _usage(report: str) -> Usage | None:
    counts: dict[str, int] = {}
    for number, kilo, what in _COUNT.findall(report):
        counts[what] = _tokens(number, kilo)
    if "sent" not in counts and "received" not in counts:
        return None
    read = counts.get("cache hit", counts.get("cached", 0))
    write = counts.get("cache write", 0)
    return Usage(
        # aider's "sent" is the whole prompt; the cache figures are parts of it
        input_uncached=max(counts.get("sent", 0) - read - write, 0),
        cache_read=read,
        cache_write_5m=write,
        output=counts.get("received", 0),
        convention="aider",
    )


def _classify(line: str, prev: str | None) -> str:
    """The kind of a non-blank line given the kind of the previous non-blank line."""
    hard_break = line.endswith("  ")
    if line.startswith("####") and (len(line) == 4 or line[4] in " \t"):
        return USER if hard_break or prev != ASSISTANT else ASSISTANT
    if line.startswith(">") and (len(line) == 1 or line[1] in " \t"):
        return TOOL if hard_break or prev != ASSISTANT or not line[1:].strip() else ASSISTANT
    return ASSISTANT


def _strip(kind: str, line: str) -> str:
    if kind != ASSISTANT and line.rstrip() in ("####", ">"):
        return ""
    if kind == USER:
        body = line[5:] if len(line) > 4 else ""
    elif kind == TOOL:
        body = line[2:] if len(line) > 1 else ""
    else:
        return line
    return body[:-2] if body.endswith("  ") else body


def _split_sessions(
    lines: list[str], first_line: int, *, website: bool = False
) -> tuple[_Session | None, list[_Session]]:
    preamble = _Session(line=first_line)
    sessions: list[_Session] = []
    current = preamble
    prev: str | None = None
    run: _Run | None = None
    for offset, line in enumerate(lines):
        number = first_line + offset
        if line.startswith(_HEADER):
            current = _Session(line=number, started=line[len(_HEADER) :].strip())
            sessions.append(current)
            prev, run = None, None
            continue
        if not line.strip() or (website and (line.startswith(_DIV_OPEN) or line == "</div>")):
            if run is not None:
                run.lines.append("")
            continue
        kind = _classify(line, prev)
        prev = kind
        if run is None or run.kind != kind:
            run = _Run(kind, number)
            current.runs.append(run)
        run.lines.append(_strip(kind, line))
    return (preamble if preamble.runs else None), sessions


def _iso(stamp: str) -> str | None:
    return (
        stamp.replace(" ", "T", 1)
        if re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", stamp)
        else None
    )


def _conversation(session: _Session, conv_id: str, name: str, title_prefix: str) -> Conversation:
    messages: list[Message] = []
    model = ""
    started = _iso(session.started)
    for run in session.runs:
        while run.lines and not run.lines[-1]:
            run.lines.pop()
        text = "\n".join(run.lines)
        pos = SourcePos(name, line=run.line)
        stamp = started if not messages else None
        if run.kind == TOOL:
            for line in run.lines:
                if found := _MODEL.match(line):
                    model = found.group(1)
                elif (report := _TOKENS.match(line)) and (usage := _usage(report.group(1))):
                    for i in range(len(messages) - 1, -1, -1):
                        if messages[i].role is Role.USER:
                            break  # the report belongs to a reply of this turn only
                        if messages[i].role is Role.ASSISTANT:
                            if messages[i].usage is None:
                                old = messages[i]
                                messages[i] = Message(
                                    old.role,
                                    old.blocks,
                                    source=old.source,
                                    timestamp=old.timestamp,
                                    model=old.model,
                                    usage=usage,
                                )
                            break
            block = Block(BlockKind.TOOL_RESULT, text=text, raw_type="aider_output")
            messages.append(Message(Role.TOOL, (block,), source=pos, timestamp=stamp, name="aider"))
        else:
            role = _ROLE[run.kind]
            messages.append(
                Message(
                    role,
                    (Block(BlockKind.TEXT, text=text),),
                    source=pos,
                    timestamp=stamp,
                    model=model if role is Role.ASSISTANT else "",
                )
            )
    first_user = title_from(messages, fallback="")
    title = " · ".join(t for t in (title_prefix, short_title(first_user, 60)) if t)
    meta = [("started_at", session.started)] if session.started else []
    return Conversation(
        id=conv_id,
        title=title or conv_id,
        messages=tuple(messages),
        model=model,
        metadata=tuple(meta),
        usage_convention="aider" if any(m.usage for m in messages) else "",
    )


def _website_parts(lines: list[str]) -> tuple[int, int, str]:
    """(start, end, prose) of the transcript inside a website page's chat-transcript div."""
    start = next(i for i, line in enumerate(lines) if line.startswith(_DIV_OPEN))
    end = next(
        (i for i in range(len(lines) - 1, start, -1) if lines[i].strip() == "</div>"), len(lines)
    )
    prose = "\n".join(lines[:start] + ["[…transcript…]"] + lines[end + 1 :]).strip()
    return start + 1, end, prose


def parse(data: bytes, *, name: str) -> ParsedFile:
    require_content(data, name, _EXPECTED)
    text = decode_text(data, name)
    lines = text.split("\n")
    warn = WarningTally()
    first_line, prose = 1, ""
    if _HEADER not in text and any(line.startswith(_DIV_OPEN) for line in lines[:200]):
        start, end, prose = _website_parts(lines)
        lines, first_line = lines[start:end], start + 1
    preamble, sessions = _split_sessions(lines, first_line, website=bool(prose))
    if not sessions and (preamble is None or not any(r.kind == USER for r in preamble.runs)):
        raise TranscriptError(
            "no aider session header and no '#### ' user line", file=name, expected=_EXPECTED
        )
    conversations = []
    if preamble is not None:
        label = "before the first session header" if sessions else ""
        conv = _conversation(preamble, f"{name}#0", name, label)
        if prose:
            conv = Conversation(
                conv.id,
                conv.title,
                conv.messages,
                model=conv.model,
                metadata=(*conv.metadata, ("page_prose", prose)),
                usage_convention=conv.usage_convention,
            )
        conversations.append(conv)
    for index, session in enumerate(sessions, start=1):
        conv = _conversation(session, f"{name}#{index}", name, session.started)
        conversations.append(conv)
    return ParsedFile(FORMAT, tuple(conversations), warn.freeze())


def sniff(head: bytes, name: str) -> int:
    text = head.lstrip()
    if text.startswith((b"{", b"[")):
        return 0
    if b"# aider chat started at " in text:
        return 95
    if b'<div class="chat-transcript"' in text and b"\n#### " in text:
        return 80
    if b"\n#### " in text and b"\n> " in text and b"  \n" in text:
        return 30 if name.endswith(".md") else 15
    return 0
