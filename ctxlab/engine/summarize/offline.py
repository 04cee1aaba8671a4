"""The offline summarisers: deterministic, no model called.

``OfflineSummarizer`` (the default) is deterministic and calls no model: it fills the
structure the request asks for (``sections``/``style``) with facts extracted from
``material`` (the compacted messages, oldest first) and says that it is extractive.
It reads the material as a person would: the goal and requests come from what the user
typed (never tool output, ``Caveat:`` lines, slash-command markup such as
``<command-name>`` or ``<local-command-stdout>``, nor a continued-session preamble), tool
calls read as ``Read: /path`` rather than their JSON, tool ids (``toolu_…``, ``call_…``)
are dropped, and key concepts come from decoded content. Its disclaimer line appears
once, also when it summarises a summary (an earlier disclaimer is never carried along).

Who wrote an item is decided by its source message when the request carries the
conversation (``MaterialItem.index``): a goal or next step comes only from a user message
a person typed (no tool result, not injected, not a summary, not a harness preamble:
``core.harness``), whatever role or label a strategy rendered it with (Cline's
``[User]:``/``[Tool result]:``, Codex's developer and tool items sent as "user"). Without it,
the rendered text decides by the same rules. A done item is work done (a tool call other
than plan bookkeeping, or a statement of completed work such as "Created …", "I've fixed
…"), never chatter ("Great!", "You're right", "Let me …"); list markers and checkboxes
of the material are dropped so a line is never bulleted twice. In Chinese summaries the
disclaimer carries its English text and each heading an English gloss.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import json
import math
import re
import weakref
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any, Literal

from ..core import harness
from ..core.model import Conversation, Message, Role
from ..core.summary_request import (
    MaterialItem,
    Section,
    SummarizerError,
    SummaryRequest,
    SummaryResponse,
    SummaryUsage,
    approx_tokens,
)
from ..evaluate.extract import (
    LINE_NUMBER_RE,
    SCAN_MEMO_ENTRIES,
    critical_facts_of_parts,
    input_strings,
)
from ..evaluate.extract import clear_caches as extract_clear_caches

# --- offline extractive summariser -------------------------------------------------------

_NOTE_EN_TEXT = (
    "(Extractive summary assembled offline by ctxlab from the compacted messages; "
    "no language model was called.)"
)
_NOTE_ZH_TEXT = "（抽取式摘要：由 ctxlab 离线从被压缩的消息中摘录，未调用语言模型。）"
# The Chinese disclaimer carries the English one beside it: a reader of either language
# knows that no model wrote the summary.
NOTES = {"en": _NOTE_EN_TEXT, "zh": f"{_NOTE_ZH_TEXT} {_NOTE_EN_TEXT}"}
# English glosses of the Chinese section headings (QwenPaw/CoPaw/ReMe, as they write them)
GLOSSES = {
    "目标": "Goal", "约束和偏好": "Constraints & Preferences", "进展": "Progress",
    "已完成": "Done", "进行中": "In Progress", "阻塞": "Blocked", "关键决策": "Key Decisions",
    "下一步": "Next Steps", "关键上下文": "Critical Context",
}  # fmt: skip
SLOT_GLOSSES = {
    "goal": "Goal", "constraints": "Constraints", "done": "Done", "in_progress": "In Progress",
    "blocked": "Blocked", "decisions": "Key Decisions", "next": "Next Steps",
    "critical": "Critical Context",
}  # fmt: skip
_CJK = re.compile(r"[\u3400-\u9fff]")
NONE = {"en": "(none)", "zh": "（无）"}
CONSTRAINT_RE = re.compile(
    r"\b(?:must|should|never|always|don't|do not|please|make sure|avoid|only|prefer)\b"
    r"|必须|不要|请|务必|避免|只",
    re.IGNORECASE,
)
DECISION_RE = re.compile(
    r"\b(?:decided|decide|will use|instead|because|chose|choose|going to|plan)\b"
    r"|决定|选择|改用|因为",
    re.IGNORECASE,
)
LINE = 160
PER_SECTION = 6
SCAN_CHARS = 4000  # per message: enough for headlines, bounded cost on huge tool outputs
FACT_MESSAGES = 40  # critical context is extracted from the newest 40 compacted messages
FACT_CHARS = 600  # ... and from the first 600 characters of each
DONE_ITEMS = PER_SECTION * 4  # done items are read from at most the 24 newest assistant items


# How strategies render tool blocks in the material: "[tool_use Read] {json}" (Claude Code),
# "[tool_call bash] {json}" (OpenCode, BaseAgent), "[tool_result toolu_…] output",
# AgentScope's "[tool_use]: …" / "<tool_result>…</tool_result>".
# Also pi's "[tool call read] {json}", Codex's "[function_call exec_command] {json}",
# Gemini CLI's "[functionCall read_file] {json}", and Cline's and pi's serialised
# conversations: "[Bot tool calls]: Read(file_path=\"/x\")", "[Assistant tool calls]: …".
TOOL_CALL_RE = re.compile(
    r"^(?:\[(?:tool_use|tool_call|tool call|function_call|functionCall) ([^\]]+)\]"
    r"|\[tool_use\]:|<tool_use>) ?(.*)$"
)
# Cline's and pi's serialised calls: name(key=JSON, …); their arguments read as a dict.
# (A long call may be cut before its closing parenthesis.)
SERIAL_CALL_RE = re.compile(r"^\[(?:Bot|Assistant) tool calls\]: ([\w.:-]+)\((.*?)\)?$")
TOOL_OUTPUT_RE = re.compile(
    r"^(?:\[(?:tool_result|tool result|function_call_output)(?: [^\]]*)?\]:?|<tool_result>"
    r"|\[Tool result\]:)"
)
# Speaker labels of serialised conversations (Cline, pi, AgentScope): the text after them
# is the message's own; the lines of thinking, files and images are nobody's words.
LABEL_RE = re.compile(r"^\[(?:User|Bot|Assistant|text)\]: ?")
UNSAID_RE = re.compile(
    r"^\[(?:Bot thinking|Assistant thinking|think|(?:User|Bot) (?:file|image)[^\]]*"
    r"|image:[^\]]*)\]"
)
# Every rendered tool call, output or label holds one of these.
RENDER_MARKS = ("[tool_", "<tool_", "[tool call", "[tool result", "[function_call",
                "[functionCall", " tool calls]: ", "[Tool result]", "[User]", "[Bot",
                "[Assistant", "[text]", "[think]", "[image:")  # fmt: skip
# Plan bookkeeping: a call of one of these is no work done
BOOKKEEPING_TOOLS = frozenset(
    [
        "TodoWrite",
        "TodoRead",
        "todowrite",
        "todoread",
        "todo_write",
        "todo_read",
        "write_todos",
        "update_plan",
        "update_todos",
        "ExitPlanMode",
    ]
)
TOOL_ID_RE = re.compile(r"\b(?:toolu|srvtoolu|call|chatcmpl|fc)_[A-Za-z0-9_-]{6,}")
# Every ``TOOL_ID_RE`` match holds one of these ("srvtoolu_" holds "toolu_").
_TOOL_ID_HEADS = ("toolu_", "call_", "chatcmpl_", "fc_")


def _may_hold_tool_id(text: str) -> bool:
    for head in _TOOL_ID_HEADS:  # noqa: SIM110 (a loop, no generator: runs for every line)
        if head in text:
            return True
    return False


# Lines the harness wrote into the user's turn, not the person (``core.harness``), and
# the disclaimers of earlier offline summaries
META_RE = re.compile(
    r"(?:" + harness.HARNESS_LINE_RE.pattern + r"|\(Extractive summary|（抽取式摘要)"
)
# The characters a ``META_RE`` match can start with: a line starting otherwise is no harness
# line (a plain test, no regex: this runs for every line the summariser reads). Likewise
# every rendered tool call or output starts with "[" or "<".
_META_FIRST = harness.LINE_FIRST | {"（"}
_TOOL_FIRST = ("[", "<")
# Every ``META_RE`` match holds one of these: a text without any holds no harness line.
# A tag's match opens with "<" (``</?tag``): the tags are looked for only in a text with one.
_META_NEEDLES = (*harness.LINE_NEEDLES, "(Extractive summary", "（抽取式摘要")
_META_TAGS = tuple(n for n in _META_NEEDLES if n in harness.HARNESS_TAGS)
_META_OTHERS = tuple(n for n in _META_NEEDLES if n not in harness.HARNESS_TAGS)


def _may_hold_meta(text: str) -> bool:
    for needle in _META_OTHERS:  # noqa: SIM110 (a loop, no generator: runs for every head)
        if needle in text:
            return True
    if "<" in text:
        for tag in _META_TAGS:  # noqa: SIM110
            if tag in text:
                return True
    return False


def _is_meta(stripped: str) -> bool:
    return stripped[:1] in _META_FIRST and META_RE.match(stripped) is not None


LITERAL_MAX = 20_000  # longer Python-literal arguments are read as raw text
# Python-literal arguments a strategy rendered (BaseAgent's ``str(dict)``) -> the value they
# were rendered from: decoding them is a lookup instead of a parse. An entry lives as long
# as the block it was rendered from (the text and value are the block's own, so the table
# holds no memory of its own); a miss parses.
_RENDERED: dict[str, Any] = {}


def remember_literal(text: str, value: Any, owner: object) -> None:
    """Note that ``text`` is ``repr(value)``, rendered from ``owner`` (kept until it is
    gone). Kept only when ``ast.literal_eval(text)`` is sure to read ``value`` back: dicts
    with string keys, lists, strings, ints, bools, None and finite floats, nested at most
    50 deep."""
    if text.startswith("{") and len(text) <= LITERAL_MAX and _reads_back(value, 0):
        _RENDERED[text] = value
        weakref.finalize(owner, _forget_literal, text, value)


def _forget_literal(text: str, value: Any) -> None:
    if _RENDERED.get(text) is value:  # not another block's entry for the same text
        _RENDERED.pop(text, None)


def _reads_back(value: Any, depth: int) -> bool:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return math.isfinite(value)  # repr "inf"/"nan" is no literal
    if depth >= 50:  # the parser refuses deep nesting
        return False
    # Plain loops, leaves tested inline (BaseAgent renders every tool input): no generator
    # nor call per string or number, which read back at any depth.
    if kind is dict:
        for k, v in value.items():
            if type(k) is not str:
                return False
            t = type(v)
            if not (t is str or t is int or t is bool or v is None or _reads_back(v, depth + 1)):
                return False
        return True
    if kind is list:
        for v in value:
            t = type(v)
            if not (t is str or t is int or t is bool or v is None or _reads_back(v, depth + 1)):
                return False
        return True
    return False


_KEY_RE = re.compile(r"\s*([A-Za-z_][\w-]*)=")
_DECODE = json.JSONDecoder()


def _kv_args(args: str) -> dict[str, Any] | None:
    """Cline's and pi's ``key=JSON, key=JSON`` arguments as a dict (None when the text is
    not of that form); a value that is no JSON ends the dict."""
    out: dict[str, Any] = {}
    at = 0
    while at < len(args):
        key = _KEY_RE.match(args, at)
        if key is None:
            break
        try:
            value, at = _DECODE.raw_decode(args, key.end())
        except ValueError:
            break
        out[key.group(1)] = value
        if not args.startswith(", ", at):
            break
        at += 2
    return out or None


def _call(line: str) -> tuple[str, str] | None:
    """(tool name, its rendered arguments) of a rendered tool call line, else None."""
    call = TOOL_CALL_RE.match(line)
    if call is not None:
        return call.group(1) or "", call.group(2)
    serial = SERIAL_CALL_RE.match(line) if "tool calls]: " in line else None
    return (serial.group(1), serial.group(2)) if serial is not None else None


def _call_args(args: str) -> Any:
    """A rendered tool call's arguments decoded: JSON, Cline's ``key=JSON`` list, or the
    Python dict repr BaseAgent renders (a literal only, size-bounded); the raw string when
    none of them."""
    if not args.startswith("{'"):  # no JSON text does (BaseAgent's reprs mostly do)
        try:
            return json.loads(args)
        except ValueError:
            pass
    if _KEY_RE.match(args):
        pairs = _kv_args(args)
        if pairs is not None:
            return pairs
    if args.startswith("{") and len(args) <= LITERAL_MAX:
        known = _RENDERED.get(args)
        if known is not None:
            return known
        if not _may_be_literal(args):
            return args  # (BaseAgent's long calls cut by the scan: a parse of ~4,000 chars)
        try:
            return ast.literal_eval(args)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    return args


def _may_be_literal(args: str) -> bool:
    """False when ``ast.literal_eval(args)`` (``args`` opening with "{") is sure to fail:
    what it reads is a dict or set display, so the text ends with its "}" unless a comment
    or a line continuation follows (the only whitespace the parser skips, " \\t\\f\\r\\n",
    is what ``rstrip`` removes)."""
    return args.rstrip().endswith(("}", "\\")) or "#" in args


_NOTE_EN, _NOTE_ZH = NOTES["en"], NOTES["zh"]


def _is_note(line: str) -> bool:
    # two plain tests, no generator: this runs for every line a summary reads
    return _NOTE_EN in line or _NOTE_ZH in line


# Markdown list markers, checkboxes and heading marks a material line may open with (the
# summary writes its own: a line is never bulleted twice), and the summary's own labels.
MARKER_RE = re.compile(
    r"^(?:(?:[-*+•]|\d{1,3}[.)])[ \t]+|#{1,6}[ \t]+|\[[ xX]\][ \t]+"
    r"|\*\*\[(?:Decision|决策)\]\*\*:[ \t]*)+"
)


def _bare(line: str) -> str:
    """``line`` without its leading list markers, checkboxes, heading marks and labels."""
    return MARKER_RE.sub("", line, count=1).strip() if line[:1] in "-*+•#[0123456789" else line


def _readable(line: str, width: int = LINE) -> str:
    """One material line as a person would write it, or "" when it is none of theirs:
    harness lines go, a tool call reads ``Read: /path`` instead of its JSON, tool ids and
    line-number prefixes are dropped."""
    line = line.strip()
    if not line or _is_meta(line) or _is_note(line):
        return ""
    tool = line.startswith(_TOOL_FIRST)
    if tool and (TOOL_OUTPUT_RE.match(line) or UNSAID_RE.match(line)):
        return ""
    call = _call(line) if tool else None
    if call:
        name, args = call
        first = next(input_strings(_call_args(args)), "")
        line = f"{name}: {first}" if name else first
        line = line.splitlines()[0].strip() if line.strip() else ""
    if "_" in line:  # every tool id holds one
        if _may_hold_tool_id(line):
            line = TOOL_ID_RE.sub("", line)
    elif tool and line.startswith("[") and LABEL_RE.match(line):
        line = LABEL_RE.sub("", line, count=1)
        if not line.strip() or _is_meta(line.strip()):
            return ""
    lead = line[:1]  # within a line a line-number prefix can only start it (\d: isdecimal)
    if lead == " " or lead.isdecimal() or "\n" in line:
        line = LINE_NUMBER_RE.sub("", line)
    return _bare(line.strip())[:width]


def _source(item: MaterialItem, conversation: Conversation | None) -> Message | None:
    """The message ``item`` was rendered from, when the request carries the conversation."""
    if conversation is None or item.index < 0:
        return None
    messages = conversation.messages
    return messages[item.index] if item.index < len(messages) else None


def _person_text(item: MaterialItem, conversation: Conversation | None = None) -> str:
    """What the person typed in a user item: nothing when its source message is no
    person's (a tool output, an injected or harness message, a summary), or, without the
    conversation, when the item is no user item or a harness preamble; else its text
    before any rendered result, harness blocks and lines taken out."""
    source = _source(item, conversation)
    if source is not None:
        if not harness.typed_by_a_person(source):
            return ""
    elif item.role != "user":
        return ""
    head = item.text[:SCAN_CHARS]
    if harness.is_preamble(head):
        return ""
    lines: list[str] = []
    for line in head.splitlines():
        stripped = line.strip()
        if TOOL_OUTPUT_RE.match(stripped):
            break
        if stripped.startswith("[") and LABEL_RE.match(stripped):
            line = LABEL_RE.sub("", stripped, count=1)
            if harness.is_preamble(line):
                continue
        lines.append(line)
    return harness.without_harness("\n".join(lines))


class _PersonTexts:
    """``_person_text`` of a request's items, each read once: the goal, the constraints and
    the next step walk the same user items (a typed message is split into lines and its
    harness parts taken out once per summary, not once per walk)."""

    __slots__ = ("_conversation", "_known")

    def __init__(self, conversation: Conversation | None) -> None:
        self._conversation = conversation
        self._known: dict[int, str] = {}  # id of an item (alive: the request holds it)

    def __call__(self, item: MaterialItem) -> str:
        known = self._known.get(id(item))
        if known is None:
            known = self._known[id(item)] = _person_text(item, self._conversation)
        return known


def _typed(items: Iterable[MaterialItem], person: _PersonTexts) -> Iterator[str]:
    """What the person typed in each user item that has a readable line, in order."""
    return (t for t in map(person, items) if _first_line(t))


def _speakers(
    material: tuple[MaterialItem, ...], conversation: Conversation | None
) -> tuple[list[MaterialItem], list[MaterialItem]]:
    """The user items and the assistant items of ``material``, in order (by their source's
    role when the request carries the conversation: ``_source``). Each walk of the summary
    reads one list, instead of finding every item's source again; an item of another role
    gives no typed text (``_person_text``) and says nothing."""
    users: list[MaterialItem] = []
    said: list[MaterialItem] = []
    messages = conversation.messages if conversation is not None else ()
    count = len(messages)
    for m in material:
        index = m.index
        role = messages[index].role if 0 <= index < count else _ROLES.get(m.role)
        if role is Role.USER:
            users.append(m)
        elif role is Role.ASSISTANT:
            said.append(m)
    return users, said


_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT}


# A sentence of chatter an assistant opens with: agreement, praise, "I see" ...
CHATTER_RE = re.compile(
    r"^(?:(?:You(?:'re| are) (?:absolutely |exactly |completely )?(?:right|correct)"
    r"|Great|Perfect|Excellent|Good|Nice|Awesome|Wonderful|Fantastic|Much better|Better"
    r"|I see|Now I see|I understand|Understood|Got it|OK|Okay|Alright|All right|Sure|Thanks"
    r"|Thank you|Ah|Oh|Hmm|Yes|Right|Indeed|Interesting|好的|太好了|完美|明白了?|好)"
    r"\b[^.!?。！？\n]{0,80}[.!?。！？]+\s*|[✅✓✔🎉👍]+\s*)+",
    re.IGNORECASE,
)
# A statement of work done (after any chatter), and intent, which is no work done yet.
DONE_RE = re.compile(
    r"^(?:I(?:'ve| have)\s+(?!to\b|no\b|not\b)|We(?:'ve| have)\s+(?!to\b|no\b|not\b)"
    r"|(?:I|We)\s+(?:created|added|fixed|updated|implemented|removed|wrote|changed|moved"
    r"|renamed|refactored|installed|replaced|deleted|converted|built|made|ran|set up"
    r"|finished|completed|resolved|solved|verified|tested|confirmed)\b"
    r"|(?:Created|Added|Fixed|Updated|Implemented|Removed|Wrote|Written|Changed|Moved|Renamed"
    r"|Refactored|Installed|Replaced|Deleted|Converted|Built|Finished|Completed|Resolved"
    r"|Solved|Verified|Done|Successfully|Saved|Applied|Merged|Committed|Pushed|Deployed)\b"
    r"|All (?:\d+ )?tests? (?:now )?pass|The (?:tests?|build|fix|change|changes) (?:now )?"
    r"(?:pass|passes|passed|succeed|succeeds|succeeded|works?|is (?:done|complete|in place))"
    r"|已|我已|完成了?|创建了|修复了|添加了|更新了)",
    re.IGNORECASE,
)


def _without_chatter(line: str) -> str:
    return CHATTER_RE.sub("", line, count=1).strip() if line else line


@lru_cache(maxsize=SCAN_MEMO_ENTRIES)
def _done_of(text: str) -> str:
    """The work an assistant item records as done, or "" when it holds only chatter or
    intent: its first tool call other than plan bookkeeping (``Edit: /path``), else its
    first line stating completed work (after any opening chatter)."""
    for raw in text[:SCAN_CHARS].splitlines():
        stripped = raw.strip()
        call = _call(stripped) if stripped.startswith(_TOOL_FIRST) else None
        if call is not None:
            if call[0].strip() in BOOKKEEPING_TOOLS:
                continue
            readable = _readable(stripped)
            if readable:
                return readable
            continue
        readable = _without_chatter(_readable(stripped))
        if readable and DONE_RE.match(readable):
            return readable
    return ""


def _doing(text: str) -> str:
    """What the newest assistant item was doing: its first readable line without the
    chatter it opens with (intent is fine here)."""
    for raw in text[:SCAN_CHARS].splitlines():
        readable = _without_chatter(_readable(raw))
        if readable:
            return readable
    return _first_line(text)


FIRST_LINE_CHUNK = 2048


@lru_cache(maxsize=SCAN_MEMO_ENTRIES)
def _first_line(text: str) -> str:
    """The first readable line of ``text`` (cached by content: every summary of a replay
    walks the material's items again, most of them read before)."""
    # Lines of growing prefixes, not of the whole text (a tool output can be long and its
    # first line readable): a prefix's lines are the text's, but for its last one, which
    # may be cut (read again from the next, longer prefix).
    start, size = 0, FIRST_LINE_CHUNK
    while True:
        end = start + size
        lines = text[start:end].splitlines(keepends=True)
        whole = end >= len(text)
        for line in lines if whole else lines[:-1]:
            readable = _readable(line)
            if readable:
                return readable
        if whole:
            return ""
        start += sum(map(len, lines[:-1]))
        size *= 2


def _lines(text: str) -> list[str]:
    return [r for r in (_readable(s) for s in text[:SCAN_CHARS].splitlines()) if r]


# The marks holding "[" are looked for only in a text with one.
_BRACKET_MARKS = tuple(m for m in RENDER_MARKS if "[" in m)
_OTHER_MARKS = tuple(m for m in RENDER_MARKS if "[" not in m)


def _may_hold_render(text: str) -> bool:
    if "[" in text:
        for mark in _BRACKET_MARKS:  # noqa: SIM110 (a loop, no generator: runs for every head)
            if mark in text:
                return True
    for mark in _OTHER_MARKS:  # noqa: SIM110
        if mark in text:
            return True
    return False


def _fact_text(text: str) -> str:
    """The material's content for fact extraction: tool-call JSON decoded to its values,
    render headers and tool ids removed, disclaimers left out."""
    if not (_may_hold_render(text) or _is_note(text) or _may_hold_meta(text)):
        # no line is a tool call or output, a disclaimer or a harness line: each line
        # stripped, tool ids removed (no id spans a line break, so the joined text's
        # matches are the lines' matches)
        joined = "\n".join([line.strip() for line in text.splitlines()])
        return TOOL_ID_RE.sub("", joined) if _may_hold_tool_id(joined) else joined
    out: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if _is_note(stripped) or _is_meta(stripped):
            continue
        if stripped.startswith(_TOOL_FIRST):
            call = _call(stripped)
            if call:
                out.extend(input_strings(_call_args(call[1])))
                continue
            stripped = TOOL_OUTPUT_RE.sub("", stripped)
            stripped = LABEL_RE.sub("", stripped) if stripped.startswith("[") else stripped
            stripped = UNSAID_RE.sub("", stripped) if stripped.startswith("[") else stripped
        out.append(TOOL_ID_RE.sub("", stripped) if _may_hold_tool_id(stripped) else stripped)
    return "\n".join(out)


@lru_cache(maxsize=SCAN_MEMO_ENTRIES)
def _fact_head(head: str) -> str:
    """``_fact_text`` of a message's head, cached: consecutive summaries of one replay
    (Aider's, PicoClaw's) read the same newest messages again."""
    return _fact_text(head)


def _without_notes(summary: str) -> str:
    return "\n".join(line for line in summary.splitlines() if not _is_note(line))


# The ASCII words of each pattern (its CJK alternatives cannot occur in ASCII text).
_WORDS = {
    CONSTRAINT_RE: ("must", "should", "never", "always", "don't", "do not", "please",
                    "make sure", "avoid", "only", "prefer"),
    DECISION_RE: ("decided", "decide", "will use", "instead", "because", "chose", "choose",
                  "going to", "plan"),
}  # fmt: skip
_QUOTE_PAIR = re.compile(r"['\"]\s*['\"]")
# A list under a command key (``extract.COMMAND_KEYS``): its strings are joined with spaces
# (``["make", "sure"]`` reads "make sure"). No other list is joined.
_ARGV_LIST = re.compile(r"(?:command|cmd|commands|shell_command|script)(?:[\"']\s*:|=)\s*\[")


def _cannot_match(head: str, words: tuple[str, ...]) -> bool:
    r"""True when no readable line of ``head`` (ASCII) can match: a readable line is cut
    from its line (strip, tool ids and line numbers removed, a width cut) or is a decoded
    string of a tool call, a substring of it too unless an escape (``\``) or a pair of
    adjacent quotes (Python's implicit concatenation) made it, or an argv list joined it
    (``{"command": ["do", "not"]}``). A removal joins a non-word character to one
    outside ``[A-Za-z0-9_-]``, so it creates no pattern word; a cut only adds a word
    boundary. So every match contains one of the words, lowercased."""
    if not head.isascii() or "\\" in head or _call_may_decode_apart(head):
        return False
    low = head.lower()
    for word in words:  # noqa: SIM110
        if word in low:
            return False
    return True


def _call_may_decode_apart(head: str) -> bool:
    """True when ``head`` (ASCII, no escape) holds a call mark and a pair of adjacent quotes
    or an argv list: a call's decoded strings may then be no substrings of it."""
    if _may_hold_call_mark(head):
        for mark in _CALL_MARKS:  # loops, no generators: this runs for every item scanned
            if mark in head:
                return _QUOTE_PAIR.search(head) is not None or _ARGV_LIST.search(head) is not None
    return False


# Each pattern's ASCII words after an opening word boundary, any case, without the closing
# one (``_plain_miss``).
_OPENINGS = {
    pattern: re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + ")", re.IGNORECASE)
    for pattern, words in _WORDS.items()
}
# Each pattern's literal (CJK) alternatives, and the only non-ASCII letters that
# ``re.IGNORECASE`` matches to an ASCII letter (İ ı -> i, ſ -> s, Kelvin sign -> k).
_LITERALS = {CONSTRAINT_RE: ("必须", "不要", "请", "务必", "避免", "只"),
             DECISION_RE: ("决定", "选择", "改用", "因为")}  # fmt: skip
