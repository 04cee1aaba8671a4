"""CowAgent (chatgpt-on-wechat 2.0.8) context rules as pure functions.

Spec: docs/strategies/cowagent.md. CowAgent keeps Claude-style messages: tool results are
*user* messages holding ``tool_result`` blocks, the system prompt lives outside the list.
These functions work on ``CowMsg`` rows (a source index plus the engine ``Message`` as
CowAgent would hold it); none of them mutates its input, except where a docstring says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ..core.model import Block, BlockKind, Message, Role
from ..core.records import _positional_builder

# -- constants (agent_stream.py / summarizer.py / config.py) -------------------------------

CURRENT_TURN_RESULT_MAX_CHARS = 50_000  # cap applied when a tool result is created
HISTORY_RESULT_MAX_CHARS = 20_000  # cap applied to earlier turns at every trim
COMPRESS_THRESHOLD = 5  # fewer turns than this: text-only compression instead of dropping
OVERFLOW_RESULT_MAX_CHARS = 10_000
OVERFLOW_INPUT_JSON_MAX_CHARS = 10_000
OVERFLOW_INPUT_VALUE_MAX_CHARS = 1_000
OVERFLOW_USER_TEXT_MAX_CHARS = 10_000
OVERFLOW_KEEP_TURNS = 5
SUMMARY_INPUT_MAX_CHARS = 500  # per message, in the daily-memory summariser input
FALLBACK_MAX_LINES = 10
FALLBACK_MAX_CHARS = 120
NO_SUMMARY_REPLY = "无"

SYNTHETIC_TOOL_ERROR = (
    "Error: Missing tool_result adjacent to tool_use (session repair). "
    "The conversation history was inconsistent; continue from here."
)

# The daily-memory summariser's prompts, verbatim from agent/memory/summarizer.py @ 55aaf60
# (SUMMARIZE_SYSTEM_PROMPT / SUMMARIZE_USER_PROMPT; MIT, see NOTICE).
SUMMARY_SYSTEM_PROMPT = """你是一个对话记录助手。请将对话内容归纳为当天的日常记录。

## 要求

按「事件」维度归纳发生的事，不要按对话轮次逐条记录：
- 每条一行，用 "- " 开头
- 合并同一件事的多轮对话
- 只记录有意义的事件，忽略闲聊和问候
- 保留关键的决策、结论和待办事项

当对话没有任何记录价值（仅含问候或无意义内容），直接回复"无"。"""

SUMMARY_USER_PROMPT = """请归纳以下对话的日常记录：

