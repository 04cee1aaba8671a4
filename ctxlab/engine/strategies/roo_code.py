"""Roo Code's context management: condense (first message + last 3 kept) with the sliding
window truncation as its fallback.

Sources, read at RooCodeInc/Roo-Code @ d1e74cb3e35bebdac3daab28919a87f643b09ec7
(2026-01-23), the last commit before "Intelligent Context Condensation v2" (cf5d42e1e1, a
fresh-start summary that keeps no message) replaced the mechanism ported here:

- ``src/core/condense/index.ts``: ``N_MESSAGES_TO_KEEP`` 3, ``MIN_CONDENSE_THRESHOLD`` 5,
  ``MAX_CONDENSE_THRESHOLD`` 100; ``getKeepMessagesWithToolBlocks`` (the tool_use blocks
  matching a kept tool_result, searched in the 3 messages before the kept ones, are
  re-attached to the summary, with that message's reasoning blocks); ``summarizeConversation``
  (the first message is never condensed; the messages since the last summary, before the
  kept ones, are summarised; refusals: ``condense_not_enough_messages`` when there are at
  most 4 messages, ``condensed_recently`` when at most one message is new since the last
  summary or a kept message is the summary; ``condense_failed`` on an empty summary;
  ``condense_context_grew`` when ``outputTokens`` + tokens of the system prompt and the kept
  messages reach the tokens before); ``getMessagesSinceLastSummary`` (the summary is an
  assistant message, so the original first message is put before it).
- ``src/shared/support-prompt.ts`` ``CONDENSE`` template: the summary call's system prompt
  (``SUMMARY_PROMPT``; a non-empty ``customCondensingPrompt``, trimmed, replaces it), stored
  byte for byte in ``ctxlab/engine/data/prompts/roo-code-d1e74cb3-condense.txt`` (Apache-2.0,
  ``LICENSE-roo-code``); the last request message is "Summarize the conversation so far, as
  described in the prompt instructions."
- ``src/core/context-management/index.ts`` (was ``src/core/sliding-window/``):
  ``TOKEN_BUFFER_PERCENTAGE`` 0.1; ``manageContext``: ``allowedTokens = contextWindow x 0.9
  - (maxTokens || ANTHROPIC_DEFAULT_MAX_TOKENS 8192)``; condense when auto-condense is on
  and ``100 x tokens / contextWindow >= autoCondenseContextPercent`` or tokens exceed the
  allowed; when that fails (or is off) and tokens exceed the allowed,
  ``truncateConversation(messages, 0.5)``: of the visible stored messages (condensed ones
  included: only truncated ones and markers are not), the first is kept and
  ``floor((n - 1) x 0.5)`` rounded down to even after it are hidden.
- ``src/core/task/Task.ts`` ``attemptApiRequest``: ``autoCondenseContext`` true,
  ``autoCondenseContextPercent`` 100 (also ``ClineProvider``'s default); management runs
  only once a request has reported usage (not before the first call).
- ``src/utils/tiktoken.ts``: the estimator, o200k_base tokens per text / tool_use
  (``Tool: name\\nArguments: json``) / tool_result (``Tool Result (id)\\n...``) block,
  x ``TOKEN_FUDGE_FACTOR`` 1.5, rounded up per ``countTokens`` call.
- Tests ported: ``src/core/condense/__tests__/index.spec.ts`` and
  ``src/core/context-management/__tests__/truncation.spec.ts`` /
  ``context-management.spec.ts`` (``tests/engine/strategies/test_roo_code.py``).

Readings:

- o200k_base is not shipped offline: cl100k_base (the lab's reference counter) stands in,
  with the original's per-block serialisation and the 1.5 factor.
- The tokens before a request are the estimate of the request (Roo reads the previous
  call's reported usage plus the last message).
- The stored history (condensed and truncated messages tagged, not deleted) is kept in the
  replay state, so the keep window, the since-last-summary slice and the truncation count
  read it as Roo does; the request holds what ``getEffectiveApiHistory`` sends. A
  re-attached tool_use is kept as its own assistant message (the summary's tool_use
  blocks, in the same place: right before the kept messages); the truncation marker
  message ("[Sliding window truncation: N messages hidden to reduce context]") is in the
  event detail, not counted.
- Not modelled: per-profile thresholds (``profileThresholds``), image removal for models
  without images, manual condense, rewind.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import Block, BlockKind, Message, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, SummaryRequest
from ..tokens.cl100k import MEDIA_TOKENS, PER_MESSAGE_OVERHEAD, reference_counter

if TYPE_CHECKING:
    from ..core.context_view import ContextView
    from ..tokens.reference import ReferenceTokens

DATA = Path(__file__).resolve().parents[1] / "data" / "prompts"
SUMMARY_PROMPT = (DATA / "roo-code-d1e74cb3-condense.txt").read_text(encoding="utf-8")
FINAL_REQUEST = "Summarize the conversation so far, as described in the prompt instructions."
CONTINUE = "Please continue from the following summary:"
N_MESSAGES_TO_KEEP = 3
MIN_CONDENSE_THRESHOLD = 5
MAX_CONDENSE_THRESHOLD = 100
TOKEN_BUFFER_PERCENTAGE = 0.1
ANTHROPIC_DEFAULT_MAX_TOKENS = 8192
TOKEN_FUDGE_FACTOR = 1.5
IMAGE_TOKENS = 300  # the payload is not kept: "Conservative estimate for unknown images"
SUMMARY = -1  # an entry of the stored history that is a summary, not a source message
MARKER = -2  # a truncation marker
CONTINUE_ENTRY = -3  # getMessagesSinceLastSummary's generic first message
_INDEX = "src/core/condense/index.ts"
_CM = "src/core/context-management/index.ts"


@dataclass(slots=True)
class Entry:
    """One message of Roo's stored API history."""

    src: int  # source index, SUMMARY or MARKER
    role: str
    condensed: bool = False  # condenseParent set
    truncated: bool = False  # truncationParent set
    tool_uses: tuple[str, ...] = ()  # tool_use ids (a summary's re-attached ones)
    carriers: tuple[int, ...] = ()  # a summary's: the kept messages holding those blocks