# The words that hold no other word: a text holds one of a pattern's words when it holds
# one of these ("decided" holds "decide").
_NEEDLES = {
    pattern: tuple(w for w in words if not any(o != w and o in w for o in words))
    for pattern, words in _WORDS.items()
}
_FOLDS_TO_ASCII = ("\u0130", "\u0131", "\u017f", "\u212a")
_CALL_MARKS = ("[tool_", "<tool_use>", "[tool call", "[function_call", "[functionCall",
               " tool calls]: ")  # fmt: skip
# Every call mark holds one of these: a text without either holds no mark (two scans, not
# six, for the many texts that hold none).
_CALL_MARK_HEADS = ("tool", "[function")


def _may_hold_call_mark(text: str) -> bool:
    return _CALL_MARK_HEADS[0] in text or _CALL_MARK_HEADS[1] in text


# The marks by their common part: "tool" one character in, or "[function" at the start.
_TOOL_MARKS = tuple(m for m in _CALL_MARKS if m.find(_CALL_MARK_HEADS[0]) == 1)
_FUNCTION_MARKS = tuple(m for m in _CALL_MARKS if m.startswith(_CALL_MARK_HEADS[1]))


def _call_marks(head: str) -> list[int]:
    """Where each call mark starts in ``head`` (every occurrence of each): the few places
    holding a mark's common part are tested, instead of a scan of the text per mark."""
    marks: list[int] = []
    tool, function = _CALL_MARK_HEADS
    at = head.find(tool, 1)  # (a "tool" mark starts one character before it)
    while at >= 0:
        if head.startswith(_TOOL_MARKS, at - 1):
            marks.append(at - 1)
        at = head.find(tool, at + 1)
    at = head.find(function)
    while at >= 0:
        if head.startswith(_FUNCTION_MARKS, at):
            marks.append(at)
        at = head.find(function, at + 1)
    return marks


