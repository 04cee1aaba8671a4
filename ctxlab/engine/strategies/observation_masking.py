"""Observation masking of "The Complexity Trap" (SWE-agent ``LastNObservations``).

Source (read at a pinned commit, not a summary): the paper's SWE-agent fork
github.com/Recursive-Safeguarding/the-complexity-trap @ 1b07decf4ca4b5d722d25a57810fe18a2d8b60fb

- ``sweagent/agent/history_processors.py`` ``LastNObservations`` (``n``, ``polling``,
  ``always_keep_output_for_tags``, ``_get_omit_indices``, the placeholder text) and
  ``TagToolCallObservations`` (tags the observations of named tools ``keep_output``).
- ``config/default_no_demo_checkpoint_same_model_openhands_N=21_M=10_masking_M=10.yaml``:
  ``history_processors: - type: last_n_observations, n: 10`` (the paper's M = 10).
- ``tests/test_history_processors.py`` ``test_last_n_observations``: elided =
  observations - n - 1 ("extra -1 because instance template is kept"); ported below.
- Paper: arXiv 2508.21433 (keep the last M = 10 turns' observations verbatim).

What the original does: SWE-agent runs its history processors on a copy of the history
before every model query; the trajectory keeps every observation. ``LastNObservations``
lists the observation entries (the first is the instance template, the task), computes
``last_removed = max(0, (len(obs) // polling) * polling - n)`` and replaces the content
of ``obs[1:last_removed]`` with ``Old environment output: (<lines> lines omitted)``,
``<lines>`` = ``len(text.splitlines())`` of the replaced text. The boundary only moves
forward as observations arrive, so a masked observation stays masked in every later
request (the replay applies each mask once, as a persisting request-view edit).

Readings (where a transcript is not a SWE-agent history):

- An observation is a message carrying tool results (SWE-agent: one ``tool`` or
  ``observation`` entry per step). The task (the first user message) is the instance
  template: it counts as the first observation, as in SWE-agent, and is never masked.
  Later user messages without tool results are a person's words, not environment
  output: not observations.
- A message with several tool results (parallel calls) is one observation; each of its
  results is replaced by the placeholder with its own line count. Text blocks beside
  the results are kept (SWE-agent entries hold one text only).
- Tags: ``keep_output_tools`` is ``TagToolCallObservations.function_names`` with the
  ``keep_output`` tag that ``always_keep_output_for_tags`` honours: such an observation
  still counts towards ``n`` but is never masked. ``remove_output`` tags are set by no
  shipped config: not modelled.
- Estimator: masking decides by counting observations, never tokens; the curves use the
  lab's reference counts (cl100k), as SWE-agent's own cost accounting is per provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.model import Block, BlockKind, Message, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import ReferenceEstimator, Strategy

if TYPE_CHECKING:
    from ..core.context_view import ContextView

PLACEHOLDER = "Old environment output: ({lines} lines omitted)"
_ORIGIN = "history_processors[type=last_n_observations]"


def masked_text(text: str, placeholder: str = PLACEHOLDER) -> str:
    """The placeholder for ``text``; lines counted as Python's ``str.splitlines``."""
    return placeholder.replace("{lines}", str(len(text.splitlines())))


