"""Probes: questions about what a compaction removed, whose answers are known by rule.

For each compaction (the fate-changing events of one replay step, or one compaction the
original agent recorded), the messages it summarised, dropped, truncated, offloaded or
pruned are read as they were just before it, and four kinds of probe are generated:

- ``recall``: "What was the error message when the agent ran `pytest -x`?" — an error line
  of a tool output (``extract``'s error rule), asked by the call that produced it;
- ``artifact``: "Which files were modified?" (the paths of edit/write tool calls) and
  "Which command ran the tests?" (the last test-runner command);
- ``continuation``: "What was the open task?" — the sentences of the latest request the
  user typed (only when the compaction touched it), or the to-do item in progress;
- ``decision``: "Which approach was rejected or changed, and why?" — the latest sentence
  that says so ("instead of", "doesn't work", "switch to", "revert" ...).

Everything is rule-based and ordered by source position, so the same transcript and run
always give the same probes (each has a stable ``key``). At most ``MAX_COMPACTIONS``
compactions are probed per run, spread evenly, so a strategy that prunes at every step
yields a bounded set. Scoring is in ``probe_scoring``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import ChainMap
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ...core import harness
from ...core.catalogue import is_compaction
from ...core.model import Block, BlockKind, Message, Role
from ...core.records import Event, Fate, StepRecord
from .. import extract

PROBE_KINDS = ("recall", "artifact", "continuation", "decision")
PROBE_LABELS = {
    "recall": "Recall",
    "artifact": "Artifact",
    "continuation": "Continuation",
    "decision": "Decision",
}
MAX_COMPACTIONS = 12
MAX_RECALL = 3  # error probes per compaction (the latest ones)
MAX_FILES = 8  # paths listed as the answer of "which files were modified?"
ANSWER_WIDTH = 200

_TOUCHING = frozenset({Fate.SUMMARISED, Fate.DROPPED, Fate.TRUNCATED, Fate.OFFLOADED, Fate.PRUNED})
_MODIFIED = frozenset({Fate.TRUNCATED, Fate.OFFLOADED, Fate.PRUNED})

# Tools that write files, and the input keys that name the file.
EDIT_TOOLS = frozenset(
    {"edit", "write", "multiedit", "notebookedit", "write_file", "edit_file", "create_file",
     "replace", "apply_patch", "str_replace_based_edit_tool", "str_replace_editor",
     "edit_file_by_replace", "insert_content", "write_to_file"}
)  # fmt: skip
EDIT_COMMANDS = frozenset({"create", "str_replace", "insert", "write", "edit", "undo_edit"})
PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file", "target_file")
PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Update|Add) File: (.+)$", re.MULTILINE)
TEST_RE = re.compile(
    r"(?:^|[\s;&|(])(?:pytest|py\.test|tox|nox|jest|vitest|mocha|rspec|phpunit"
    r"|python3? -m (?:pytest|unittest)|(?:npm|pnpm|yarn|bun)(?: run)? test"
    r"|go test|cargo test|make (?:test|check)|mvn test|gradle(?:w)? test|mix test"
    r"|manage\.py test|ctest|dotnet test)(?=$|[\s;&|:)])"
)
DECISION_RE = re.compile(
    r"\b(?:instead of|rather than|won't work|doesn't work|didn't work|does not work"
    r"|isn't working|not working|switch(?:ed|ing)? to|decided|decide to|let's not|revert(?:ed|ing)?"
    r"|abandon(?:ed|ing)?|give up on|a different approach|better approach|wrong approach"
    r"|go with|went with|opt(?:ed)? for|no longer use)\b",
    re.IGNORECASE,
)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True, slots=True)
class Probe:
    """One question about a compaction. ``answers`` are what a correct answer holds
    (every path for "which files", one line otherwise); ``source`` is the message the
    answer came from; ``compaction`` the ordinal of the probed compaction in its run."""

    key: str
    kind: str
    compaction: int
    step: int
    event: int | None  # the replay event (None for the original's own compactions)
    question: str
    answers: tuple[str, ...]
    source: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.kind,
            "compaction": self.compaction,
            "step": self.step,
            "event": self.event,
            "question": self.question,
            "answers": list(self.answers),
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class Compaction:
    """What probes are generated from: the touched messages (source index, version in
    force just before the compaction), in source order."""

    ordinal: int
    step: int
    event: int | None
    touched: tuple[tuple[int, Message], ...]
    before: int  # source index of the first request after it (open-task cut-off)


def _key(*parts: object) -> str:
    blob = json.dumps(parts, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _line(text: str) -> str:
    return " ".join(text.split())[:ANSWER_WIDTH]


def decoded_input(block: Block) -> Any:
    value = block.tool_input
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def tool_command(block: Block) -> str:
    """The shell command of a tool call ("" when it runs none): first line of its script."""
    value = decoded_input(block)
    if not isinstance(value, dict):
        return ""
    for key in extract.COMMAND_KEYS:
        found = value.get(key)
        if isinstance(found, list) and found and all(isinstance(v, str) for v in found):
            found = extract._argv_command(found)
        if isinstance(found, str) and found.strip():
            return _line(extract._first_command_line(found))
    return ""


def edited_paths(block: Block) -> list[str]:
    """Files a tool call writes (edit/write/patch tools; a str_replace_editor ``view`` is
    no write)."""
    if block.tool_name.lower() not in EDIT_TOOLS:
        return []
    value = decoded_input(block)
    if isinstance(value, str):
        return [p.strip() for p in PATCH_FILE_RE.findall(value)]
    if not isinstance(value, dict):
        return []
    command = value.get("command")
    if isinstance(command, str) and command and command not in EDIT_COMMANDS:
        return []
    paths = [str(value[k]) for k in PATH_KEYS if isinstance(value.get(k), str) and value[k]]
    for key in ("patch", "input", "diff"):
        if isinstance(value.get(key), str):
            paths += [p.strip() for p in PATCH_FILE_RE.findall(value[key])]
    return paths


def is_user_typed(message: Message) -> bool:
    """A request the person typed: user role, no tool result, not injected or a summary,
    not harness markup (``<command-name>``, caveats, a continued-session preamble)."""
    if not harness.typed_by_a_person(message):  # the one rule (``core.harness``)
        return False
    text = message.text.strip()
    return bool(text) and not extract.META_LINE_RE.match(text)


def request_sentences(message: Message) -> tuple[str, ...]:
    """What a typed request asks: its instruction sentences, else its first line."""
    found = extract.instructions(message.text, width=ANSWER_WIDTH)[:3]
    return found or (_line(message.text.strip().splitlines()[0]),)


def _call_label(call: Block | None) -> str:
    if call is None:
        return "a tool"
    command = tool_command(call)
    if command:
        return f"ran `{command[:120]}`"
    value = decoded_input(call)
    target = ""
    if isinstance(value, dict):
        target = next((str(value[k]) for k in PATH_KEYS if isinstance(value.get(k), str)), "")
    return f"called {call.tool_name}" + (f" on {target[:120]}" if target else "")


_ASKED_RE = re.compile(
    r"when the agent (?:ran `(?P<command>.+)`|called \S+ on (?P<target>.+))\?$", re.DOTALL
)


def asked_about(question: str) -> str:
    """The call a recall question names (the command, or the file a tool was called on),
    as ``_call_label`` wrote it; "" when it names none ("called a tool")."""
    found = _ASKED_RE.search(question)
    if found is None:
        return ""
    return found["command"] or found["target"] or ""


_EXCEPTION_RE = re.compile(r"\w(?:Error|Exception)\b")
_COUNT_LINE_RE = re.compile(r"^[=\s]*\d+ failed\b")


ERROR_HEAD, ERROR_TAIL = 4_000, 16_000  # characters of a long output searched for errors


@lru_cache(maxsize=4096)
def error_line(output: str) -> str:
    """The error line a person would quote from a tool output: the exception line when
    there is one (the last, as a Python traceback ends with it), else the first error
    line that is not a traceback header or a bare failure count; "" when none. A long
    output is searched in its head and tail only (where errors are reported); memoised,
    as other runs remove the same outputs."""
    if len(output) > ERROR_HEAD + ERROR_TAIL:
        output = output[:ERROR_HEAD] + "\n" + output[-ERROR_TAIL:]
    if not extract.ERROR_RE.search(output):
        return ""
    lines = [
        _line(e)
        for e in extract.error_facts(output)
        if not e.lstrip().startswith("Traceback") and not _COUNT_LINE_RE.match(e)
    ]
    exceptions = [e for e in lines if _EXCEPTION_RE.search(e)]
    return exceptions[-1] if exceptions else (lines[0] if lines else "")


def _recall(
    touched: Sequence[tuple[int, Message]], calls: Mapping[str, Block]
) -> list[tuple[str, tuple[str, ...], int]]:
    found: list[tuple[str, tuple[str, ...], int]] = []
    seen: set[str] = set()
    for index, message in touched:
        for block in message.tool_results:
            line = error_line(block.text)
            if not line:
                continue
            if line in seen:
                continue
            seen.add(line)
            label = _call_label(calls.get(block.tool_id))
            found.append((f"What was the error message when the agent {label}?", (line,), index))
    return found[-MAX_RECALL:]


def _artifacts(touched: Sequence[tuple[int, Message]]) -> list[tuple[str, tuple[str, ...], int]]:
    files: dict[str, int] = {}
    test: tuple[str, int] | None = None
    for index, message in touched:
        for block in message.tool_uses:
            for path in edited_paths(block):
                files.setdefault(path, index)
            command = tool_command(block)
            if command and TEST_RE.search(command):
                test = (command, index)
    out: list[tuple[str, tuple[str, ...], int]] = []
    if files:
        paths = tuple(files)[:MAX_FILES]
        out.append(("Which files were modified?", paths, files[paths[-1]]))
    if test is not None:
        out.append(("Which command ran the tests?", (test[0],), test[1]))
    return out


def _todo_in_progress(message: Message) -> str:
    for block in message.tool_uses:
        if block.tool_name.lower() not in ("todowrite", "update_plan"):
            continue
        value = decoded_input(block)
        items = value.get("todos") or value.get("plan") if isinstance(value, dict) else None
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and item.get("status") == "in_progress":
                text = item.get("content") or item.get("step") or ""
                if isinstance(text, str) and text.strip():
                    return _line(text)
    return ""


def _continuation(
    compaction: Compaction, originals: Sequence[Message]
) -> list[tuple[str, tuple[str, ...], int]]:
    touched = dict(compaction.touched)
    out: list[tuple[str, tuple[str, ...], int]] = []
    latest = next(
        (i for i in range(min(compaction.before, len(originals)) - 1, -1, -1)
         if is_user_typed(originals[i])),
        None,
    )  # fmt: skip
    if latest is not None and latest in touched:
        sentences = request_sentences(originals[latest])
        out.append(("What was the open task (the user's latest request)?", sentences, latest))
    for index, message in reversed(compaction.touched):
        todo = _todo_in_progress(message)
        if todo:
            out.append(("Which to-do item was in progress?", (todo,), index))
            break
    return out


def _decision(touched: Sequence[tuple[int, Message]]) -> list[tuple[str, tuple[str, ...], int]]:
    for index, message in reversed(touched):
        if message.role not in (Role.ASSISTANT, Role.USER) or message.tool_results:
            continue
        texts = [b.text for b in message.blocks if b.kind is BlockKind.TEXT and b.text]
        for text in reversed(texts):
            for sentence in reversed(_SENTENCE_RE.split(text)):
                sentence = sentence.strip(" -*#>`")
                if len(sentence) >= 20 and DECISION_RE.search(sentence):
                    question = "Which approach was rejected or changed, and why?"
                    return [(question, (_line(sentence),), index)]
    return []


def tool_calls(messages: Iterable[Message]) -> dict[str, Block]:
    """Tool calls by id (to name the call an error answered)."""
    return {b.tool_id: b for m in messages for b in m.tool_uses if b.tool_id}


def probes_of(
    compaction: Compaction, originals: Sequence[Message], calls: dict[str, Block] | None = None
) -> list[Probe]:
    """The probes of one compaction, in kind order then source order."""
    known = ChainMap(
        tool_calls(m for _, m in compaction.touched),
        calls if calls is not None else tool_calls(originals),
    )
    rows = {
        "recall": _recall(compaction.touched, known),
        "artifact": _artifacts(compaction.touched),
        "continuation": _continuation(compaction, originals),
        "decision": _decision(compaction.touched),
    }
    return [
        Probe(
            key=_key(kind, compaction.ordinal, question, answers),
            kind=kind,
            compaction=compaction.ordinal,
            step=compaction.step,
            event=compaction.event,
            question=question,
            answers=tuple(a for a in answers if a),
            source=source,
        )
        for kind in PROBE_KINDS
        for question, answers, source in rows[kind]
        if any(answers)
    ]


def spread(items: Sequence[Any], limit: int) -> list[Any]:
    """At most ``limit`` items, evenly spaced, first and last included."""
    if len(items) <= limit:
        return list(items)
    if limit <= 1:
        return list(items[-1:])
    return [items[round(k * (len(items) - 1) / (limit - 1))] for k in range(limit)]


def generate(compactions: Iterable[Compaction], originals: Sequence[Message]) -> list[Probe]:
    """Probes of at most ``MAX_COMPACTIONS`` compactions spread evenly over the run: for
    each evenly spaced position, the first compaction from there that has probes (only
    those are examined: a run that prunes at every step is not probed whole). A question
    already asked with the same answers at an earlier compaction is not asked again."""
    every = list(compactions)
    calls = tool_calls(originals)
    n = len(every)
    starts = spread(range(n), MAX_COMPACTIONS)
    out: list[Probe] = []
    asked: set[tuple[str, str, tuple[str, ...]]] = set()
    position = 0
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else n
        for i in range(max(start, position), max(end, start + 1)):
            group = probes_of(every[i], originals, calls)
            position = i + 1
            if group:
                break
        else:
            continue
        for probe in group:
            seen = (probe.kind, probe.question, probe.answers)
            if seen not in asked:
                asked.add(seen)
                out.append(probe)
    return out


# --- compactions of a replay and of the original agent -------------------------------------


def replay_compactions(
    events: Sequence[Event], originals: Sequence[Message], steps: Sequence[StepRecord] = ()
) -> Iterator[Compaction]:
    """One ``Compaction`` per step whose compaction events touched messages, each message
    in the version in force just before (an earlier truncation's text, not the original)."""
    current: dict[int, Message] = {}
    source_of = {s.index: s.source_index for s in steps}
    ordinal = 0
    by_step: dict[int, list[Event]] = {}
    for event in events:
        by_step.setdefault(event.step, []).append(event)
    for step in sorted(by_step):
        group = by_step[step]
        touched: dict[int, Message] = {}
        first_event: int | None = None
        for event in group:
            if not is_compaction(event.kind):
                continue
            for change in event.changes:
                if change.fate in _TOUCHING and 0 <= change.index < len(originals):
                    if first_event is None:
                        first_event = event.id
                    touched.setdefault(
                        change.index, current.get(change.index, originals[change.index])
                    )
        for event in group:
            for change in event.changes:
                if change.fate in _MODIFIED and change.message is not None:
                    current[change.index] = change.message
                elif change.fate is Fate.RESTORED:
                    current.pop(change.index, None)
        if touched:
            before = source_of.get(step, max(touched) + 1)
            yield Compaction(ordinal, step, first_event, tuple(sorted(touched.items())), before)
            ordinal += 1


def replay_probes(
    events: Sequence[Event], originals: Sequence[Message], steps: Sequence[StepRecord] = ()
) -> list[Probe]:
    """The probes of a replay (its events and the conversation's messages)."""
    return generate(replay_compactions(events, originals, steps), originals)


def original_compactions(
    messages: Sequence[Message], boundaries: Sequence[tuple[int, int | None]]
) -> list[Compaction]:
    """The original agent's own compactions (``(before_index, summary_index)`` each, in
    order): each replaced the messages since the previous boundary."""
    out: list[Compaction] = []
    start = 0
    for ordinal, (before, summary) in enumerate(boundaries):
        touched = tuple(
            (i, messages[i])
            for i in range(start, min(before, len(messages)))
            if "compact_summary" not in messages[i].flags and i != summary
        )
        if touched:
            out.append(Compaction(ordinal, before, None, touched, before))
        start = max(start, before)
    return out