# An escape that can decode to a letter, a space or a quote (JSON ``\u``; Python ``\'``,
# ``\x``, octal, ``\N``): the others (``\n \t \r \" \\ \/ \b \f``) give none of them.
_LETTER_ESCAPE = re.compile(r'\\(?:[^ntr"\\/bf]|$)')


def _call_may_match(line: str) -> bool:
    """False when the readable text of tool-call ``line`` (its name and first decoded
    argument) is sure to hold no pattern word that ``line`` does not: no escape that makes
    a letter, space or quote, no adjacent quotes (Python's implicit concatenation) and no
    argv list (joined with spaces). Its decoded strings are then substrings."""
    call = _call(line.strip())
    if call is None:
        return False  # not decoded: ``_readable`` only cuts and removes
    args = call[1]
    return (
        _ARGV_LIST.search(args) is not None
        or ("\\" in args and _LETTER_ESCAPE.search(args) is not None)
        or _QUOTE_PAIR.search(args) is not None
    )


@lru_cache(maxsize=SCAN_MEMO_ENTRIES)
def _matching_lines(text: str, pattern: re.Pattern[str]) -> tuple[str, ...]:
    """The scanned lines of ``text`` that ``pattern`` finds something in (cached by
    content: several strategies and compactions summarise the same messages).

    Only lines that may hold a match are read: a line's readable text is cut from it
    (``_cannot_match``'s argument, which holds for any text without a letter folding to
    ASCII: lowercasing maps characters one by one), so a match leaves one of the pattern's
    words (any case) or literals in the line, unless it is a tool call whose arguments may
    decode to one (``_call_may_match``)."""
    words = _NEEDLES.get(pattern)
    if words is None:
        return tuple(s for s in _lines(text) if pattern.search(s))
    head = text[:SCAN_CHARS]
    if head.isascii() and "\\" not in head:  # ``_cannot_match``, its word scan kept
        low = head.lower()
        for word in words:
            if word in low:
                return tuple(_matches_in_marked_lines(head, pattern, words, low))
        if not _call_may_decode_apart(head):
            return ()  # the usual case: most messages state no constraint nor decision
        # no word in the text: only calls decoding to other strings can match
        return tuple(_matches_in_marked_lines(head, pattern, words, low, worded=False))
    if any(c in head for c in _FOLDS_TO_ASCII):
        lines = head.splitlines()
        return tuple(r for r in map(_readable, lines) if r and pattern.search(r))
    return tuple(_matches_in_marked_lines(head, pattern, words))


