"""pi's compaction rules as pure functions and its prompts byte for byte.

Pinned: badlogic/pi-mono (MIT) at 83378aad7e74a0e2bb8f37c007a9685fb4609d8a,
``packages/coding-agent/src/core/compaction/compaction.ts`` (prompts, ``estimateTokens``,
``findCutPoint``, ``generateSummary`` / ``compact``), ``compaction/utils.ts``
(``SUMMARIZATION_SYSTEM_PROMPT``, ``serializeConversation``, file operations) and
``core/messages.ts`` (how a summary and a ``!`` command are rendered into the context).
The prompts below are the template literals of those files, unchanged (checked by sha256
in tests/engine/strategies/test_pi.py). Used by ``importers/pi.py`` (rendering) and
``strategies/pi.py`` (rules).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..stages.js_text import js_json

# --- messages.ts: how entries become LLM messages -------------------------------------
COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"


def compaction_summary_text(summary: str) -> str:
    """``convertToLlm`` of a ``compactionSummary`` message: one user text block."""
    return COMPACTION_SUMMARY_PREFIX + summary + COMPACTION_SUMMARY_SUFFIX


def branch_summary_text(summary: str) -> str:
    return BRANCH_SUMMARY_PREFIX + summary + BRANCH_SUMMARY_SUFFIX


def bash_execution_text(
    command: str,
    output: str,
    exit_code: Any,
    cancelled: bool,
    truncated: bool,
    full_output_path: str,
) -> str:
    """``bashExecutionToText``: a ``!`` command and its output as the model sees them."""
    text = f"Ran `{command}`\n"
    text += f"```\n{output}\n```" if output else "(no output)"
    if cancelled:
        text += "\n\n(command cancelled)"
    elif isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0:
        text += f"\n\nCommand exited with code {exit_code}"
    if truncated and full_output_path:
        text += f"\n\n[Output truncated. Full output: {full_output_path}]"
    return text


# --- utils.ts / compaction.ts: prompts, byte for byte ---------------------------------
SUMMARIZATION_SYSTEM_PROMPT = """You are a context summarization assistant. Your task is to read a conversation between a user and an AI coding assistant, then produce a structured summary following the exact format specified.

Do NOT continue the conversation. Do NOT respond to any questions in the conversation. ONLY output the structured summary."""

SUMMARIZATION_PROMPT = """The messages above are a conversation to summarize. Create a structured context checkpoint summary that another LLM will use to continue the work.

Use this EXACT format:

## Goal
[What is the user trying to accomplish? Can be multiple items if the session covers different tasks.]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned by user]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Current work]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [Ordered list of what should happen next]

## Critical Context
- [Any data, examples, or references needed to continue]
- [Or "(none)" if not applicable]

Keep each section concise. Preserve exact file paths, function names, and error messages."""

UPDATE_SUMMARIZATION_PROMPT = """The messages above are NEW conversation messages to incorporate into the existing summary provided in <previous-summary> tags.

Update the existing structured summary with new information. RULES:
- PRESERVE all existing information from the previous summary
- ADD new progress, decisions, and context from the new messages
- UPDATE the Progress section: move items from "In Progress" to "Done" when completed
- UPDATE "Next Steps" based on what was accomplished
- PRESERVE exact file paths, function names, and error messages
- If something is no longer relevant, you may remove it

Use this EXACT format:

## Goal
[Preserve existing goals, add new ones if the task expanded]

## Constraints & Preferences
- [Preserve existing, add new ones discovered]

## Progress
### Done
- [x] [Include previously done items AND newly completed items]

### In Progress
- [ ] [Current work - update based on progress]

### Blocked
- [Current blockers - remove if resolved]

## Key Decisions
- **[Decision]**: [Brief rationale] (preserve all previous, add new)

## Next Steps
1. [Update based on current state]

## Critical Context
- [Preserve important context, add new if needed]

Keep each section concise. Preserve exact file paths, function names, and error messages."""

TURN_PREFIX_SUMMARIZATION_PROMPT = """This is the PREFIX of a turn that was too large to keep. The SUFFIX (recent work) is retained.

Summarize the prefix to provide context for the retained suffix:

## Original Request
[What did the user ask for in this turn?]

## Early Progress
- [Key decisions and work done in the prefix]

## Context for Suffix
- [Information needed to understand the retained recent work]

Be concise. Focus on what's needed to understand the kept suffix."""


TURN_CONTEXT_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"
NO_PRIOR_HISTORY = "No prior history."
TOOL_RESULT_MAX_CHARS = 2000  # utils.ts: tool results cut in the serialised conversation
IMAGE_CHARS = 4800  # estimateTokens: an image in a tool result / custom message


