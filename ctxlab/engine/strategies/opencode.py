"""OpenCode's own session compaction: tool-output prune + summary compaction.

Pinned version (the index of public sources holds single files at single commits, not
whole trees, so the pin is per file; every quoted string below is byte-exact from these):

- ``packages/opencode/src/session/compaction.ts`` @ anomalyco/opencode
  ``001aa6cc6a2164fe2e836df9f07d11debff1722d``: ``prune`` (the same loop as sst/opencode
  ``3df4a25506fb5ef55e4a02142708448c07fa754a``), the compaction user prompt
  (``defaultPrompt``, "Provide a detailed prompt for continuing our conversation above."
  with the ``## Goal`` ... ``## Relevant files / directories`` template), the summary
  assistant message (``summary: true``, agent ``compaction``, ``tools: {}``,
  ``system: []``) and the synthetic continue message after an auto-compaction.
- ``packages/opencode/src/session/overflow.ts``, the first stored version (the module
  that compaction.ts imports ``isOverflow`` from): ``count = tokens.total ||
  input + output + cache.read + cache.write``; ``reserved = compaction.reserved ??
  min(COMPACTION_BUFFER = 20_000, maxOutputTokens)``; ``usable = limit.input ?
  limit.input - reserved : context - maxOutputTokens``; overflow when ``count >= usable``;
  off when ``compaction.auto === false`` or ``limit.context === 0``.
- ``packages/opencode/src/session/message-v2.ts`` @ anomalyco/opencode ``007a9409…``
  (``toModelMessages``): a compacted tool output is sent as ``[Old tool result content
  cleared]`` with its attachments dropped; a user message holding the compaction part
  is sent as ``What did we do so far?``; an assistant message with an error is skipped.
  ``filterCompacted``: a request starts at the user message of the last *finished,
  error-free* summary.
- ``packages/opencode/src/util/token.ts`` @ anomalyco/opencode ``0f7d18ad…``:
  ``Token.estimate = Math.max(0, Math.round(input.length / 4))`` (UTF-16 code units,
  half up).
- ``agent/prompt/compaction.txt`` (the compaction agent's system prompt): the long-lived
  text "You are a helpful AI assistant tasked with summarizing conversations. …" is not
  stored for the upstream repository; it is quoted as several independent copies of
  sst/opencode's file agree (trailing space after "conversation." included). Its final
  newline is unverified. The newer "anchored" text is stored at anomalyco/opencode
  ``4ab22439905e3872369847158821f97d3e4295a2`` (``system_prompt="anchored"``).

Variants (parameters): the early-2026 ``isOverflow`` inside compaction.ts (``count =
input + cache.read + output``, ``usable = limit.input || context - output``, ``>``), the
later overflow.ts at anomalyco/opencode ``0d51724f…`` (``usable = (limit.input ||
context) - reserved``, floored at 0, 0 = never), and the older one-sentence compaction
prompt ("... considering new session will not have access to our conversation.").

Where it runs, mapped onto replay steps (one step = one inference call):

- Overflow: ``SessionPrompt.loop`` checks, before every inference call, the reported
  usage of the last finished assistant message (not when that message is the summary)
  -> ``before_call``. The transcript's reported usage describes the *original* requests;
  once this strategy has changed the request it is lowered by what the change saved
  under ``Token.estimate`` (``usage_source: reported-adjusted``); without reported usage
  the strategy's own estimate of the request stands in (``usage_source: estimate``).
- Prune: ``SessionCompaction.prune`` runs when the prompt loop ends, i.e. after an
  assistant response without tool calls -> ``after_append`` of such a message; its
  effect shows from the next request on. It persists ``state.time.compacted``, so the
  message version is replaced in the working history (``ctx.original`` keeps the output).
- Compaction: the request is the whole current history (previous summary zone
  included, pruned outputs as placeholders) + the compaction user message ("What did we
  do so far?") + the prompt, with compaction.txt as system prompt and no tools. On
  success every message goes; later requests start with "What did we do so far?", the
  summary (assistant) and the synthetic continue message: that is the summary zone.
  A summariser *error* stops the prompt loop and nothing is cut (filterCompacted ignores
  errored summaries), so the next step checks and compacts again. An *empty* summary is
  not an error: the history is cut and the summary zone holds no summary text.

Not modelled: the ``overflow`` replay of the last user message (provider context-overflow
errors), plugin prompt hooks, retries with compacted tools / the last 5 turns (they fire
only when the compaction request itself overflows, which no replay summariser reports),
pruning of parts before the last summary (no later request contains them), and the
"What did we do so far?" message an errored compaction leaves in the history.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import Block, BlockKind, Message, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest
from ..stages.js_text import quarter_length_tokens
from ..stages.prune import PruneScan, clear_blocks, scan_tool_outputs
from ._models_dev import model_limits

if TYPE_CHECKING:
    from ..core.context_view import ContextView

PRUNE_MINIMUM = 20_000
PRUNE_PROTECT = 40_000
PRUNE_PROTECTED_TOOLS = ("skill",)
PRUNE_PROTECT_TURNS = 2  # prune(): `if (turns < 2) continue`
COMPACTION_BUFFER = 20_000  # overflow.ts
OUTPUT_TOKEN_MAX = 32_000  # SessionPrompt.OUTPUT_TOKEN_MAX
DEFAULT_LIMITS = (200_000, 0, OUTPUT_TOKEN_MAX)  # context, input, output params' defaults
CLEARED = "[Old tool result content cleared]"
COMPACTION_USER_TEXT = "What did we do so far?"
CONTINUE_TEXT = (
    "Continue if you have next steps, or stop and ask for clarification if you are unsure "
    "how to proceed."
)

PROMPT_TEMPLATE = """Provide a detailed prompt for continuing our conversation above.
Focus on information that would be helpful for continuing the conversation, including what we did, what we're doing, which files we're working on, and what we're going to do next.
The summary that you construct will be used so that another agent can read it and continue the work.
Do not call any tools. Respond only with the summary text.