def _matches_in_marked_lines(
    head: str,
    pattern: re.Pattern[str],
    words: tuple[str, ...],
    low: str | None = None,
    *,
    worded: bool = True,
) -> Iterator[str]:
    """The readable lines of ``head`` (no letter folding to ASCII) that ``pattern``
    matches, reading only the lines that hold one of its words (any case) or literals,
    or a tool call whose arguments may decode to one. ``low``: ``head.lower()`` when the
    caller made it (``head`` is then ASCII: no literal); ``worded=False``: the caller
    found none of the words in it."""
    # found in the whole text at once (``str.find``), then mapped to their lines:
    # lowercasing keeps every position (only İ, a fold letter, grows)
    hits: list[int] = []  # where a word or literal is
    # (``words``: the pattern's ``_NEEDLES``; its CJK literals only in a non-ASCII text)
    needles = words if head.isascii() else words + _LITERALS[pattern]
    if low is None:
        low = head.lower()
    for needle in needles if worded else ():
        at = low.find(needle)
        while at >= 0:
            hits.append(at)
            at = low.find(needle, at + 1)
    marks = _call_marks(head)  # where a tool call's mark is
    if not hits and not marks:
        return
    ends = list(itertools.accumulate(map(len, head.splitlines(keepends=True))))
    hinted = {bisect.bisect_right(ends, at) for at in hits}
    calls = {bisect.bisect_right(ends, at) for at in marks}
    lines = head.splitlines()
    opening = _OPENINGS[pattern]
    needles = words + _LITERALS[pattern]  # (what a call's decoded strings may hold)
    for index in sorted(hinted | calls):
        line = lines[index]
        if index in hinted:
            if _plain_miss(line, pattern, opening):
                continue
        elif not _decoded_may_match(line, needles):
            continue
        readable = _readable(line)
        if readable and pattern.search(readable):
            yield readable


