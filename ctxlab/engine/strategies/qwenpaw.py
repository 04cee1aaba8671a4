"""QwenPaw 1.1.9 LightContextManager (``context_manager_backend="light"``), as its code behaves.

Hooks: after each tool-result message, prune tool outputs in place (offload to a file
with a ``<<<TRUNCATED>>>`` notice, or re-truncate); before each LLM call, check
``history >= threshold - (system + summary)`` and compact the prefix that precedes the
largest tool-aligned suffix fitting the reserve. Summaries are capped newest-first and
re-enter as an English user message. Failure drops the prefix without summarising
(keeping up to ``left`` tokens) and keeps the previous summary. Spec: docs/strategies/qwenpaw.md.
The compactor prompts are QwenPaw 1.1.9's own, byte for byte (``stages/prompts``, read from
the wheel's ``compactor_prompts.py`` shipped in ``data/prompts``).

Original tests ported (tests/engine/strategies/test_qwenpaw_ported.py): QwenPaw's
``tests/unit/agents/context/test_prune_tool_result.py`` (@ 18e3ff2, written for a later
version with ``absolute_max_bytes``): its recent/old cap, small-output and 40 KB cases as
1.1.9 runs them; its config-field tests and ``test_light_context_manager.py`` (fallback
confirmation modes, after 1.1.9) have no 1.1.9 counterpart. The prompts are checked byte
for byte against the wheel (tests/engine/stages/test_prompts_byte_exact.py).
"""

from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import Block, BlockKind, Message
from ..core.params import Param
from ..core.records import Fate, _positional_builder
from ..core.strategy import Strategy
from ..stages import agentscope, prompts
from ..stages.markers import QWENPAW_MARKER, qwenpaw_retruncate, qwenpaw_truncate_fresh
from ..stages.split import largest_aligned_suffix

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..core.context_view import ContextView
    from ..tokens.reference import ReferenceTokens

SLACK = 100  # bytes: outputs within max_bytes + 100 are left alone


def _utf8_len(text: str) -> int:
    # isascii is a flag of the string (no pass): most texts are not encoded at all
    return len(text) if text.isascii() else len(text.encode("utf-8"))


@dataclass(slots=True)
class _State:
    tool_names: dict[str, str] = field(default_factory=dict)
    exempt: set[str] = field(default_factory=set)
    trailing: int = 0  # trailing run of tool-result messages
    old_upto: int = -1  # live messages with source index < this were pruned as old
    recent_upto: int = -1  # source indexes <= this were pruned as recent
    skipping: bool = False