When constructing the summary, try to stick to this template:
---
## Goal

[What goal(s) is the user trying to accomplish?]

## Instructions

- [What important instructions did the user give you that are relevant]
- [If there is a plan or spec, include information about it so next agent can continue using it]

## Discoveries

[What notable things were learned during this conversation that would be useful for the next agent to know when continuing the work]

## Accomplished

[What work has been completed, what work is still in progress, and what work is left?]

## Relevant files / directories

[Construct a structured list of relevant files that have been read, edited, or created that pertain to the task at hand. If all the files in a directory are relevant, include the path to the directory.]
---"""  # noqa: E501
PROMPT_PLAIN = (
    "Provide a detailed prompt for continuing our conversation above. Focus on information "
    "that would be helpful for continuing the conversation, including what we did, what "
    "we're doing, which files we're working on, and what we're going to do next considering "
    "new session will not have access to our conversation."
)
PROMPTS = {"template": PROMPT_TEMPLATE, "plain": PROMPT_PLAIN}

SYSTEM_SUMMARIZING = (
    "You are a helpful AI assistant tasked with summarizing conversations.\n"
    "\n"
    "When asked to summarize, provide a detailed but concise summary of the conversation. \n"
    "Focus on information that would be helpful for continuing the conversation, including:\n"
    "- What was done\n"
    "- What is currently being worked on\n"
    "- Which files are being modified\n"
    "- What needs to be done next\n"
    "- Key user requests, constraints, or preferences that should persist\n"
    "- Important technical decisions and why they were made\n"
    "\n"
    "Your summary should be comprehensive enough to provide context but concise enough to be "
    "quickly understood.\n"
)
SYSTEM_ANCHORED = (
    "You are an anchored context summarization assistant for coding sessions.\n"
    "\n"
    "Summarize only the conversation history you are given. The newest turns may be kept "
    "verbatim outside your summary, so focus on the older context that still matters for "
    "continuing the work.\n"
    "\n"
    "If the prompt includes a <previous-summary> block, treat it as the current anchored "
    "summary. Update it with the new history by preserving still-true details, removing stale "
    "details, and merging in new facts.\n"
    "\n"
    "Always follow the exact output structure requested by the user prompt. Keep every "
    "section.\n"
    "\n"
    "CRITICAL \u2014 Preserve detail that matters for continuing work:\n"
    "- Exact error messages, stack traces, and failure modes\n"
    "- Exact file paths, line numbers, function and variable names\n"
    "- Exact command outputs, return values, and data structures\n"
    "- User preferences, specifications, style guidance, and constraints\n"
    "- Architectural decisions and why alternatives were rejected\n"
    "- Tool configurations, API endpoints, environment details\n"
    "- Active todos, progress state, and workflow phase\n"
    "\n"
    "Prefer substantive detail over brevity. A few specific, accurate sentences are better "
    "than a terse bullet that loses meaning. When preserving a file path, error message, or "
    "identifier, include the exact text so the next agent can use it without guessing.\n"
    "\n"
    "Do not answer the conversation itself. Do not mention that you are summarizing, "
    "compacting, or merging context. Respond in the same language as the conversation.\n"
)
SYSTEM_PROMPTS = {"summarizing": SYSTEM_SUMMARIZING, "anchored": SYSTEM_ANCHORED}

TEMPLATE_SECTIONS = (
    Section("## Goal", "goal"),
    Section("## Instructions", "constraints"),
    Section("## Discoveries", "critical"),
    Section("## Accomplished", "done"),
    Section("## Relevant files / directories", "critical"),
)


def estimate(text: str) -> int:
    """``Token.estimate``: ``Math.max(0, Math.round(length / 4))``, half up."""
    return quarter_length_tokens(text)


def _block_strings(block: Block) -> str:
    if block.kind is BlockKind.TOOL_USE:
        return block.tool_name + block.input_json
    return block.text


@dataclass(slots=True)
class _State:
    names: dict[str, str] = field(default_factory=dict)  # tool_use id -> tool name
    cleared: set[tuple[int, int]] = field(default_factory=set)  # (index, block) marked compacted
    last_finished: int | None = None  # last assistant since the last summary
    last_reply: int | None = None  # last assistant at all (for compared_tokens)
    original_history: int = 0  # Token.estimate of the unmodified appended messages
    zone: tuple[PromptMessage, ...] = ()  # the summary zone as sent
    # -- the model's limits (prepare; None: the params decide) --
    provider: str = ""  # the session's providerID; "" = the params decide throughout
    model: str = ""  # the request's modelID
    limits: tuple[int, int, int] | None = None  # (context, input, output) of the request


def _unix(timestamp: str | None) -> float | None:
    """An ISO-8601 time (the importer's, from OpenCode's ``time.created``) in Unix seconds."""
    if not timestamp:
        return None
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class OpenCodeStrategy(Strategy):
    name: ClassVar[str] = "opencode"
    State = _State
    label: ClassVar[str] = "OpenCode (session prune + compaction)"
    description: ClassVar[str] = (
        "OpenCode's packages/opencode/src/session/compaction.ts: after every prompt loop, "
        "tool outputs older than the last two user turns and beyond 40K estimated tokens "
        "are marked compacted (sent as '[Old tool result content cleared]') if more than "
        "20K are recovered; before every inference call, when the last reported usage "
        "reaches the usable context, the whole history is summarised by the compaction "
        "agent and later requests start from the summary plus a synthetic continue message."
    )
    estimator: ClassVar[str] = (
        "Token.estimate: round(UTF-16 length / 4) half up (tool outputs for the prune; one "
        "rounding per message for the request estimate); the trigger reads reported usage"
    )
    WINDOW = "context"
    WINDOW_FOLLOWS = {"output": 32_000 / 200_000}
    WINDOW_PINS = {"window_from_session": False}
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "context",
            DEFAULT_LIMITS[0],
            "Model context window (0 disables auto-compaction). While context, input and "
            "output are all at their defaults, the model the session reports decides: its "
            "models.dev limits (providerID + modelID, per request), the defaults where "
            "models.dev does not list it; any other value pins all three.",
            min=0,
            origin="model limit.context (models.dev / provider.*.models.*.limit.context)",
        ),
        Param(
            "input",
            DEFAULT_LIMITS[1],
            "Model input limit (0 = unset: usable comes from the context and output limits). "
            "At the defaults, the session's model decides (see context).",
            min=0,
            origin="model limit.input (models.dev)",
        ),
        Param(
            "output",
            DEFAULT_LIMITS[2],
            "Model output limit; maxOutputTokens = min(output, output_token_max) || "
            "output_token_max. At the defaults, the session's model decides (see context).",
            min=0,
            origin="model limit.output (models.dev)",
        ),
        Param(
            "window_from_session",
            True,
            "At the default context, input and output, the session's model decides them "
            "(models.dev, see context); off pins the defaults too. A comparison budget turns "
            "it off, so that its window holds even at 200 000.",
            "bool",
            origin="the session's providerID + modelID (models.dev)",
        ),
        Param(
            "output_token_max",
            OUTPUT_TOKEN_MAX,
            "Cap on the output reserve.",
            min=1,
            origin="SessionPrompt.OUTPUT_TOKEN_MAX (env OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX)",
        ),
        Param(
            "compaction_auto",
            True,
            "Compact automatically when the context overflows.",
            "bool",
            origin="opencode.json compaction.auto",
        ),
        Param(
            "compaction_prune",
            True,
            "Prune old tool outputs after every prompt loop.",
            "bool",
            origin="opencode.json compaction.prune",
        ),
        Param(
            "compaction_reserved",
            -1,
            "Tokens reserved below the input limit (-1 = unset: min(compaction_buffer, "
            "maxOutputTokens)).",
            min=-1,
            origin="opencode.json compaction.reserved",
        ),
        Param(
            "compaction_buffer",
            COMPACTION_BUFFER,
            "Default reserve when compaction.reserved is unset.",
            min=0,
            origin="overflow.ts COMPACTION_BUFFER",
        ),
        Param(
            "usable_rule",
            "input-reserved",
            "input-reserved: input ? input - reserved : context - maxOutputTokens (overflow.ts); "
            "limit-input: input || context - maxOutputTokens (compaction.ts, early 2026); "
            "context-reserved: max(0, (input || context) - reserved), 0 = never (later "
            "overflow.ts).",
            "str",
            choices=("input-reserved", "limit-input", "context-reserved"),
            origin="overflow.ts usable() / compaction.ts isOverflow (per version)",
        ),
        Param(
            "overflow_compare",
            ">=",
            "Overflow when count >= usable (overflow.ts) or count > usable (early 2026).",
            "str",
            choices=(">=", ">"),
            origin="overflow.ts isOverflow (per version)",
        ),
        Param(
            "usage_count",
            "total",
            "total: tokens.total (input + output + cache.read + cache.write); "
            "input+cache.read+output: the early-2026 count.",
            "str",
            choices=("total", "input+cache.read+output"),
            origin="overflow.ts isOverflow count (per version)",
        ),
        Param(
            "usage_source",
            "reported",
            "reported: the last assistant message's reported usage (lowered by what this "
            "strategy removed; the estimate where none is reported); estimate: always the "
            "Token.estimate of the request.",
            "str",
            choices=("reported", "estimate"),
            origin="replay reading (the original reads reported usage only)",
        ),
        Param(
            "prune_protect",
            PRUNE_PROTECT,
            "Estimated tool-output tokens (newest first, after the protected turns) kept.",
            min=0,
            origin="compaction.ts PRUNE_PROTECT",
        ),
        Param(
            "prune_minimum",
            PRUNE_MINIMUM,
            "Prune only if strictly more than this many tokens would be cleared.",
            min=0,
            origin="compaction.ts PRUNE_MINIMUM",
        ),
        Param(
            "prune_protect_turns",
            PRUNE_PROTECT_TURNS,
            "User turns (counted from the end) whose tool outputs are never pruned.",
            min=0,
            max=100,
            origin="compaction.ts prune: if (turns < 2) continue",
        ),
        Param(
            "protected_tools",
            list(PRUNE_PROTECTED_TOOLS),
            "Tool names whose outputs are never pruned (exact, case-sensitive).",
            "list",
            origin="compaction.ts PRUNE_PROTECTED_TOOLS",
        ),
        Param(
            "prompt_version",
            "template",
            "template: the Goal/Instructions/Discoveries/Accomplished/Relevant files prompt; "
            "plain: the older one-sentence prompt.",
            "str",
            choices=tuple(PROMPTS),
            origin="compaction.ts defaultPrompt (per version)",
        ),
        Param(
            "system_prompt",
            "summarizing",
            "The compaction agent's system prompt: summarizing (long-lived text) or anchored "
            "(newer compaction.txt).",
            "str",
            choices=tuple(SYSTEM_PROMPTS),
            origin="agent/prompt/compaction.txt (per version)",
        ),
    )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        if not all(isinstance(n, str) for n in self.params["protected_tools"]):
            raise ValueError("protected_tools must be a list of tool names")
        self._protected = frozenset(self.params["protected_tools"])

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return estimate(text)

    def count_message(self, message: Message) -> int:
        return estimate("".join(_block_strings(b) for b in message.blocks))

    def count_system(self, text: str, message: Message | None) -> int:
        return estimate(text) if message is not None else 0

    # --- geometry -----------------------------------------------------------------------
    def limits(self, ctx: ContextView | None = None) -> tuple[int, int, int]:
        """``(context, input, output)`` of the model: the request's model's (``prepare``,
        ``before_call``) in a replay, else the params."""
        st: _State | None = ctx.state if ctx is not None else None
        if st is not None and st.limits is not None:
            return st.limits
        p = self.params
        return int(p["context"]), int(p["input"]), int(p["output"])

    def max_output_tokens(self, ctx: ContextView | None = None) -> int:
        """``ProviderTransform.maxOutputTokens``: min(limit.output, cap) || cap."""
        cap = int(self.params["output_token_max"])
        return min(self.limits(ctx)[2], cap) or cap

    def reserved(self, ctx: ContextView | None = None) -> int:
        value = int(self.params["compaction_reserved"])
        if value >= 0:
            return value
        return min(int(self.params["compaction_buffer"]), self.max_output_tokens(ctx))

    def usable(self, ctx: ContextView | None = None) -> int:
        context, limit_input, _ = self.limits(ctx)
        rule = self.params["usable_rule"]
        if rule == "limit-input":
            return limit_input or context - self.max_output_tokens(ctx)
        if rule == "context-reserved":
            return max(0, (limit_input or context) - self.reserved(ctx))
        if limit_input:
            return limit_input - self.reserved(ctx)
        return context - self.max_output_tokens(ctx)

    def is_overflow(self, count: int, ctx: ContextView | None = None) -> bool:
        p = self.params
        if not p["compaction_auto"] or self.limits(ctx)[0] == 0:
            return False
        usable = self.usable(ctx)
        if p["usable_rule"] == "context-reserved" and usable == 0:
            return False
        return count >= usable if p["overflow_compare"] == ">=" else count > usable

    def window(self, ctx: ContextView) -> int:
        return self.limits(ctx)[0]

    def threshold(self, ctx: ContextView) -> int | None:
        return self.usable(ctx)

    def output_reserve(self, ctx: ContextView) -> int:
        return self.max_output_tokens(ctx)

    # --- state --------------------------------------------------------------------------
    def original_request_tokens(self, ctx: ContextView) -> int:
        """What the original agent's request weighed under this estimator."""
        st: _State = ctx.state
        return ctx.system_tokens + ctx.tools_tokens + st.original_history

    # --- hooks --------------------------------------------------------------------------
    def prepare(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        pinned = self.limits() != DEFAULT_LIMITS or not self.params["window_from_session"]
        # Only an OpenCode session (its importer records the providerID) names the model as
        # OpenCode looks it up; another agent's transcript replayed here keeps the params.
        provider = dict(ctx.conversation.metadata).get("provider", "")
        if pinned or not provider:
            return
        st.provider = provider
        first = next((m for m in ctx.originals if m.model), None)
        if first is not None:
            self._follow_model(st, first.model, first.timestamp)
        else:
            self._follow_model(st, ctx.conversation.model, None)

    def _follow_model(self, st: _State, model: str, timestamp: str | None) -> None:
        """The request's model decides (a session can switch it): its models.dev limits as
        published when it was first asked for (OpenCode builds its provider state from
        models.dev once per process, and models.dev's limits change: github-copilot's
        claude-sonnet-4.6 had input 128 000 from March to May 2026, 168 000 since), the
        params' defaults where models.dev does not list it."""
        if not model or model == st.model:
            return
        st.model, st.limits = model, model_limits(st.provider, model, _unix(timestamp))

    def _rules_detail(self, ctx: ContextView) -> dict[str, str]:
        """Which limits ran and why (the run and compare pages show it), where the
        session's model chose them."""
        st: _State = ctx.state
        if st.limits is None:
            return {}
        context, limit_input, output = st.limits
        return {
            "rules_reason": f"limits context {context}, input {limit_input}, output {output} "
            f"(models.dev {st.provider}/{st.model})"
        }

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        msg = ctx.original(index)
        # The context has just counted this message with ``count_message`` (the default
        # message counter): its count is read back, not estimated again.
        live = ctx.tokens(index) if ctx.message(index) is msg else self.count_message(msg)
        st.original_history += live
        if msg.role is not Role.ASSISTANT:
            return
        st.last_finished = st.last_reply = index
        calls = False
        for block in msg.blocks:
            if block.kind is BlockKind.TOOL_USE:
                calls = True
                if block.tool_id:
                    st.names[block.tool_id] = block.tool_name
        if not calls and not self._continues(ctx, index) and self.params["compaction_prune"]:
            self._prune(ctx)

    @staticmethod
    def _continues(ctx: ContextView, index: int) -> bool:
        """The next record is the same response (Claude Code splits one per block)."""
        nxt = index + 1
        if nxt >= len(ctx.originals):
            return False
        after, msg = ctx.originals[nxt], ctx.originals[index]
        return after.role is Role.ASSISTANT and bool(msg.id) and after.id == msg.id

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        if st.provider:  # the request's model (the user message's, which the reply reports)
            source = ctx.originals[ctx.source_index]
            self._follow_model(st, source.model, source.timestamp)
        if st.last_finished is None:
            return  # no finished assistant since the start or the last summary
        count, detail = self._count(ctx, st.last_finished)
        if self.is_overflow(count, ctx):
            self._compact(ctx, count=count, detail={**detail, **self._rules_detail(ctx)})

    # --- overflow -----------------------------------------------------------------------
    def compared_tokens(self, ctx: ContextView) -> int | None:
        """``_count`` at the last reply (reported usage includes the system prompt and
        tools an OpenCode export does not carry); None before any reply."""
        st: _State = ctx.state
        return None if st.last_reply is None else self._count(ctx, st.last_reply)[0]

    def _count(self, ctx: ContextView, index: int) -> tuple[int, dict[str, Any]]:
        usage = ctx.original(index).usage
        estimate_now = ctx.request_tokens()
        if self.params["usage_source"] == "estimate" or usage is None or not usage.context_tokens:
            return estimate_now, {"usage_source": "estimate", "estimate": estimate_now}
        if self.params["usage_count"] == "total":
            reported = usage.context_tokens
        else:
            reported = usage.input_uncached + usage.cache_read + usage.output
        saved = max(0, self.original_request_tokens(ctx) - estimate_now)
        detail: dict[str, Any] = {
            "usage_source": "reported-adjusted" if saved else "reported",
            "reported": reported,
            "usage_message": index,
        }
        if saved:
            detail["adjustment"] = -saved
        return max(0, reported - saved), detail

    # --- prune --------------------------------------------------------------------------
    def _prune(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        found = self.scan(ctx)
        if found.pruned <= int(self.params["prune_minimum"]) or not found.queued:
            return
        by_message = found.by_message()
        with ctx.action(
            "prune", reason="old tool output marked compacted (sent as the placeholder)",
            scanned_tokens=found.total, pruned_tokens=found.pruned, parts=len(found.queued),
            prune_protect=int(self.params["prune_protect"]),
            prune_minimum=int(self.params["prune_minimum"]),
        ) as act:  # fmt: skip
            for index in sorted(by_message, reverse=True):
                positions = by_message[index]
                st.cleared.update((index, pos) for pos in positions)
                act.replace(index, clear_blocks(ctx.message(index), positions, CLEARED),
                            Fate.PRUNED)  # fmt: skip

    def scan(self, ctx: ContextView) -> PruneScan:
        """``prune``'s walk over the live history (``stages.prune.scan_tool_outputs``).
        Parts before the last summary are not in the live history, so the walk ends where
        OpenCode's breaks at the summary message."""
        st: _State = ctx.state
        return scan_tool_outputs(
            ctx,
            protect_turns=int(self.params["prune_protect_turns"]),
            protect_tokens=int(self.params["prune_protect"]),
            count=estimate,
            skip=lambda _i, _p, block: self._tool_name(st, block) in self._protected,
            stop=lambda index, pos, _b: (index, pos) in st.cleared,
        )

    def _tool_name(self, st: _State, block: Block) -> str:
        # An orphan result (its call is not in the transcript) keeps its own name, if any.
        return st.names.get(block.tool_id, "") or block.tool_name

    # --- compaction ---------------------------------------------------------------------
    def _compact(self, ctx: ContextView, *, count: int, detail: dict[str, Any]) -> None:
        st: _State = ctx.state
        compacted = list(ctx.live)
        history = [*st.zone, *(_prompt_message(ctx.message(i)) for i in compacted)]
        request = SummaryRequest(
            strategy=self.name,
            system=SYSTEM_PROMPTS[self.params["system_prompt"]],
            messages=(
                *history,
                PromptMessage("user", COMPACTION_USER_TEXT),
                PromptMessage("user", PROMPTS[self.params["prompt_version"]]),
            ),
            max_output_tokens=self.max_output_tokens(ctx),
            style="sections" if self.params["prompt_version"] == "template" else "plain",
            sections=TEMPLATE_SECTIONS if self.params["prompt_version"] == "template" else (),
            material=tuple(
                MaterialItem(m.role if m.role != "tool" else "user", m.text, i)
                for i, m in zip(compacted, history[len(st.zone) :], strict=True)
            ),
            previous_summary=ctx.summary,
        )
        record = ctx.summarize(request, messages=compacted)
        usable = self.usable(ctx)
        if record.error:
            ctx.emit(
                "summary_failed", messages=compacted, summary_id=record.id, error=record.error,
                outcome="prompt loop stopped; history unchanged (errored summaries are not "
                "a compaction boundary)", count=count, usable=usable, **detail,
            )  # fmt: skip
            return
        summary = record.output.strip()
        zone = (
            PromptMessage("user", COMPACTION_USER_TEXT),
            *((PromptMessage("assistant", summary),) if summary else ()),
            PromptMessage("user", CONTINUE_TEXT),
        )
        rendered = "\n\n".join(m.text for m in zone)
        previous_ref = ctx.summary_ref
        with ctx.action(
            "compact", reason="auto-compaction: history replaced by the summary zone",
            count=count, usable=usable, compare=self.params["overflow_compare"],
            empty_summary=not summary, synthetic_continue=CONTINUE_TEXT, **detail,
        ) as act:  # fmt: skip
            act.remove(compacted, Fate.SUMMARISED)
            ctx.set_summary(
                summary,
                tokens=sum(estimate(m.text) for m in zone),
                rendered=rendered,
                summary_id=record.id,
            )
            act.summary_id = record.id
        st.zone = zone
        st.last_finished = None  # lastFinished is now the summary: no check until a reply
        st.cleared = {k for k in st.cleared if ctx.alive[k[0]]}
        check_summary_size(
            ctx,
            summary_rendered=rendered,
            replaced=compacted,
            summary_id=record.id,
            previous_ref=previous_ref,
        )


def _prompt_message(message: Message) -> PromptMessage:
    """One history message as the compaction request carries it (text, reasoning, tool
    calls with their input, tool outputs; a cleared output as the placeholder)."""
    parts: list[str] = []
    for b in message.blocks:
        if b.kind is BlockKind.TOOL_USE:
            parts.append(f"[tool_call {b.tool_name}] {b.input_json}")
        elif b.kind is BlockKind.TOOL_RESULT or b.text:
            parts.append(b.text)
    role = "tool" if message.role is Role.TOOL or _only_results(message) else message.role.value
    return PromptMessage(role, "\n".join(parts))


def _only_results(message: Message) -> bool:
    return bool(message.blocks) and all(b.kind is BlockKind.TOOL_RESULT for b in message.blocks)


STRATEGY = OpenCodeStrategy