def quarter_ceil(chars: int) -> int:
    """``Math.ceil(chars / 4)``, pi's token estimate."""
    return math.ceil(chars / 4)


def should_compact(context_tokens: int, context_window: int, reserve_tokens: int) -> bool:
    """``shouldCompact``: strictly above the window minus the reserve."""
    return context_tokens > context_window - reserve_tokens


def summary_prompt_text(
    conversation_text: str, previous_summary: str = "", custom_instructions: str = ""
) -> str:
    """The user text of ``generateSummary``: the serialised conversation, the previous
    summary when there is one (then the UPDATE prompt), the instructions last."""
    base = UPDATE_SUMMARIZATION_PROMPT if previous_summary else SUMMARIZATION_PROMPT
    if custom_instructions:
        base = f"{base}\n\nAdditional focus: {custom_instructions}"
    text = f"<conversation>\n{conversation_text}\n</conversation>\n\n"
    if previous_summary:
        text += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    return text + base


def turn_prefix_prompt_text(conversation_text: str) -> str:
    """The user text of ``generateTurnPrefixSummary``."""
    return f"<conversation>\n{conversation_text}\n</conversation>\n\n{TURN_PREFIX_SUMMARIZATION_PROMPT}"


def summary_max_tokens(reserve_tokens: int) -> int:
    """``Math.floor(0.8 * reserveTokens)``: the history summary's output budget."""
    return math.floor(0.8 * reserve_tokens)


def turn_prefix_max_tokens(reserve_tokens: int) -> int:
    """``Math.floor(0.5 * reserveTokens)``: the turn-prefix summary's output budget."""
    return math.floor(0.5 * reserve_tokens)


