"""Goose's auto-compaction (``block/goose``, ``crates/goose/src/context_mgmt/``).

Pinned sources (the index of public sources holds single files at single commits, so the
pin is per file; every quoted string below is byte-exact from these):

- ``crates/goose/src/context_mgmt/mod.rs`` @ block/goose
  ``0036b819bdd7dd02042fb6038e946d22ef56d926``: ``DEFAULT_COMPACTION_THRESHOLD = 0.8``;
  ``check_if_compaction_needed`` (threshold from ``GOOSE_AUTO_COMPACT_THRESHOLD``, off when
  ``threshold <= 0.0 || threshold >= 1.0``, compact when ``tokens / context_limit >
  threshold``; tokens are ``session.total_tokens`` or, without it, the sum over
  agent-visible messages of ``count_chat_tokens("", [msg], [])``); ``compact_messages``
  (the most recent agent-visible user message holding text and no tool request/response is
  preserved: its text, joined by ``"\\n"``, is re-appended as a fresh user message; every
  original becomes agent-invisible; the summary (role user) and a continuation text
  (assistant) are agent-only); ``do_compact`` (the summary request: system prompt
  ``compaction.md`` rendered with every agent-visible message formatted by
  ``format_message_for_compacting`` and joined by ``"\\n"``, one user message "Please
  summarize the conversation history provided in the system prompt.", sent with
  ``complete_fast``; on ``ContextLengthExceeded`` it retries with tool responses removed
  ``[0, 10, 20, 50, 100]`` percent, middle out: ``filter_tool_responses``); the three
  continuation texts. Its tests ``test_keeps_tool_request``,
  ``test_progressive_removal_on_context_exceeded`` and
  ``test_compaction_output_with_new_tool_pair_is_valid`` are ported as table tests in
  ``tests/engine/strategies/test_goose.py`` (the tool-pair summarisation tests are not:
  ``ENABLE_TOOL_PAIR_SUMMARIZATION = false`` at this commit).
- ``crates/goose/src/prompts/compaction.md`` @ ``11453df8179021e38633c5ef30ec542f410170d7``
  (the stored version; its text is ``PROMPT_TEMPLATE`` below, ``{{ messages }}`` filled).
- ``crates/goose/src/agents/agent.rs`` (stored version): ``reply`` calls
  ``check_if_compaction_needed`` once per user turn, before the reply loop.
- ``crates/goose/src/token_counter.rs`` @ ``44d3a2e4b5b0a60b97ebe7c40eafd6905083e65d``:
  ``count_chat_tokens``: 4 per message + each text / ``id:name:arguments`` / tool response
  text + 3 (reply primer), with o200k_base.

Where it runs, mapped onto replay steps: the check runs before the first inference call
after a user text message (a new ``reply``). Differences, said on the docs page: the count
is the strategy's own estimate (``session.total_tokens``, the provider's reported usage,
is not modelled: after a rewrite it no longer describes this history), o200k_base is
stood in for by the run's cl100k reference; the summary call "overflows" when its
request (rendered system prompt + user message) estimates above the context limit (the
replay summariser never reports ``ContextLengthExceeded``); the recovery compaction
after a provider overflow inside the loop is not modelled (no replay request fails).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import Block, BlockKind, Message, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest
from ..tokens.cl100k import message_reference_tokens, reference_counter

if TYPE_CHECKING:
    from ..core.context_view import ContextView
    from ..tokens.reference import ReferenceTokens

DEFAULT_COMPACTION_THRESHOLD = 0.8
REMOVAL_PERCENTAGES = (0, 10, 20, 50, 100)
TOKENS_PER_MESSAGE = 4
REPLY_PRIMER = 3
MAX_COMPACTION_ATTEMPTS = 2  # agent.rs: `if compaction_attempts >= 2` gives up
REASONS = {
    "threshold": "auto-compact: agent-visible history over GOOSE_AUTO_COMPACT_THRESHOLD",
    "context_length_exceeded": "request over the context limit (ContextLengthExceeded): "
    "compacted inside the reply loop",
}

CONVERSATION_CONTINUATION_TEXT = (
    "Your context was compacted. The previous message contains a summary of the "
    "conversation so far.\n"
    "Do not mention that you read a summary or that conversation summarization occurred.\n"
    "Just continue the conversation naturally based on the summarized context."
)
TOOL_LOOP_CONTINUATION_TEXT = (
    "Your context was compacted. The previous message contains a summary of the "
    "conversation so far.\n"
    "Do not mention that you read a summary or that conversation summarization occurred.\n"
    "Continue calling tools as necessary to complete the task."
)
SUMMARIZE_USER_TEXT = "Please summarize the conversation history provided in the system prompt."

PROMPT_TEMPLATE = """The messages above are a conversation to summarize. Create a structured context checkpoint summary that another LLM will use to continue the work.