@dataclass(slots=True)
class _State:
    stored: list[Entry] = field(default_factory=list)
    calls: int = 0
    condensed_to: int = 1  # stored[1:condensed_to] are all condensed (the first never is)


def block_tokens(block: Block) -> int:
    """``tiktoken`` for one block, before the fudge factor (cl100k for o200k)."""
    count = reference_counter().count
    kind = block.kind
    if kind in (BlockKind.TEXT,):
        return count(block.text)
    if kind is BlockKind.TOOL_USE:
        return count(f"Tool: {block.tool_name}\nArguments: {block.input_json}")
    if kind is BlockKind.TOOL_RESULT:
        return count(f"Tool Result ({block.tool_id})\n{block.text}")
    if kind is BlockKind.MEDIA:
        return IMAGE_TOKENS
    return 0  # reasoning / other blocks are not counted


def count_blocks(blocks: tuple[Block, ...] | list[Block]) -> int:
    if not blocks:
        return 0
    return math.ceil(sum(block_tokens(b) for b in blocks) * TOKEN_FUDGE_FACTOR)


def result_head(block: Block) -> str:
    """What ``block_tokens`` puts before a tool result's text."""
    return f"Tool Result ({block.tool_id})\n"


def use_head(block: Block) -> str:
    """What ``block_tokens`` puts before a tool call's `` {input JSON}`` (the reference
    puts its name)."""
    return f"Tool: {block.tool_name}\nArguments:"