def _decoded_may_match(line: str, needles: tuple[str, ...]) -> bool:
    """False when the readable text of ``line``, a line with a call mark but none of the
    pattern's words, is sure to hold no match: it is no tool call ``_readable`` decodes, or
    its name and first decoded string hold none of ``needles`` (the pattern's words and
    literals, any case) nor a letter folding to ASCII. The readable text is cut from
    "name: first" (its first line, prefixes and tool ids removed, the width cut): a removed
    tool id has a non-word character before it and none of ``[A-Za-z0-9_-]`` after it, so
    no removal joins a word. Cheaper than ``_call_may_match`` and ``_readable`` for the
    calls whose arguments do not decode to substrings of the line (argv lists, escapes,
    quote pairs: most of BaseAgent's), which had to be made readable."""
    call = _call(line.strip())
    if call is None:
        return False  # not decoded: the line holds no pattern word, its readable text none
    name, args = call
    decoded = f"{name}: {next(input_strings(_call_args(args)), '')}"
    for c in _FOLDS_TO_ASCII:  # noqa: SIM110 (loops, no generators: a few per summary)
        if c in decoded:
            return True
    low = decoded.lower()
    for needle in needles:  # noqa: SIM110
        if needle in low:
            return True
    return False


def _plain_miss(line: str, pattern: re.Pattern[str], opening: re.Pattern[str]) -> bool:
    """True when ``line``'s readable text is sure to hold no match of ``pattern``
    although ``line`` holds one of its words: an ASCII line without escapes, whose decoded
    strings (when a tool call) are substrings of it (``_call_may_match``), where the
    pattern finds nothing. Its readable text is cut from it by removals that keep a
    character's neighbours word or non-word (``_cannot_match``), so a match there is one
    here, unless the width cut made its closing word boundary: a line longer than the
    width is tested for a word's start only (a cut adds no opening boundary)."""
    if not line.isascii() or "\\" in line or _call_may_match(line):
        return False
    return (opening if len(line) > LINE else pattern).search(line) is None