{conversation}"""
SUMMARY_MAX_TOKENS = 500
SUMMARY_TEMPERATURE = 0.0

# Model context windows by name, used only when agent_max_context_tokens is unset (0).
DEFAULT_MODEL_WINDOW = 128_000


@dataclass(frozen=True, slots=True)
class CowMsg:
    """One entry of CowAgent's message list. ``src`` is the source message index, or
    ``None`` for a message CowAgent synthesised (session repair). ``members`` lists every
    source index of a merged message (``merge_tool_results``), ``src`` first."""

    src: int | None
    msg: Message
    members: tuple[int, ...] = ()

    @property
    def sources(self) -> tuple[int, ...]:
        if self.members:
            return self.members
        return () if self.src is None else (self.src,)


# -- token estimate (Agent._estimate_message_tokens) ----------------------------------------


def estimate_text(text: str) -> int:
    """``int(non_ascii*1.5 + ascii*0.25) + 1``; 0 for empty text."""
    if not text:
        return 0
    # Same count as ``sum(ord(ch) > 127 for ch in text)``, at C speed: encoding to ASCII
    # with "ignore" keeps exactly the code points <= 127.
    ascii_chars = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))
    non_ascii = len(text) - ascii_chars
    return int(non_ascii * 1.5 + ascii_chars * 0.25) + 1


def _is_image(block: Block) -> bool:
    return block.kind is BlockKind.MEDIA and (
        block.media_type.startswith("image") or block.raw_type in ("image", "image_url")
    )


def estimate_block(block: Block) -> int:
    if block.kind is BlockKind.TEXT:
        return estimate_text(block.text)
    if _is_image(block):
        return 1200
    if block.kind is BlockKind.TOOL_USE:
        # Only a dict input is counted (the original checks isinstance(input, dict)).
        if isinstance(block.tool_input, dict):
            # input_json is json.dumps(input, ensure_ascii=False), memoised per block
            return 50 + estimate_text(block.input_json)
        return 0
    if block.kind is BlockKind.TOOL_RESULT:
        # CowAgent's own tool results are always strings; list outputs arrive flattened.
        return 30 + estimate_text(block.text)
    return 10  # thinking, other media, opaque


def estimate_message(msg: Message) -> int:
    """Per message: ``max(1, sum of blocks)`` (a str content is one text block)."""
    total = 0
    for block in msg.blocks:  # text and tool results inline: this runs for every message
        kind = block.kind
        if kind is _TEXT or kind is _RESULT:
            if kind is _RESULT:
                total += 30
            text = block.text
            if text:
                # ``estimate_text``; ASCII (most texts) gives int(len * 0.25) + 1
                total += int(len(text) * 0.25) + 1 if text.isascii() else estimate_text(text)
        else:
            total += estimate_block(block)
    return total if total > 1 else 1


# Enum members read once: on Python 3.11 ``Role.USER`` is ~0.2 us a read, and the tests
# below run for every message appended or row walked.
_TEXT, _RESULT, _USE = BlockKind.TEXT, BlockKind.TOOL_RESULT, BlockKind.TOOL_USE
_USER, _TOOL, _ASSISTANT = Role.USER, Role.TOOL, Role.ASSISTANT


# the name of CowAgent's per-message estimates in ``ReferenceTokens`` (stored at import)
STORED_RULE = "cowagent_estimate"


def stored_counts(messages: Sequence[Message]) -> list[int]:
    """Each message's ``estimate_message``, as the replay counts an original message:
    computed once at import, stored per message and seeded into the reference counts
    (``ReferenceTokens.seed_rule(STORED_RULE, ...)``), so a replay makes no tool input's
    JSON again for its estimate."""
    return [estimate_message(m) for m in messages]


def estimate_system(prompt: str) -> int:
    """The system prompt is estimated as a ``{"role": "system", "content": prompt}`` message."""
    return max(1, estimate_text(prompt))


def context_window_for_model(model: str) -> int:
    """The window table CowAgent falls back on (``_get_model_context_window``)."""
    name = model.lower()
    if "claude-3" in name or "claude-sonnet" in name:
        return 200_000
    if "gpt-4" in name:
        if "turbo" in name or "128k" in name:
            return 128_000
        if "32k" in name:
            return 32_000
        return 8_000
    if "gpt-3.5" in name:
        return 16_000 if "16k" in name else 4_000
    if "deepseek" in name:
        return 64_000
    if "gemini" in name:
        return 2_000_000 if "pro" in name else 1_000_000
    return DEFAULT_MODEL_WINDOW


def budget_tokens(max_context_tokens: int, model: str) -> int:
    """``agent_max_context_tokens``, or 90 % of the model's window when it is unset."""
    if max_context_tokens:
        return max_context_tokens
    window = context_window_for_model(model)
    return window - int(window * 0.1)


# -- message shapes -----------------------------------------------------------------------


def to_cow(src: int, msg: Message) -> CowMsg:
    """CowAgent's view of a source message: tool-role messages become user messages."""
    if msg.role is _TOOL:
        # ``replace(msg, role=Role.USER)``, positionally (every field, in order: a test
        # checks the list): replace() reads the fields each call, for every tool message.
        msg = _new_message(
            _USER, msg.blocks, msg.source, msg.timestamp, msg.model, msg.usage, msg.id,
            msg.name, msg.flags,
        )  # fmt: skip
    return _new_row(src, msg, ())  # ``CowMsg(src, msg)``: one row per message a trim reads