**Conversation History:**
{{ messages }}

Use this EXACT format:

## Goal
[What is the user trying to accomplish? Can be multiple items if the session covers different tasks.]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned by user]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes with file paths]

### In Progress
- [ ] [Current work]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [Ordered list of what should happen next]

## Critical Context
- [Any data, examples, error messages, or references needed to continue]
- [Or "(none)" if not applicable]

RULES:
- Keep each section concise but complete
- Preserve exact file paths, function names, and error messages
- Include code snippets only if they are critical for continuation
- This summary will be read by you (the LLM) to continue the session
- Do not include information that can be easily re-derived from files
"""  # noqa: E501

SECTIONS = (
    Section("## Goal", "goal"),
    Section("## Constraints & Preferences", "constraints"),
    Section("## Progress", "done"),
    Section("## Key Decisions", "critical"),
    Section("## Next Steps", "next"),
    Section("## Critical Context", "critical"),
)


def render_prompt(messages_text: str) -> str:
    """``render_template("compaction.md", {messages})`` (minijinja, no autoescape for .md)."""
    return PROMPT_TEMPLATE.replace("{{ messages }}", messages_text)


def has_tool_response(message: Message) -> bool:
    return any(b.kind is BlockKind.TOOL_RESULT for b in message.blocks)


def filter_tool_responses(items: list[Message], remove_percent: int) -> list[int]:
    """``filter_tool_responses``: the positions kept after removing ``remove_percent`` %
    (at least one) of the messages holding a tool response, middle out."""
    keep_all = list(range(len(items)))
    if remove_percent == 0:
        return keep_all
    tool_indices = [i for i, m in enumerate(items) if has_tool_response(m)]
    if not tool_indices:
        return keep_all
    num_to_remove = max((len(tool_indices) * remove_percent) // 100, 1)
    middle = len(tool_indices) // 2
    remove: set[int] = set()
    for i in range(num_to_remove):
        offset = i // 2
        if i % 2 == 0:
            if middle > offset:
                remove.add(tool_indices[middle - offset - 1])
        elif middle + offset < len(tool_indices):
            remove.add(tool_indices[middle + offset])
    return [i for i in keep_all if i not in remove]


def serde_json(value: Any) -> str:
    """``serde_json::to_string``: compact, non-ASCII unescaped; keys in the transcript's
    order (serde_json's ``preserve_order``; a ``BTreeMap`` build would sort them)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _content_part(block: Block) -> str | None:
    if block.kind is BlockKind.TEXT:
        return block.text
    if block.kind is BlockKind.MEDIA:
        return f"[image: {block.media_type}]"
    if block.kind is BlockKind.TOOL_USE:
        return f"tool_request({block.tool_name}): {serde_json(block.tool_input)}"
    if block.kind is BlockKind.TOOL_RESULT:
        if block.is_error:
            return "tool_response: [error]"
        return f"tool_response: {block.text}" if block.text else "tool_response: [non-text content]"
    return None  # thinking, redacted thinking, reasoning, opaque


def goose_role(message: Message) -> str:
    return "assistant" if message.role is Role.ASSISTANT else "user"


def format_message_for_compacting(message: Message) -> str:
    """``format_message_for_compacting``: ``[role]: part\\npart`` or ``<empty message>``."""
    parts = [p for p in (_content_part(b) for b in message.blocks) if p is not None]
    role = goose_role(message)
    return f"[{role}]: " + "\n".join(parts) if parts else f"[{role}]: <empty message>"


def has_text_only(message: Message) -> bool:
    """``has_text_only``: some text and no tool request or response."""
    kinds = {b.kind for b in message.blocks}
    return BlockKind.TEXT in kinds and not kinds & {BlockKind.TOOL_USE, BlockKind.TOOL_RESULT}


def extract_text(message: Message) -> str | None:
    texts = [b.text for b in message.blocks if b.kind is BlockKind.TEXT]
    return "\n".join(texts) if texts else None


@dataclass(slots=True)
class _State:
    turn_started: bool = False  # a user text message joined since the last call
    compaction_attempts: int = 0  # provider overflows in this reply (reply_internal)
    zone: tuple[PromptMessage, ...] = ()  # the agent-only summary + continuation


class GooseStrategy(Strategy):
    name: ClassVar[str] = "goose"
    State = _State
    label: ClassVar[str] = "Goose auto-compact (block/goose 0036b81)"
    description: ClassVar[str] = (
        "Goose's context_mgmt: at the start of every reply, when the agent-visible history "
        "exceeds GOOSE_AUTO_COMPACT_THRESHOLD (0.8) of the model's context limit, every "
        "agent-visible message is summarised by the fast model (compaction.md); the "
        "originals stay user-visible but agent-invisible, the agent sees the summary and a "
        "continuation note, and the latest user text is re-appended. When the summary call "
        "overflows, tool responses are removed middle-out (10, 20, 50, 100 %) and it retries."
    )
    estimator: ClassVar[str] = (
        "count_chat_tokens per message: 4 + each text / tool call / tool response + 3 "
        "(o200k_base in Goose; the run's cl100k reference here)"
    )
    WINDOW = "context_limit"
    WINDOW_FOLLOWS: ClassVar[dict[str, float]] = {}
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "context_limit",
            128_000,
            "The model's context limit (Goose's default when the model is unknown: 128K).",
            min=1,
            origin="ModelConfig.context_limit (GOOSE_CONTEXT_LIMIT)",
        ),
        Param(
            "GOOSE_AUTO_COMPACT_THRESHOLD",
            DEFAULT_COMPACTION_THRESHOLD,
            "Compact when tokens / context_limit exceeds it; <= 0 or >= 1 disables it.",
            "float",
            min=0.0,
            max=1.0,
            origin="config GOOSE_AUTO_COMPACT_THRESHOLD (DEFAULT_COMPACTION_THRESHOLD)",
        ),
        Param(
            "removal_percentages",
            list(REMOVAL_PERCENTAGES),
            "Tool responses removed (middle out) on each summary attempt when it overflows.",
            "list",
            origin="do_compact removal_percentages",
        ),
    )

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        steps = self.params["removal_percentages"]
        if not steps or not all(isinstance(s, int) and 0 <= s <= 100 for s in steps):
            raise ValueError("removal_percentages must be a list of integers 0..100")

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return reference_counter().count(text)

    def count_message(self, message: Message) -> int:
        return message_reference_tokens(message) + TOKENS_PER_MESSAGE + REPLY_PRIMER

    def message_counter(self, reference: ReferenceTokens, state: Any) -> Callable[[Message], int]:
        message_of = reference.message_of
        return lambda message: message_of(message) + TOKENS_PER_MESSAGE + REPLY_PRIMER

    def count_system(self, text: str, message: Message | None) -> int:
        # Part of the request (the provider-overflow stand-in); the threshold check
        # counts the messages only.
        return self.count_text(text) + TOKENS_PER_MESSAGE if text else 0

    # --- geometry -----------------------------------------------------------------------
    def enabled(self) -> bool:
        t = float(self.params["GOOSE_AUTO_COMPACT_THRESHOLD"])
        return 0.0 < t < 1.0

    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_limit"])

    def threshold(self, ctx: ContextView) -> int | None:
        if not self.enabled():
            return None
        return int(float(self.params["GOOSE_AUTO_COMPACT_THRESHOLD"]) * self.window(ctx))

    def needs_compaction(self, tokens: int) -> bool:
        if not self.enabled():
            return False
        limit = int(self.params["context_limit"])
        return tokens / limit > float(self.params["GOOSE_AUTO_COMPACT_THRESHOLD"])

    # --- hooks --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        msg = ctx.original(index)
        if msg.role is Role.USER and has_text_only(msg):
            st: _State = ctx.state
            st.turn_started = True

    def before_call(self, ctx: ContextView) -> None:
        """``reply``: the threshold check once per user turn, before ``reply_internal``;
        inside the loop, a request over the context limit stands in for the provider's
        ``ContextLengthExceeded``: compact once, give up on the second in one reply."""
        st: _State = ctx.state
        if st.turn_started:
            st.turn_started = False
            st.compaction_attempts = 0
            tokens = ctx.request_tokens() - ctx.system_tokens - ctx.tools_tokens
            if self.needs_compaction(tokens):
                self._compact(ctx, tokens, trigger="threshold")
                return
        request = ctx.request_tokens()
        limit = int(self.params["context_limit"])
        if request <= limit:
            return
        st.compaction_attempts += 1
        if st.compaction_attempts >= MAX_COMPACTION_ATTEMPTS:
            ctx.emit(
                "compact_failed", tokens=request, limit=limit,
                compaction_attempts=st.compaction_attempts,
                outcome="Context limit exceeded after compaction - prompt too large: "
                "Goose ends the reply here (the replay goes on with the history unchanged)",
            )  # fmt: skip
            return
        self._compact(ctx, request, trigger="context_length_exceeded")

    # --- compaction ---------------------------------------------------------------------
    def _compact(self, ctx: ContextView, tokens: int, *, trigger: str) -> None:
        st: _State = ctx.state
        live = list(ctx.live)
        messages = [ctx.message(i) for i in live]
        preserved = next(
            (i for i, m in zip(reversed(live), reversed(messages), strict=True)
             if m.role is Role.USER and has_text_only(m)),
            None,
        )  # fmt: skip
        is_most_recent = preserved is not None and preserved == live[-1]
        zone_items = [Message(role=Role(p.role), blocks=(Block(BlockKind.TEXT, p.text),))
                      for p in st.zone]  # fmt: skip
        visible = [*zone_items, *messages]
        limit = int(self.params["context_limit"])
        steps = [int(s) for s in self.params["removal_percentages"]]
        attempts: list[dict[str, int]] = []
        request: SummaryRequest | None = None
        kept: list[int] = []
        # The summary request's size: the prompt around the messages plus each message's
        # own count (already kept by the context), not a fresh pass over the rendered text.
        weights = [self.count_message(m) for m in zone_items] + [ctx.tokens(i) for i in live]
        base = self.count_text(render_prompt("")) + self.count_text(SUMMARIZE_USER_TEXT)
        for percent in steps:
            kept = filter_tool_responses(visible, percent)
            size = base + sum(weights[k] for k in kept)
            attempts.append({"remove_percent": percent, "request_tokens": size})
            if size <= limit:
                text = "\n".join(format_message_for_compacting(visible[k]) for k in kept)
                system = render_prompt(text)
                request = self._request(ctx, system, visible, kept, live, len(zone_items))
                break
        threshold = self.threshold(ctx)
        if request is None:
            ctx.emit(
                "compact_failed", messages=live, attempts=attempts, tokens=tokens,
                threshold=threshold, context_limit=limit,
                outcome="Failed to compact: context limit exceeded even after removing all "
                "tool responses; the reply goes on with the history unchanged",
            )  # fmt: skip
            return
        record = ctx.summarize(request, messages=live)
        if record.error:
            ctx.emit(
                "summary_failed", messages=live, summary_id=record.id, error=record.error,
                estimate=tokens, threshold=threshold, attempts=attempts,
                outcome="compaction error; the reply goes on with the history unchanged",
            )  # fmt: skip
            return
        summary = record.output
        continuation = (
            CONVERSATION_CONTINUATION_TEXT if is_most_recent else TOOL_LOOP_CONTINUATION_TEXT
        )
        zone = (PromptMessage("user", summary), PromptMessage("assistant", continuation))
        rendered = summary + "\n\n" + continuation
        removed = [i for i in live if i != preserved]
        previous_ref = ctx.summary_ref
        with ctx.action(
            "compact", reason=REASONS[trigger], trigger=trigger, tokens=tokens, threshold=threshold, context_limit=limit,
            auto_compact_threshold=float(self.params["GOOSE_AUTO_COMPACT_THRESHOLD"]),
            attempts=attempts, removed_tool_responses=len(visible) - len(kept),
            preserved_user_message=preserved, continuation="conversation"
            if is_most_recent else "tool_loop",
        ) as act:  # fmt: skip
            act.remove(removed, Fate.SUMMARISED)
            if preserved is not None:
                text = extract_text(ctx.message(preserved)) or ""
                copy = replace(ctx.message(preserved), blocks=(Block(BlockKind.TEXT, text),))
                if copy.blocks != ctx.message(preserved).blocks:
                    act.replace(preserved, copy, Fate.TRUNCATED)
            ctx.set_summary(
                summary,
                tokens=sum(self.count_text(m.text) + TOKENS_PER_MESSAGE + REPLY_PRIMER
                           for m in zone),
                rendered=rendered,
                summary_id=record.id,
            )  # fmt: skip
            act.summary_id = record.id
        st.zone = zone
        check_summary_size(
            ctx, summary_rendered=rendered, replaced=removed, summary_id=record.id,
            previous_ref=previous_ref,
        )  # fmt: skip

    def _request(
        self,
        ctx: ContextView,
        system: str,
        visible: list[Message],
        kept: list[int],
        live: list[int],
        zone_len: int,
    ) -> SummaryRequest:
        return SummaryRequest(
            strategy=self.name,
            system=system,
            messages=(PromptMessage("user", SUMMARIZE_USER_TEXT),),
            style="sections",
            sections=SECTIONS,
            material=tuple(
                MaterialItem(
                    goose_role(visible[k]),
                    format_message_for_compacting(visible[k]),
                    live[k - zone_len] if k >= zone_len else -1,
                )
                for k in kept
            ),
            previous_summary=ctx.summary,
        )


STRATEGY = GooseStrategy