def clear_caches() -> None:
    """Forget cached line scans and facts (benchmarks start cold)."""
    _matching_lines.cache_clear()
    _fact_head.cache_clear()
    _first_line.cache_clear()
    _done_of.cache_clear()
    extract_clear_caches()


def _glossed(section: Section, lang: str) -> str:
    """A heading as the original writes it, with an English gloss when it is Chinese:
    ``## 目标 (Goal)``."""
    heading = section.heading
    if lang != "zh" or not _CJK.search(heading):
        return heading
    key = heading.strip().lstrip("#").strip()
    gloss = GLOSSES.get(key) or SLOT_GLOSSES.get(section.slot)
    return f"{heading} ({gloss})" if gloss else heading


def _previous_sections(
    summary: str, headings: Mapping[str, str] | frozenset[str] = frozenset()
) -> dict[str, list[str]]:
    """The previous summary's lines under each heading (markdown ``#`` headings, or the
    request's own headings such as Claude Code's ``1. Primary Request and Intent:``);
    ``headings`` maps a heading as written (glossed or not) to the request's own."""
    names = headings if isinstance(headings, Mapping) else {h: h for h in headings}
    out: dict[str, list[str]] = {}
    current = ""
    for line in summary.splitlines():
        if line.startswith("#") or line.strip() in names:
            current = names.get(line.strip(), line.strip())
            out.setdefault(current, [])
        elif (
            current
            and line.strip()
            and not _is_note(line)
            and line.strip() not in NONE.values()
            and not META_RE.match(line.strip())
        ):
            out[current].append(line.rstrip())
    return out


