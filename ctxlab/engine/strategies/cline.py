"""Cline's context compaction (SDK core), agentic summary or rule-based fold.

Sources, read at cline/cline @ 21cb8d2525bcedf1f4b6890b27a74a14fe7451e4 (2026-08-22),
``sdk/packages/core/src/extensions/context/``:

- ``compaction.ts`` ``createContextCompactionPrepareTurn``: before each model request the
  request estimate (system prompt, messages and tools as JSON, chars / 3 rounded up) is
  compared with ``maxInputTokens x COMPACTION_TRIGGER_RATIO`` (0.9); the target is
  ``floor(trigger x DEFAULT_TARGET_RATIO)`` (0.7), or half the input budget for 5+ user /
  assistant pairs when the model's ``maxTokens`` is below its input limit, kept under the
  trigger; both translated to message budgets by subtracting the request overhead; the
  configured strategy (``agentic`` by default) runs, and a failing agentic call falls back
  to ``basic``. ``createCompactionStateAwarePrepareTurn``: later turns start from the
  compacted projection (the replay's history persists the same way).
- ``compaction-shared.ts``: ``DEFAULT_MAX_INPUT_TOKENS`` 128,000, ``DEFAULT_PRESERVE_
  RECENT_TOKENS`` 20,000, ``DEFAULT_SUMMARY_MAX_OUTPUT_TOKENS`` 4,096, the estimator
  (``createTokenEstimator``), ``findCutIndex``, ``serializeMessage`` (tool results cut at
  2,000 characters), ``extractFileOps`` / ``summarizeToolActivity`` (files read and edited,
  commands, from ``read_files`` / ``editor`` / ``apply_patch`` / ``run_commands`` calls),
  ``buildSummaryRequest`` (the Goal / State / Highlights / Next / Files sections),
  ``ensureFilesSection``, ``buildSummaryMessage`` ("Context summary:\\n\\n").
- ``agentic-compaction.ts`` ``runAgenticCompaction`` (the cut keeps at least
  ``min(20k, message target)`` newest tokens and the latest typed prompt, the previous
  summary is passed on and only newer messages are folded; empty output skips) and
  ``basic-compaction.ts`` ``runBasicCompaction`` (see ``_cline_basic.py``).
- ``compaction.test.ts``: cases ported in ``tests/engine/strategies/test_cline_condense.py``.
- The VS Code extension before the SDK migration (cline/cline @ c5afbd743e, 2025-12-31,
  ``src/core/context/context-management/ContextManager.ts`` ``shouldCompactContextWindow``
  and ``src/core/storage/utils/state-helpers.ts``: ``autoCondenseThreshold`` default
  0.75): ``trigger_ratio=0.75``.

Readings:

- Message ids and metadata are not counted (a transcript's ids are not Cline's); a
  message is counted as ``{"role", "content": [blocks]}`` with Anthropic-style blocks.
- Tool names: other agents' tools map to Cline's through ``tool_aliases`` (default:
  common Claude Code / Codex / Gemini CLI / OpenCode names; ``{}`` is the original's
  strict reading, which finds no files in other agents' transcripts). An aliased shell
  tool's single ``command`` string counts as one command.
- A prompt rewritten by the fold (trimmed, attachments dropped, a notice appended) is
  recorded as ``truncated``; the messages it drops as ``dropped`` (their tool activity
  survives only as the notice).
- Not modelled: the budget projection that trims the summariser's input or a fold that
  the estimator let past the trigger, overflow recovery (needs a provider error), a
  separate summariser model and manual ``/compact``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import Block, BlockKind, Message, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest
from ..stages.js_text import js_json
from . import _cline_basic as basic
from . import _cline_rules as r
from ._gemini_cli_rules import js_len

if TYPE_CHECKING:
    from ..core.context_view import ContextView

_SHARED = "compaction-shared.ts"
ALIASES: dict[str, str] = {
    "Read": "read_files", "read_file": "read_files", "read": "read_files",
    "view": "read_files", "read_many_files": "read_files",
    "Edit": "editor", "MultiEdit": "editor", "Write": "editor", "write_file": "editor",
    "replace": "editor", "edit": "editor", "write": "editor", "str_replace_editor": "editor",
    "Bash": "run_commands", "bash": "run_commands", "shell": "run_commands",
    "run_shell_command": "run_commands", "exec_command": "run_commands",
}  # fmt: skip
SECTIONS = (
    Section("## Goal", "goal"),
    Section("## State", "done"),
    Section("## Highlights", "decisions"),
    Section("## Next", "next"),
)
_NOTICE = "re-surfaced only as a <SYSTEM_NOTICE> of tool activity"


@dataclass(slots=True)
class _State:
    frozen: set[int] = field(default_factory=set)  # survivors of a fold ("preserved")
    files: tuple[list[str], list[str]] = ([], [])  # the summary's details (read, modified)


class ClineStrategy(Strategy):
    name: ClassVar[str] = "cline"
    State = _State
    label: ClassVar[str] = "Cline SDK compaction (agentic / basic, 2026-08)"
    description: ClassVar[str] = (
        "Cline's context compaction: at 90% of the usable input (the VS Code extension's "
        "older auto-condense: 75%), either an agentic summary (Goal / State / Highlights / "
        "Next / Files, files read and edited derived from tool calls) replaces all but the "
        "newest 20k tokens, or the rule-based fold keeps every typed prompt, the latest "
        "turn's newest messages and older turns' final answers within 70% of the trigger, "
        "re-surfacing dropped work as <SYSTEM_NOTICE> lists of files and commands."
    )
    estimator: ClassVar[str] = "JSON length of the message / 3, rounded up (at least 1)"
    WINDOW = "max_input_tokens"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "max_input_tokens",
            128_000,
            "The model's usable input tokens (128,000 when the model reports none).",
            min=1_000,
            origin=f"model info maxInputTokens / {_SHARED} DEFAULT_MAX_INPUT_TOKENS",
        ),
        Param(
            "strategy",
            "agentic",
            "agentic: a model summary; basic: the rule-based fold (no model call).",
            "str",
            choices=("agentic", "basic"),
            origin="compaction.strategy",
        ),
        Param(
            "trigger_ratio",
            0.9,
            "Compact when the request estimate reaches this share of the usable input "
            "(0.75: the VS Code extension's older autoCondenseThreshold default).",
            "float",
            min=0.05,
            max=1.0,
            origin=f"{_SHARED} COMPACTION_TRIGGER_RATIO / autoCondenseThreshold",
        ),
        Param(
            "target_ratio",
            0.7,
            "Target after compaction, as a share of the trigger.",
            "float",
            min=0.05,
            max=1.0,
            origin=f"{_SHARED} DEFAULT_TARGET_RATIO",
        ),
        Param(
            "max_tokens",
            0,
            "The model's reported maxTokens (output); when below max_input_tokens, "
            "conversations of 5+ pairs target half the input budget (0 = not reported).",
            min=0,
            origin="model info maxTokens (LONG_CONVERSATION_TARGET_RATIO 0.5)",
        ),
        Param(
            "preserve_recent_tokens",
            20_000,
            "Newest tokens the agentic summary keeps verbatim (at most the target).",
            min=0,
            origin=f"compaction.preserveRecentTokens / {_SHARED} DEFAULT_PRESERVE_RECENT_TOKENS",
        ),
        Param(
            "summary_max_output_tokens",
            4_096,
            "Output cap of the summary call.",
            min=1,
            origin=f"{_SHARED} DEFAULT_SUMMARY_MAX_OUTPUT_TOKENS",
        ),
        Param(
            "tool_aliases",
            ALIASES,
            "Other agents' tool names read as Cline's read_files / editor / run_commands "
            "({} = only Cline's own names).",
            "json",
            origin="reading (Cline's tool names: read_files, editor, apply_patch, run_commands)",
        ),
    )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        aliases = self.params["tool_aliases"]
        if not isinstance(aliases, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()
        ):
            raise ValueError("tool_aliases must map tool names to Cline tool names")
        self.aliases: dict[str, str] = dict(aliases)

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return r.estimate_tokens(len(text))

    def count_message(self, message: Message) -> int:
        return self.estimate(to_dict(message))

    @staticmethod
    def estimate(message: r.Msg) -> int:
        """``createTokenEstimator`` over ``{"role", "content"}``; a media block's payload
        (not kept by the lab) is counted by its size."""
        body = {"role": message["role"], "content": message["content"]}
        payload = sum(int(b.get("_size", 0)) for b in r.blocks(message))
        return r.estimate_tokens(js_len(js_json(body)) + payload)

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        return int(self.params["max_input_tokens"])

    def trigger(self) -> float:
        return int(self.params["max_input_tokens"]) * float(self.params["trigger_ratio"])

    def threshold(self, ctx: ContextView) -> int | None:
        return math.ceil(self.trigger())

    def targets(self, messages: list[r.Msg], overhead: int) -> tuple[int, int]:
        """(message trigger, message target): ``resolveAutoRequestTargetTokens`` and
        ``translateRequestBudgetToMessages``."""
        max_input = int(self.params["max_input_tokens"])
        trigger = self.trigger()
        model_max = int(self.params["max_tokens"])
        if count_pairs(messages) >= 5 and 0 < model_max < max_input:
            target = math.floor(max_input * 0.5)
        else:
            target = math.floor(trigger * float(self.params["target_ratio"]))
        target = max(1, min(target, max_input, max(1, math.ceil(trigger - 1))))
        return max(1, math.floor(trigger - overhead)), max(1, math.floor(target - overhead))

    # --- hooks --------------------------------------------------------------------------
    def before_call(self, ctx: ContextView) -> None:
        request = ctx.request_tokens()
        if request < self.trigger():
            return
        messages, lab = self._transcript(ctx)
        overhead = ctx.system_tokens + ctx.tools_tokens
        msg_trigger, msg_target = self.targets(messages, overhead)
        detail = {"estimate": request, "threshold": self.threshold(ctx), "target": msg_target}
        if self.params["strategy"] == "agentic":
            done = self._agentic(ctx, messages, lab, msg_target, detail)
            if done is not False:
                return
        self._basic(ctx, messages, lab, msg_trigger, msg_target, detail)

    def _transcript(self, ctx: ContextView) -> tuple[list[r.Msg], list[int]]:
        st: _State = ctx.state
        messages: list[r.Msg] = []
        lab: list[int] = []
        if ctx.summary:
            messages.append(summary_message(ctx.summary, st.files))
            lab.append(-1)
        for i in ctx.live:
            d = to_dict(ctx.message(i))
            if i in st.frozen:
                d["metadata"] = {"compaction": r.PRESERVED}
            messages.append(d)
            lab.append(i)
        return messages, lab

    def _agentic(
        self, ctx: ContextView, messages: list[r.Msg], lab: list[int], target: int,
        detail: dict[str, Any],
    ) -> bool | None:  # fmt: skip
        """True: compacted; None: skipped (the original returns no result); False: the
        call failed (the original falls back to basic)."""
        preserve = min(int(self.params["preserve_recent_tokens"]), target)
        cut = r.find_cut_index(messages, preserve, self.estimate)
        if cut <= 0 or cut >= len(messages) or len(messages) < 2:
            ctx.emit("compact_skipped", reason="no cut point before the preserved tail", **detail)
            return None
        head = messages[:cut]
        previous = ctx.summary if lab[0] == -1 else ""
        fold = head[1:] if lab[0] == -1 else head
        if not fold:
            ctx.emit("compact_skipped", reason="nothing newer than the summary to fold", **detail)
            return None
        read, edited = r.extract_file_ops(fold, self.aliases)
        serialized = [r.serialize_message(m) for m in fold]  # the prompt's and the material's
        text = r.build_summary_request(previous, r.serialize_conversation(serialized), read, edited)
        gone = [i for i in lab[:cut] if i >= 0]
        request = SummaryRequest(
            strategy=self.name,
            system=r.SUMMARY_SYSTEM,
            messages=(PromptMessage("user", text),),
            max_output_tokens=int(self.params["summary_max_output_tokens"]),
            sections=SECTIONS,
            material=tuple(
                MaterialItem(str(m["role"]), body, i)
                for m, body, i in zip(fold, serialized, lab[cut - len(fold) : cut], strict=True)
            ),
            previous_summary=previous,
        )
        record = ctx.summarize(request, messages=gone)
        if record.error:
            ctx.emit("summary_failed", summary_id=record.id, error=record.error,
                     outcome="agentic compaction failed: falls back to basic", **detail)  # fmt: skip
            return False
        raw = record.output.strip()
        if not raw:
            ctx.emit("summary_empty", summary_id=record.id,
                     outcome="no summary text: compaction skipped", **detail)  # fmt: skip
            return None
        summary = r.ensure_files_section(raw, read, edited)
        st: _State = ctx.state
        rendered = r.SUMMARY_PREFIX + summary
        previous_ref = ctx.summary_ref
        with ctx.action(
            "summarise", reason="request over the trigger: older messages replaced by a "
            "context summary", cut=cut, preserve_recent_tokens=preserve, **detail,
        ) as act:  # fmt: skip
            act.remove(gone, Fate.SUMMARISED)
            ctx.set_summary(
                summary,
                tokens=self.estimate(summary_message(summary, (read, edited))),
                rendered=rendered,
                summary_id=record.id,
            )
            act.summary_id = record.id
            act.always = True
        st.files = (read, edited)
        st.frozen.difference_update(gone)
        check_summary_size(ctx, summary_rendered=rendered, replaced=gone,
                           summary_id=record.id, previous_ref=previous_ref)  # fmt: skip
        return True

    def _basic(
        self, ctx: ContextView, messages: list[r.Msg], lab: list[int], trigger: int,
        target: int, detail: dict[str, Any],
    ) -> None:  # fmt: skip
        out = basic.basic_compaction(messages, target, trigger, self.estimate, self.aliases)
        if out is None:
            ctx.emit("compact_skipped", reason="basic compaction: nothing to fold", **detail)
            return
        st: _State = ctx.state
        kept = {pos for pos, _ in out}
        with ctx.action(
            "drop", reason="basic compaction: typed prompts, the latest turn's tail and older "
            "turns' answers kept", **detail,
        ) as act:  # fmt: skip
            dropped = [lab[p] for p in range(len(messages)) if p not in kept and lab[p] >= 0]
            act.remove(dropped, Fate.DROPPED, reason=f"dropped: {_NOTICE}")
            if -1 in lab and 0 not in kept:
                ctx.set_summary("", tokens=0, rendered="", summary_id=None)
            for pos, new in out:
                index = lab[pos]
                if index < 0:
                    continue
                if new["content"] != messages[pos]["content"]:
                    act.replace(index, from_dict(new, ctx.message(index)), Fate.TRUNCATED,
                                reason="rewritten by the fold (trimmed, attachments dropped "
                                "or a <SYSTEM_NOTICE> appended)")  # fmt: skip
                if r.is_preserved(new):
                    st.frozen.add(index)
            act.always = True
        st.frozen.difference_update(dropped)


def count_pairs(messages: list[r.Msg]) -> int:
    pairs, pending = 0, False
    for m in messages:
        if m["role"] == "user":
            pending = True
        elif m["role"] == "assistant" and pending:
            pairs, pending = pairs + 1, False
    return pairs


def summary_message(summary: str, files: tuple[list[str], list[str]]) -> r.Msg:
    """``buildSummaryMessage``."""
    return {
        "role": "user",
        "content": [{"type": "text", "text": r.SUMMARY_PREFIX + summary}],
        "metadata": {
            "kind": "compaction_summary",
            "summary": summary,
            "details": {"readFiles": files[0], "modifiedFiles": files[1]},
        },
    }


def block_dict(block: Block) -> dict[str, Any]:
    if block.kind is BlockKind.TEXT:
        return {"type": "text", "text": block.text}
    if block.kind is BlockKind.THINKING:
        return {"type": "thinking", "thinking": block.text}
    if block.kind is BlockKind.TOOL_USE:
        return {"type": "tool_use", "id": block.tool_id, "name": block.tool_name,
                "input": block.tool_input if block.tool_input is not None else {}}  # fmt: skip
    if block.kind is BlockKind.TOOL_RESULT:
        return {"type": "tool_result", "tool_use_id": block.tool_id, "content": block.text}
    if block.kind is BlockKind.MEDIA:
        # The payload is not kept: its size stands in for the base64 data (estimate).
        return {"type": "image", "mediaType": block.media_type, "data": "", "_size": block.size}
    return {
        "type": "redacted_thinking",
        "data": block.text,
        "_size": 0 if block.text else block.size,
    }


def to_dict(message: Message) -> r.Msg:
    role = "assistant" if message.role is Role.ASSISTANT else "user"
    return {"role": role, "content": [block_dict(b) for b in message.blocks]}


def from_dict(new: r.Msg, original: Message) -> Message:
    """The lab message for a rewritten dict: text blocks as written, other blocks matched
    back to ``original``'s (the fold only drops them, never edits them)."""
    pool = [(block_dict(b), b) for b in original.blocks]
    content = new["content"]
    items = [{"type": "text", "text": content}] if isinstance(content, str) else content
    out: list[Block] = []
    for d in items:
        if d.get("type") == "text":
            out.append(Block(BlockKind.TEXT, text=str(d.get("text", ""))))
            continue
        match = next((k for k, (p, _) in enumerate(pool) if p == d), None)
        if match is not None:
            out.append(pool.pop(match)[1])
    return replace(original, blocks=tuple(out))


STRATEGY = ClineStrategy
