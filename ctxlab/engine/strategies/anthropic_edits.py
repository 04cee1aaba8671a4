"""Anthropic API context editing: ``clear_thinking_20251015`` + ``clear_tool_uses_20250919``.

Where it runs: on Anthropic's server, before every Messages request reaches the model
(beta header ``context-management-2025-06-27``, request field ``context_management``).
The client keeps and sends the full history; the server edits a copy. So every edit here
is a *request view*: recomputed for each request from the full history and never
persisted (the ``ReplayContext`` shows the edited request; ``ctx.original(i)`` and this
strategy's ``full_tokens`` keep the unedited history, like BaseAgent's prune).

Sources: https://platform.claude.com/docs/en/build-with-claude/context-editing (options
tables, response shape, "clear_thinking_20251015 must be listed first"), the token-counting
page https://platform.claude.com/docs/en/build-with-claude/token-counting, and LangChain's
client-side mirror ``ClearToolUsesEdit``
(https://reference.langchain.com/python/langchain/agents/middleware/context_editing/ClearToolUsesEdit).

Readings (the docs are silent where marked "not documented"):

- Edits apply in ``edits`` order, thinking first (the docs require that order), so the tool
  trigger compares the prompt after thinking was cleared.
- ``trigger``: "Once the prompt exceeds this threshold" -> strictly greater (LangChain's
  mirror: ``tokens <= trigger`` returns). ``trigger.type`` may be ``input_tokens`` or
  ``tool_uses`` (the options table says both exist).
- ``keep``: the N most recent tool use/result pairs stay; everything older is cleared,
  oldest first. Whether excluded tools count towards N is not documented: by default they
  do (the plain reading "the N most recent pairs", and LangChain's mirror), the other
  reading is ``keep_counts_excluded=false``. A pair is a ``tool_use`` whose
  ``tool_result`` is in the history; a result without its use (orphan) and a use without a
  result are never cleared nor counted (the API rejects such a request).
- ``clear_at_least``: "If the API can't clear at least the specified amount, the strategy
  will not be applied" -> nothing is cleared in that request (a ``compact_skipped`` event).
  It does not make the server stop early once reached: ``keep`` says what stays after
  clearing. (LangChain's mirror differs on both points.)
- Placeholder text: not documented ("replaced with placeholder text so Claude knows it was
  removed"). Default ``[cleared]``, the text of LangChain's mirror; a parameter. A cleared
  tool input becomes ``{}`` (LangChain's mirror: ``args = {}``); not documented either.
- ``clear_thinking_20251015``: ``keep`` counts assistant turns *with thinking* (a turn runs
  from one user request to the next and may span many tool calls); thinking blocks
  (``thinking`` and ``redacted_thinking``) of older turns are removed. Without the edit
  the API keeps the last turn's thinking only (keep 1), so ``clear_thinking=false`` still
  applies keep 1, without an applied edit to report.
- Token counting: "thinking blocks from previous assistant turns are ignored and do not
  count toward input tokens"; thinking the edit keeps does count (the response reports
  ``cleared_input_tokens`` for cleared thinking). The default keep 1 gives exactly that
  rule inside a tool loop; ``strip_prior_thinking=true`` applies it literally (models that
  strip prior thinking before anything else, e.g. Haiku and pre-Opus-4.5 models).
- Estimator: Claude's tokenizer has no local copy; the reference counts (cl100k, same
  rule as the rest of the lab) times ``token_ratio`` (half-up per message) stand in.
- Events: one per edit whenever the request view changes; detail carries that request's
  ``applied_edits`` entry (``cleared_tool_uses`` / ``cleared_thinking_turns`` are all the
  items cleared in that request, as the server reports them, not only the new ones;
  ``cleared_input_tokens`` is their reference count times the ratio).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.model import Block, BlockKind, Message, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import ReferenceEstimator, Strategy
from ..tokens.cl100k import block_text

if TYPE_CHECKING:
    from ..core.context import Action
    from ..core.context_view import ContextView

TOOL_EDIT = "clear_tool_uses_20250919"
THINKING_EDIT = "clear_thinking_20251015"
DEFAULT_PLACEHOLDER = "[cleared]"
CLEARED_INPUT: dict[str, Any] = {}
THINKING_RAW_TYPES = frozenset({"thinking", "redacted_thinking"})
_TOOL_EDIT_PATH = f"context_management.edits[{TOOL_EDIT}]"
_THINKING_EDIT_PATH = f"context_management.edits[{THINKING_EDIT}]"


def is_thinking(block: Block) -> bool:
    return block.kind is BlockKind.THINKING or (
        block.kind is BlockKind.OPAQUE and block.raw_type in THINKING_RAW_TYPES
    )


@dataclass(slots=True)
class _Pair:
    """One tool use/result pair, ordered by the position of its tool_use."""

    use_index: int
    use_pos: int
    tool_id: str
    name: str
    result_index: int
    saving: int  # reference tokens the clearing saves (result, plus input when cleared)
    clears_input: bool
    excluded: bool

    @property
    def order(self) -> tuple[int, int]:
        return (self.use_index, self.use_pos)


@dataclass(slots=True)
class _ThinkingTurn:
    turn: int  # source index of the user request that opened the turn (-1: none)
    indexes: list[int] = field(default_factory=list)  # its messages carrying thinking


@dataclass(frozen=True, slots=True)
class _View:
    """What the request view clears in one message."""

    results: frozenset[str] = frozenset()
    inputs: frozenset[str] = frozenset()
    thinking: bool = False

    def __bool__(self) -> bool:
        return bool(self.results or self.inputs or self.thinking)


_EMPTY = _View()


@dataclass(slots=True)
class _State:
    uses: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # id -> index, pos, name
    pairs: list[_Pair] = field(default_factory=list)
    paired: set[str] = field(default_factory=set)
    clearable_pos: list[int] = field(default_factory=list)  # pairs' positions, not excluded
    saving_prefix: list[int] = field(default_factory=lambda: [0])  # Σ saving of clearable pairs[:k]
    turns: list[_ThinkingTurn] = field(default_factory=list)
    thinking_prefix: list[int] = field(default_factory=lambda: [0])  # Σ saving of turns[:k]
    view: dict[int, _View] = field(default_factory=dict)  # index -> what the view clears
    delta: dict[int, int] = field(default_factory=dict)  # index -> full tokens - view tokens
    delta_total: int = 0
    tool_cut: int = 0  # _pairs[:cut] (non-excluded) are cleared in the current view
    thinking_cut: int = 0  # _turns[:cut] have their thinking cleared
    resync: bool = False  # a pair arrived out of order: rebuild the view from scratch
    skipped: bool = False


class AnthropicEditsStrategy(ReferenceEstimator, Strategy):
    name: ClassVar[str] = "anthropic_edits"
    State = _State
    label: ClassVar[str] = "Anthropic API context editing (clear_tool_uses + clear_thinking)"
    description: ClassVar[str] = (
        "Anthropic Messages API context_management (beta context-management-2025-06-27), "
        "applied server-side to every request: clear_thinking_20251015 keeps the thinking of "
        "the last N assistant turns; clear_tool_uses_20250919, once the prompt exceeds the "
        "trigger, replaces every tool result but the last `keep` with a placeholder "
        "(optionally the tool inputs too), unless it would reclaim less than clear_at_least. "
        "The client keeps the full history, so nothing is persisted."
    )
    estimator: ClassVar[str] = (
        "reference cl100k counts (Claude's tokenizer has no local copy) x token_ratio, "
        "half-up per message"
    )
    WINDOW = "context_window"
    WINDOW_FOLLOWS = {"trigger": 100_000 / 200_000}
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "trigger",
            100_000,
            "Clear tool uses once the prompt strictly exceeds this (input tokens, or tool "
            "use/result pairs when trigger_type is tool_uses).",
            min=0,
            origin=f"{_TOOL_EDIT_PATH}.trigger.value",
        ),
        Param(
            "trigger_type",
            "input_tokens",
            "What the trigger counts.",
            "str",
            choices=("input_tokens", "tool_uses"),
            origin=f"{_TOOL_EDIT_PATH}.trigger.type",
        ),
        Param(
            "keep",
            3,
            "Most recent tool use/result pairs never cleared.",
            min=0,
            origin=f"{_TOOL_EDIT_PATH}.keep.value",
        ),
        Param(
            "clear_at_least",
            0,
            "Clear nothing unless at least this many input tokens would be reclaimed "
            "(0 = not set).",
            min=0,
            origin=f"{_TOOL_EDIT_PATH}.clear_at_least.value",
        ),
        Param(
            "exclude_tools",
            [],
            "Tool names whose uses and results are never cleared.",
            "list",
            origin=f"{_TOOL_EDIT_PATH}.exclude_tools",
        ),
        Param(
            "clear_tool_inputs",
            False,
            "Also clear the tool_use input of cleared pairs: true for every tool, or a list "
            "of tool names.",
            "json",
            origin=f"{_TOOL_EDIT_PATH}.clear_tool_inputs",
        ),
        Param(
            "keep_counts_excluded",
            True,
            "Excluded tools' pairs count towards keep (not documented; false: keep counts "
            "clearable pairs only).",
            "bool",
            origin="replay reading (the docs do not say)",
        ),
        Param(
            "placeholder",
            DEFAULT_PLACEHOLDER,
            "Text replacing a cleared tool result (the server's text is not documented; "
            "LangChain's mirror uses [cleared]).",
            "str",
            origin="server-side placeholder (undocumented)",
        ),
        Param(
            "clear_thinking",
            True,
            "Send the clear_thinking_20251015 edit (false: the API default, keep 1, applies "
            "without an applied edit).",
            "bool",
            origin=f"{_THINKING_EDIT_PATH} present",
        ),
        Param(
            "thinking_keep",
            1,
            "Assistant turns with thinking whose thinking blocks are kept (the most recent).",
            min=1,
            origin=f"{_THINKING_EDIT_PATH}.keep.value",
        ),
        Param(
            "thinking_keep_all",
            False,
            'Keep every thinking block (keep: "all").',
            "bool",
            origin=f'{_THINKING_EDIT_PATH}.keep = "all"',
        ),
        Param(
            "strip_prior_thinking",
            False,
            "The model drops thinking of previous turns before counting (token-counting "
            "rule; Haiku and pre-Opus-4.5 models). Off: kept thinking counts.",
            "bool",
            origin="model behaviour (token counting docs)",
        ),
        Param(
            "token_ratio",
            1.0,
            "Claude tokens per reference (cl100k) token; calibrate from reported usage.",
            "float",
            min=0.1,
            max=10.0,
            origin="replay estimator scale (no local Claude tokenizer)",
        ),
        Param(
            "context_window",
            200_000,
            "Model context window (overflow is judged against it).",
            min=1_000,
            origin="model context window",
        ),
        Param(
            "max_tokens",
            4096,
            "Request max_tokens, shown as the output reserve (the edits ignore it).",
            min=0,
            origin="max_tokens (request body)",
        ),
    )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        inputs = self.params["clear_tool_inputs"]
        if not isinstance(inputs, bool) and not (
            isinstance(inputs, list) and all(isinstance(n, str) for n in inputs)
        ):
            raise ValueError(
                f"clear_tool_inputs={inputs!r} is not valid (true, false or a list of tool names)"
            )
        if not all(isinstance(n, str) for n in self.params["exclude_tools"]):
            raise ValueError("exclude_tools must be a list of tool names")
        self._ratio = float(self.params["token_ratio"])
        self._inputs_all = inputs is True
        self._inputs_names = frozenset(inputs) if isinstance(inputs, list) else frozenset()
        self._excluded = frozenset(self.params["exclude_tools"])
        self._placeholder_ref = self.reference_text(str(self.params["placeholder"]))

    # --- estimator ----------------------------------------------------------------------
    def scale(self, reference_tokens: int) -> int:
        """Reference tokens -> estimated Claude tokens (half-up)."""
        if self._ratio == 1.0:
            return reference_tokens
        return int(reference_tokens * self._ratio + 0.5)

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_window"])

    def threshold(self, ctx: ContextView) -> int | None:
        if self.params["trigger_type"] != "input_tokens":
            return None
        return int(self.params["trigger"])

    def output_reserve(self, ctx: ContextView) -> int:
        return int(self.params["max_tokens"])

    # --- state --------------------------------------------------------------------------
    def full_tokens(self, ctx: ContextView) -> int:
        """The unedited request (what the client sends) under this estimator."""
        st: _State = ctx.state
        return ctx.request_tokens() + st.delta_total

    # --- hooks --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        msg = ctx.original(index)
        if msg.role is Role.ASSISTANT:
            self._note_assistant(ctx, index, msg)
        for block in msg.blocks:
            if block.kind is BlockKind.TOOL_RESULT:
                self._note_result(ctx, index, block)

    def _note_assistant(self, ctx: ContextView, index: int, msg: Message) -> None:
        st: _State = ctx.state
        thinking = 0
        has_thinking = False
        for pos, block in enumerate(msg.blocks):
            if block.kind is BlockKind.TOOL_USE and block.tool_id:
                st.uses.setdefault(block.tool_id, (index, pos, block.tool_name))
            elif is_thinking(block):
                thinking += ctx.reference.text(block_text(block))  # redacted: size only, 0
                has_thinking = True
        if not has_thinking:
            return
        turn = ctx.turn_start if ctx.turn_start is not None else -1
        if not st.turns or st.turns[-1].turn != turn:
            st.turns.append(_ThinkingTurn(turn))
            st.thinking_prefix.append(st.thinking_prefix[-1])
        st.turns[-1].indexes.append(index)
        st.thinking_prefix[-1] += thinking

    def _note_result(self, ctx: ContextView, index: int, block: Block) -> None:
        st: _State = ctx.state
        use = st.uses.get(block.tool_id)
        if use is None:
            return  # an orphan result (no tool_use in the history): not a pair
        if block.tool_id in st.paired:
            return  # a second result for the same use: the first one makes the pair
        st.paired.add(block.tool_id)
        use_index, use_pos, name = use
        name = name or block.tool_name
        clears_input = self._inputs_all or name in self._inputs_names
        saving = ctx.reference.text(block_text(block)) - self._placeholder_ref
        if clears_input:
            saving += self._input_saving(ctx, ctx.original(use_index).blocks[use_pos])
        pair = _Pair(
            use_index, use_pos, block.tool_id, name, index, saving, clears_input,
            excluded=name in self._excluded,
        )  # fmt: skip
        pairs = st.pairs
        if not pairs or pairs[-1].order <= pair.order:
            pairs.append(pair)
            self._index_pair(st, len(pairs) - 1)
            return
        # A result answering an older call than the last pair's (parallel calls answered
        # out of order): re-index from where it lands, usually the last few pairs.
        at = bisect.bisect_right(pairs, pair.order, key=lambda p: p.order)
        pairs.insert(at, pair)
        del st.saving_prefix[at + 1 :]
        del st.clearable_pos[bisect.bisect_left(st.clearable_pos, at) :]
        for pos in range(at, len(pairs)):
            self._index_pair(st, pos)
        # Pairs below the current cut keep their positions unless it landed among them;
        # only then does the cleared set shift and the view need a rebuild.
        if at < st.tool_cut:
            st.resync = True

    def _input_saving(self, ctx: ContextView, use: Block) -> int:
        cleared = replace(use, tool_input=CLEARED_INPUT)
        return ctx.reference.text(block_text(use)) - ctx.reference.text(block_text(cleared))

    def _index_pair(self, st: _State, pos: int) -> None:
        pair = st.pairs[pos]
        saving = 0 if pair.excluded else pair.saving
        st.saving_prefix.append(st.saving_prefix[-1] + saving)
        if not pair.excluded:
            st.clearable_pos.append(pos)

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        full = self.full_tokens(ctx)
        thinking_cut = self._thinking_target(ctx)
        after_thinking = full - self.scale(st.thinking_prefix[thinking_cut])
        tool_cut = self._tool_target(ctx, after_thinking)
        self._apply(ctx, thinking_cut, tool_cut, full=full)

    # --- what to clear ------------------------------------------------------------------
    def _thinking_target(self, ctx: ContextView) -> int:
        """How many of the oldest thinking turns have their thinking cleared."""
        st: _State = ctx.state
        turns = len(st.turns)
        keep_all = self.params["clear_thinking"] and self.params["thinking_keep_all"]
        keep = int(self.params["thinking_keep"]) if self.params["clear_thinking"] else 1
        cut = 0 if keep_all else max(0, turns - keep)
        if self.params["strip_prior_thinking"] and turns:
            current = ctx.turn_start if ctx.turn_start is not None else -1
            cut = max(cut, turns - 1 if st.turns[-1].turn == current else turns)
        return cut

    def _tool_target(self, ctx: ContextView, after_thinking: int) -> int:
        """``_pairs[:cut]`` (non-excluded) are cleared in this request; 0 = no clearing."""
        st: _State = ctx.state
        pairs = len(st.pairs)
        measured = after_thinking if self.params["trigger_type"] == "input_tokens" else pairs
        trigger = int(self.params["trigger"])
        if measured <= trigger:
            st.skipped = False
            return 0
        keep = int(self.params["keep"])
        if self.params["keep_counts_excluded"]:
            cut = max(0, pairs - keep)
        else:
            clearable = len(st.clearable_pos) - keep
            cut = st.clearable_pos[clearable - 1] + 1 if clearable > 0 else 0
        wanted = int(self.params["clear_at_least"])
        reclaimed = self.scale(st.saving_prefix[cut])
        if cut and wanted and reclaimed < wanted:
            if not st.skipped:
                ctx.emit(
                    "compact_skipped",
                    reason="clear_at_least not reachable: the edit is not applied",
                    type=TOOL_EDIT,
                    input_tokens=after_thinking,
                    trigger=trigger,
                    clearable_tool_uses=self._cleared_count(st, cut),
                    clearable_input_tokens=reclaimed,
                    clear_at_least=wanted,
                )
            st.skipped = True
            return 0
        st.skipped = False
        return cut

    def _cleared_count(self, st: _State, cut: int) -> int:
        return bisect.bisect_left(st.clearable_pos, cut)

    # --- applying the view --------------------------------------------------------------
    def _desired(self, st: _State, thinking_cut: int, tool_cut: int) -> dict[int, _View]:
        """Index -> target view, for every message whose view changes. Only the items
        between the old and the new cut change (both cuts only grow while the history
        does), so a request costs O(changes), not O(history)."""
        target: dict[int, _View] = {}

        def view(index: int) -> _View:
            return target.get(index, self._current(st, index))

        if st.resync:  # pair order changed under the cut: rebuild from nothing
            st.resync = False
            target = dict.fromkeys(st.view, _EMPTY)
            st.thinking_cut = st.tool_cut = 0
        clearing = thinking_cut > st.thinking_cut
        lo, hi = sorted((st.thinking_cut, thinking_cut))
        for turn in st.turns[lo:hi]:
            for index in turn.indexes:
                target[index] = replace(view(index), thinking=clearing)
        clearing = tool_cut > st.tool_cut
        lo, hi = sorted((st.tool_cut, tool_cut))
        for pair in st.pairs[lo:hi]:
            if pair.excluded:
                continue
            ids = {pair.tool_id}
            old = view(pair.result_index)
            results = old.results | ids if clearing else old.results - ids
            target[pair.result_index] = replace(old, results=results)
            if pair.clears_input:
                old = view(pair.use_index)
                inputs = old.inputs | ids if clearing else old.inputs - ids
                target[pair.use_index] = replace(old, inputs=inputs)
        return {i: v for i, v in target.items() if v != self._current(st, i)}

    def _apply(self, ctx: ContextView, thinking_cut: int, tool_cut: int, *, full: int) -> None:
        """Bring the live context to the target view: lifted clearings first, then each
        edit in request order (thinking, then tool uses), one event each."""
        st: _State = ctx.state
        target = self._desired(st, thinking_cut, tool_cut)
        st.thinking_cut, st.tool_cut = thinking_cut, tool_cut
        if not target:
            return
        lifted = sorted(i for i, view in target.items() if not view)
        if lifted:
            with ctx.action(
                "restore_request", reason="request view recomputed from the full history",
                input_tokens=full,
            ) as act:  # fmt: skip
                for i in lifted:
                    self._show(ctx, act, i, _EMPTY, Fate.RESTORED)
        thinking = sorted(
            i for i, view in target.items() if view.thinking and not self._current(st, i).thinking
        )
        if thinking:
            with ctx.action(
                "clear_thinking", reason="thinking of older assistant turns cleared (request view)",
                input_tokens=full, applied_edit=self._thinking_edit(st, thinking_cut),
            ) as act:  # fmt: skip
                for i in thinking:
                    self._show(
                        ctx, act, i, replace(self._current(st, i), thinking=True), Fate.PRUNED
                    )
        rest = sorted(i for i, view in target.items() if view and view != self._current(st, i))
        if rest:
            with ctx.action(
                "clear_tool_uses", reason="old tool results cleared (request view)",
                input_tokens=full, trigger=int(self.params["trigger"]),
                applied_edit=self._tool_edit(st, tool_cut),
            ) as act:  # fmt: skip
                for i in rest:
                    self._show(ctx, act, i, target[i], Fate.PRUNED)

    def _current(self, st: _State, index: int) -> _View:
        return st.view.get(index, _EMPTY)

    def _show(self, ctx: ContextView, act: Action, index: int, view: _View, fate: Fate) -> None:
        st: _State = ctx.state
        original = ctx.original(index)
        act.replace(index, _render(original, view, str(self.params["placeholder"])), fate)
        if view:
            st.view[index] = view
        else:
            st.view.pop(index, None)
        full = self.scale(ctx.reference.message_of(original)) if view else 0
        delta = full - ctx.tokens(index) if view else 0
        st.delta_total += delta - st.delta.get(index, 0)
        if delta:
            st.delta[index] = delta
        else:
            st.delta.pop(index, None)

    def _thinking_edit(self, st: _State, cut: int) -> dict[str, Any] | None:
        """The ``applied_edits`` entry the response reports (None: API default, no edit)."""
        if not self.params["clear_thinking"]:
            return None
        return {
            "type": THINKING_EDIT,
            "cleared_thinking_turns": cut,
            "cleared_input_tokens": self.scale(st.thinking_prefix[cut]),
        }

    def _tool_edit(self, st: _State, cut: int) -> dict[str, Any]:
        return {
            "type": TOOL_EDIT,
            "cleared_tool_uses": self._cleared_count(st, cut),
            "cleared_input_tokens": self.scale(st.saving_prefix[cut]),
        }


def _render(original: Message, view: _View, placeholder: str) -> Message:
    """``original`` with the view's clearing applied (the original itself when none)."""
    if not view:
        return original
    blocks: list[Block] = []
    for block in original.blocks:
        if view.thinking and is_thinking(block):
            continue
        if block.kind is BlockKind.TOOL_RESULT and block.tool_id in view.results:
            block = replace(block, text=placeholder, parts=())
        elif block.kind is BlockKind.TOOL_USE and block.tool_id in view.inputs:
            block = replace(block, tool_input=CLEARED_INPUT)
        blocks.append(block)
    return replace(original, blocks=tuple(blocks))


STRATEGY = AnthropicEditsStrategy