def with_blocks(msg: Message, blocks: tuple[Block, ...]) -> Message:
    """``replace(msg, blocks=blocks)`` through the positional builder (a trim, a merge and
    a write-back each make one per message they change)."""
    return _new_message(
        msg.role, blocks, msg.source, msg.timestamp, msg.model, msg.usage, msg.id, msg.name,
        msg.flags,
    )  # fmt: skip


# Every field in order (src, msg, members / role, blocks, source, timestamp, model, usage,
# id, name, flags): records' slot-setting builders.
_new_row = _positional_builder(CowMsg)
_new_message = _positional_builder(Message)


def is_results_only(msg: Message) -> bool:
    """A user (or tool-role) message holding nothing but tool_result blocks."""
    if (msg.role is not _USER and msg.role is not _TOOL) or not msg.blocks:
        return False
    for block in msg.blocks:  # noqa: SIM110 (a plain loop: faster than all(), asked often)
        if block.kind is not _RESULT:
            return False
    return True


def merge_tool_results(
    rows: Sequence[CowMsg],
    results_only: Sequence[bool] | None = None,
    *,
    into: list[CowMsg] | None = None,
    prev_flag: bool = False,
) -> list[CowMsg]:
    """CowAgent stores the results of one reply's tool calls as ONE user message
    (``agent_stream.py``: ``tool_result_blocks`` appended once): a run of consecutive
    results-only rows becomes one row whose blocks are theirs in order. ``results_only``:
    ``is_results_only`` of each row, when the caller has it already. ``into`` (extended in
    place) and ``prev_flag`` continue an earlier merge: its output and the flag of the last
    row it read, so merging a list in two calls equals merging it in one."""
    flags = results_only if results_only is not None else [is_results_only(r.msg) for r in rows]
    out: list[CowMsg] = into if into is not None else []
    for row, flag in zip(rows, flags, strict=True):
        prev = out[-1] if out else None
        merge = flag and prev_flag and prev is not None and prev.src is not None
        prev_flag = flag
        if merge and prev is not None and row.src is not None:
            merged = with_blocks(prev.msg, prev.msg.blocks + row.msg.blocks)
            out[-1] = CowMsg(prev.src, merged, (*prev.sources, row.src))
        else:
            out.append(row)
    return out


def split_merged(
    row: CowMsg, new: Message, originals: dict[int, Message]
) -> dict[int, tuple[Block, ...]]:
    """The blocks of each member of a merged row after CowAgent changed the merged message
    ``new``: tool results are matched back to their member in order (a member whose
    results all went has no blocks); synthetic blocks the session repair prepended go to
    the first member."""
    synthetic = tuple(b for b in new.blocks if b.raw_type == "synthetic")
    rest = [b for b in new.blocks if b.raw_type != "synthetic"]
    out: dict[int, tuple[Block, ...]] = {}
    k = 0
    for n, src in enumerate(row.sources):
        kept: list[Block] = list(synthetic) if n == 0 else []
        for block in originals[src].blocks:
            if k < len(rest) and rest[k].tool_id == block.tool_id:
                kept.append(rest[k])
                k += 1
        out[src] = tuple(kept)
    return out


def has_kind(msg: Message, kind: BlockKind) -> bool:
    for block in msg.blocks:  # noqa: SIM110 (a plain loop: faster than any())
        if block.kind is kind:
            return True
    return False


def is_user_query(msg: Message) -> bool:
    """A real query: a user message with a text block and no tool_result block."""
    return msg.role is _USER and _text_without_results(msg)


def is_source_query(msg: Message) -> bool:
    """``is_user_query(to_cow(i, msg).msg)`` without building the row (a tool-role message
    reads as a user message)."""
    return (msg.role is _USER or msg.role is _TOOL) and _text_without_results(msg)


def _text_without_results(msg: Message) -> bool:
    # one plain pass (every trim asks this of every row)
    text = False
    for block in msg.blocks:
        kind = block.kind
        if kind is _RESULT:
            return False
        if kind is _TEXT:
            text = True
    return text


