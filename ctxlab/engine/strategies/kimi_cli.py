"""Kimi CLI (MoonshotAI/kimi-cli) auto-compaction: ``SimpleCompaction`` when the context's
token count nears the model's window.

Sources, MoonshotAI/kimi-cli @ 4a550effdfcb29a25a5d325bf935296cc50cd417 (version 1.49.0):

- ``src/kimi_cli/soul/compaction.py``: ``should_auto_compact(token_count, max_context_size,
  trigger_ratio, reserved_context_size)`` is true when ``token_count >= max_context_size *
  trigger_ratio`` **or** ``token_count + reserved_context_size >= max_context_size``.
  ``SimpleCompaction(max_preserved_messages=2).prepare``: walking back from the newest
  message, the messages whose role is ``user`` or ``assistant`` (not ``tool``) are counted;
  the history from the second of them on is preserved; fewer than two, or nothing before
  them, and nothing is compacted. The rest becomes one user message: for each message,
  ``"## Message {i}\\nRole: {role}\\nContent:\\n"`` then its text parts (thinking, tool calls
  and media left out), then ``"\\n" + prompts.COMPACT`` (``src/kimi_cli/prompts/compact.md``,
  byte-exact in ``ctxlab/engine/data/prompts/kimi-cli-4a550eff-compact.md``, Apache-2.0,
  ``LICENSE-kimi-cli``), sent with the system prompt ``COMPACTION_SYSTEM_PROMPT`` and no
  tools. The result is a user message ``<system>Previous context has been compacted. Here
  is the compaction output:</system>`` + the answer's parts (thinking dropped), then the
  preserved messages. ``CompactionResult.estimated_token_count``: the call's output tokens
  plus ``estimate_text_tokens`` of the preserved messages (their text parts' characters
  // 4, summed over the messages first).
- ``src/kimi_cli/soul/kimisoul.py``: the check runs at the start of every step, on
  ``Context.token_count_with_pending``; after the compaction the context is cleared,
  refilled with the result and its token count set to the estimate. After each step's call
  the assistant message is appended and the count set to the call's ``usage.total``
  (input + output); the step's tool results are then appended as one batch and added as
  ``estimate_text_tokens`` (``src/kimi_cli/soul/context.py``: ``_pending_token_estimate``),
  as is each user message. A failed compaction (after ``max_retries_per_step`` retries)
  raises: the turn fails. ``SimpleCompaction()`` is built with its default (the code notes
  "TODO: maybe configurable").
- ``src/kimi_cli/config.py``: ``LoopControl.reserved_context_size`` (50,000, >= 1,000),
  ``LoopControl.compaction_trigger_ratio`` (0.85, 0.5..0.99); ``LLMModel.max_context_size``
  per model (``[models.<name>]`` in ``~/.kimi/config.toml``).
- Tests ported: ``tests/core/test_simple_compaction.py`` (``prepare``,
  ``estimated_token_count``, ``should_auto_compact``) in
  ``tests/engine/strategies/test_kimi_cli.py``.

Readings:

- The provider's usage is the lab's cl100k reference: ``usage.total`` of a call is the
  request's reference tokens plus the reference tokens of the assistant messages it
  produced; ``output`` of the compaction call is the summary's reference tokens.
- A message of the lab's history is ``tool`` when it carries only tool results (Anthropic's
  user-role results), ``user`` or ``assistant`` otherwise; the transcript's system prompt
  is Kimi's system prompt, never part of the history. Text parts are text and tool-result
  blocks; the text parts of one message are sent as separate parts, rendered here joined
  with nothing between them (as the model reads them, one after the other).
- The background-task snapshot appended after a compaction and the custom instruction of
  ``/compact <instruction>`` do not occur in a replay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..core.findings import check_summary_size
from ..core.model import BlockKind, Message, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import ReferenceEstimator, Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest
from ..core.tool_pairs import has_tool_result

if TYPE_CHECKING:
    from ..core.context_view import ContextView

DATA = Path(__file__).resolve().parents[1] / "data" / "prompts"
COMPACT = (DATA / "kimi-cli-4a550eff-compact.md").read_text(encoding="utf-8")
COMPACTION_SYSTEM_PROMPT = "You are a helpful assistant that compacts conversation context."
COMPACTION_OUTPUT_PREFIX = "Previous context has been compacted. Here is the compaction output:"
MAX_PRESERVED_MESSAGES = 2
SECTIONS = (
    Section("<current_focus>", "in_progress"),
    Section("<environment>", "constraints"),
    Section("<completed_tasks>", "done"),
    Section("<active_issues>", "blocked"),
    Section("<code_state>", "critical"),
    Section("<important_context>", "decisions"),
)


def system(message: str) -> str:
    """``kimi_cli.soul.message.system``: the text of a system-tagged part."""
    return f"<system>{message}</system>"


SUMMARY_HEAD = system(COMPACTION_OUTPUT_PREFIX)


def should_auto_compact(
    token_count: int, max_context_size: int, *, trigger_ratio: float, reserved_context_size: int
) -> bool:
    return (
        token_count >= max_context_size * trigger_ratio
        or token_count + reserved_context_size >= max_context_size
    )


def kosong_role(message: Message) -> str:
    """The role Kimi's history gives a lab message (``tool``: tool results only)."""
    if message.role is Role.ASSISTANT:
        return "assistant"
    if message.role is Role.SYSTEM:
        return "system"
    if message.role is Role.TOOL or (
        has_tool_result(message)
        and all(b.kind is BlockKind.TOOL_RESULT for b in message.blocks if b.text)
    ):
        return "tool"
    return "user"


