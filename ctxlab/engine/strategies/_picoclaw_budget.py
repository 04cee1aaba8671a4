"""PicoClaw (sipeed/picoclaw, legacy context manager) budget engine as pure functions.

Spec: docs/strategies/picoclaw.md. PicoClaw holds OpenAI-style messages:
tool results are ``tool`` messages, the session history holds no system prompt, and the
prompt plus the summary are rebuilt into one system message for every request. Every
function here is pure over ``PicoMsg`` tuples.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, Literal

from ..core.model import Block, BlockKind, Message, Role, ToolDef
from ..core.records import _positional_builder

SUMMARIZE_MESSAGE_THRESHOLD = 20
SUMMARIZE_TOKEN_PERCENT = 75
MAX_SUMMARIZATION_MESSAGES = 10
SUMMARY_KEEP_LAST = 4
MESSAGE_OVERHEAD = 12
SYSTEM_PART_OVERHEAD = 20
TOOL_DEF_OVERHEAD = 20
MEDIA_TOKENS = 256
SYSTEM_PART_SEPARATOR = "\n\n---\n\n"
FALLBACK_MIN_RUNES = 200
FALLBACK_PERCENT = 10

SUMMARY_PREFIX = (
    "CONTEXT_SUMMARY: The following is an approximate summary of prior conversation for "
    "reference only. It may be incomplete or outdated — always defer to explicit instructions."
    "\n\n"
)
BATCH_PROMPT_HEAD = (
    "Provide a concise summary of this conversation segment, preserving core context and key "
    "points.\n"
)
MERGE_PROMPT = (
    "Merge these two conversation summaries into one cohesive summary:\n\n1: {s1}\n\n2: {s2}"
)
LLM_MAX_RETRIES = 3  # retryLLMCall: an error or an empty answer is asked again, 3 calls in all
# buildDynamicContext's runtime line: runtime.GOOS/GOARCH and the Go toolchain of go.mod.
GO_RUNTIME = "linux amd64, Go go1.25.11"
DEFAULT_NOW = datetime(2026, 1, 1)  # a transcript without timestamps
OMITTED_NOTE = "\n[Note: Some oversized messages were omitted from this summary for efficiency.]"
EMERGENCY_NOTE = "[Emergency compression dropped {n} oldest messages due to context limit]"

Estimator = Literal["chars*2/5", "ceil(chars/4)"]


@dataclass(frozen=True, slots=True)
class PicoToolCall:
    id: str
    name: str
    arguments: str
    type: str = "function"


@dataclass(frozen=True, slots=True)
class PicoMsg:
    """One ``providers.Message``. ``src`` is the source message index (``None`` for the
    system message PicoClaw assembles)."""

    role: str
    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[PicoToolCall, ...] = ()
    tool_call_id: str = ""
    media: int = 0
    system_parts: tuple[str, ...] = ()
    src: int | None = field(default=None, compare=False)
    # (estimator, tokens) once estimated: a history message is estimated again at every
    # budget check. Not an init field, so ``dataclasses.replace`` never carries it over.
    estimated: tuple[str, int] | None = field(default=None, init=False, compare=False, repr=False)


# -- Go json.Marshal ------------------------------------------------------------------------


def _go_number(value: float) -> Any:
    # Go decodes JSON numbers into float64 and prints integral ones without a fraction.
    if value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def _normalise(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return _go_number(value)
    if isinstance(value, dict):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalise(v) for v in value]
    return str(value)


def _plain(value: Any) -> bool:
    """Strings, ints, bools and None in dicts with string keys and lists (most tool
    inputs): what ``_normalise`` returns equal to the value, so it is dumped as it is."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    # Plain loops, leaves inline (every tool input is asked once): no generator per level.
    if kind is dict:
        for k, v in value.items():
            if type(k) is not str:
                return False
            t = type(v)
            if not (t is str or t is int or t is bool or v is None or _plain(v)):
                return False
        return True
    if kind is list:
        for v in value:
            t = type(v)
            if not (t is str or t is int or t is bool or v is None or _plain(v)):
                return False
        return True
    return False