class OfflineSummarizer:
    """Deterministic, extractive, no model. Fills the requested structure."""

    name = "offline"

    def __init__(self) -> None:
        # The last material read and what was found in it: a second call on the same
        # material (Gemini CLI's verification turn) reads nothing again.
        self._last: tuple[tuple[MaterialItem, ...], dict[str, list[str]], bool] | None = None

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        lang = "zh" if request.language.startswith("zh") else "en"
        if request.style == "sections" and request.sections:
            text = self._sections(request, lang)
        elif request.style == "bullets":
            text = self._bullets(request, lang)
        else:
            text = self._plain(request, lang)
        usage = SummaryUsage(
            input_tokens=request.approx_input_tokens(),
            output_tokens=approx_tokens(text),
            estimated=True,
        )
        return SummaryResponse(text=text, usage=usage, model="ctxlab-offline-extractive")

    def _slots(
        self, request: SummaryRequest, lang: str, *, full: bool = True
    ) -> dict[str, list[str]]:
        """The slots read from the material; ``full=False``: only those a bullet summary
        shows (goal, decisions, done, in_progress), the rest left empty."""
        last = self._last
        if last is None or last[0] is not request.material or (full and not last[2]):
            last = self._last = (request.material, self._read(request, full=full), full)
        return {slot: list(lines) for slot, lines in last[1].items()}

    def _read(self, request: SummaryRequest, *, full: bool = True) -> dict[str, list[str]]:
        # what people typed: user items that are not tool outputs nor harness lines only.
        # Only the first few and the last of them are read (goal, constraints, next; the
        # decisions, done and in-progress lines): after one pass sorting the items by
        # speaker, both ends are read lazily, so a long material costs little more.
        material = request.material
        conv = request.conversation
        users, said = _speakers(material, conv)
        # (the typed items and said items; an item whose lines match nothing adds nothing,
        # so whether it has a readable line at all is asked only of those that match)
        person = _PersonTexts(conv)
        later = iter(users)  # (the constraints walk goes on after the first typed item)
        first_user = next(_typed(later, person), None)
        goal = [_first_line(first_user)] if first_user is not None else []
        # Only the first PER_SECTION lines are kept: stop scanning once they are found.
        constraints: list[str] = []
        if full and first_user is not None:
            constraints.extend(_matching_lines(first_user, CONSTRAINT_RE))
            for m in later:
                if len(constraints) >= PER_SECTION:
                    break
                text = person(m)
                matched = _matching_lines(text, CONSTRAINT_RE) if text else ()
                if matched and _first_line(text):
                    constraints.extend(matched)
        decisions: list[str] = []
        for m in said:
            matched = _matching_lines(m.text, DECISION_RE)
            if matched and _first_line(m.text):
                decisions.extend(matched)
                if len(decisions) >= PER_SECTION:
                    break
        # the newest assistant items, newest first: the newest is in progress, the work
        # done is read from the ones before it (at most DONE_ITEMS of them)
        newest = (m for m in reversed(said) if _first_line(m.text))
        latest = next(newest, None)
        in_progress = [_doing(latest.text)] if latest is not None else []
        done_newest_first: list[str] = []
        for m in itertools.islice(newest, DONE_ITEMS):
            line = _done_of(m.text)
            if line and line not in done_newest_first:
                done_newest_first.append(line)
                if len(done_newest_first) >= PER_SECTION:
                    break
        done = done_newest_first[::-1]
        if not full:
            return {"goal": goal, "constraints": [], "done": done, "in_progress": in_progress,
                    "blocked": [], "decisions": decisions[:PER_SECTION], "next": [],
                    "critical": []}  # fmt: skip
        # Facts from the newest messages' heads: bounded work per summary, whatever its size.
        recent = request.material[-FACT_MESSAGES:]
        found = critical_facts_of_parts(
            (_fact_head(m.text[:FACT_CHARS]) for m in recent), limit=PER_SECTION
        )
        last_user = next(
            _typed(reversed(users), person),
            None,
        )
        nxt = [_first_line(last_user)] if last_user is not None else []
        critical = (
            [f"path: {p}" for p in found.paths]
            + [f"identifier: {i}" for i in found.identifiers]
            + [f"url: {u}" for u in found.urls]
            + [f"error: {e[:LINE]}" for e in found.errors]
        )
        return {
            "goal": goal,
            "constraints": constraints[:PER_SECTION],
            "done": done,
            "in_progress": in_progress,
            "blocked": list(found.errors[:3]),
            "decisions": decisions[:PER_SECTION],
            "next": nxt,
            "critical": critical[: PER_SECTION * 3],
        }

    def _sections(self, request: SummaryRequest, lang: str) -> str:
        slots = self._slots(request, lang)
        shown = {section.heading: _glossed(section, lang) for section in request.sections}
        # a previous summary's headings as this one writes them, glossed or not
        headings = {h.strip(): h.strip() for h in shown} | {
            g.strip(): h.strip() for h, g in shown.items()
        }
        previous = _previous_sections(request.previous_summary, headings)
        out = [NOTES[lang], ""]
        for section in request.sections:
            out.append(shown[section.heading])
            if section.slot in ("note", "none"):
                continue
            new = [_bare(s) for s in slots.get(section.slot, [])]
            old = [
                line
                for line in dict.fromkeys(
                    _bare(o.strip()) for o in previous.get(section.heading.strip(), [])
                )
                if line and line not in new
            ]
            if section.slot == "goal" and old:
                kept = old[:1]
            else:
                kept = (old + new)[-PER_SECTION * (3 if section.slot == "critical" else 1) :]
            items = self._render(section.slot, kept, lang)
            if not items and section.slot not in ("done", "in_progress", "blocked"):
                items = [NONE[lang]]
            out.extend(items)
            out.append("")
        return "\n".join(out).strip()

    @staticmethod
    def _render(slot: str, items: list[str], lang: str) -> list[str]:
        if slot == "goal":
            return items[:1]
        if slot == "done":
            return [f"- [x] {s}" for s in items]
        if slot == "in_progress":
            return [f"- [ ] {s}" for s in items]
        if slot == "decisions":
            label = "决策" if lang == "zh" else "Decision"
            return [f"- **[{label}]**: {s}" for s in items]
        if slot == "next":
            return [f"{n}. {s}" for n, s in enumerate(items, 1)]
        return [f"- {s}" for s in items]

    def _bullets(self, request: SummaryRequest, lang: str) -> str:
        slots = self._slots(request, lang, full=False)  # the four slots it shows
        lines = [
            f"- {s}" for key in ("goal", "decisions", "done", "in_progress") for s in slots[key]
        ]
        if not lines:
            return "无" if lang == "zh" else "(nothing to record)"
        return "\n".join([f"- {NOTES[lang]}", *dict.fromkeys(lines)][: PER_SECTION * 2])

    def _plain(self, request: SummaryRequest, lang: str) -> str:
        slots = self._slots(request, lang)
        parts = [NOTES[lang]]
        if request.previous_summary:  # carried along without its own disclaimer
            parts.append(_without_notes(request.previous_summary).strip()[:2000])
        for key, label in (
            ("goal", "Goal"),
            ("done", "Done"),
            ("in_progress", "Latest"),
            ("critical", "Context"),
        ):
            if slots[key]:
                parts.append(f"{label}: " + "; ".join(slots[key]))
        return "\n".join(parts)


class FailingSummarizer:
    """Always fails: exercises each strategy's failure path (tests, what-if runs)."""

    name = "failing"

    def __init__(self, mode: Literal["raise", "error", "empty"] = "raise") -> None:
        self.mode = mode

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        if self.mode == "raise":
            raise SummarizerError("summariser failed (simulated)")
        if self.mode == "error":
            return SummaryResponse(text="", error="summariser failed (simulated)")
        return SummaryResponse(text="", usage=SummaryUsage(approx_tokens(request.input_text()), 0))