def split_turns(
    rows: Sequence[CowMsg], queries: Sequence[bool] | None = None
) -> list[list[CowMsg]]:
    """Turns start at each real query; everything else joins the current turn, and the
    messages before the first query form a turn of their own. ``queries``:
    ``is_user_query`` of each row, when the caller keeps it (every trim walks every row)."""
    if queries is None:
        queries = [is_user_query(row.msg) for row in rows]
    turns: list[list[CowMsg]] = []
    current: list[CowMsg] = []
    for row, query in zip(rows, queries, strict=True):
        if query and current:
            turns.append(current)
            current = []
        current.append(row)
    if current:
        turns.append(current)
    return turns


def current_turn_start(rows: Sequence[CowMsg]) -> int:
    """Index of the last user message with any text block (tool_result or not)."""
    for i in range(len(rows) - 1, -1, -1):
        msg = rows[i].msg
        if msg.role is Role.USER and has_kind(msg, BlockKind.TEXT):
            return i
    return len(rows)


def text_of(msg: Message) -> str:
    """Text blocks joined with newlines (``_extract_text_from_content``, unstripped)."""
    return "\n".join(b.text for b in msg.blocks if b.kind is _TEXT)


# -- truncation -----------------------------------------------------------------------------


def truncate_at_creation(text: str, limit: int = CURRENT_TURN_RESULT_MAX_CHARS) -> str:
    """Head-only cap applied when a tool result is produced."""
    if len(text) <= limit:
        return text
    return (
        text[:limit]
        + f"\n\n[Output truncated: {len(text)} chars total, showing first {limit} chars]"
    )


def truncate_historical(text: str, limit: int = HISTORY_RESULT_MAX_CHARS) -> str:
    """Head-only cap for tool results of earlier turns (the docs claim head and tail)."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n\n[Historical output truncated: {len(text)} -> {limit} chars]"


def _replace_block(msg: Message, index: int, block: Block) -> Message:
    blocks = list(msg.blocks)
    blocks[index] = block
    return with_blocks(msg, tuple(blocks))


@dataclass(frozen=True, slots=True)
class Truncation:
    src: int | None
    block: int
    before_chars: int
    after_chars: int


def has_long_result(msg: Message, limit: int) -> bool:
    """A user message with a tool result over ``limit`` chars: one the trim's cut changes."""
    return msg.role is _USER and has_result_over(msg, limit)


def has_result_over(msg: Message, limit: int) -> bool:
    """A tool result block over ``limit`` chars (asked of every appended message)."""
    for block in msg.blocks:  # noqa: SIM110 (a plain loop: faster than any())
        if block.kind is _RESULT and len(block.text) > limit:
            return True
    return False


def truncate_historical_tool_results(
    rows: Sequence[CowMsg],
    *,
    limit: int = HISTORY_RESULT_MAX_CHARS,
    candidates: Iterable[int] | None = None,
) -> tuple[list[CowMsg], list[Truncation]]:
    """Step 0 of the trim: cap str tool results of user messages before the current turn.
    ``candidates``: the positions, ascending, of every row ``has_long_result`` holds for
    (the others are unchanged by the cut), when the caller knows them."""
    out = list(rows)
    done: list[Truncation] = []
    if len(rows) < 2:
        return out, done
    start = current_turn_start(rows)
    for i in range(start) if candidates is None else candidates:
        if i >= start:
            break
        row = out[i]
        if row.msg.role is not Role.USER:
            continue
        msg = row.msg
        for j, block in enumerate(msg.blocks):
            if block.kind is BlockKind.TOOL_RESULT and len(block.text) > limit:
                new_text = truncate_historical(block.text, limit)
                msg = _replace_block(msg, j, replace(block, text=new_text, parts=()))
                done.append(Truncation(row.src, j, len(block.text), len(new_text)))
        if msg is not row.msg:
            # The blocks are cut in place in the original (L1148-L1198 of agent_stream.py),
            # so a merged results message stays one message: a turn drop takes it whole.
            out[i] = CowMsg(row.src, msg, row.members)
    return out, done