def truncate_for_summary(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    """``truncateForSummary`` (JS string indexes: UTF-16 units; here code points, which
    differ only for text outside the BMP)."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n\n[... {len(text) - max_chars} more characters truncated]"


@dataclass(frozen=True, slots=True)
class Serial:
    """One LLM message as ``serializeConversation`` reads it (after ``convertToLlm``)."""

    role: str  # user | assistant | toolResult
    texts: tuple[str, ...] = ()
    thinking: tuple[str, ...] = ()
    tool_calls: tuple[tuple[str, Any], ...] = ()  # (name, arguments)


def serialize_conversation(messages: Iterable[Serial]) -> str:
    """``serializeConversation``: ``[User]:`` / ``[Assistant thinking]:`` /
    ``[Assistant]:`` / ``[Assistant tool calls]:`` / ``[Tool result]:`` paragraphs."""
    parts: list[str] = []
    for m in messages:
        if m.role == "user":
            content = "".join(m.texts)
            if content:
                parts.append(f"[User]: {content}")
        elif m.role == "assistant":
            if m.thinking:
                parts.append("[Assistant thinking]: " + "\n".join(m.thinking))
            if m.texts:
                parts.append("[Assistant]: " + "\n".join(m.texts))
            if m.tool_calls:
                calls = []
                for name, args in m.tool_calls:
                    items = args.items() if isinstance(args, dict) else ()
                    joined = ", ".join(f"{k}={js_json(v)}" for k, v in items)
                    calls.append(f"{name}({joined})")
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif m.role == "toolResult":
            content = "".join(m.texts)
            if content:
                parts.append(f"[Tool result]: {truncate_for_summary(content)}")
    return "\n\n".join(parts)


# --- file operations (utils.ts) --------------------------------------------------------
@dataclass(slots=True)
class FileOps:
    read: set[str]
    written: set[str]
    edited: set[str]

    def add_call(self, name: str, arguments: Any) -> None:
        """``extractFileOpsFromMessage`` for one tool call: read / write / edit with a
        string ``path``."""
        path = arguments.get("path") if isinstance(arguments, dict) else None
        if not isinstance(path, str) or not path:
            return
        if name == "read":
            self.read.add(path)
        elif name == "write":
            self.written.add(path)
        elif name == "edit":
            self.edited.add(path)


def compute_file_lists(ops: FileOps) -> tuple[list[str], list[str]]:
    """``computeFileLists``: (files only read, files modified), each sorted (JS default
    sort: UTF-16 code-unit order)."""
    modified = ops.edited | ops.written
    read_only = sorted((f for f in ops.read if f not in modified), key=_utf16_key)
    return read_only, sorted(modified, key=_utf16_key)


def _utf16_key(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """``formatFileOperations``: ``<read-files>`` / ``<modified-files>`` sections."""
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    if not sections:
        return ""
    return "\n\n" + "\n\n".join(sections)


# --- cut point (compaction.ts findValidCutPoints / findTurnStartIndex / findCutPoint) ----
# An entry as the cut-point search sees it: a ``message`` entry's role (user, assistant,
# toolResult, bashExecution, custom, branchSummary, compactionSummary), or the type of a
# non-message entry (branch_summary, custom_message, compaction, model_change, ...).
MESSAGE_ROLES = frozenset(
    {"user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary",
     "compactionSummary"}
)  # fmt: skip
USER_ROLE_ENTRIES = frozenset({"branch_summary", "custom_message"})


@dataclass(frozen=True, slots=True)
class Entry:
    kind: str  # a message role (MESSAGE_ROLES) or a non-message entry type
    tokens: int = 0  # estimateTokens of a message entry

    @property
    def is_message(self) -> bool:
        return self.kind in MESSAGE_ROLES


@dataclass(frozen=True, slots=True)
class CutPoint:
    first_kept: int  # index of the first entry to keep
    turn_start: int  # the entry starting the turn being split, or -1
    split_turn: bool


def valid_cut_points(entries: Sequence[Entry], start: int, end: int) -> list[int]:
    """``findValidCutPoints``: every message but a tool result, and the user-role entries
    (branch_summary, custom_message)."""
    return [
        i
        for i in range(start, end)
        if (entries[i].is_message and entries[i].kind != "toolResult")
        or entries[i].kind in USER_ROLE_ENTRIES
    ]


def find_turn_start(entries: Sequence[Entry], index: int, start: int) -> int:
    """``findTurnStartIndex``: the user / bashExecution message (or user-role entry) that
    starts the turn holding ``index``; -1 when none."""
    for i in range(index, start - 1, -1):
        kind = entries[i].kind
        if kind in USER_ROLE_ENTRIES or kind in ("user", "bashExecution"):
            return i
    return -1


def find_cut_point(entries: Sequence[Entry], start: int, end: int, keep_recent: int) -> CutPoint:
    """``findCutPoint``: walk back from the newest message summing ``estimateTokens`` until
    ``keep_recent`` is reached, cut at the first valid cut point at or after that message,
    pull in the non-message entries just before it (stopping at a compaction), and say
    whether the cut splits a turn."""
    cut_points = valid_cut_points(entries, start, end)
    if not cut_points:
        return CutPoint(start, -1, False)
    accumulated = 0
    cut = cut_points[0]
    for i in range(end - 1, start - 1, -1):
        if not entries[i].is_message:
            continue
        accumulated += entries[i].tokens
        if accumulated >= keep_recent:
            cut = next((c for c in cut_points if c >= i), cut)
            break
    while cut > start:
        previous = entries[cut - 1]
        if previous.kind == "compaction" or previous.is_message:
            break
        cut -= 1
    is_user = entries[cut].kind == "user"
    turn_start = -1 if is_user else find_turn_start(entries, cut, start)
    return CutPoint(cut, turn_start, not is_user and turn_start != -1)


# --- pi v0.10 - v0.16 (December 2025): compaction.ts at tag v0.14.2 (33a2bcf2) ---------
# The rules that wrote the compactions of sessions from before v0.17.0 (released
# 2025-12-09T20:47:39Z, the first with compaction/ estimates, split turns and agent-end
# checks): a check after every response, a cut at a user message found by differences of
# reported usage, one summary request of the messages themselves.
V014_RELEASED_BEFORE = "2025-12-09T20:47:39Z"  # v0.17.0: the first release with the new rules
V014_SUMMARIZATION_PROMPT = """You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.

Include:
- Current progress and key decisions made
- Important context, constraints, or user preferences
- Absolute file paths of any relevant files that were read or modified
- What remains to be done (clear next steps)
- Any critical data, examples, or references needed to continue

Be concise, structured, and focused on helping the next LLM seamlessly continue the work."""
V014_PREVIOUS_SUMMARY = "Previous session summary:\n"


def v014_find_cut_point(
    is_user: Sequence[bool], usages: Sequence[int | None], keep_recent: int
) -> int:
    """v0.14.2 ``findCutPoint`` over messages ``0..n-1`` (``is_user``: a ``user`` message;
    ``usages``: a non-aborted response's reported usage, else None): walking back from the
    newest usage, the first one ``keep_recent`` below it marks the older end; the cut is the
    last user message at or before the response just newer than it. No user message:
    keep all (0); no usage: keep the last turn."""
    boundaries = [i for i, u in enumerate(is_user) if u]
    if not boundaries:
        return 0
    seen = [(i, u) for i, u in reversed(list(enumerate(usages))) if u is not None]
    if not seen:
        return boundaries[-1]
    newest = seen[0][1]
    for k in range(1, len(seen)):
        if newest - seen[k][1] >= keep_recent:
            last_kept = seen[k - 1][0]
            return next((b for b in reversed(boundaries) if b <= last_kept), 0)
    return 0