def text_parts(message: Message) -> list[str]:
    """The message's text parts (text and tool-result text; no thinking, calls or media)."""
    return [
        b.text
        for b in message.blocks
        if b.kind in (BlockKind.TEXT, BlockKind.TOOL_RESULT) and b.text
    ]


def text_chars(message: Message) -> int:
    return sum(len(t) for t in text_parts(message))


def estimate_text_tokens(chars: int) -> int:
    """``compaction.estimate_text_tokens`` of messages holding ``chars`` text characters."""
    return chars // 4


def preserve_start(roles: Sequence[str], max_preserved: int = MAX_PRESERVED_MESSAGES) -> int | None:
    """Where ``SimpleCompaction.prepare`` starts preserving, or None: nothing to compact."""
    if not roles or max_preserved <= 0:
        return None
    n_preserved = 0
    for index in range(len(roles) - 1, -1, -1):
        if roles[index] in ("user", "assistant"):
            n_preserved += 1
            if n_preserved == max_preserved:
                return index or None  # nothing before the preserved ones: no compaction
    return None


def compact_message(parts: Sequence[tuple[str, Sequence[str]]]) -> str:
    """The compaction request's one user message, its parts joined."""
    out: list[str] = []
    for i, (role, texts) in enumerate(parts):
        out.append(f"## Message {i + 1}\nRole: {role}\nContent:\n")
        out.extend(texts)
    out.append("\n" + COMPACT)
    return "".join(out)


@dataclass(slots=True)
class _State:
    token_count: int = 0  # the last usage.total, or the compaction's estimate
    pending: int = 0  # estimates of the batches appended since
    batch_chars: int = 0  # the open batch of tool results (appended together)