def compress_turn_to_text_only(turn: Sequence[CowMsg]) -> list[CowMsg]:
    """Keep the turn's first non-tool-result user text and its last assistant text, each as
    one text block (stripped); a turn with neither vanishes."""
    user: CowMsg | None = None
    user_text = ""
    assistant: CowMsg | None = None
    assistant_text = ""
    for row in turn:
        msg = row.msg
        if msg.role is Role.USER:
            if has_kind(msg, BlockKind.TOOL_RESULT):
                continue
            if not user_text:
                user_text = _joined_text(msg)
                user = row
        elif msg.role is Role.ASSISTANT:
            text = _joined_text(msg)
            if text:
                assistant_text, assistant = text, row
    out: list[CowMsg] = []
    if user_text and user is not None:
        out.append(CowMsg(user.src, _text_only(user.msg, user_text)))
    if assistant_text and assistant is not None:
        out.append(CowMsg(assistant.src, _text_only(assistant.msg, assistant_text)))
    return out


def _joined_text(msg: Message) -> str:
    return "\n".join(b.text for b in msg.blocks if b.kind is BlockKind.TEXT and b.text).strip()


def _text_only(msg: Message, text: str) -> Message:
    return with_blocks(msg, (Block(BlockKind.TEXT, text=text),))


# -- overflow emergency trim ----------------------------------------------------------------


def aggressive_trim(rows: Sequence[CowMsg]) -> tuple[list[CowMsg], int, int]:
    """``_aggressive_trim_for_overflow``: cap results / inputs / user texts, then keep the
    last 5 turns. Returns (rows, blocks truncated, turns removed)."""
    truncated = 0
    out: list[CowMsg] = []
    for row in rows:
        msg = row.msg
        for j, block in enumerate(msg.blocks):
            if block.kind is BlockKind.TOOL_RESULT and len(block.text) > OVERFLOW_RESULT_MAX_CHARS:
                text = (
                    block.text[:OVERFLOW_RESULT_MAX_CHARS]
                    + f"\n\n[Truncated for context recovery: {len(block.text)} -> "
                    f"{OVERFLOW_RESULT_MAX_CHARS} chars]"
                )
                msg = _replace_block(msg, j, replace(block, text=text, parts=()))
                truncated += 1
            elif block.kind is BlockKind.TOOL_USE and isinstance(block.tool_input, dict):
                raw = json.dumps(block.tool_input, ensure_ascii=False)
                if len(raw) > OVERFLOW_INPUT_JSON_MAX_CHARS:
                    new_input = {
                        k: (
                            v[:OVERFLOW_INPUT_VALUE_MAX_CHARS] + f"... [truncated {len(v)} chars]"
                            if isinstance(v, str) and len(v) > OVERFLOW_INPUT_VALUE_MAX_CHARS
                            else v
                        )
                        for k, v in block.tool_input.items()
                    }
                    msg = _replace_block(msg, j, replace(block, tool_input=new_input))
                    truncated += 1
        if msg.role is Role.USER:
            for j, block in enumerate(msg.blocks):
                if block.kind is BlockKind.TEXT and len(block.text) > OVERFLOW_USER_TEXT_MAX_CHARS:
                    text = (
                        block.text[:OVERFLOW_USER_TEXT_MAX_CHARS]
                        + f"\n\n[Message truncated for context recovery: {len(block.text)} -> "
                        f"{OVERFLOW_USER_TEXT_MAX_CHARS} chars]"
                    )
                    msg = _replace_block(msg, j, replace(block, text=text))
                    truncated += 1
        out.append(CowMsg(row.src, msg))
    turns = split_turns(out)
    removed = 0
    if len(turns) > OVERFLOW_KEEP_TURNS:
        removed = len(turns) - OVERFLOW_KEEP_TURNS
        out = [row for turn in turns[-OVERFLOW_KEEP_TURNS:] for row in turn]
    return out, truncated, removed