# ``json.dumps`` with these options builds this encoder at every call
_GO_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
# What ``_GO_ENCODER.encode`` runs (``iterencode(_one_shot=True)``), made once: encode()
# builds it again at every call (every tool input is marshalled). No circular check: a
# marshalled value is a tool input decoded from JSON (``_normalise`` copies the others).
_C_ENCODER = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        None, _GO_ENCODER.default, encode_basestring, None, ":", ",", True, False, True
    )
)


def go_json_marshal(value: Any) -> str:
    """``json.Marshal``: sorted map keys, no spaces, non-ASCII kept, and HTML-safe escapes
    for ``<``, ``>``, ``&`` and U+2028/U+2029."""
    plain = value if _plain(value) else _normalise(value)
    text = _GO_ENCODER.encode(plain) if _C_ENCODER is None else "".join(_C_ENCODER(plain, 0))
    # These characters only ever occur inside JSON strings, so a plain replace is exact.
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


# -- token estimate (pkg/tokenizer/estimator.go) ----------------------------------------------


def _to_tokens(chars: int, estimator: Estimator) -> int:
    if estimator == "ceil(chars/4)":
        return -(-chars // 4)
    return chars * 2 // 5


def estimate_message_tokens(msg: PicoMsg, estimator: Estimator = "chars*2/5") -> int:
    """Runes of content (or of the system parts + 20 each, whichever is larger) + runes of
    reasoning + *bytes* of tool-call ids, types, names, arguments and the tool-call id + 12,
    then ``chars*2/5`` (Go integer division) + 256 per media item."""
    known = msg.estimated
    if known is not None and known[0] == estimator:
        return known[1]
    tokens = _estimate(msg, estimator)
    object.__setattr__(msg, "estimated", (estimator, tokens))  # the fields are frozen
    return tokens


def _estimate(msg: PicoMsg, estimator: Estimator) -> int:
    chars = len(msg.content)
    if msg.system_parts:
        parts = sum(len(p) for p in msg.system_parts) + SYSTEM_PART_OVERHEAD * len(msg.system_parts)
        chars = max(chars, parts)
    chars += len(msg.reasoning)
    for tc in msg.tool_calls:
        chars += _blen(tc.id) + _blen(tc.type) + _blen(tc.name) + _blen(tc.arguments)
    chars += _blen(msg.tool_call_id)
    chars += MESSAGE_OVERHEAD
    return _to_tokens(chars, estimator) + MEDIA_TOKENS * msg.media


def _blen(text: str) -> int:
    # ASCII (ids, names, most arguments): one byte per character, no encoding pass.
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def estimate_tool_defs_tokens(defs: Sequence[ToolDef], estimator: Estimator = "chars*2/5") -> int:
    """``Σ(len(name) + len(description) + len(json.Marshal(parameters)) + 20)`` in bytes,
    converted once for the whole list."""
    if not defs:
        return 0
    chars = 0
    for d in defs:
        chars += _blen(d.name) + _blen(d.description)
        if d.parameters is not None:
            chars += _blen(go_json_marshal(d.parameters))
        chars += TOOL_DEF_OVERHEAD
    return _to_tokens(chars, estimator)


def estimate_messages(msgs: Sequence[PicoMsg], estimator: Estimator = "chars*2/5") -> int:
    return sum(estimate_message_tokens(m, estimator) for m in msgs)


def is_over_context_budget(
    context_window: int,
    messages: Sequence[PicoMsg],
    tool_tokens: int,
    max_tokens: int,
    estimator: Estimator = "chars*2/5",
) -> bool:
    """The whole request (system + history + current message) + tool definitions + the
    output reserve ``MaxTokens``, compared with ``> ContextWindow``."""
    return estimate_messages(messages, estimator) + tool_tokens + max_tokens > context_window


# -- adapter ---------------------------------------------------------------------------------


def _arguments(block: Block) -> str:
    """A tool call's arguments as PicoClaw sends them: a string input as it is, any other
    marshalled. Not memoised: the replay converts each message once (``count`` hands its
    parts to ``after_append``; PicoClaw never replaces a message)."""
    tool_input = block.tool_input
    if isinstance(tool_input, str):
        return tool_input
    return go_json_marshal(tool_input if tool_input is not None else {})


def _texts(blocks: Sequence[Block], kind: BlockKind) -> str:
    return "\n".join(b.text for b in blocks if b.kind is kind and b.text)


def to_pico(src: int, msg: Message) -> list[PicoMsg]:
    """PicoClaw's messages for one source message. A Claude-style user message holding
    tool results becomes one ``tool`` message per result (then a user message for any
    text or media left), so a turn starts only at real user input."""
    # One pass over the blocks and positional constructors: every message is converted.
    if msg.role is Role.SYSTEM:
        return [
            _new_msg("system", _texts(msg.blocks, BlockKind.TEXT), "", (), "", 0, (), src, None)
        ]
    texts: list[str] = []
    thinking: list[str] = []
    uses: list[Block] = []
    results: list[Block] = []
    media = 0
    for b in msg.blocks:
        kind = b.kind
        if kind is BlockKind.TEXT:
            if b.text:
                texts.append(b.text)
        elif kind is BlockKind.TOOL_RESULT:
            results.append(b)
        elif kind is BlockKind.TOOL_USE:
            uses.append(b)
        elif kind is BlockKind.THINKING:
            if b.text:
                thinking.append(b.text)
        elif kind is BlockKind.MEDIA:
            media += 1
    text = "\n".join(texts)
    if msg.role is Role.ASSISTANT:
        reasoning = "\n".join(thinking)
        if not uses:
            return [_new_msg("assistant", text, reasoning, (), "", media, (), src, None)]
        if len(uses) == 1:  # most calls come alone: no generator
            b = uses[0]
            calls: tuple[PicoToolCall, ...] = (
                _new_call(b.tool_id, b.tool_name, _arguments(b), "function"),
            )
        else:
            calls = tuple(
                _new_call(b.tool_id, b.tool_name, _arguments(b), "function") for b in uses
            )
        return [_new_msg("assistant", text, reasoning, calls, "", media, (), src, None)]
    out = [_new_msg("tool", b.text, "", (), b.tool_id, 0, (), src, None) for b in results]
    if msg.role is Role.TOOL:
        if not results:
            out.append(_new_msg("tool", text, "", (), "", 0, (), src, None))
        return out
    if not results or text or media:
        out.append(_new_msg("user", text, "", (), "", media, (), src, None))
    return out


# Every field in order (role, content, reasoning, tool_calls, tool_call_id, media,
# system_parts, src, estimated / id, name, arguments, type): records' slot-setting builder.
_new_msg = _positional_builder(PicoMsg)
_new_call = _positional_builder(PicoToolCall)


# -- turn boundaries (context_budget.go) ----------------------------------------------------


def parse_turn_boundaries(history: Sequence[PicoMsg]) -> list[int]:
    """Indexes of every user message: each starts a turn."""
    return [i for i, m in enumerate(history) if m.role == "user"]


def is_safe_boundary(history: Sequence[PicoMsg], index: int) -> bool:
    """Cutting at a user message never separates a tool call from its results."""
    if index <= 0 or index >= len(history):
        return True
    return history[index].role == "user"


def find_safe_boundary(history: Sequence[PicoMsg], target: int) -> int:
    """The nearest safe cut to ``target``: the last user message at or before it (keeps
    more), else the first one after it. Returns 0 when the only user message is the first
    message (a single turn: callers treat 0 as "cannot compress safely"), and ``target``
    unchanged when there is no user message at all."""
    if not history or target <= 0:
        return 0
    if target >= len(history):
        return len(history)
    users = parse_turn_boundaries(history)
    if not users:
        return target
    before = [i for i in users if i <= target]
    if before and before[-1] > 0:
        return before[-1]
    after = [i for i in users if i > target]
    return after[0] if after else 0


# -- system message and sanitizer (context.go) ------------------------------------------------


def runtime_context(now: datetime | None = None) -> str:
    """``buildDynamicContext`` without channel or sender (time as Go's
    ``2006-01-02 15:04 (Monday)``)."""
    when = (now or DEFAULT_NOW).strftime("%Y-%m-%d %H:%M (%A)")
    return f"## Current Time\n{when}\n\n## Runtime\n{GO_RUNTIME}"


def build_system(prompt: str, summary: str, runtime: str = "") -> PicoMsg:
    """The single system message: the static prompt, the dynamic runtime context, then the
    summary part when there is one, joined by ``\\n\\n---\\n\\n`` (also kept as
    SystemParts)."""
    parts = [p for p in (prompt, runtime) if p.strip()]
    if summary:
        parts.append(SUMMARY_PREFIX + summary)
    return PicoMsg("system", SYSTEM_PART_SEPARATOR.join(parts), system_parts=tuple(parts))


def sanitize_history(history: Sequence[PicoMsg]) -> list[PicoMsg]:
    """``sanitizeHistoryForProvider``: drop system messages, tool messages that do not
    follow an assistant tool call (over other tool messages), and assistant tool calls at
    the start or after anything but user/tool; then keep an assistant tool call only with a
    result for each of its ids (results de-duplicated, id-less ones dropped)."""
    first: list[PicoMsg] = []
    for msg in history:
        if msg.role == "system":
            continue
        if msg.role == "tool":
            found = False
            for prev in reversed(first):
                if prev.role == "tool":
                    continue
                found = prev.role == "assistant" and bool(prev.tool_calls)
                break
            if not found:
                continue
        elif (
            msg.role == "assistant"
            and msg.tool_calls
            and (not first or first[-1].role not in ("user", "tool"))
        ):
            continue
        first.append(msg)
    out: list[PicoMsg] = []
    i = 0
    while i < len(first):
        msg = first[i]
        if msg.role != "assistant" or not msg.tool_calls:
            if msg.role != "tool":  # tool messages are handled with their assistant
                out.append(msg)
            i += 1
            continue
        j = i + 1
        block: list[PicoMsg] = []
        while j < len(first) and first[j].role == "tool":
            block.append(first[j])
            j += 1
        ids = {tc.id for tc in msg.tool_calls}
        seen: set[str] = set()
        answers: list[PicoMsg] = []
        for res in block:
            if not res.tool_call_id or res.tool_call_id in seen or res.tool_call_id not in ids:
                continue
            seen.add(res.tool_call_id)
            answers.append(res)
        if ids <= seen:
            out.append(msg)
            out.extend(answers)
        i = j
    return out


def build_messages(
    prompt: str,
    summary: str,
    history: Sequence[PicoMsg],
    current: Sequence[PicoMsg],
    runtime: str = "",
) -> list[PicoMsg]:
    """``BuildMessages``: system + sanitized history + the current user message."""
    return [build_system(prompt, summary, runtime), *sanitize_history(history), *current]


# -- forceCompression / trim (context_legacy.go, context_budget.go) --------------------------


@dataclass(frozen=True, slots=True)
class Compression:
    kept: tuple[PicoMsg, ...]
    dropped: tuple[PicoMsg, ...]
    summary: str


def force_compression(history: Sequence[PicoMsg], summary: str) -> Compression | None:
    """Drop the oldest ``floor(T/2)`` turns (T = user messages); with fewer than two turns
    cut at a safe boundary near the middle, and when that is 0 keep only the last user
    message. The summary gets a note, never an LLM rewrite. ``None`` for <= 2 messages."""
    if len(history) <= 2:
        return None
    turns = parse_turn_boundaries(history)
    if len(turns) >= 2:
        mid = turns[len(turns) // 2]
    else:
        mid = find_safe_boundary(history, len(history) // 2)
    if mid <= 0:
        last_user = [m for m in history if m.role == "user"][-1:]
        kept = tuple(last_user)
        dropped = tuple(m for m in history if not (last_user and m is last_user[0]))
    else:
        kept, dropped = tuple(history[mid:]), tuple(history[:mid])
    note = EMERGENCY_NOTE.format(n=len(history) - len(kept))
    return Compression(kept, dropped, f"{summary}\n\n{note}" if summary else note)


def next_trim_start(history: Sequence[PicoMsg]) -> int:
    """Where one trim round cuts: the second user message, else the only user message if it
    is not first, else everything."""
    turns = parse_turn_boundaries(history)
    if len(turns) >= 2:
        return turns[1]
    if len(turns) == 1 and turns[0] > 0:
        return turns[0]
    return len(history)


def trim_history_to_fit(
    history: Sequence[PicoMsg],
    build: Callable[[Sequence[PicoMsg]], list[PicoMsg]],
    over: Callable[[Sequence[PicoMsg]], bool],
) -> tuple[list[PicoMsg], list[PicoMsg], bool]:
    """Drop whole turns from the front until the built request fits (request-local).
    Returns (history, messages, fit)."""
    hist = list(history)
    messages = build(hist)
    while over(messages):
        if not hist:
            return hist, messages, False
        hist = hist[next_trim_start(hist) :]
        messages = build(hist)
    return hist, messages, True


# -- maybeSummarize (context_legacy.go) -------------------------------------------------------


def should_summarize(
    history: Sequence[PicoMsg],
    *,
    context_window: int,
    message_threshold: int = SUMMARIZE_MESSAGE_THRESHOLD,
    token_percent: int = SUMMARIZE_TOKEN_PERCENT,
    estimator: Estimator = "chars*2/5",
) -> tuple[bool, int, int]:
    """``len > 20`` or ``tokens > window*75/100`` over the session history only.
    Returns (fire, tokens, threshold)."""
    tokens = estimate_messages(history, estimator)
    threshold = context_window * token_percent // 100
    return len(history) > message_threshold or tokens > threshold, tokens, threshold


@dataclass(frozen=True, slots=True)
class SummaryPlan:
    cut: int  # history[:cut] is summarised
    keep: int  # TruncateHistory(keepLast=keep)
    valid: tuple[PicoMsg, ...]
    omitted: bool


def plan_summary(
    history: Sequence[PicoMsg], *, context_window: int, keep_last: int = SUMMARY_KEEP_LAST
) -> SummaryPlan | None:
    """What ``summarizeSession`` would summarise, or ``None`` when it returns early."""
    if len(history) <= keep_last:
        return None
    cut = find_safe_boundary(history, len(history) - keep_last)
    if cut <= 0:
        return None
    max_message_tokens = context_window // 2
    valid: list[PicoMsg] = []
    omitted = False
    for msg in history[:cut]:
        if msg.role not in ("user", "assistant"):
            continue
        if _blen(msg.content) // 2 > max_message_tokens:
            omitted = True
            continue
        valid.append(msg)
    if not valid:
        return None
    return SummaryPlan(cut, len(history) - cut, tuple(valid), omitted)


def find_nearest_user_message(messages: Sequence[PicoMsg], mid: int) -> int:
    original = mid
    while mid > 0 and messages[mid].role != "user":
        mid -= 1
    if messages[mid].role == "user":
        return mid
    mid = original
    while mid < len(messages) and messages[mid].role != "user":
        mid += 1
    return mid if mid < len(messages) else original


def split_batches(valid: Sequence[PicoMsg]) -> list[tuple[PicoMsg, ...]]:
    """One batch, or two halves split at the nearest user message when > 10 messages."""
    if len(valid) <= MAX_SUMMARIZATION_MESSAGES:
        return [tuple(valid)]
    mid = find_nearest_user_message(valid, len(valid) // 2)
    return [tuple(valid[:mid]), tuple(valid[mid:])]


def batch_prompt(batch: Sequence[PicoMsg], existing_summary: str = "") -> str:
    """The single user message sent to the summariser for one batch."""
    parts = [BATCH_PROMPT_HEAD]
    if existing_summary:
        parts.append(f"Existing context: {existing_summary}\n")
    parts.append("\nCONVERSATION:\n")
    parts.extend(f"{m.role}: {m.content}\n" for m in batch)
    return "".join(parts)


def merge_prompt(s1: str, s2: str) -> str:
    return MERGE_PROMPT.format(s1=s1, s2=s2)


def fallback_batch_summary(batch: Sequence[PicoMsg]) -> str:
    """What a batch yields when every LLM retry fails: each message's first
    ``max(200, 10 %)`` runes (trimmed), joined with `` | ``."""
    pieces = []
    for msg in batch:
        runes = msg.content.strip()
        if not runes:
            pieces.append(f"{msg.role}: ")
            continue
        keep = min(max(len(runes) * FALLBACK_PERCENT // 100, FALLBACK_MIN_RUNES), len(runes))
        text = runes[:keep] + ("..." if keep < len(runes) else "")
        pieces.append(f"{msg.role}: {text}")
    return "Conversation summary: " + " | ".join(pieces)