def counted_by_reference(blocks: tuple[Block, ...]) -> bool:
    """Whether ``block_tokens`` of ``blocks`` is the reference's count of their texts with
    each head swapped, counted alone: a tool result's head added, a tool call's name
    (the reference counts ``name {input JSON}``) replaced by ``use_head``, a media block's
    1,000 by 300; no reasoning block (Roo does not count it, the reference does).

    tiktoken encodes each piece of its pattern alone, and the pattern reads nothing
    before a piece, so a text after a piece boundary splits as it does alone. A result
    head ends in ``)`` and a line break, one piece of cl100k's pattern (punctuation then
    every line break after it): a boundary unless the text starts with a line break. A
    call's `` {input JSON}`` follows ``:`` or the name's last character: a boundary
    (no piece runs from a character that is not whitespace into a space) unless the name
    is empty or ends in whitespace."""
    if not blocks:
        return False
    for b in blocks:
        kind = b.kind
        if kind is BlockKind.TOOL_RESULT:
            if b.text[:1] in ("\n", "\r"):
                return False
        elif kind is BlockKind.TOOL_USE:
            if not b.tool_name or b.tool_name[-1].isspace():
                return False
        elif kind not in (BlockKind.TEXT, BlockKind.MEDIA, BlockKind.OPAQUE):
            return False
    return True


def allowed_tokens(context_window: int, max_tokens: int) -> float:
    """``contextWindow x (1 - TOKEN_BUFFER_PERCENTAGE) - (maxTokens || 8192)``."""
    return context_window * (1 - TOKEN_BUFFER_PERCENTAGE) - (
        max_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS
    )


def condense_due(tokens: int, context_window: int, max_tokens: int, percent: int) -> bool:
    """``manageContext``'s condense test (auto-condense on)."""
    over = tokens > allowed_tokens(context_window, max_tokens)
    return 100 * tokens / context_window >= percent or over


def truncation_count(visible: int, frac: float = 0.5) -> int:
    """``truncateConversation``'s number of hidden messages (even, after the first)."""
    raw = math.floor((visible - 1) * frac)
    return max(0, raw - raw % 2)


