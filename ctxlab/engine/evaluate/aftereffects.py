"""After-effects: what the original agent did right after each of its real compactions.

A compaction that kept what the agent needed leaves no trace; one that did not shows in
what the agent does next. For each compaction the transcript records (Claude Code
``compact_boundary``, Codex ``compacted``, OpenHands condensation, server compaction
blocks), the agent's next ``WINDOW`` turns (or fewer, up to the next compaction) are read
for:

- ``files_reread``: files it reads again that it had already read or written before;
- ``commands_repeated``: shell commands it runs again, the same first line as before;
- ``questions``: sentences asking the user what to do ("what would you like me to do?");
- ``apologies``: apologies and restarts ("sorry", "let me start over", "I don't have the
  context");
- ``turns_to_same_files``: assistant turns until it first touches (reads or edits) a file
  it had touched before (1 = its first turn after the compaction); None when it never does
  within the window.

Rule-based and cheap (one pass over the messages). These are the ground truth that the
probe and survival scores try to predict; a re-read is not always a loss (an agent may
re-read on purpose before editing), so the numbers are read together, not alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from ..core.model import Block, BlockKind, Conversation, Message, Role
from . import extract
from .probes.questions import PATH_KEYS, decoded_input, edited_paths, tool_command

WINDOW = 20  # assistant turns examined after each compaction

READ_TOOLS = frozenset({"read", "read_file", "view", "open_file", "notebookread", "cat"})
READ_COMMAND_RE = re.compile(r"^\s*(?:cat|head|tail|less|more|bat|nl|sed -n|wc)\b")
QUESTION_RE = re.compile(
    r"\b(?:what would you like(?: me)? to|what should i|how would you like(?: me)? to"
    r"|would you like me to|which (?:\w+ )?would you like|could you (?:clarify|tell me|remind)"
    r"|can you (?:clarify|tell me|remind)|what do you want(?: me)? to|let me know what"
    r"|what(?:'s| is) the (?:next step|task)|where were we)\b[^.!\n]*\??",
    re.IGNORECASE,
)
APOLOGY_RE = re.compile(
    r"\b(?:i apologi[sz]e|sorry|my apologies|let me start (?:over|again|fresh)|start(?:ing)? "
    r"(?:over|fresh)|i (?:don't|do not) have (?:the )?(?:context|details|information)"
    r"|i(?:'ve| have) lost (?:track|context)|let me (?:re-?read|re-?check|re-?examine"
    r"|re-?familiari[sz]e)|to (?:re-?)?orient myself|get my bearings)\b[^.!\n]*",
    re.IGNORECASE,
)


def read_paths(block: Block) -> list[str]:
    """Files a tool call reads: read/view tools, ``cat``-like shell commands."""
    name = block.tool_name.lower()
    value = decoded_input(block)
    if name in READ_TOOLS or (
        isinstance(value, dict) and value.get("command") == "view" and "path" in value
    ):
        if isinstance(value, dict):
            return [str(value[k]) for k in PATH_KEYS if isinstance(value.get(k), str)]
        return []
    command = tool_command(block)
    if command and READ_COMMAND_RE.match(command):
        return list(extract.facts(command).paths)
    return []


def _same_file(path: str, known: Iterable[str]) -> str:
    """The known path ``path`` names (equal, or one ends with the other: ./a/b.py vs
    /repo/a/b.py), "" when none."""
    clean = path.lstrip("./")
    for other in known:
        o = other.lstrip("./")
        if o == clean or o.endswith("/" + clean) or clean.endswith("/" + o):
            return other
    return ""


@dataclass(slots=True)
class _Seen:
    read: dict[str, int] = field(default_factory=dict)  # path -> first message
    touched: dict[str, int] = field(default_factory=dict)
    commands: dict[str, int] = field(default_factory=dict)

    def add(self, index: int, message: Message) -> None:
        for block in message.tool_uses:
            reads, writes = read_paths(block), edited_paths(block)
            for path in reads:
                self.read.setdefault(path, index)
            for path in reads + writes:
                self.touched.setdefault(path, index)
            command = tool_command(block)
            if command:
                self.commands.setdefault(command, index)


@dataclass(frozen=True, slots=True)
class AfterEffect:
    """What the agent did after one compaction (quotes at most 5 of each)."""

    ordinal: int
    kind: str
    trigger: str
    before_index: int  # first message after the compaction
    turns: int  # assistant turns examined
    files_reread: tuple[str, ...]
    commands_repeated: tuple[str, ...]
    questions: tuple[str, ...]
    apologies: tuple[str, ...]
    turns_to_same_files: int | None
    first_touch: str  # the file touched again first
    files_before: int = 0  # files touched before the compaction (0: "never" means nothing)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ordinal": self.ordinal,
            "kind": self.kind,
            "trigger": self.trigger,
            "before_index": self.before_index,
            "turns": self.turns,
            "files_reread": list(self.files_reread),
            "commands_repeated": list(self.commands_repeated),
            "questions": list(self.questions[:5]),
            "question_count": len(self.questions),
            "apologies": list(self.apologies[:5]),
            "apology_count": len(self.apologies),
            "turns_to_same_files": self.turns_to_same_files,
            "first_touch": self.first_touch,
            "files_before": self.files_before,
        }


def _assistant_text(message: Message) -> str:
    return "\n".join(b.text for b in message.blocks if b.kind is BlockKind.TEXT and b.text)


def after_compaction(
    messages: Sequence[Message],
    start: int,
    end: int,
    seen: _Seen,
    *,
    ordinal: int = 0,
    kind: str = "",
    trigger: str = "",
    window: int = WINDOW,
) -> AfterEffect:
    """The after-effects of a compaction before ``messages[start]``, read up to ``end``
    (exclusive) or ``window`` assistant turns, against what ``seen`` holds of before."""
    reread: dict[str, None] = {}
    repeated: dict[str, None] = {}
    questions: list[str] = []
    apologies: list[str] = []
    turns = 0
    to_same: int | None = None
    first_touch = ""
    for i in range(start, min(end, len(messages))):
        message = messages[i]
        if message.role is not Role.ASSISTANT:
            continue
        if turns >= window:
            break
        turns += 1
        text = _assistant_text(message)
        questions += [" ".join(q.group(0).split())[:160] for q in QUESTION_RE.finditer(text)]
        apologies += [" ".join(a.group(0).split())[:160] for a in APOLOGY_RE.finditer(text)]
        for block in message.tool_uses:
            reads = read_paths(block)
            for path in reads:
                if _same_file(path, seen.read):
                    reread.setdefault(path, None)
            for path in reads + edited_paths(block):
                known = _same_file(path, seen.touched)
                if known and to_same is None:
                    to_same, first_touch = turns, path
            command = tool_command(block)
            if command and command in seen.commands:
                repeated.setdefault(command, None)
    return AfterEffect(
        ordinal, kind, trigger, start, turns, tuple(reread), tuple(repeated),
        tuple(questions), tuple(apologies), to_same, first_touch, len(seen.touched),
    )  # fmt: skip


def analyse(conversation: Conversation, *, window: int = WINDOW) -> list[AfterEffect]:
    """The after-effects of every compaction the transcript records, in order."""
    messages = conversation.messages
    boundaries = sorted(conversation.compactions, key=lambda c: c.before_index)
    seen = _Seen()
    done = 0
    out: list[AfterEffect] = []
    for k, compaction in enumerate(boundaries):
        start = compaction.before_index
        for i in range(done, min(start, len(messages))):
            seen.add(i, messages[i])
        done = max(done, start)
        end = boundaries[k + 1].before_index if k + 1 < len(boundaries) else len(messages)
        out.append(
            after_compaction(
                messages,
                start,
                end,
                seen,
                ordinal=k,
                kind=compaction.kind,
                trigger=compaction.trigger,
                window=window,
            )  # fmt: skip
        )
    return out


def summary(effects: Sequence[AfterEffect]) -> dict[str, Any]:
    """Per transcript: totals over its compactions and the median turns to the same files."""
    turns = [e.turns_to_same_files for e in effects if e.turns_to_same_files is not None]
    return {
        "compactions": len(effects),
        "files_reread": sum(len(e.files_reread) for e in effects),
        "commands_repeated": sum(len(e.commands_repeated) for e in effects),
        "questions": sum(len(e.questions) for e in effects),
        "apologies": sum(len(e.apologies) for e in effects),
        "turns_to_same_files": median(turns) if turns else None,
        # compactions after which the agent never went back to a file it had touched
        # (one the transcript ends at has no turns after it: nothing to tell)
        "never_returned": sum(
            1 for e in effects if e.turns_to_same_files is None and e.files_before and e.turns
        ),
    }


def report(conversation: Conversation, *, window: int = WINDOW) -> dict[str, Any]:
    """The JSON twin: ``{"window", "summary", "metrics", "compactions": [...]}``;
    ``metrics`` holds the summary under its catalogue keys."""
    effects = analyse(conversation, window=window)
    totals = summary(effects)
    return {
        "window": window,
        "summary": totals,
        "metrics": {f"aftereffect_{k}": totals[k] for k in METRIC_KEYS},
        "compactions": [e.as_dict() for e in effects],
    }


# catalogue keys ``aftereffect_<key>`` (ctxlab/engine/core/catalogue.py)
METRIC_KEYS = ("files_reread", "commands_repeated", "questions", "apologies",
               "turns_to_same_files")  # fmt: skip
