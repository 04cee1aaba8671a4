"""BaseAgent (PlatformNetwork/baseagent, ``src/core/compaction.py``) as pure functions.

Spec: docs/strategies/baseagent.md. BaseAgent holds OpenAI chat dicts: ``messages[0]`` is the
system message, tool results are ``tool`` messages and tool-call arguments are stored as
Python ``str(dict)``. Rows are ``BaseMsg`` values; nothing here mutates its input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..core.model import Block, BlockKind, BlockMemo, Message, Role
from ..core.records import _positional_builder
from ..summarize.offline import remember_literal

APPROX_CHARS_PER_TOKEN = 4
MODEL_CONTEXT_LIMIT = 200_000
OUTPUT_TOKEN_MAX = 32_000
AUTO_COMPACT_THRESHOLD = 0.85
PRUNE_PROTECT = 40_000
PRUNE_MINIMUM = 20_000
PRUNE_MARKER = "[Old tool result content cleared]"
PROTECT_LAST_TURNS = 2
COMPACTION_MAX_TOKENS = 4096
MAX_OUTPUT_TOKENS = 2500  # tool output cap (defaults.py / middle_out_truncate default)
IMAGE_TOKENS = 1000
MESSAGE_OVERHEAD = 4

# First line and closing sentence as the spec quotes them; the six "Include:" bullets follow
# the spec's description of BaseAgent's list (Codex's older list plus two additions).
COMPACTION_PROMPT = (
    "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another "
    "LLM that will resume the task.\n"
    "\n"
    "Include:\n"
    "- Current progress and key decisions made\n"
    "- Important context, constraints, or user preferences\n"
    "- What remains to be done (clear next steps)\n"
    "- Any critical data, examples, or references needed to continue\n"
    "- Which files were modified and how\n"
    "- Any errors encountered and how they were resolved\n"
    "\n"
    "Be concise, structured, and focused on helping the next LLM seamlessly continue the work. "
    "Use bullet points and clear sections."
)
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used. Use this "
    "to build on the work that has already been done and avoid duplicating work.\n\n"
    "Here is the summary from the previous context:\n\n"
)


@dataclass(frozen=True, slots=True)
class BaseToolCall:
    id: str
    name: str
    arguments: str  # Python str(dict), as BaseAgent stores it


@dataclass(frozen=True, slots=True)
class BaseMsg:
    """One OpenAI chat dict. ``content`` is a str, or ``parts`` when the message carries
    images (a list content: text parts and ``image_url`` parts). ``src`` is the source
    message index, ``None`` for messages BaseAgent writes itself (compaction)."""

    role: str
    content: str | None = ""
    parts: tuple[tuple[str, str], ...] = ()  # (type, text) — type "text" or "image_url"
    tool_calls: tuple[BaseToolCall, ...] = ()
    tool_call_id: str = ""
    src: int | None = field(default=None, compare=False)


def estimate_tokens(text: str | None) -> int:
    """``len(text or "") // 4`` over code points (floor)."""
    return len(text or "") // APPROX_CHARS_PER_TOKEN


def estimate_message_tokens(msg: BaseMsg) -> int:
    """Content (str, or Σ text parts + 1000 per image_url part) + each tool call's name and
    arguments + 4."""
    tokens = 0
    if msg.parts:
        for kind, text in msg.parts:
            tokens += estimate_tokens(text)
            if kind == "image_url":
                tokens += IMAGE_TOKENS
    elif isinstance(msg.content, str):
        tokens += estimate_tokens(msg.content)
    for tc in msg.tool_calls:
        tokens += estimate_tokens(tc.name) + estimate_tokens(tc.arguments)
    return tokens + MESSAGE_OVERHEAD


def compact_threshold(
    model_context_limit: int = MODEL_CONTEXT_LIMIT,
    output_token_max: int = OUTPUT_TOKEN_MAX,
    auto_compact_threshold: float = AUTO_COMPACT_THRESHOLD,
) -> float:
    """``(limit − output reserve) × 0.85`` = 142 800 with the constants."""
    return (model_context_limit - output_token_max) * auto_compact_threshold


def is_overflow(total: int, threshold: float) -> bool:
    """Strictly greater: an estimate equal to the threshold does not compact."""
    return total > threshold


# -- adapter ---------------------------------------------------------------------------------


def _py_str(value: object) -> str:
    # BaseAgent stores arguments with str(dict): Python repr, single quotes.
    return value if isinstance(value, str) else str(value if value is not None else {})


def _arguments(block: Block) -> str:
    if isinstance(block.tool_input, str):
        return block.tool_input
    return _ARGUMENTS.get(block, _repr_input)  # asked again at every count and view


def _repr_input(block: Block) -> str:
    value = block.tool_input if block.tool_input is not None else {}
    text = _py_str(value)
    remember_literal(text, value, block)  # the offline summariser reads it back unparsed
    return text


_ARGUMENTS = BlockMemo()

# Enum members read once: on Python 3.11 ``BlockKind.TEXT`` is a descriptor call (~0.2 us),
# and ``to_base`` tests every block of every message.
_TEXT, _RESULT, _USE, _MEDIA = (
    BlockKind.TEXT, BlockKind.TOOL_RESULT, BlockKind.TOOL_USE, BlockKind.MEDIA,
)  # fmt: skip
_ASSISTANT, _TOOL, _SYSTEM = Role.ASSISTANT, Role.TOOL, Role.SYSTEM