class RooCodeStrategy(Strategy):
    name: ClassVar[str] = "roo_code"
    State = _State
    label: ClassVar[str] = "Roo Code condense + sliding window (2026-01)"
    description: ClassVar[str] = (
        "Roo Code's context management: when the request reaches autoCondenseContextPercent "
        "of the window (100% by default) or the window less 10% and the output reserve, "
        "everything since the last summary except the first message and the last 3 is "
        "summarised into one message (tool_use blocks of kept results re-attached); when "
        "condensing is refused or fails and the request is over the allowed tokens, the "
        "sliding window hides half the stored messages after the first."
    )
    estimator: ClassVar[str] = "tiktoken per block (cl100k for o200k) x 1.5, rounded up"
    WINDOW = "contextWindow"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "contextWindow",
            200_000,
            "The model's context window (model info contextWindow).",
            min=1_000,
            origin="ModelInfo.contextWindow",
        ),
        Param(
            "maxTokens",
            0,
            "The model's max output tokens, reserved from the window "
            "(0 = not set: ANTHROPIC_DEFAULT_MAX_TOKENS 8,192).",
            min=0,
            origin=f"getModelMaxOutputTokens / {_CM} ANTHROPIC_DEFAULT_MAX_TOKENS",
        ),
        Param(
            "autoCondenseContext",
            True,
            "Condense automatically (off: only the sliding window truncation).",
            "bool",
            origin="autoCondenseContext",
        ),
        Param(
            "autoCondenseContextPercent",
            100,
            "Condense when the request reaches this percent of the context window.",
            min=MIN_CONDENSE_THRESHOLD,
            max=MAX_CONDENSE_THRESHOLD,
            origin="autoCondenseContextPercent (MIN/MAX_CONDENSE_THRESHOLD 5..100)",
        ),
        Param(
            "customCondensingPrompt",
            "",
            "The summary call's system prompt when non-empty (trimmed); empty: the "
            "CONDENSE support prompt.",
            "str",
            origin="customSupportPrompts.CONDENSE",
        ),
    )

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return math.ceil(reference_counter().count(text) * TOKEN_FUDGE_FACTOR) if text else 0

    def count_message(self, message: Message) -> int:
        return count_blocks(message.blocks)

    def message_counter(self, reference: ReferenceTokens, state: Any) -> Callable[[Message], int]:
        """``count_message``, the block texts of a message of text and tool results read
        from the run's reference counts (an original's stored at import) instead of
        tokenized again: the same sum (``counted_by_reference``)."""
        count = reference_counter().count
        message_of = reference.message_of
        result, use, media = BlockKind.TOOL_RESULT, BlockKind.TOOL_USE, BlockKind.MEDIA

        def counter(message: Message) -> int:
            blocks = message.blocks
            if not counted_by_reference(blocks):
                return count_blocks(blocks)
            total = message_of(message) - PER_MESSAGE_OVERHEAD
            for b in blocks:
                if b.kind is result:
                    total += count(result_head(b))
                elif b.kind is use:
                    total += count(use_head(b)) - count(b.tool_name)
                elif b.kind is media:
                    total += IMAGE_TOKENS - MEDIA_TOKENS
            return math.ceil(total * TOKEN_FUDGE_FACTOR)

        return counter

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        return int(self.params["contextWindow"])

    def output_reserve(self, ctx: ContextView) -> int:
        return int(self.params["maxTokens"]) or ANTHROPIC_DEFAULT_MAX_TOKENS

    def allowed(self) -> float:
        return allowed_tokens(int(self.params["contextWindow"]), int(self.params["maxTokens"]))

    def condense_at(self) -> float:
        """Tokens at which ``contextPercent >= autoCondenseContextPercent``."""
        return (
            int(self.params["contextWindow"]) * int(self.params["autoCondenseContextPercent"]) / 100
        )

    def threshold(self, ctx: ContextView) -> int | None:
        if self.params["autoCondenseContext"]:
            return math.ceil(min(self.condense_at(), math.floor(self.allowed()) + 1))
        return math.floor(self.allowed()) + 1

    # --- hooks --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        message = ctx.message(index)
        role = "assistant" if message.role is Role.ASSISTANT else "user"
        st.stored.append(Entry(index, role))

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        st.calls += 1
        if st.calls == 1 or not st.stored:  # no usage reported yet (contextTokens 0)
            return
        tokens = ctx.request_tokens()
        detail = {"estimate": tokens, "threshold": self.threshold(ctx)}
        due = condense_due(
            tokens,
            int(self.params["contextWindow"]),
            int(self.params["maxTokens"]),
            int(self.params["autoCondenseContextPercent"]),
        )
        if self.params["autoCondenseContext"] and due and self._condense(ctx, tokens, detail):
            return
        if tokens > self.allowed():
            self._truncate(ctx, {"estimate": tokens, "limit": math.floor(self.allowed())})

    # --- condense -----------------------------------------------------------------------
    def _condense(self, ctx: ContextView, tokens: int, detail: dict[str, Any]) -> bool:
        st: _State = ctx.state
        stored = st.stored
        plan = plan_condense(stored, lambda e: self._tool_uses(ctx, e), self._results(ctx))
        if isinstance(plan, str):
            ctx.emit("compact_skipped", reason=f"condense refused: {plan}", error=plan, **detail)
            return False
        to_summarize, keep_start, preserved = plan
        live = set(ctx.live)
        material: list[MaterialItem] = []
        prompt: list[PromptMessage] = []
        for e in to_summarize:
            text = self._entry_text(ctx, e)
            prompt.append(PromptMessage(e.role, text))
            material.append(MaterialItem(e.role, text, e.src if e.src >= 0 else -1))
        prompt.append(PromptMessage("user", FINAL_REQUEST))
        custom = str(self.params["customCondensingPrompt"]).strip()
        request = SummaryRequest(
            strategy=self.name,
            system=custom or SUMMARY_PROMPT,
            messages=tuple(prompt),
            style="sections",
            material=tuple(material),
            previous_summary=ctx.summary,
        )
        summarised = [e.src for e in to_summarize if e.src >= 0 and e.src in live]
        record = ctx.summarize(request, messages=summarised)
        if record.error:
            ctx.emit("summary_failed", summary_id=record.id, error=record.error,
                     outcome="condense failed: sliding window fallback", **detail)  # fmt: skip
            return False
        summary = record.output.strip()
        if not summary:
            ctx.emit("summary_empty", summary_id=record.id,
                     outcome="condense_failed: sliding window fallback", **detail)  # fmt: skip
            return False
        kept = stored[keep_start:]
        # The tool_use blocks re-attached to the summary, from the messages holding them.
        carriers: dict[int, list[str]] = {}
        for src, tool_id in preserved:
            carriers.setdefault(src, []).append(tool_id)
        summary_tokens = count_blocks([Block(BlockKind.TEXT, text=summary)])
        carried = {
            src: _carrier(ctx.message(src), ids) for src, ids in carriers.items() if src >= 0
        }
        # condense_context_grew: outputTokens (else the summary) + system + kept messages.
        after = ctx.system_tokens + sum(self._entry_tokens(ctx, e) for e in kept)
        out = record.output_tokens
        after += (
            out if out else summary_tokens + sum(count_blocks(m.blocks) for m in carried.values())
        )
        if after >= tokens:
            ctx.emit("compact_failed", summary_id=record.id, new_context_tokens=after,
                     outcome="condense_context_grew: sliding window fallback", **detail)  # fmt: skip
            return False
        previous_ref = ctx.summary_ref
        gone: list[int] = []
        for pos in range(st.condensed_to, keep_start):  # the first is never condensed
            e = stored[pos]
            if e.condensed:
                continue
            e.condensed = True
            for src in (e.src, *e.carriers):
                if src >= 0 and src in live and src not in carried:
                    gone.append(src)
        summary_entry = Entry(SUMMARY, "assistant", tool_uses=tuple(t for _, t in preserved),
                              carriers=tuple(carried))  # fmt: skip
        st.condensed_to = max(st.condensed_to, keep_start)
        stored.insert(keep_start, summary_entry)
        with ctx.action(
            "summarise",
            reason="request at the condense threshold: messages since the last summary, "
            "but the first and the last 3, replaced by a summary",
            kept=N_MESSAGES_TO_KEEP,
            reattached_tool_uses=len(preserved),
            **detail,
        ) as act:
            act.remove(gone, Fate.SUMMARISED)
            for src, message in carried.items():
                act.replace(src, message, Fate.TRUNCATED,
                            reason="condensed: its tool_use blocks re-attached to the summary "
                            "for the kept tool results")  # fmt: skip
            ctx.set_summary(summary, tokens=summary_tokens, rendered=summary, summary_id=record.id)
            act.summary_id = record.id
            act.always = True
        check_summary_size(ctx, summary_rendered=summary, replaced=gone,
                           summary_id=record.id, previous_ref=previous_ref)  # fmt: skip
        return True

    def _tool_uses(self, ctx: ContextView, e: Entry) -> tuple[str, ...]:
        if e.src == SUMMARY:
            return e.tool_uses
        if e.src < 0 or e.role != "assistant":
            return ()
        return tuple(b.tool_id for b in ctx.message(e.src).blocks if b.kind is BlockKind.TOOL_USE)

    def _results(self, ctx: ContextView) -> Any:
        def results(e: Entry) -> tuple[str, ...]:
            if e.src < 0 or e.role != "user":
                return ()
            return tuple(
                b.tool_id for b in ctx.message(e.src).blocks if b.kind is BlockKind.TOOL_RESULT
            )

        return results

    def _entry_text(self, ctx: ContextView, e: Entry) -> str:
        if e.src == SUMMARY:
            return ctx.summary
        if e.src == MARKER:
            return "[Sliding window truncation: messages hidden to reduce context]"
        if e.src == CONTINUE_ENTRY:
            return CONTINUE
        return ctx.message(e.src).text

    def _entry_tokens(self, ctx: ContextView, e: Entry) -> int:
        if e.src >= 0:
            return ctx.tokens(e.src)
        if e.src == SUMMARY:
            return ctx.summary_tokens
        return 0

    # --- sliding window -----------------------------------------------------------------
    def _truncate(self, ctx: ContextView, detail: dict[str, Any]) -> None:
        st: _State = ctx.state
        visible = [p for p, e in enumerate(st.stored) if not e.truncated and e.src != MARKER]
        n = truncation_count(len(visible))
        if n <= 0:
            ctx.emit("compact_skipped", reason="sliding window: nothing to truncate", **detail)
            return
        hidden = visible[1 : n + 1]
        live = set(ctx.live)
        gone: list[int] = []
        drop_summary = False
        for p in hidden:
            e = st.stored[p]
            e.truncated = True
            if e.src >= 0 and e.src in live:
                gone.append(e.src)
            elif e.src == SUMMARY and not e.condensed:
                drop_summary = True
                gone += [src for src in e.carriers if src in live]
        boundary = visible[n + 1] if n + 1 < len(visible) else len(st.stored)
        st.stored.insert(boundary, Entry(MARKER, "user"))
        st.condensed_to = min(st.condensed_to, max(boundary, 1))  # the marker is not condensed
        marker = f"[Sliding window truncation: {n} messages hidden to reduce context]"
        with ctx.action(
            "drop",
            reason="request over the allowed tokens: the sliding window hides half of the "
            "stored messages after the first",
            messages_removed=n,
            marker=marker,
            **detail,
        ) as act:
            act.remove(gone, Fate.DROPPED)
            if drop_summary and ctx.summary:
                ctx.set_summary("", tokens=0, rendered="", summary_id=None)
            act.always = True