class KimiCliStrategy(ReferenceEstimator, Strategy):
    name: ClassVar[str] = "kimi_cli"
    State = _State
    label: ClassVar[str] = "Kimi CLI SimpleCompaction (MoonshotAI/kimi-cli 1.49.0)"
    description: ClassVar[str] = (
        "Kimi CLI's auto-compaction: at the start of a step, when the context's token count "
        "(the last call's usage plus the characters/4 of what was appended since) reaches "
        "85 % of the window or leaves less than the 50,000 reserved tokens, everything but "
        "the last two user/assistant messages is compacted by one call with its compact "
        "prompt and replaced by the answer."
    )
    estimator: ClassVar[str] = (
        "the provider's usage (cl100k reference stands in) plus text characters // 4 of the "
        "messages appended since the last call"
    )
    WINDOW = "max_context_size"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("max_context_size", 262_144, "The model's context size in tokens (no default in "
              "Kimi CLI: the platform's model list sets it from context_length).", "int",
              min=1024, max=10_000_000, origin="models.<name>.max_context_size"),
        Param("compaction_trigger_ratio", 0.85, "Compact when the count reaches this share "
              "of max_context_size.", "float", min=0.5, max=0.99,
              origin="loop_control.compaction_trigger_ratio"),
        Param("reserved_context_size", 50_000, "Compact when the count plus this reaches "
              "max_context_size (room kept for the response).", "int", min=1000,
              max=10_000_000, origin="loop_control.reserved_context_size"),
    )  # fmt: skip

    def window(self, ctx: ContextView) -> int:
        return int(self.params["max_context_size"])

    def threshold(self, ctx: ContextView) -> int:
        size = int(self.params["max_context_size"])
        ratio = float(self.params["compaction_trigger_ratio"])
        reserved = int(self.params["reserved_context_size"])
        # the smallest count that fires either condition
        by_ratio = -int(-size * ratio // 1)
        return max(0, min(by_ratio, size - reserved))

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        if index == ctx.system_index:
            return
        message = ctx.original(index)
        role = kosong_role(message)
        if role == "assistant":
            # appended, then the count set to the call's usage.total
            st.token_count += ctx.tokens(index)
            st.pending = st.batch_chars = 0
        elif role == "tool":
            st.batch_chars += text_chars(message)
        else:
            self._close_batch(st)
            st.pending += estimate_text_tokens(text_chars(message))

    @staticmethod
    def _close_batch(st: _State) -> None:
        st.pending += estimate_text_tokens(st.batch_chars)
        st.batch_chars = 0

    def count_with_pending(self, st: _State) -> int:
        return st.token_count + st.pending + estimate_text_tokens(st.batch_chars)

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        count = self.count_with_pending(st)
        size = int(self.params["max_context_size"])
        if should_auto_compact(
            count,
            size,
            trigger_ratio=float(self.params["compaction_trigger_ratio"]),
            reserved_context_size=int(self.params["reserved_context_size"]),
        ):
            self._compact(ctx, count)
        # the call: its usage.input is this request (usage.total adds the reply, after_append)
        st.token_count = ctx.request_tokens()
        st.pending = st.batch_chars = 0

    def _compact(self, ctx: ContextView, count: int) -> None:
        st: _State = ctx.state
        history = [i for i in ctx.live if i != ctx.system_index]
        # the summary in force is the history's first message (a user message)
        roles = (["user"] if ctx.summary else []) + [kosong_role(ctx.message(i)) for i in history]
        start = preserve_start(roles)
        if start is None:
            return
        offset = 1 if ctx.summary else 0
        compacted = history[: start - offset]
        parts: list[tuple[str, Sequence[str]]] = []
        material: list[MaterialItem] = []
        if ctx.summary:
            parts.append(("user", [SUMMARY_HEAD, ctx.summary]))
            material.append(MaterialItem("user", ctx.summary))
        for i in compacted:
            message = ctx.message(i)
            texts = text_parts(message)
            parts.append((kosong_role(message), texts))
            material.append(MaterialItem(message.role.value, "".join(texts), i))
        request = SummaryRequest(
            strategy=self.name, system=COMPACTION_SYSTEM_PROMPT,
            messages=(PromptMessage("user", compact_message(parts)),), style="sections",
            sections=SECTIONS, material=tuple(material), previous_summary=ctx.summary,
        )  # fmt: skip
        size = int(self.params["max_context_size"])
        detail = {"estimate": count, "threshold": self.threshold(ctx), "max_context_size": size,
                  "reserved_context_size": int(self.params["reserved_context_size"])}  # fmt: skip
        record = ctx.summarize(request, messages=compacted)
        if record.error or not record.output:
            ctx.emit("summary_failed", summary_id=record.id,
                     reason=record.error or "empty", messages=compacted,
                     outcome="compact_context raises: the turn fails, the context is "
                     "unchanged", **detail)  # fmt: skip
            return
        summary = record.output
        rendered = SUMMARY_HEAD + summary
        previous_ref = ctx.summary_ref
        with ctx.action(
            "compact",
            reason="the token count reached the trigger: all but the last "
            f"{MAX_PRESERVED_MESSAGES} user/assistant messages compacted",
            **detail,
        ) as act:
            act.remove(compacted, Fate.SUMMARISED)
            ctx.set_summary(summary, tokens=self.count_text(rendered), rendered=rendered,
                            summary_id=record.id)  # fmt: skip
            act.summary_id = record.id
            act.always = True  # also when only the summary itself was compacted again
        check_summary_size(ctx, summary_rendered=rendered, replaced=compacted,
                           summary_id=record.id, previous_ref=previous_ref)  # fmt: skip
        # estimated_token_count: the call's output plus the preserved messages' text // 4
        preserved = [i for i in ctx.live if i != ctx.system_index]
        st.token_count = self.count_text(summary) + estimate_text_tokens(
            sum(text_chars(ctx.message(i)) for i in preserved)
        )
        st.pending = st.batch_chars = 0


STRATEGY = KimiCliStrategy
