"""Gemini CLI's chat compression (``ChatCompressionService``), as the client runs it.

Sources, read at google-gemini/gemini-cli @ 5411f113cafae26161b4969b0237b8e1e024e2c2
(2026-08-21):

- ``packages/core/src/context/chatCompressionService.ts``: ``DEFAULT_COMPRESSION_TOKEN_
  THRESHOLD = 0.5``, ``COMPRESSION_PRESERVE_THRESHOLD = 0.3``, ``COMPRESSION_FUNCTION_
  RESPONSE_TOKEN_BUDGET = 50_000``, ``findCompressSplitPoint``, ``truncateHistoryToBudget``
  and ``ChatCompressionService.compress`` (trigger, truncation-only path after a failure,
  high-fidelity choice of the summariser's input, the anchor instruction, the second
  "probe" verification call, empty-summary and inflated-count rejections, the new history
  ``[user: snapshot, model: "Got it. Thanks for the additional context!", ...kept]``).
- ``packages/core/src/context/chatCompressionService.test.ts``: the ``findCompressSplitPoint``
  cases and the service cases (NOOP when failed before, verification fallback, anchor,
  inflated, empty summary, reverse token budget), ported as table tests.
- ``packages/core/src/core/client.ts`` ``tryCompressChat``: ``hasFailedCompressionAttempt``
  is set only by an inflated result and never reset by a later success (only a new chat
  resets it); ``CONTENT_TRUNCATED`` installs the truncated history. ``sendMessageStream``
  compresses before the pending request joins the history.
- ``packages/core/src/prompts/snippets.ts`` ``getCompressionPrompt`` (stored byte for byte
  in ``ctxlab/engine/data/prompts/gemini-cli-5411f113-compression_prompt.txt``, sha256
  pinned; the legacy snippet for older models is the same text).
- ``packages/core/src/utils/tokenCalculation.ts`` ``estimateTokenCountSync`` (the estimator),
  ``packages/core/src/utils/fileUtils.ts`` ``formatTruncatedToolOutput`` /
  ``saveTruncatedToolOutput``, ``packages/core/src/config/config.ts``
  ``DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD = 40_000``, ``packages/core/src/core/tokenLimits.ts``
  (1,048,576 for every Gemini model).
- History: commit 6d83d3440c (2025-11-14) set the default threshold to 0.7, c7b5dcd28f
  (2025-11-20) to 0.5: ``compression_threshold`` takes either.

What the replay does before each call: the history (the previous snapshot pair, then the
live messages, without the pending input that the call adds) is compared with
``compression_threshold x token_limit``. Over it: the newest-first budget replaces tool
outputs once 50k tokens of outputs are counted (an output over 40,000 characters becomes
the 20%/80% preview naming its file: an offload), the split keeps the last 30% by JSON
characters starting at a user turn that is not a tool result, the older part is sent to
the summariser (with the snapshot prompt, building on an earlier snapshot), then again
for verification; the answer replaces the older part unless it is empty or the new
history's estimate is larger than before (then it is remembered: every later trigger only
truncates, never summarises).

Quirks kept:

- The inflated check compares the new history's estimate (history only) with the prompt
  count (system instruction and tools included): a summary is rarely rejected.
- A preview is itself over 40,000 characters, so a later compression previews it again.
- The budget counts a replaced output's preview, not its full text.

Readings:

- ``getLastPromptTokenCount`` (the provider's count of the previous request) is the
  strategy's estimate of the request without the pending input: a replay changes the
  history, so recorded counts no longer apply.
- A failed summary call throws out of ``compress`` in the original (the turn fails); the
  replay records ``summary_failed`` and keeps the history (no failure is remembered, as
  the flag is set only by an inflated result).
- ``verification=false`` is the single-call compression of earlier releases.
- The tool-output masking service that runs after compression is another strategy: not
  modelled here. The environment context ``getInitialChatHistory`` adds is not in
  transcripts: not counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import BlockKind, Message, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest
from . import _gemini_cli_rules as rules

if TYPE_CHECKING:
    from ..core.context_view import ContextView

_SVC = "chatCompressionService.ts"
SECTIONS = (
    Section("<overall_goal>", "goal"),
    Section("<active_constraints>", "constraints"),
    Section("<key_knowledge>", "critical"),
    Section("<artifact_trail>", "decisions"),
    Section("<file_system_state>", "none"),
    Section("<recent_actions>", "done"),
    Section("<task_state>", "next"),
)


@dataclass(slots=True)
class _State:
    failed: bool = False  # GeminiClient.hasFailedCompressionAttempt
    truncation_id: int = 0  # Config.compressionTruncationCounter
    # each live message's history item and its JSON length, made once per version of it:
    # every compression reads the whole history again
    items: dict[int, tuple[Message, rules.Item, int]] = field(default_factory=dict)


@dataclass(slots=True)
class _Offload:
    index: int
    message: Message
    path: str
    full: str


class GeminiCliStrategy(Strategy):
    name: ClassVar[str] = "gemini_cli"
    State = _State
    label: ClassVar[str] = "Gemini CLI ChatCompressionService (2026-08)"
    description: ClassVar[str] = (
        "Gemini CLI's chat compression: once the prompt reaches half the model's token "
        "limit (0.7 in late-2025 releases), older tool outputs beyond a 50k-token newest-"
        "first budget are cut to a preview (full text in a file), the oldest 70% of the "
        "history (by characters, cut before a user turn) becomes a <state_snapshot> written "
        "and then verified by a second call, and a snapshot that would enlarge the history "
        "is rejected and remembered (later triggers only truncate)."
    )
    estimator: ClassVar[str] = (
        "estimateTokenCountSync per message: 1/4 per ASCII, 1.5 per other character; "
        "tool calls and results as JSON length / 4"
    )
    WINDOW = "token_limit"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "token_limit",
            1_048_576,
            "The model's token limit (tokenLimit(model): 1,048,576 for Gemini models).",
            min=1_000,
            origin="core/tokenLimits.ts tokenLimit",
        ),
        Param(
            "compression_threshold",
            0.5,
            "Compress when the prompt reaches this fraction of the token limit (0.5 today; "
            "0.7 in the November 2025 releases).",
            "float",
            min=0.01,
            max=1.0,
            origin="model.compressionThreshold / DEFAULT_COMPRESSION_TOKEN_THRESHOLD",
        ),
        Param(
            "preserve_threshold",
            0.3,
            "Fraction of the history (by JSON characters) kept verbatim after compression.",
            "float",
            min=0.01,
            max=0.99,
            origin=f"{_SVC} COMPRESSION_PRESERVE_THRESHOLD",
        ),
        Param(
            "function_response_token_budget",
            50_000,
            "Tokens of tool outputs kept in full, newest first; older outputs are cut to "
            "a preview with the full text saved to a file.",
            min=0,
            origin=f"{_SVC} COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET",
        ),
        Param(
            "truncate_tool_output_threshold",
            40_000,
            "Characters of a preview (first 20%, last 80%); shorter outputs stay whole.",
            min=100,
            origin="tools.truncateToolOutputThreshold / DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD",
        ),
        Param(
            "verification",
            True,
            "Send the second 'critically evaluate' call and keep its snapshot (false: the "
            "single call of earlier releases).",
            "bool",
            origin=f"{_SVC} compress (Phase 3: the Probe verification)",
        ),
        Param(
            "project_temp_dir",
            "~/.gemini/tmp/<project>",
            "Where previews say the full output was saved (tool-outputs/<tool>_<n>.txt).",
            "str",
            origin="config.storage.getProjectTempDir()",
        ),
    )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        self.prompt = rules.compression_prompt()

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return int(rules.text_tokens(text))

    def count_message(self, message: Message) -> int:
        return rules.estimate_parts(rules.parts_of(message))

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        return int(self.params["token_limit"])

    def threshold(self, ctx: ContextView) -> int | None:
        limit = int(self.params["token_limit"])
        return rules.threshold_tokens(float(self.params["compression_threshold"]), limit)

    def compared_tokens(self, ctx: ContextView) -> int | None:
        return ctx.request_tokens() - sum(ctx.tokens(i) for i in _pending(ctx))

    # --- hooks --------------------------------------------------------------------------
    def before_call(self, ctx: ContextView) -> None:
        pending = _pending(ctx)
        original = ctx.request_tokens() - sum(ctx.tokens(i) for i in pending)
        limit = int(self.params["token_limit"])
        if original < float(self.params["compression_threshold"]) * limit:
            return
        items = self._items(ctx, ctx.live[: len(ctx.live) - len(pending)])
        if not items:
            return
        truncated, offloads = self._truncate(ctx, items)
        st: _State = ctx.state
        if st.failed:
            self._truncate_only(ctx, truncated, offloads, original)
            return
        cut = {o.index for o in offloads}  # items _truncate made anew
        counts = [
            c.json_length() if c.index < 0 or c.index in cut else st.items[c.index][2]
            for c in truncated
        ]
        split = rules.find_compress_split_point(
            truncated, 1 - float(self.params["preserve_threshold"]), counts
        )
        if split == 0:
            return
        compressed = [c.index for c in items[:split] if c.index >= 0]
        whole = rules.estimate_parts([p for c in items[:split] for p in c.parts])
        sent = items[:split] if whole < limit else truncated[:split]
        final, summary_id = self._snapshot(ctx, sent, compressed)
        if final is None:
            return
        if not final:
            ctx.emit(
                "summary_empty",
                summary_id=summary_id,
                outcome="COMPRESSION_FAILED_EMPTY_SUMMARY: history unchanged",
            )
            return
        kept = truncated[split:]
        new_tokens = rules.estimate_parts(
            [{"text": final}, {"text": rules.ACK}, *(p for c in kept for p in c.parts)]
        )
        if new_tokens > original:
            st.failed = True
            ctx.emit(
                "compact_failed",
                tokens=original,
                new_tokens=new_tokens,
                summary_id=summary_id,
                outcome="COMPRESSION_FAILED_INFLATED_TOKEN_COUNT: history unchanged; later "
                "triggers only truncate tool outputs",
            )
            return
        previous_ref = ctx.summary_ref
        summarised = set(compressed)  # once: per offload it was offloads x history
        kept_offloads = [o for o in offloads if o.index not in summarised]
        with ctx.action(
            "summarise",
            reason=f"prompt over {self.params['compression_threshold']} of the token limit: "
            "older history replaced by a <state_snapshot>",
            estimate=original,
            threshold=self.threshold(ctx),
            new_tokens=new_tokens,
            split=split,
            offloaded=len(kept_offloads),
        ) as act:
            act.remove(compressed, Fate.SUMMARISED)
            _apply(act, kept_offloads)
            ctx.set_summary(
                final,
                tokens=self.count_text(final) + self.count_text(rules.ACK),
                rendered=f"{final}\n\n{rules.ACK}",
                summary_id=summary_id,
            )
            act.summary_id = summary_id
            act.always = True
        for i in compressed:
            st.items.pop(i, None)
        check_summary_size(
            ctx,
            summary_rendered=f"{final}\n\n{rules.ACK}",
            replaced=compressed,
            summary_id=summary_id,
            previous_ref=previous_ref,
        )

    # --- pieces -------------------------------------------------------------------------
    def _items(self, ctx: ContextView, history: list[int]) -> list[rules.Item]:
        items: list[rules.Item] = []
        if ctx.summary:
            items.append(rules.Item("user", ({"text": ctx.summary},)))
            items.append(rules.Item("model", ({"text": rules.ACK},)))
        known = ctx.state.items
        for i in history:
            msg = ctx.message(i)
            hit = known.get(i)
            if hit is None or hit[0] is not msg:
                item = rules.Item(rules.gemini_role(msg), tuple(rules.parts_of(msg)), i)
                hit = known[i] = (msg, item, item.json_length())
            items.append(hit[1])
        return items

    def _truncate(
        self, ctx: ContextView, items: list[rules.Item]
    ) -> tuple[list[rules.Item], list[_Offload]]:
        """``truncateHistoryToBudget``: newest first, parts newest first."""
        st: _State = ctx.state
        budget = int(self.params["function_response_token_budget"])
        max_chars = int(self.params["truncate_tool_output_threshold"])
        counter = 0
        out: list[rules.Item] = []
        offloads: list[_Offload] = []
        for item in reversed(items):
            if not item.is_function_response:
                out.append(item)
                continue
            msg = ctx.message(item.index)
            blocks = list(msg.blocks)
            mine: list[_Offload] = []
            for j in range(len(blocks) - 1, -1, -1):
                block = blocks[j]
                if block.kind is not BlockKind.TOOL_RESULT:
                    continue
                tokens = rules.estimate_parts([{"text": block.text}])
                if counter + tokens <= budget:
                    counter += tokens
                    continue
                st.truncation_id += 1
                path = rules.output_file(
                    str(self.params["project_temp_dir"]),
                    block.tool_name or "unknown_tool",
                    st.truncation_id,
                )
                preview = rules.format_truncated_tool_output(block.text, path, max_chars)
                counter += rules.estimate_parts([{"text": preview}])
                if preview != block.text:
                    blocks[j] = replace(block, text=preview, parts=())
                    mine.append(_Offload(item.index, msg, path, block.text))
            if mine:
                # One new version of the message carries every preview; the first offload
                # installs it (paths and full texts are recorded per result).
                new = replace(msg, blocks=tuple(blocks))
                offloads.extend(replace(o, message=new) for o in mine)
                item = rules.Item(item.role, tuple(rules.parts_of(new)), item.index)
            out.append(item)
        out.reverse()
        return out, offloads

    def _truncate_only(
        self,
        ctx: ContextView,
        truncated: list[rules.Item],
        offloads: list[_Offload],
        original: int,
    ) -> None:
        """After a remembered failure: the truncated history when it is smaller
        (``CONTENT_TRUNCATED``), never a summary."""
        tokens = rules.estimate_parts([p for c in truncated for p in c.parts])
        if tokens >= original or not offloads:
            return
        with ctx.action(
            "offload",
            reason="summarisation failed before: tool outputs over the budget truncated only",
            estimate=original,
            threshold=self.threshold(ctx),
            new_tokens=tokens,
        ) as act:
            _apply(act, offloads)

    def _snapshot(
        self, ctx: ContextView, sent: list[rules.Item], compressed: list[int]
    ) -> tuple[str | None, int | None]:
        """The two calls; (None, id) when a call failed (the original throws)."""
        has_previous = any(
            rules.SNAPSHOT_TAG in str(p.get("text", "")) for c in sent for p in c.parts
        )
        anchor = rules.ANCHOR_PREVIOUS if has_previous else rules.ANCHOR_NEW
        rendered = [rules.render(c) for c in sent]
        history = tuple(
            PromptMessage(rules.prompt_role(c), text)
            for c, text in zip(sent, rendered, strict=True)
        )
        # The previous snapshot reaches an offline summariser as previous_summary, not as
        # material to extract from (the request's messages still carry it, as sent).
        material = tuple(
            MaterialItem(rules.prompt_role(c), text, c.index)
            for c, text in zip(sent, rendered, strict=True)
            if c.index >= 0
        )
        request = SummaryRequest(
            strategy=self.name,
            system=self.prompt,
            messages=(*history, PromptMessage("user", anchor + rules.SCRATCHPAD)),
            sections=SECTIONS,
            material=material,
            previous_summary=ctx.summary,
        )
        record = ctx.summarize(request, messages=compressed)
        if record.error:
            self._failed(ctx, record.id, record.error, "snapshot")
            return None, record.id
        summary = record.output
        if not self.params["verification"]:
            return summary.strip(), record.id
        verify = replace(
            request,
            messages=(
                *history,
                PromptMessage("assistant", summary),
                PromptMessage("user", rules.VERIFY),
            ),
            purpose="verify",
        )
        second = ctx.summarize(verify, messages=compressed)
        if second.error:
            self._failed(ctx, second.id, second.error, "verification")
            return None, second.id
        final = (second.output.strip() or summary).strip()
        return final, second.id if second.output.strip() else record.id

    @staticmethod
    def _failed(ctx: ContextView, summary_id: int, error: str, call: str) -> None:
        ctx.emit(
            "summary_failed",
            summary_id=summary_id,
            error=error,
            call=call,
            outcome="generateContent throws out of compress(): the turn fails in the "
            "original; the replay keeps the history (no failure remembered)",
        )


def _apply(act: Any, offloads: list[_Offload]) -> None:
    """Install each truncated message once; a message with several previews saves
    its other files beside the first."""
    done: set[int] = set()
    for o in offloads:
        if o.index in done:
            act.offload(o.path, o.full)
            continue
        done.add(o.index)
        act.replace(o.index, o.message, Fate.OFFLOADED, offload_path=o.path, offload_text=o.full)


def _pending(ctx: ContextView) -> list[int]:
    """The live messages after the last model turn: the request the call adds."""
    live = ctx.live
    k = len(live)
    while k > 0 and ctx.message(live[k - 1]).role is not Role.ASSISTANT:
        k -= 1
    return live[k:]


STRATEGY = GeminiCliStrategy