# -- sanitize_claude_messages ---------------------------------------------------------------


def _synthetic(tool_id: str) -> Block:
    return Block(
        BlockKind.TOOL_RESULT,
        text=SYNTHETIC_TOOL_ERROR,
        tool_id=tool_id,
        is_error=True,
        raw_type="synthetic",
    )


def _synthetic_message(tool_ids: list[str]) -> Message:
    return Message(Role.USER, tuple(_synthetic(t) for t in tool_ids))


def _use_ids(msg: Message) -> list[str]:
    return [b.tool_id for b in msg.blocks if b.kind is _USE and b.tool_id]


def _result_ids(msg: Message) -> set[str]:
    return {b.tool_id for b in msg.blocks if b.kind is _RESULT and b.tool_id}


def repair_adjacency(rows: list[CowMsg]) -> int:
    """Every assistant tool_use must be answered in the very next user message; missing
    answers become synthetic error results (inserted or prepended). Mutates ``rows``."""
    repairs = 0
    i = 0
    while i < len(rows):
        msg = rows[i].msg
        required = _use_ids(msg) if msg.role is Role.ASSISTANT else []
        if not required:
            i += 1
            continue
        if i + 1 >= len(rows):
            rows.append(CowMsg(None, _synthetic_message(required)))
            return repairs + 1
        nxt = rows[i + 1]
        if nxt.msg.role is not Role.USER:
            rows.insert(i + 1, CowMsg(None, _synthetic_message(required)))
            repairs += 1
            i += 2
            continue
        present = _result_ids(nxt.msg)
        missing = [t for t in required if t not in present]
        if missing:
            blocks = tuple(_synthetic(t) for t in missing) + nxt.msg.blocks
            rows[i + 1] = CowMsg(nxt.src, with_blocks(nxt.msg, blocks))
            repairs += len(missing)
        i += 1
    return repairs


def sanitize(rows: Sequence[CowMsg]) -> tuple[list[CowMsg], int, int]:
    """``sanitize_claude_messages``: adjacency repair, drop leading tool-result-only user
    messages, remove unmatched tool_use/tool_result (at most 5 passes), repair again if
    anything was removed. Returns (rows, removals, repairs)."""
    out = list(rows)
    if not out:
        return out, 0, 0
    repairs = repair_adjacency(out)
    removed = 0
    while out:
        first = out[0].msg
        if (
            first.role is Role.USER
            and has_kind(first, BlockKind.TOOL_RESULT)
            and not has_kind(first, BlockKind.TEXT)
        ):
            out.pop(0)
            removed += 1
        else:
            break
    for _ in range(5):
        uses: set[str] = set()
        results: set[str] = set()
        for row in out:
            uses.update(_use_ids(row.msg))
            results |= _result_ids(row.msg)
        bad_use, bad_result = uses - results, results - uses
        if not bad_use and not bad_result:
            break
        pass_removed = 0
        i = 0
        while i < len(out):
            msg = out[i].msg
            if msg.role is Role.ASSISTANT and bad_use and set(_use_ids(msg)) & bad_use:
                out.pop(i)
                pass_removed += 1
                continue
            if msg.role is Role.USER and bad_result and _result_ids(msg) & bad_result:
                if not has_kind(msg, BlockKind.TEXT):
                    out.pop(i)
                    pass_removed += 1
                    continue
                kept = tuple(
                    b
                    for b in msg.blocks
                    if not (b.kind is BlockKind.TOOL_RESULT and b.tool_id in bad_result)
                )
                pass_removed += len(msg.blocks) - len(kept)
                out[i] = CowMsg(out[i].src, with_blocks(msg, kept))
            i += 1
        removed += pass_removed
        if pass_removed == 0:
            break
    if removed:
        repairs += repair_adjacency(out)
    return out, removed, repairs


# -- daily-memory summary (agent/memory/summarizer.py) ----------------------------------------