class QwenPaw(Strategy):
    name = "qwenpaw"
    State = _State
    label = "QwenPaw LightContextManager (1.1.9)"
    description = (
        "Prunes tool results after every tool call (offload to tool_results/ with a "
        "<<<TRUNCATED>>> notice), then before each LLM call compacts everything older than "
        "the largest tool-aligned suffix that fits the reserve into a structured summary."
    )
    estimator = "utf-8 bytes / divisor, rounded half up, per block"
    WINDOW = "max_input_length"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "max_input_length",
            131072,
            "Model input window in tokens (ModelInfo, else 131072).",
            "int",
            min=1024,
            max=10_000_000,
            origin="model max_input_length",
        ),
        Param(
            "token_count_estimate_divisor",
            4.0,
            "Bytes per token of the estimator.",
            "float",
            min=2,
            max=5,
            origin="light_context_config.token_count_estimate_divisor",
        ),
        Param(
            "dialog_path",
            "dialog",
            "Where compacted messages are archived (shown in the summary message).",
            "str",
            origin="light_context_config.dialog_path",
        ),
        Param(
            "context_compact_enabled",
            True,
            "Summarise with the LLM; when off the old prefix is dropped and the summary kept.",
            "bool",
            origin="context_compact_config.enabled",
        ),
        Param(
            "compact_threshold_ratio",
            0.8,
            "Compact when history >= window x ratio minus "
            "system and summary tokens; also the summariser input cap.",
            "float",
            min=0.1,
            max=0.9,
            origin="context_compact_config.compact_threshold_ratio",
        ),
        Param(
            "reserve_threshold_ratio",
            0.1,
            "Recent messages kept verbatim: the largest tool-aligned suffix within window x ratio.",
            "float",
            min=0,
            max=0.3,
            origin="context_compact_config.reserve_threshold_ratio",
        ),
        Param(
            "compact_with_thinking_block",
            True,
            "Show thinking blocks to the summariser.",
            "bool",
            origin="context_compact_config.compact_with_thinking_block",
        ),
        Param(
            "tool_result_pruning_enabled",
            True,
            "Prune tool results after each tool call.",
            "bool",
            origin="tool_result_pruning_config.enabled",
        ),
        Param(
            "pruning_recent_n",
            2,
            "At least this many trailing messages count as recent "
            "(a whole trailing run of tool results always does).",
            "int",
            min=1,
            max=10,
            origin="tool_result_pruning_config.pruning_recent_n",
        ),
        Param(
            "pruning_old_msg_max_bytes",
            3000,
            "Byte limit for older tool results.",
            "int",
            min=100,
            max=10_000_000,
            origin="tool_result_pruning_config.pruning_old_msg_max_bytes",
        ),
        Param(
            "pruning_recent_msg_max_bytes",
            50000,
            "Byte limit for recent or exempt tool results.",
            "int",
            min=100,
            max=10_000_000,
            origin="tool_result_pruning_config.pruning_recent_msg_max_bytes",
        ),
        Param(
            "offload_retention_days",
            5,
            "Offload files older than this are deleted on close (no effect within a replay).",
            "int",
            min=0,
            max=3650,
            origin="tool_result_pruning_config.offload_retention_days",
        ),
        Param(
            "tool_results_cache",
            "tool_results",
            "Offload directory under the working dir (the docs say tool_result/).",
            "str",
            origin="tool_result_pruning_config.tool_results_cache",
        ),
        Param(
            "exempt_file_extensions",
            [".md"],
            "read_file calls whose raw input contains one of these keep the recent limit.",
            "list",
            origin="tool_result_pruning_config.exempt_file_extensions",
        ),
        Param(
            "exempt_tool_names",
            ["chat_with_agent"],
            "Tools whose results keep the recent limit.",
            "list",
            origin="tool_result_pruning_config.exempt_tool_names",
        ),
        Param(
            "working_dir",
            "~/.qwenpaw",
            "Agent working dir, as written in offload notices.",
            "str",
            origin="agent working_dir",
        ),
        Param(
            "language",
            "zh",
            "Compactor prompt language (zh -> Chinese prompts).",
            "str",
            choices=("zh", "en"),
            origin="AgentProfileConfig.language",
        ),
    )

    def __init__(self, params: dict[str, object] | None = None) -> None:
        super().__init__(params)
        self.divisor = float(self.params["token_count_estimate_divisor"])
        names = {n.lower() for n in self.params["exempt_tool_names"]}
        exts = [e.lower() for e in self.params["exempt_file_extensions"]]
        self._exempt_rule = (names, exts)

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return self._size_tokens(_utf8_len(text))

    def _size_tokens(self, size: int) -> int:
        """The estimate of a text of ``size`` UTF-8 bytes."""
        if not size:
            return 0
        return int(size / self.divisor + 0.5)

    def count_message(self, message: Message) -> int:
        """``agentscope.message_tokens(message, self.count_text)``, its common blocks
        inlined (text, thinking, a tool call as name + input, a tool result without
        parts): every message is counted when it joins the history."""
        divisor = self.divisor
        total = 0
        for b in message.blocks:
            kind = b.kind
            if kind is BlockKind.TEXT or kind is BlockKind.THINKING:
                size = _utf8_len(b.text)
            elif kind is BlockKind.TOOL_USE:
                size = _utf8_len(b.tool_name) + _utf8_len(b.input_json)
            elif kind is BlockKind.TOOL_RESULT and not b.parts:
                size = _utf8_len(b.text)
            else:  # media, parts, opaque: the shared rule
                return agentscope.message_tokens(message, self.count_text)
            if size:
                total += int(size / divisor + 0.5)
        return total

    def message_counter(self, reference: ReferenceTokens, state: Any) -> Callable[[Message], int]:
        """``count_message``, read from the estimates stored at import for an original
        message (``stored_counts``, seeded as ``STORED_RULE``; at the default divisor)."""
        count = self.count_message
        stored = reference.rule_reader(STORED_RULE) if self.divisor == STORED_DIVISOR else None
        if stored is None:
            return count

        def counted(message: Message) -> int:
            known = stored(message)
            return count(message) if known is None else known

        return counted

    def count_tools(self, tools: object) -> int:
        return 0  # tool schemas never enter LightContextManager's arithmetic

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        return int(self.params["max_input_length"])

    def threshold(self, ctx: ContextView) -> int:
        return int(self.params["max_input_length"] * self.params["compact_threshold_ratio"])

    def reserve(self) -> int:
        return int(self.params["max_input_length"] * self.params["reserve_threshold_ratio"])

    # --- hooks --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        msg = ctx.message(index)
        has_result = False
        for b in msg.blocks:
            kind = b.kind
            if kind is _USE:
                st.tool_names[b.tool_id] = b.tool_name
                names, exts = self._exempt_rule
                if b.tool_name.lower() in names or (
                    b.tool_name == "read_file" and any(e in b.input_json.lower() for e in exts)
                ):
                    st.exempt.add(b.tool_id)
            elif kind is _RESULT:
                has_result = True
        st.trailing = st.trailing + 1 if has_result else 0
        if has_result and self.params["tool_result_pruning_enabled"]:
            self._prune(ctx)

    # --- tool-result pruning ------------------------------------------------------------
    def _prune(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        live = ctx.live
        trailing = min(st.trailing, len(live))
        split = max(0, len(live) - max(trailing, int(self.params["pruning_recent_n"])))
        old_limit = int(self.params["pruning_old_msg_max_bytes"])
        recent_limit = int(self.params["pruning_recent_msg_max_bytes"])
        todo: list[tuple[int, int]] = []
        # Old zone: each message once (re-applying the same limit is a no-op).
        start = bisect.bisect_left(live, st.old_upto) if st.old_upto >= 0 else 0
        todo.extend((i, old_limit) for i in live[start:split])
        if split > 0:
            st.old_upto = live[split - 1] + 1
        todo.extend((i, recent_limit) for i in live[split:] if i > st.recent_upto)
        if live:
            st.recent_upto = max(st.recent_upto, live[-1])
        self._apply_limits(ctx, todo, split_index=split, recent_limit=recent_limit)

    def _apply_limits(
        self,
        ctx: ContextView,
        todo: list[tuple[int, int]],
        *,
        split_index: int,
        recent_limit: int,
    ) -> None:
        st: _State = ctx.state
        offloaded: list[tuple[int, Message, str, str]] = []
        truncated: list[tuple[int, Message]] = []
        extra_files: list[tuple[str, str]] = []  # a message's 2nd.. offloaded files
        exempt = st.exempt
        for index, limit in todo:
            msg = ctx.message(index)
            if not _over_limit(msg, limit, recent_limit, exempt):
                continue  # (the common case: no tool result, or none over its limit)
            blocks = list(msg.blocks)
            changed = False
            paths: list[str] = []
            fulls: list[str] = []
            for bi, b in enumerate(blocks):
                if b.kind is not BlockKind.TOOL_RESULT:
                    continue
                lim = recent_limit if b.tool_id in st.exempt else limit
                if b.parts:
                    parts = list(b.parts)
                    for pi, part in enumerate(parts):
                        if part.kind is BlockKind.TEXT and part.text:
                            new, path = self._truncate(part.text, lim, index, bi, pi)
                            if new != part.text:
                                parts[pi] = replace(part, text=new)
                                changed = True
                                if path:
                                    paths.append(path)
                                    fulls.append(part.text)
                    if changed:
                        flat = "\n".join(p.text for p in parts if p.text)
                        blocks[bi] = replace(b, parts=tuple(parts), text=flat)
                elif b.text:
                    new, path = self._truncate(b.text, lim, index, bi, -1)
                    if new != b.text:
                        blocks[bi] = _with_text(b, new)
                        changed = True
                        if path:
                            paths.append(path)
                            fulls.append(b.text)
            if changed:
                m = msg  # ``replace(msg, blocks=...)``, every field positionally
                new_msg = _new_message(
                    m.role, tuple(blocks), m.source, m.timestamp, m.model, m.usage, m.id,
                    m.name, m.flags,
                )  # fmt: skip
                if paths:
                    extra_files.extend(zip(paths[1:], fulls[1:], strict=True))
                    offloaded.append((index, new_msg, paths[0], fulls[0]))
                else:
                    truncated.append((index, new_msg))
        if not offloaded and not truncated:
            return  # (the common case: nothing over its limit)
        detail: dict[str, Any] = {
            "split_index": split_index,
            "old_max_bytes": int(self.params["pruning_old_msg_max_bytes"]),
            "recent_max_bytes": recent_limit,
            "recent_n": int(self.params["pruning_recent_n"]),
        }
        if offloaded:
            with ctx.action("offload", reason="tool result over its byte limit", **detail) as act:
                for extra_path, extra_text in extra_files:
                    act.offload(extra_path, extra_text)
                for index, new_msg, path, full in offloaded:
                    act.replace(
                        index, new_msg, Fate.OFFLOADED, offload_path=path, offload_text=full
                    )
        if truncated:
            with ctx.action(
                "truncate", reason="re-truncated to the old-message limit", **detail
            ) as act:
                for index, new_msg in truncated:
                    act.replace(index, new_msg, Fate.TRUNCATED)

    def _truncate(self, text: str, limit: int, index: int, bi: int, pi: int) -> tuple[str, str]:
        """(new text, offload path or '') per ``_truncate_tool_result``."""
        if QWENPAW_MARKER in text:
            return qwenpaw_retruncate(text, max_bytes=limit), ""
        if len(text) <= limit + SLACK and _utf8_len(text) <= limit + SLACK:
            return text, ""  # (more characters than that is more bytes: no encoding)
        digest = hashlib.sha1(f"qwenpaw:{index}:{bi}:{pi}".encode()).hexdigest()[:32]
        path = f"{self.params['working_dir']}/{self.params['tool_results_cache']}/{digest}.txt"
        # Only the first ``limit + 1`` characters are read (at least ``limit + 1`` bytes
        # when the text has as many, else the whole text): the same cut, without encoding
        # a long output twice; its line count is the whole text's.
        new = qwenpaw_truncate_fresh(
            text[: limit + 1],
            max_bytes=limit,
            start_line=1,
            total_lines=text.count("\n") + 1,
            path=path,
        )
        return new, path

    # --- check + compact ----------------------------------------------------------------
    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        threshold = self.threshold(ctx)
        reserve = self.reserve()
        str_tokens = ctx.system_tokens + ctx.summary_tokens
        left = threshold - str_tokens
        if left <= 0:
            if not st.skipping:
                ctx.emit(
                    "compact_skipped",
                    threshold=threshold,
                    system_and_summary=str_tokens,
                    reason="left <= 0: system + summary exceed the threshold",
                )
            st.skipping = True
            return
        st.skipping = False
        total = ctx.history_tokens
        if not ctx.live or total < left:
            return
        keep, keep_tokens = largest_aligned_suffix(ctx, reserve)
        to_compact = ctx.live[: len(ctx.live) - keep]
        if not to_compact:
            return
        detail: dict[str, Any] = {
            "threshold": threshold,
            "left": left,
            "reserve": reserve,
            "estimate": total,
            "system_tokens": ctx.system_tokens,
            "summary_tokens": ctx.summary_tokens,
            "keep_count": keep,
            "keep_tokens": keep_tokens,
            # the comparison that fired (catalogue.trigger_of): the history against what
            # the threshold leaves after the system prompt and the summary
            "trigger_measured": total,
            "trigger_measured_name": "history",
            "trigger_limit": left,
            "trigger_limit_name": f"threshold {threshold:,} − system {ctx.system_tokens:,} − "
            f"summary {ctx.summary_tokens:,} =",
        }
        if self.params["context_compact_enabled"]:
            if self._compact(ctx, to_compact, detail):
                return
        else:
            detail["reason"] = "context compaction disabled"
        self._fallback(ctx, left, detail)

    def _compact(self, ctx: ContextView, to_compact: list[int], detail: dict[str, Any]) -> bool:
        st: _State = ctx.state
        lang = prompts.lang_key(str(self.params["language"]))
        cap = int(self.params["max_input_length"] * self.params["compact_threshold_ratio"])
        thinking = bool(self.params["compact_with_thinking_block"])
        sizes: list[int] = []  # UTF-8 sizes of the shown messages formatted, newest first
        shown: list[int] = []
        used = 0
        # an original's size stored at import (``stored_formatted``), with thinking shown
        stored = ctx.reference.rule_reader(FORMATTED_RULE) if thinking else None
        for pos in range(len(to_compact) - 1, -1, -1):
            i = to_compact[pos]
            msg = ctx.message(i)
            known = stored(msg) if stored is not None else None
            if known is None:
                size = agentscope.formatted_size(
                    msg, style="qwenpaw", include_thinking=thinking, tool_names=st.tool_names
                )
            else:
                size = known + _borrowed_names_size(msg, st.tool_names)
            n = self._size_tokens(size)  # ``count_text`` of the formatted message
            if pos != len(to_compact) - 1 and used + n > cap:
                break
            sizes.append(size)
            shown.append(i)
            used += n
        sizes.reverse()
        shown.reverse()
        previous = ctx.summary
        request, remade = agentscope.compactor_call(
            strategy=self.name, lang=lang, system=prompts.QWENPAW_SYSTEM[lang],
            user=prompts.qwenpaw_user, messages=[(i, ctx.message(i)) for i in shown],
            previous=previous, style="qwenpaw", include_thinking=thinking,
            tool_names=st.tool_names, sizes=sizes,
        )  # fmt: skip
        record = ctx.summarize(request, messages=shown, input_text=remade)
        text = record.output
        if record.error or not text.strip() or "##" not in text:
            reason = record.error or ("empty output" if not text.strip() else "output without ##")
            ctx.emit("summary_failed", messages=to_compact, summary_id=record.id, reason=reason)
            detail["reason"] = f"summary failed: {reason}"
            return False
        rendered = prompts.QWENPAW_SUMMARY_TEMPLATE.format(
            dialog_path=self.params["dialog_path"], summary=text
        )
        previous_ref = ctx.summary_ref
        shown_set = set(shown)
        skipped = [i for i in to_compact if i not in shown_set]
        with ctx.action(
            "summarise",
            reason="compacted into the summary",
            cap=cap,
            summarised=len(shown),
            beyond_cap=len(skipped),
            **detail,
        ) as act:
            act.remove(shown, Fate.SUMMARISED)
            if skipped:
                act.remove(skipped, Fate.DROPPED, reason="beyond the summariser input cap")
            ctx.set_summary(
                text,
                tokens=self.count_text(text),
                rendered=rendered,
                summary_id=record.id,
                # a summary repeats most lines of the previous one: only new ones tokenized
                rendered_ref=ctx.reference.text_by_lines(rendered),
            )
            act.summary_id = record.id
        check_summary_size(
            ctx,
            summary_rendered=rendered,
            replaced=to_compact,
            summary_id=record.id,
            previous_ref=previous_ref,
        )
        return True

    def _fallback(self, ctx: ContextView, left: int, detail: dict[str, Any]) -> None:
        keep, keep_tokens = largest_aligned_suffix(ctx, left)
        drop = ctx.live[: len(ctx.live) - keep]
        if not drop:
            return
        reason = str(detail.pop("reason", "fallback"))
        with ctx.action(
            "drop",
            reason=reason,
            fallback_reserve=left,
            fallback_keep=keep,
            **detail,
        ) as act:
            act.remove(drop, Fate.DROPPED)


# QwenPaw's per-message estimates at the default divisor, in ``ReferenceTokens`` (stored at
# import, ``stored_counts``)
STORED_RULE = "qwenpaw_estimate"
STORED_DIVISOR = 4.0


def stored_counts(messages: Sequence[Message]) -> list[int]:
    """Each message's ``count_message`` at the default divisor, as the replay counts an
    original message: computed once at import, stored per message and seeded into the
    reference counts (``ReferenceTokens.seed_rule(STORED_RULE, ...)``), so a replay
    makes no original's tool input JSON again for its estimate."""
    count = QwenPaw({"token_count_estimate_divisor": STORED_DIVISOR}).count_message
    return [count(m) for m in messages]


# Each message's ``agentscope.formatted_size`` as ``_compact`` shows it (thinking shown, the
# default), its tool results' borrowed names left out (``_borrowed_names_size``), in
# ``ReferenceTokens`` (stored at import, ``stored_counts``)
FORMATTED_RULE = "qwenpaw_formatted"


def stored_formatted(messages: Sequence[Message]) -> list[int]:
    """Each message's UTF-8 size formatted for QwenPaw's summariser, computed once at import
    and seeded as ``FORMATTED_RULE``: the summariser's input cap sizes every compacted
    message (about a tenth of a replay at 20,000 messages, each message once). A tool
    result naming its tool by the call it answers is stored without that name (the calls
    a replay has seen then decide it): the replay adds it (``_borrowed_names_size``)."""
    size = agentscope.formatted_size
    return [size(m, style="qwenpaw", include_thinking=True, tool_names={}) for m in messages]


def _borrowed_names_size(message: Message, tool_names: dict[str, str]) -> int:
    """UTF-8 bytes of the tool names ``message``'s formatted lines borrow from the calls
    (a tool result without its own name and with a line: some output before any
    truncation notice): ``formatted_size`` with ``tool_names`` less with none."""
    total = 0
    for b in message.blocks:
        if b.kind is not BlockKind.TOOL_RESULT or b.tool_name:
            continue
        name = tool_names.get(b.tool_id, "")
        if not name:
            continue
        output = agentscope.tool_output_text(b, with_files=False) if b.parts else b.text
        if output and not output.startswith(QWENPAW_MARKER):
            total += _utf8_len(name)
    return total


def _over_limit(msg: Message, limit: int, recent_limit: int, exempt: set[str]) -> bool:
    """True when a tool result text of ``msg`` is over its limit and the slack (the only
    texts ``_truncate`` may change: a text within them is left alone, and so is one
    truncated before, whose part before the marker is shorter still)."""
    for b in msg.blocks:
        if b.kind is not _RESULT:
            continue
        room = (recent_limit if b.tool_id in exempt else limit) + SLACK
        if b.parts:
            for part in b.parts:
                text = part.text
                if part.kind is _TEXT and _over(text, room):
                    return True
        elif _over(b.text, room):
            return True
    return False


def _over(text: str, room: int) -> bool:
    """``_utf8_len(text) > room``, encoding only a text whose length leaves it open (a
    character is 1 to 4 bytes)."""
    size = len(text)
    return size > room or (size * 4 > room and _utf8_len(text) > room)


def _with_text(b: Block, text: str) -> Block:
    """``replace(b, text=text)`` through the positional builder (a truncated output:
    ``dataclasses.replace`` reads every field by name and routes each through
    ``object.__setattr__``)."""
    return _new_block(
        b.kind, text, b.tool_id, b.tool_name, b.tool_input, b.is_error, b.media_type, b.size,
        b.raw_type, b.parts, b.data,
    )  # fmt: skip


# Every field in order (tests/engine/strategies/test_qwenpaw_builders.py compares with replace()).
_new_block = _positional_builder(Block)
_new_message = _positional_builder(Message)

# Enum members read once: on Python 3.11 ``BlockKind.TOOL_RESULT`` is a descriptor call
# (~0.2 us), and every appended message's blocks are tested (``after_append``, and
# ``_over_limit`` for each message the pruning looks at).
_USE, _RESULT, _TEXT = BlockKind.TOOL_USE, BlockKind.TOOL_RESULT, BlockKind.TEXT


STRATEGY = QwenPaw