def omitted_count(observations: int, n: int, polling: int = 1) -> int:
    """How many observations after the template ``_get_omit_indices`` masks when the
    history holds ``observations`` of them (template included)."""
    last_removed = max(0, (observations // polling) * polling - n)
    return max(0, last_removed - 1)


def mask_message(message: Message, placeholder: str = PLACEHOLDER) -> Message:
    """``message`` with each tool result's output replaced by the placeholder."""
    blocks: list[Block] = []
    for block in message.blocks:
        if block.kind is BlockKind.TOOL_RESULT:
            # ``text`` is the model-visible output flattened, list-form parts included.
            block = replace(block, text=masked_text(block.text, placeholder), parts=())
        blocks.append(block)
    return replace(message, blocks=tuple(blocks))


@dataclass(slots=True)
class _State:
    observations: list[int] = field(default_factory=list)  # tool-result messages' indexes
    masked: int = 0  # observations[:masked] are masked (or kept by a tag)
    tool_names: dict[str, str] = field(default_factory=dict)  # tool_id -> name, from calls


class ObservationMaskingStrategy(ReferenceEstimator, Strategy):
    name: ClassVar[str] = "observation_masking"
    label: ClassVar[str] = "Observation masking (The Complexity Trap / SWE-agent, M=10)"
    description: ClassVar[str] = (
        "SWE-agent's LastNObservations history processor as used by 'The Complexity Trap' "
        "(arXiv 2508.21433): before every model query the tool observations older than the "
        "last n (M=10) are replaced by 'Old environment output: (N lines omitted)'; the "
        "task and the agent's own messages are kept verbatim and nothing is summarised."
    )
    estimator: ClassVar[str] = (
        "reference cl100k counts, per message (masking counts observations, not tokens)"
    )
    WINDOW = "context_window"
    State: ClassVar[type[Any]] = _State
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "n",
            10,
            "Most recent observations kept verbatim (the paper's M).",
            min=1,
            origin=f"{_ORIGIN}.n",
        ),
        Param(
            "polling",
            1,
            "Move the masking boundary only every `polling` observations (keeps between n "
            "and n + polling verbatim; for prompt caching).",
            min=1,
            origin=f"{_ORIGIN}.polling",
        ),
        Param(
            "keep_output_tools",
            [],
            "Tool names whose observations are never masked (they still count towards n).",
            "list",
            origin="history_processors[type=tag_tool_call_observations].function_names "
            "+ always_keep_output_for_tags",
        ),
        Param(
            "placeholder",
            PLACEHOLDER,
            "Text replacing a masked observation; {lines} = its number of lines.",
            "str",
            origin="LastNObservations.__call__ (f-string)",
        ),
        Param(
            "context_window",
            262_144,
            "Model context window (overflow is judged against it; masking ignores it). "
            "Default: Qwen3-Coder 480B, the paper's main model.",
            min=1_000,
            origin="model context window",
        ),
    )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        if not all(isinstance(n, str) for n in self.params["keep_output_tools"]):
            raise ValueError("keep_output_tools must be a list of tool names")
        self.keep_tools = frozenset(self.params["keep_output_tools"])

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        return int(self.params["context_window"])

    # --- hooks --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        msg = ctx.original(index)
        if msg.role is Role.ASSISTANT:
            for block in msg.blocks:
                if block.kind is BlockKind.TOOL_USE and block.tool_id:
                    st.tool_names.setdefault(block.tool_id, block.tool_name)
            return
        if any(b.kind is BlockKind.TOOL_RESULT for b in msg.blocks):
            st.observations.append(index)

    def before_call(self, ctx: ContextView) -> None:
        # +1: the instance template (the task) is SWE-agent's first observation.
        st: _State = ctx.state
        target = omitted_count(
            len(st.observations) + 1, int(self.params["n"]), int(self.params["polling"])
        )
        if target <= st.masked:
            return
        new = [i for i in st.observations[st.masked : target] if not self._kept(ctx, i)]
        st.masked = target
        if not new:
            return
        placeholder = str(self.params["placeholder"])
        with ctx.action(
            "prune",
            reason=f"observation older than the last {self.params['n']} masked (request view)",
            n=int(self.params["n"]),
            masked_observations=target,
        ) as act:
            for i in new:
                act.replace(i, mask_message(ctx.original(i), placeholder), Fate.PRUNED)

    def _kept(self, ctx: ContextView, index: int) -> bool:
        st: _State = ctx.state
        if not self.keep_tools:
            return False
        for block in ctx.original(index).blocks:
            if block.kind is BlockKind.TOOL_RESULT:
                name = st.tool_names.get(block.tool_id) or block.tool_name
                if name in self.keep_tools:
                    return True
        return False


STRATEGY = ObservationMaskingStrategy