def dedupe_for_flush(
    messages: Sequence[CowMsg], seen: set[str], texts: list[str] | None = None
) -> list[CowMsg]:
    """Skip text-less messages and those whose text was flushed before (the memory
    summariser dedupes by the MD5 of each text: kept here by the text itself, the same
    test without hashing every flushed text). ``seen`` (every text flushed so far) gets the
    new ones, in place: copying it at every flush would cost the whole replay's flushed
    texts each time. ``texts``, when given, gets each kept row's ``text_of`` (the flush
    reads them again)."""
    out: list[CowMsg] = []
    for row in messages:
        text = text_of(row.msg)
        if not text or text.isspace() or text in seen:  # ``not text.strip()``: no copy
            continue
        seen.add(text)
        out.append(row)
        if texts is not None:
            texts.append(text)
    return out


def format_for_summary(messages: Sequence[CowMsg], texts: Sequence[str] | None = None) -> str:
    """One ``用户: …`` / ``助手: …`` line per message with text (500 chars each).
    ``texts``: each row's ``text_of``, when the caller has them."""
    lines = []
    for n, row in enumerate(messages):
        text = (text_of(row.msg) if texts is None else texts[n]).strip()
        if not text:
            continue
        if row.msg.role is Role.USER:
            lines.append(f"用户: {text[:SUMMARY_INPUT_MAX_CHARS]}")
        elif row.msg.role is Role.ASSISTANT:
            lines.append(f"助手: {text[:SUMMARY_INPUT_MAX_CHARS]}")
    return "\n".join(lines)


def summary_user_prompt(conversation: str) -> str:
    return SUMMARY_USER_PROMPT.format(conversation=conversation)


def is_no_summary(reply: str) -> bool:
    """An empty reply or ``无`` means: nothing written, nothing injected."""
    return not reply.strip() or reply.strip() == NO_SUMMARY_REPLY


def _first_meaningful_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def fallback_summary(messages: Sequence[CowMsg]) -> str:
    """Rule-based summary used when the LLM call raises: up to 10 lines
    ``- 用户: {≤120} → 回复: {first meaningful line ≤120}``."""
    lines: list[str] = []
    pending_user: str | None = None
    for row in messages:
        text = text_of(row.msg).strip()
        if not text:
            continue
        if row.msg.role is Role.USER:
            if pending_user is not None:
                lines.append(f"- 用户: {pending_user}")
            pending_user = text[:FALLBACK_MAX_CHARS]
        elif row.msg.role is Role.ASSISTANT and pending_user is not None:
            reply = _first_meaningful_line(text)[:FALLBACK_MAX_CHARS]
            lines.append(f"- 用户: {pending_user} → 回复: {reply}")
            pending_user = None
    if pending_user is not None:
        lines.append(f"- 用户: {pending_user}")
    return "\n".join(lines[:FALLBACK_MAX_LINES])


def injection_text(summary: str, turns: int, original: str) -> str:
    """The text the summary callback writes into the first kept user text block."""
    return (
        f"[System: Previous conversation summary — {turns} turns were compacted]\n\n"
        f"{summary.strip()}\n\n"
        "The recent conversation continues below.\n\n---\n\n"
        f"{original}"
    )


def inject_summary(
    rows: Sequence[CowMsg], *, target_src: int | None, summary: str, turns: int
) -> tuple[list[CowMsg], bool]:
    """Prepend the summary note to the first text block of the target message, if that
    message is still in the list."""
    out = list(rows)
    for i, row in enumerate(out):
        if row.src != target_src or target_src is None:
            continue
        for j, block in enumerate(row.msg.blocks):
            if block.kind is BlockKind.TEXT:
                new = replace(block, text=injection_text(summary, turns, block.text))
                out[i] = CowMsg(row.src, _replace_block(row.msg, j, new))
                return out, True
    return out, False


def first_user_text_target(turns: Sequence[Sequence[CowMsg]]) -> int | None:
    """Source index of the first user message with a text block among the kept turns."""
    for turn in turns:
        for row in turn:
            if row.msg.role is Role.USER and has_kind(row.msg, BlockKind.TEXT):
                return row.src
    return None
