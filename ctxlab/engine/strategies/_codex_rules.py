"""OpenAI Codex CLI compaction rules (``codex-rs/core``) as pure functions on strings.

Pinned: openai/codex ``codex-rs/core/src/compact.rs`` at commit
0100b103625752f6a10c21b79a8c423761dc4c6a (SUMMARY_PREFIX + "\\n" + summary, initial context +
user messages up to COMPACT_USER_MESSAGE_MAX_TOKENS + summary, the "Long conversations"
warning). Its ``truncate.rs`` (``TruncationPolicy``, ``truncate_text``,
``approx_token_count``) is the version whose ``truncate_with_byte_estimate`` splits the
byte budget in half by whole characters with the ``…N tokens truncated…`` marker (see the
strategy docstring for what could not be pinned to one commit); the templates are ``templates/compact/prompt.md`` and
``summary_prefix.md`` as stored (byte-exact). The legacy tool-output formatter
(``MODEL_FORMAT_MAX_BYTES`` 10 KiB / 256 lines) is the older ``format_output_for_model_body``.
Everything works on UTF-8 bytes, as the Rust code does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

APPROX_BYTES_PER_TOKEN = 4
COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000
DEFAULT_TOOL_OUTPUT_LIMIT = 10_000  # model family default: Tokens(10_000) / Bytes(10_000)
SERIALIZATION_BUDGET = 1.2  # context_manager process_item: policy.mul(1.2)
MODEL_FORMAT_MAX_BYTES = 10 * 1024  # legacy formatter
MODEL_FORMAT_MAX_LINES = 256
DEFAULT_STREAM_MAX_RETRIES = 5  # provider stream_max_retries default

# templates/compact/prompt.md (current, with the Goal bullet), byte-exact.
PROMPT_GOAL = (
    "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another "
    "LLM that will resume the task.\n"
    "\n"
    "Include:\n"
    "- Goal / user objective\n"
    "- Current progress and key decisions made\n"
    "- Important context, constraints, or user preferences\n"
    "- What remains to be done (clear next steps)\n"
    "- Any critical data, examples, or references needed to continue\n"
    "\n"
    "Be concise, structured, and focused on helping the next LLM seamlessly continue the work.\n"
)
# The older prompt.md (no Goal bullet), the one BaseAgent copied.
PROMPT_NO_GOAL = PROMPT_GOAL.replace("- Goal / user objective\n", "")
PROMPTS = {"goal": PROMPT_GOAL, "no_goal": PROMPT_NO_GOAL}

# templates/compact/summary_prefix.md, byte-exact (no trailing newline; note "to  assist").
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by that "
    "language model. Use this to build on the work that has already been done and avoid "
    "duplicating work. Here is the summary produced by the other language model, use the "
    "information in this summary to  assist with your own analysis:"
)
NO_SUMMARY = "(no summary available)"
WARNING = (
    "Heads up: Long conversations and multiple compactions can cause the model to be less "
    "accurate. Start a new conversation when possible to keep conversations small and targeted."
)
TRIMMED_NOTICE = (
    "Trimmed {n} older conversation item(s) before compacting so the prompt fits the model "
    "context window."
)
# event_mapping: user messages that are session prefix (instructions, environment), compared
# lower-cased after trimming leading whitespace. ``session_prefix.rs`` (openai/codex
# codex-rs/core/src/session_prefix.rs, stored 3180a39b) adds ``<turn_aborted>`` and
# ``<subagent_notification>``: user-role messages that are "not user intent and must not
# create user-turn boundaries" (is_user_turn_boundary), so they neither bound the reasoning
# get_non_last_reasoning_items_tokens counts nor are kept as user messages by a compaction.
SESSION_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# agents.md instructions",
    "<turn_aborted>",
    "<subagent_notification>",
)


def approx_token_count(text: str) -> int:
    """``ceil(utf8 bytes / 4)``."""
    return -(-len(text.encode("utf-8")) // APPROX_BYTES_PER_TOKEN)


def summary_text(summary_suffix: str) -> str:
    """``format!("{SUMMARY_PREFIX}\\n{summary_suffix}")``: never empty, even for ``""``."""
    return f"{SUMMARY_PREFIX}\n{summary_suffix}"


def is_summary_message(message: str) -> bool:
    return message.startswith(SUMMARY_PREFIX + "\n")


def is_session_prefix(message: str) -> bool:
    return message.lstrip().lower().startswith(SESSION_PREFIXES)


# -- TruncationPolicy / truncate_text (truncate.rs) --------------------------------------------


@dataclass(frozen=True, slots=True)
class TruncationPolicy:
    kind: Literal["bytes", "tokens"]
    limit: int

    def mul(self, multiplier: float) -> TruncationPolicy:
        """Scale the budget, rounding up (f64 arithmetic, as Rust)."""
        return TruncationPolicy(self.kind, math.ceil(self.limit * multiplier))

    def byte_budget(self) -> int:
        return self.limit if self.kind == "bytes" else self.limit * APPROX_BYTES_PER_TOKEN

    def token_budget(self) -> int:
        return -(-self.limit // APPROX_BYTES_PER_TOKEN) if self.kind == "bytes" else self.limit


def _char_boundary(data: bytes, i: int) -> bool:
    return i <= 0 or i >= len(data) or (data[i] & 0xC0) != 0x80


def _truncate_on_boundary(data: bytes, max_len: int) -> bytes:
    if len(data) <= max_len:
        return data
    end = max_len
    while end > 0 and not _char_boundary(data, end):
        end -= 1
    return data[:end]


def split_string(text: str, beginning_bytes: int, end_bytes: int) -> tuple[int, str, str]:
    """(removed chars, head, tail): whole characters ending within the first
    ``beginning_bytes`` and starting within the last ``end_bytes``."""
    length = len(text.encode("utf-8"))
    tail_start_target = max(0, length - end_bytes)
    prefix_end = 0  # in characters, like the byte offsets of char_indices
    suffix_start = len(text)
    removed = 0
    started = False
    offset = 0
    for pos, ch in enumerate(text):
        char_end = offset + len(ch.encode("utf-8"))
        if char_end <= beginning_bytes:
            prefix_end = pos + 1
        elif offset >= tail_start_target:
            if not started:
                suffix_start, started = pos, True
        else:
            removed += 1
        offset = char_end
    suffix_start = max(suffix_start, prefix_end)
    return removed, text[:prefix_end], text[suffix_start:]


def _marker(policy: TruncationPolicy, removed_bytes: int, removed_chars: int) -> str:
    if policy.kind == "tokens":
        return f"…{-(-removed_bytes // APPROX_BYTES_PER_TOKEN)} tokens truncated…"
    return f"…{removed_chars} chars truncated…"


def _truncate_with_byte_estimate(text: str, policy: TruncationPolicy) -> str:
    if not text:
        return ""
    total = len(text.encode("utf-8"))
    max_bytes = policy.byte_budget()
    if max_bytes == 0:
        return _marker(policy, total, len(text))
    if total <= max_bytes:
        return text
    left = max_bytes // 2
    removed_chars, head, tail = split_string(text, left, max_bytes - left)
    return head + _marker(policy, total - max_bytes, removed_chars) + tail


def truncate_text(text: str, policy: TruncationPolicy) -> str:
    """Middle truncation to the policy's byte budget (tokens x 4), half head, half tail,
    whole characters, joined by ``…N tokens truncated…`` (N = ceil(bytes over budget / 4))
    or ``…N chars truncated…`` (characters dropped)."""
    if policy.kind == "tokens":
        if not text:
            return ""
        tokens = policy.token_budget()
        if tokens > 0 and len(text.encode("utf-8")) <= tokens * APPROX_BYTES_PER_TOKEN:
            return text
    return _truncate_with_byte_estimate(text, policy)


# -- legacy format_output_for_model_body (10 KiB / 256 lines) ----------------------------------


def _rust_lines(text: str) -> int:
    """``str::lines().count()``: a final line ending adds no empty line."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def format_output_for_model_body(
    content: str,
    limit_bytes: int = MODEL_FORMAT_MAX_BYTES,
    limit_lines: int = MODEL_FORMAT_MAX_LINES,
) -> str:
    """Head + tail by lines and bytes, ``[... omitted N of M lines ...]`` or ``[... output
    truncated to fit N bytes ...]``, under a ``Total output lines: N`` header."""
    data = content.encode("utf-8")
    total_lines = _rust_lines(content)
    if len(data) <= limit_bytes and total_lines <= limit_lines:
        return content
    segments = _split_inclusive(data)
    head_take = min(limit_lines // 2, len(segments))
    tail_take = min(limit_lines - limit_lines // 2, len(segments) - head_take)
    omitted = len(segments) - head_take - tail_take
    head_slice = data[: sum(len(s) for s in segments[:head_take])]
    tail_start = len(data) - sum(len(s) for s in segments[len(segments) - tail_take :])
    tail_slice = data[tail_start:] if tail_take else b""
    if omitted > 0:
        marker = f"\n[... omitted {omitted} of {total_lines} lines ...]\n\n".encode()
    elif len(data) > limit_bytes:
        marker = f"\n[... output truncated to fit {limit_bytes} bytes ...]\n\n".encode()
    else:
        marker = b""
    head_budget = min(limit_bytes // 2, max(0, limit_bytes - len(marker)))
    result = _truncate_on_boundary(head_slice, head_budget) + marker
    remaining = max(0, limit_bytes - len(result))
    if remaining:
        start = max(0, len(tail_slice) - remaining)
        while start < len(tail_slice) and not _char_boundary(tail_slice, start):
            start += 1
        result += tail_slice[start:]
    return f"Total output lines: {total_lines}\n\n" + result.decode("utf-8", errors="ignore")


def _split_inclusive(data: bytes) -> list[bytes]:
    """``split_inclusive('\\n')``: only ``\\n`` ends a segment (``\\r`` does not)."""
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


# -- build_compacted_history (compact.rs) ------------------------------------------------------


def select_user_messages(messages: Sequence[str], max_tokens: int) -> list[tuple[int, str]]:
    """(position, text) of the user messages kept, in original order: newest first while
    they fit ``max_tokens`` approx tokens; the first that does not fit is truncated to the
    remaining budget and ends the walk."""
    selected: list[tuple[int, str]] = []
    remaining = max_tokens
    if max_tokens > 0:
        for pos in range(len(messages) - 1, -1, -1):
            if remaining == 0:
                break
            tokens = approx_token_count(messages[pos])
            if tokens <= remaining:
                selected.append((pos, messages[pos]))
                remaining -= tokens
            else:
                selected.append(
                    (pos, truncate_text(messages[pos], TruncationPolicy("tokens", remaining)))
                )
                break
    selected.reverse()
    return selected


def build_compacted_history(
    initial_context: Sequence[str],
    user_messages: Sequence[str],
    summary: str,
    max_tokens: int = COMPACT_USER_MESSAGE_MAX_TOKENS,
) -> list[str]:
    """initial context + kept user messages + the summary message (``(no summary
    available)`` for an empty one), as texts."""
    kept = [text for _, text in select_user_messages(user_messages, max_tokens)]
    return [*initial_context, *kept, summary or NO_SUMMARY]
