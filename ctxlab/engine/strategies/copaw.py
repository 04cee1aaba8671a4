"""CoPaw 0.0.7 ``MemoryCompactionHook`` with ReMe 0.3.0.6b3 (``ReMeLight``), as coded.

Before each LLM call: ``left = threshold - tokens(system + summary)``; optionally compact
old tool results (off by default); ``check_context`` keeps a newest-first set within the
reserve, pulling in the tool_use message of every kept tool_result (the kept set may be
non-contiguous); an unaligned split falls back to the last <=3 aligned messages. The rest
is summarised (XML-tagged input, capped newest-first at 90 % of the threshold) and hidden.
A failed summary call stores ReMe's failure text ``[Compactor] failed: <error>`` as the
summary (it *overwrites* the previous one and the model sees it); an empty answer or an
empty formatted input stores "". Spec: docs/strategies/copaw.md. The compactor prompts are ReMe
0.3.0.6b3's own, byte for byte (``stages/prompts``, read from the wheel's
``components/compactor.yaml`` shipped in ``data/prompts``).

Original tests ported (tests/engine/strategies/test_copaw_ported.py): ReMe's
``tests/light/test_context_check.py`` (@ c911ec7), all 21 cases of ``context_check`` with
its invariants (reserve, order, count, tool pairs); that file targets a later ReMe, so its
exact-threshold case and its contiguous-partition invariant are asserted as 0.3.0.6b3
behaves (``total < threshold``; a kept result pulls in its far tool_use). CoPaw 0.0.7 ships
no tests of its compaction hook.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import BlockKind, Message
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..stages import agentscope, prompts
from ..stages.markers import QWENPAW_MARKER, REME_END_MARKER, reme_truncate_text
from ..stages.split import aligned
from ..tokens.qwen_tokens import bytes_floor4, qwen_counter
from ._copaw_format import CLIP, StoredCounts, formatted_count

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..core.context_view import ContextView
    from ..tokens.reference import ReferenceTokens


@dataclass(slots=True)
class _State:
    tool_names: dict[str, str] = field(default_factory=dict)  # tool_use id -> tool name
    compacted_upto: int = -1  # source indexes < this went through tool-result compaction
    skipping: bool = False  # the last check found system + summary over the threshold
    str_tokens: int = 0  # tokens of system + summary as one string
    # (system text, count of its line pieces but the last, that last piece): the system
    # prompt's share of ``_system_and_summary``, the same at every compaction
    system_pieces: tuple[str, int, str] | None = None


class CoPaw(Strategy):
    name = "copaw"
    label = "CoPaw 0.0.7 + ReMe 0.3.0.6b3"
    description = (
        "Before each LLM call, when history >= 75 % of the window minus system and summary, "
        "keeps the newest messages within a 10 % reserve (with the tool calls their results "
        "need) and summarises the rest into a structured checkpoint; a failed summary call "
        "replaces the previous one with ReMe's failure text. Optional tool-result "
        "compaction to 1000 characters."
    )
    WINDOW = "max_input_length"
    State = _State
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param("max_input_length", 131072, "Model input window in tokens.", "int",
              min=1024, max=10_000_000, origin="config.json agents.running.max_input_length"),
        Param("memory_compact_ratio", 0.75, "Compact when history >= window x ratio minus "
              "system and summary tokens.", "float", min=0.3, max=0.9,
              origin="config.json agents.running.memory_compact_ratio"),
        Param("memory_reserve_ratio", 0.1, "Newest messages kept within window x ratio.",
              "float", min=0.05, max=0.3,
              origin="config.json agents.running.memory_reserve_ratio"),
        Param("enable_tool_result_compact", False, "Cut old tool results to "
              "tool_result_threshold characters (head + tail) and save them to a file.",
              "bool", origin="config.json agents.running.enable_tool_result_compact"),
        Param("tool_result_compact_keep_n", 5, "The newest N messages are exempt from "
              "tool-result compaction.", "int", min=1, max=10,
              origin="config.json agents.running.tool_result_compact_keep_n"),
        Param("memory_compact_keep_recent", 3, "Fallback keep count when the split is not "
              "tool-aligned.", "int", min=0, max=100,
              origin="env COPAW_MEMORY_COMPACT_KEEP_RECENT (constant.py)"),
        Param("tool_result_threshold", 1000, "ReMe tool-result compaction limit in "
              "characters.", "int", min=10, max=10_000_000,
              origin="ReMeLight(tool_result_threshold=1000)"),
        Param("retention_days", 7, "ReMe offload file retention (no effect within a "
              "replay).", "int", min=0, max=3650, origin="ReMeLight(retention_days=7)"),
        Param("token_counter", "qwen2.5", "Message token counter: the Qwen2.5 tokenizer "
              "(shipped offline) or CoPaw's bytes//4 fallback.", "str",
              choices=("qwen2.5", "bytes4"), origin="copaw/agents/utils/token_counting.py"),
        Param("working_dir", "~/.copaw", "Working dir, as written in offload notices.",
              "str", origin="COPAW_WORKING_DIR"),
        Param("language", "zh", "Compactor prompt language (zh -> Chinese prompts).", "str",
              choices=("zh", "en"), origin="config.json agents.language"),
    )  # fmt: skip

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        super().__init__(params)
        self._qwen = qwen_counter() if self.params["token_counter"] == "qwen2.5" else None
        self.count_text = self._qwen.count if self._qwen is not None else bytes_floor4  # type: ignore[method-assign]

    @property
    def counts_qwen(self) -> bool:
        """Counts with the exact Qwen2.5 tokenizer (``prepare`` primes it)."""
        return self._qwen is not None and self._qwen.exact

    @property
    def estimator(self) -> str:  # type: ignore[override]
        if self._qwen is not None and self._qwen.exact:
            return "Qwen2.5 tokenizer, per block"
        return "utf-8 bytes // 4, per block"

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:  # replaced per instance in __init__
        return bytes_floor4(text)

    def count_message(self, message: Message) -> int:
        return agentscope.message_tokens(message, self.count_text, files_in_results=True)

    def message_counter(self, reference: ReferenceTokens, state: Any) -> Callable[[Message], int]:
        """``count_message``, an original's count stored at import when one was seeded
        (``_copaw_stored``): no original message is tokenized again."""
        qwen = self._qwen
        count = self.count_message
        if qwen is None or not qwen.exact:
            return count
        stored_of = qwen.message_value  # (the worker seeds them after making the replay)

        def counted(message: Message) -> int:
            stored: StoredCounts | None = stored_of(message)
            return stored.tokens if stored is not None else count(message)

        return counted

    def count_system(self, text: str, message: Message | None) -> int:
        return self.count_text(text)  # and with the summary as one string (before_call)

    def count_tools(self, tools: object) -> int:
        return 0

    def prepare(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        if self._qwen is not None:
            if not self._qwen.seeded_for(ctx.originals):  # (else each text is memoised)
                self._qwen.prime(_texts(ctx.originals), ends=(CLIP,))
                self._qwen.prime_joined(_tool_inputs(ctx.originals), ends=(CLIP,))
            self._qwen.prime([ctx.system_text])
        st.str_tokens = self._system_and_summary(ctx, ctx.summary)

    def _system_and_summary(self, ctx: ContextView, summary: str) -> int:
        """System + summary as one string (CoPaw counts them concatenated): the system zone
        holds the system alone (``count_system``), the summary zone the difference."""
        qwen = self._qwen
        if qwen is None or not qwen.exact:
            return self.count_text(ctx.system_text + summary)
        # The line pieces of system + summary are the system's but its last one, then
        # those of that last piece + summary (a cut depends on the two characters around
        # it): the former are counted once per replay.
        st: _State = ctx.state
        system = ctx.system_text
        held = st.system_pieces
        if held is None or held[0] != system:
            pieces = _line_pieces(system)
            last = pieces.pop() if pieces else ""
            qwen.prime(pieces)
            held = st.system_pieces = (system, sum(map(qwen.count, pieces)), last)
        return held[1] + self._count_by_lines(held[2] + summary)

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        return int(self.params["max_input_length"])

    def threshold(self, ctx: ContextView) -> int:
        return int(self.params["max_input_length"] * self.params["memory_compact_ratio"])

    def reserve(self) -> int:
        return int(self.params["max_input_length"] * self.params["memory_reserve_ratio"])

    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        for b in ctx.message(index).blocks:
            if b.kind is BlockKind.TOOL_USE:
                st.tool_names[b.tool_id] = b.tool_name

    # --- hook ---------------------------------------------------------------------------
    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        threshold = self.threshold(ctx)
        left = threshold - st.str_tokens
        if left <= 0:
            if not st.skipping:
                ctx.emit("compact_skipped", threshold=threshold, system_and_summary=st.str_tokens,
                         reason="left <= 0: system + summary exceed the threshold")  # fmt: skip
            st.skipping = True
            return
        st.skipping = False
        keep_n = int(self.params["tool_result_compact_keep_n"])
        if self.params["enable_tool_result_compact"] and keep_n > 0:
            self._compact_tool_results(ctx, ctx.live[:-keep_n])
        reserve = self.reserve()
        to_compact, to_keep, valid = self._check_context(ctx, left, reserve)
        if not to_compact:
            return
        detail: dict[str, Any] = {
            "threshold": threshold, "left": left, "reserve": reserve,
            "estimate": ctx.history_tokens, "system_and_summary": st.str_tokens,
            "kept": len(to_keep), "valid_split": valid,
            # the comparison that fired (catalogue.trigger_of): ReMe's context_check
            "trigger_measured": ctx.history_tokens, "trigger_measured_name": "history",
            "trigger_limit": left,
            "trigger_limit_name": f"threshold {threshold:,} − system and summary "
                                  f"{st.str_tokens:,} =",
        }  # fmt: skip
        if not valid:
            keep = int(self.params["memory_compact_keep_recent"])
            live = ctx.live
            while keep > 0 and not aligned(ctx, live[len(live) - keep :]):
                keep -= 1
            to_compact = live[: len(live) - keep] if keep > 0 else list(live)
            detail["fallback_keep"] = keep
        self._compact(ctx, to_compact, detail)

    def _check_context(
        self, ctx: ContextView, threshold: int, reserve: int
    ) -> tuple[list[int], list[int], bool]:
        """ReMe ``context_check``: newest-first within ``reserve``, pulling in the
        tool_use messages kept results depend on; the kept set may be non-contiguous."""
        live = ctx.live
        if not live:
            return [], [], True
        if ctx.history_tokens < threshold:
            return [], list(live), True
        use_at: dict[str, int] = {}
        for i in live:  # last occurrence wins
            for tid in ctx.ids(i)[0]:
                use_at[tid] = i
        keep: set[int] = set()
        acc = 0
        for i in reversed(live):
            if i in keep:
                continue
            tokens = ctx.tokens(i)
            if acc + tokens > reserve:
                break
            deps: set[int] = set()
            extra = 0
            for tid in ctx.ids(i)[1]:
                j = use_at.get(tid)
                if j is not None and j not in keep and j != i:  # per result id, as ReMe
                    deps.add(j)
                    extra += ctx.tokens(j)
            if acc + tokens + extra > reserve:
                break
            keep.add(i)
            keep.update(deps)
            acc += tokens + extra
        to_keep = [i for i in live if i in keep]
        to_compact = [i for i in live if i not in keep]
        return to_compact, to_keep, aligned(ctx, to_keep)

    def _compact_tool_results(self, ctx: ContextView, messages: list[int]) -> None:
        """ReMe ``ToolResultCompactor`` on ``messages`` (each message once: a
        compacted text carries both markers and is left alone afterwards)."""
        st: _State = ctx.state
        limit = int(self.params["tool_result_threshold"])
        todo = [i for i in messages if i >= st.compacted_upto]
        if messages:
            st.compacted_upto = max(st.compacted_upto, messages[-1] + 1)
        changed: list[tuple[int, Message, list[tuple[str, str]]]] = []
        for i in todo:
            msg = ctx.message(i)
            blocks = list(msg.blocks)
            files: list[tuple[str, str]] = []
            for bi, b in enumerate(blocks):
                if b.kind is not BlockKind.TOOL_RESULT:
                    continue
                name = b.tool_name or st.tool_names.get(b.tool_id, "")
                if b.parts:
                    parts = list(b.parts)
                    for pi, p in enumerate(parts):
                        if p.kind is BlockKind.TEXT:
                            new = self._offload(p.text, limit, name, i, bi, pi, msg, files)
                            if new is not None:
                                parts[pi] = replace(p, text=new)
                    if files:
                        flat = "\n".join(p.text for p in parts if p.text)
                        blocks[bi] = replace(b, parts=tuple(parts), text=flat)
                else:
                    new = self._offload(b.text, limit, name, i, bi, -1, msg, files)
                    if new is not None:
                        blocks[bi] = replace(b, text=new)
            if files:
                changed.append((i, replace(msg, blocks=tuple(blocks)), files))
        if not changed:
            return
        with ctx.action("tool_result_compact", reason="tool result over 1000 characters",
                        threshold_chars=limit) as act:  # fmt: skip
            for i, new_msg, files in changed:
                for path, full in files[1:]:
                    act.offload(path, full)
                act.replace(i, new_msg, Fate.OFFLOADED, offload_path=files[0][0],
                            offload_text=files[0][1])  # fmt: skip

    def _offload(
        self, text: str, limit: int, name: str, i: int, bi: int, pi: int, msg: Message,
        files: list[tuple[str, str]],
    ) -> str | None:  # fmt: skip
        if not text or (QWENPAW_MARKER in text and REME_END_MARKER in text) or len(text) <= limit:
            return None
        digest = hashlib.sha1(f"copaw:{i}:{bi}:{pi}".encode()).hexdigest()[:32]
        path = f"{self.params['working_dir']}/tool_result/{digest}.txt"
        header = f"# tool_name: {name}\n# created_at: {msg.timestamp or ''}\n# ---\n"
        files.append((path, header + text))
        return reme_truncate_text(text, limit) + f"\n\n[Full content saved to: {path}]"

    def _count_by_lines(self, text: str) -> int:
        """``count_text(text)``; with the exact tokenizer, as the sum of its line pieces
        (see ``_line_pieces``): a new summary repeats most lines of the previous one, and
        those are memoised."""
        qwen = self._qwen
        if qwen is None or not qwen.exact:
            return self.count_text(text)
        pieces = _line_pieces(text)
        qwen.prime(pieces)
        count = qwen.count
        return sum(count(p) for p in pieces)

    def _formatted(self, message: Message, tool_names: dict[str, str]) -> tuple[int, int]:
        """(``count_text``, UTF-8 size) of the message as the summariser input formats it
        (``agentscope.format_message`` in ReMe's style). With the exact tokenizer no text is
        made: an original's stored at import when its tool names are the same, else the
        count from its block texts' counts (``_copaw_format.formatted_count``: no second
        pass over them) and the size from the parts (``agentscope.formatted_size``)."""
        qwen = self._qwen
        if qwen is None or not qwen.exact:
            text = agentscope.format_message(
                message, style="reme", include_thinking=False, tool_names=tool_names
            )
            return self.count_text(text), len(text.encode("utf-8"))
        stored: StoredCounts | None = qwen.message_value(message)
        if stored is not None and stored.fits(tool_names):
            if stored.size is not None:
                return stored.formatted, stored.size
            count = stored.formatted  # (an entry of an earlier import: no size stored)
        else:
            count = formatted_count(qwen, message, tool_names)
        return count, agentscope.formatted_size(
            message, style="reme", include_thinking=False, tool_names=tool_names
        )

    def _compact(self, ctx: ContextView, to_compact: list[int], detail: dict[str, Any]) -> None:
        st: _State = ctx.state
        lang = prompts.lang_key(str(self.params["language"]))
        cap = int(self.params["max_input_length"] * self.params["memory_compact_ratio"] * 0.9)
        shown: list[int] = []
        sizes: list[int] = []  # their UTF-8 sizes formatted (the summariser input's size)
        used = 0
        for pos in range(len(to_compact) - 1, -1, -1):
            i = to_compact[pos]
            n, size = self._formatted(ctx.message(i), st.tool_names)
            if pos != len(to_compact) - 1 and used + n > cap:
                break
            shown.append(i)
            sizes.append(size)
            used += n
        shown.reverse()
        sizes.reverse()
        previous = ctx.summary
        previous_ref = ctx.summary_ref
        text = ""
        record = None
        if shown:  # (the formatted input is empty only without messages: a header each)
            request, remade = agentscope.compactor_call(
                strategy=self.name, lang=lang, system=prompts.REME_SYSTEM[lang],
                user=prompts.reme_user, messages=[(i, ctx.message(i)) for i in shown],
                previous=previous, style="reme", include_thinking=False,
                tool_names=st.tool_names, sizes=sizes,
            )  # fmt: skip
            record = ctx.summarize(request, messages=shown, input_text=remade)
            text = record.output
            if record.error:
                # ReMe's op framework (base_op._handle_failure) turns the raised error into
                # this text, and CoPaw stores it as the summary the model sees.
                text = f"{COMPACTOR_FAILED}{record.error}"
        ok = bool(text) and not (record is not None and record.error)
        summary_id = record.id if record is not None and ok else None
        rendered = prompts.REME_SUMMARY_TEMPLATE.format(summary=text).strip() if text else ""
        if not ok:
            reason = (record.error or "empty output") if record else "empty formatted input"
            ctx.emit("summary_failed", messages=to_compact,
                     summary_id=record.id if record else None, reason=reason,
                     previous_summary_lost=bool(previous), stored_summary=text)  # fmt: skip
        kind = "summarise" if ok else "drop"
        why = ("compacted into the summary" if ok
               else "summary failed: hidden without a summary; the previous summary is "
               "overwritten" + (" by the failure text" if text else ""))  # fmt: skip
        shown_set = set(shown)
        skipped = [i for i in to_compact if i not in shown_set]
        with ctx.action(kind, reason=why, cap=cap, summarised=len(shown) if ok else 0,
                        beyond_cap=len(skipped), **detail) as act:  # fmt: skip
            if ok:
                act.remove(shown, Fate.SUMMARISED)
                act.remove(skipped, Fate.DROPPED, reason="beyond the summariser input cap")
            else:
                act.remove(to_compact, Fate.DROPPED)
            combined = self._system_and_summary(ctx, text)
            ctx.set_summary(text, tokens=combined - ctx.system_tokens, rendered=rendered,
                            summary_id=summary_id,
                            # a summary repeats most lines of the previous one
                            rendered_ref=ctx.reference.text_by_lines(rendered))  # fmt: skip
            st.str_tokens = combined
            act.summary_id = summary_id
        if ok:
            check_summary_size(ctx, summary_rendered=rendered, replaced=to_compact,
                               summary_id=summary_id, previous_ref=previous_ref)  # fmt: skip


# ReMe 0.3.0.6b3 base_op._handle_failure: f"[{self.__class__.__name__}] failed: {e}"
COMPACTOR_FAILED = "[Compactor] failed: "


_LINE_START = re.compile(r"\n(?=\S)")


def _line_pieces(text: str) -> list[str]:
    r"""``text`` cut after every newline followed by non-whitespace. The Qwen2.5 count of
    the whole is the sum of the pieces' counts: no pre-tokenizer chunk runs past such a
    newline (``[\r\n]*`` and ``\s*[\r\n]+`` end there, the optional prefix of a letter
    run excludes ``\n``, ``\s+(?!\S)`` is tried after ``\s*[\r\n]+``), NFC composes
    nothing with a newline, and no added token contains one or strips whitespace.
    Python's ``\S`` is narrower than the tokenizer's (``\x1c``-``\x1f`` count as space
    here), so a cut is never made where the tokenizer would see whitespace."""
    bounds = [0, *(m.end() for m in _LINE_START.finditer(text)), len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def _tool_inputs(messages: tuple[Message, ...]) -> list[tuple[str, str]]:
    """(name, input) of every tool call: the estimator counts ``name + input``."""
    return [
        (b.tool_name, b.input_json)
        for m in messages
        for b in m.blocks
        if b.kind is BlockKind.TOOL_USE
    ]


def _texts(messages: tuple[Message, ...]) -> list[str]:
    """Every other string the per-block estimator will count (one tokenizer pass)."""
    out: list[str] = []
    for m in messages:
        for b in m.blocks:
            if b.kind in (BlockKind.TEXT, BlockKind.THINKING):
                out.append(b.text)
            elif b.kind is BlockKind.TOOL_RESULT:
                if b.parts:
                    out.extend(p.text for p in b.parts if p.text)
                else:
                    out.append(b.text)
            elif b.kind is BlockKind.MEDIA and b.text:
                out.append(b.text)
    return out


STRATEGY = CoPaw