def _carrier(message: Message, ids: list[str]) -> Message:
    """The message holding re-attached tool_use blocks: its reasoning and those blocks."""
    wanted = set(ids)
    blocks = tuple(
        b
        for b in message.blocks
        if b.kind is BlockKind.THINKING or (b.kind is BlockKind.TOOL_USE and b.tool_id in wanted)
    )
    return replace(message, blocks=blocks)


def plan_condense(
    stored: list[Entry],
    tool_uses: Any,
    tool_results: Any,
) -> str | tuple[list[Entry], int, list[tuple[int, str]]]:
    """``summarizeConversation`` up to the call: the messages to summarise, where the kept
    messages start and the re-attached tool_uses (holder's source index, id), or the
    refusal (``condense_not_enough_messages`` / ``condensed_recently``)."""
    n = len(stored)
    keep_start = max(n - N_MESSAGES_TO_KEEP, 0)
    keep = stored[keep_start:]
    preserved: list[tuple[int, str]] = []
    if n > N_MESSAGES_TO_KEEP:  # getKeepMessagesWithToolBlocks
        seen: set[str] = set()
        search = stored[max(0, keep_start - N_MESSAGES_TO_KEEP) : keep_start]
        for e in keep:
            for tool_id in tool_results(e):
                if tool_id in seen:
                    continue
                holder = next((h for h in reversed(search) if tool_id in tool_uses(h)), None)
                if holder is not None:
                    preserved.append((holder.src, tool_id))
                    seen.add(tool_id)
    end = keep_start + 1 if preserved else keep_start
    to_summarize = since_last_summary(stored, end)
    if len(to_summarize) <= 1:
        if n <= N_MESSAGES_TO_KEEP + 1:
            return "condense_not_enough_messages"
        return "condensed_recently"
    if any(e.src == SUMMARY for e in keep):
        return "condensed_recently"
    return to_summarize, keep_start, preserved


def since_last_summary(messages: list[Entry], end: int | None = None) -> list[Entry]:
    """``getMessagesSinceLastSummary`` of ``messages[:end]`` (``messages[0]`` of the
    original is the stored first), without copying the messages before the last summary."""
    end = len(messages) if end is None else min(end, len(messages))
    last = next((p for p in range(end - 1, -1, -1) if messages[p].src == SUMMARY), -1)
    if last < 0:
        return messages[:end]
    since = messages[last:end]
    if since and since[0].role != "user":
        first = messages[0] if end > 0 else None
        if first is not None and first.role == "user":
            return [first, *since]
        return [Entry(CONTINUE_ENTRY, "user"), *since]
    return since


STRATEGY = RooCodeStrategy