def to_base(src: int, msg: Message) -> list[BaseMsg]:
    """BaseAgent's dicts for one source message: Claude-style user messages holding tool
    results become ``tool`` messages (plus a user message for any text left). Thinking and
    opaque blocks have no place in an OpenAI chat dict and are not sent."""
    # One pass over the blocks and positional constructors: every message is converted.
    texts: list[str] = []
    uses: list[Block] = []
    results: list[Block] = []
    images = False
    for b in msg.blocks:
        kind = b.kind
        if kind is _TEXT:
            texts.append(b.text)
        elif kind is _RESULT:
            results.append(b)
        elif kind is _USE:
            uses.append(b)
        elif kind is _MEDIA:
            images = True
    role = msg.role
    if role is _ASSISTANT:
        calls = tuple(_new_call(b.tool_id, b.tool_name, _arguments(b)) for b in uses)
        return [_new_msg("assistant", "\n".join(texts) or None, (), calls, "", src)]
    out = [_new_msg("tool", b.text, (), (), b.tool_id, src) for b in results]
    if role is _TOOL:
        if not results:
            out.append(_new_msg("tool", "\n".join(texts), (), (), "", src))
        return out
    if results and not texts and not images:
        return out
    name = "system" if role is _SYSTEM else "user"
    if images:
        parts = tuple(
            ("text", b.text) if b.kind is _TEXT else ("image_url", "")
            for b in msg.blocks
            if b.kind is _TEXT or b.kind is _MEDIA
        )
        out.append(_new_msg(name, None, parts, (), "", src))
    else:
        out.append(_new_msg(name, "\n".join(texts), (), (), "", src))
    return out


# Every field in order (role, content, parts, tool_calls, tool_call_id, src / id, name,
# arguments): records' slot-setting builder.
_new_msg = _positional_builder(BaseMsg)
_new_call = _positional_builder(BaseToolCall)


# -- middle_out_truncate (src/utils/truncate.py) --------------------------------------------


def middle_out_truncate(text: str, max_tokens: int = MAX_OUTPUT_TOKENS) -> str:
    """Keep ``max_tokens*4`` UTF-8 bytes split head/tail around
    ``\\n\\n...{removed} tokens truncated...\\n\\n`` (bytes//4 both ways)."""
    if not text:
        return text
    # Under the cap without encoding (asked of every tool output): ASCII is one byte a
    # character, and no character takes more than four.
    if len(text) <= max_tokens or (text.isascii() and len(text) // 4 <= max_tokens):
        return text
    data = text.encode("utf-8")
    if len(data) // 4 <= max_tokens:
        return text
    keep = max_tokens * 4
    head_len = keep // 2
    tail_len = keep - head_len
    head = data[:head_len].decode("utf-8", errors="ignore")
    tail = data[len(data) - tail_len :].decode("utf-8", errors="ignore") if tail_len else ""
    removed = (len(data) - keep) // 4
    return f"{head}\n\n...{removed} tokens truncated...\n\n{tail}"


# -- prune_old_tool_outputs ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PruneScan:
    total: int  # tool-output tokens seen going backwards
    pruned: int  # tokens of the outputs marked
    indexes: tuple[int, ...]  # positions marked, newest first
    applied: bool  # pruned > PRUNE_MINIMUM


def scan_prune(
    messages: Sequence[BaseMsg],
    *,
    protect_last_turns: int = PROTECT_LAST_TURNS,
    prune_protect: int = PRUNE_PROTECT,
    prune_minimum: int = PRUNE_MINIMUM,
) -> PruneScan:
    """Walk backwards; count user messages *before* the skip test, so everything after the
    2nd-to-last user message is protected; stop at an earlier marker; once tool outputs
    total more than 40 000, mark each further output (the one crossing included)."""
    total = pruned = turns = 0
    marked: list[int] = []
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if msg.role == "user":
            turns += 1
        if turns < protect_last_turns:
            continue
        if msg.role == "tool":
            content = msg.content if isinstance(msg.content, str) else ""
            if content == PRUNE_MARKER:
                break
            est = estimate_tokens(content)
            total += est
            if total > prune_protect:
                pruned += est
                marked.append(i)
    return PruneScan(total, pruned, tuple(marked), pruned > prune_minimum)


def prune_old_tool_outputs(
    messages: Sequence[BaseMsg], scan: PruneScan | None = None
) -> list[BaseMsg]:
    """A copy with each marked tool output replaced by PRUNE_MARKER, or the list unchanged
    when no more than 20 000 tokens would be recovered."""
    scan = scan or scan_prune(messages)
    if not messages or not scan.applied:
        return list(messages)
    marked = set(scan.indexes)
    return [replace(m, content=PRUNE_MARKER) if i in marked else m for i, m in enumerate(messages)]


def compaction_request(messages: Sequence[BaseMsg]) -> list[BaseMsg]:
    """What ``run_compaction`` sends: the whole list plus the compaction prompt."""
    return [*messages, BaseMsg("user", COMPACTION_PROMPT)]


def compacted_history(system_prompt: str, summary: str) -> list[BaseMsg]:
    """Exactly ``[system, user(SUMMARY_PREFIX + summary)]``; the task is gone too."""
    return [BaseMsg("system", system_prompt), BaseMsg("user", SUMMARY_PREFIX + summary)]
