"""LLM summary baseline and hybrid of "The Complexity Trap" (SWE-agent ``SummarizeEveryNTurns``).

Source (read at a pinned commit, not a summary): the paper's SWE-agent fork
github.com/Recursive-Safeguarding/the-complexity-trap @ 1b07decf4ca4b5d722d25a57810fe18a2d8b60fb

- ``sweagent/agent/history_processors.py`` ``SummarizeEveryNTurns`` (``n``,
  ``keep_last_m_turns``, ``enable_static_checkpointing``, ``extract_action_from_turns``,
  ``max_kept_action_length``, ``max_kept_reasoning_length``, ``omit_turns``,
  ``_extract_turns_from``, ``_omit_turns``, ``_summarize_turns``, ``__call__``).
- ``sweagent/agent/models.py`` ``query_for_summary`` (system = the summary template, one
  user message) and ``_construct_user_prompt_for_summary`` (``<TURN-i>`` blocks, the call
  to action); the model is the agent's own ("same_model").
- ``config/default_no_demo_checkpoint_same_model_openhands_N=21_M=10.yaml`` (the summary
  baseline: ``n: 21, keep_last_m_turns: 10, enable_static_checkpointing: true``, its
  ``summary_system_template``, the OpenHands LLMSummarizing prompt) and
  ``config/default_no_demo_checkpoint_same_model_openhands_N=21_M=10_masking_M=10.yaml``
  (the hybrid: the same processor followed by ``last_n_observations, n: 10``).
- ``tests/test_history_processors.py``: the SummarizeEveryNTurns cases, ported to
  ``tests/engine/strategies/test_complexity_trap_summary.py``.
- Paper: arXiv 2508.21433.

What the original does, before every model query, on a copy of the history:
a turn is an (assistant, tool) pair; ``unprocessed = turns[checkpoints * n:]``. When
``len(unprocessed) >= n + keep_last_m_turns`` the first ``n`` unprocessed turns are sent
to the model with the problem statement (first checkpoint) or the previous checkpoint as
context, and the request becomes ``system, task, "Checkpoint for the last n turns:\\n"
+ summary, the remaining unprocessed turns``. One checkpoint per query at most. In the
hybrid, ``LastNObservations(n=10)`` then masks the view's observations older than the
last 10 (the task counts as the first observation; checkpoints are not observations). The
summary call always sees the raw observations (it reads the unprocessed history).

Quirks kept:

- Static checkpointing shows only the newest checkpoint in the request that creates it,
  but the cache it keeps appends every checkpoint, and the queries after it return
  ``cache + unprocessed turns``: from the next query on, every checkpoint so far is in the
  request. The replay re-renders the summary slot at that query (no event: nothing is
  compacted; the curve shows it). ``enable_static_checkpointing: false`` always shows all.
- ``max_kept_reasoning_length`` cuts at spaces and appends ``...`` without a newline.
- A failing summary call raises in the original (the run stops); the replay records
  ``summary_failed`` and leaves the history as it is, retrying at the next query.

Readings (a transcript is not a SWE-agent history):

- A turn is an assistant message followed by the message(s) carrying its tool results;
  consecutive tool-result messages answer one assistant message (parallel calls) and
  form one turn. The turn's ``ACTION:`` line is each tool call as ``name json(input)``
  (SWE-agent renders its parsed command); text blocks are the ``content`` (the thought).
- The task is the first user message (``history[1]``). Messages that are not part of a
  turn (a person's later words, an answer without tool calls) vanish from the original's
  view once a checkpoint exists; the replay drops those inside a summarised span and
  keeps later ones (the original would drop them too: SWE-agent histories have none).
- Estimator: the decision counts turns, never tokens; curves use the lab's reference
  counts (cl100k).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import BlockKind, Message, Role
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, Section, SummaryRequest
from ..tokens.reference import safe_split
from .observation_masking import ObservationMaskingStrategy, mask_message, omitted_count

if TYPE_CHECKING:
    from ..core.context_view import ContextView

SUMMARY_SYSTEM_TEMPLATE = """You are maintaining a context-aware state summary for an interactive agent. You will be given a list of events corresponding to actions taken by the agent, and the most recent previous summary if one exists. Track:

USER_CONTEXT: (Preserve essential user requirements, goals, and clarifications in concise form)

COMPLETED: (Tasks completed so far, with brief results)
PENDING: (Tasks that still need to be done)
CURRENT_STATE: (Current variables, data structures, or relevant state)

For code-specific tasks, also include:
CODE_STATE: (File paths, function signatures, data structures)
TESTS: (Failing cases, error messages, outputs)
CHANGES: (Code edits, variable updates)
DEPS: (Dependencies, imports, external calls)
VERSION_CONTROL_STATUS: (Repository state, current branch, PR status, commit history)

PRIORITIZE:
1. Adapt tracking format to match the actual task type
2. Capture key user requirements and goals
3. Distinguish between completed and pending tasks
4. Keep all sections concise and relevant

SKIP: Tracking irrelevant details for the current task type

Example formats:

For code tasks:
USER_CONTEXT: Fix FITS card float representation issue
COMPLETED: Modified mod_float() in card.py, all tests passing
PENDING: Create PR, update documentation
CODE_STATE: mod_float() in card.py updated
TESTS: test_format() passed
CHANGES: str(val) replaces f"{val:.16G}"
DEPS: None modified
VERSION_CONTROL_STATUS: Branch: fix-float-precision, Latest commit: a1b2c3d"""
CALL_TO_ACTION = (
    "Now summarize the above turns, following the instructions from the beginning of the "
    "prompt. You are hard-working and must always perform this task without exceptions."
)
CHECKPOINT = "Checkpoint for the last {k} turns:\n{summary}"
OMITTED = "Previous {k} turns omitted for brevity."
ACTIONS_SUFFIX = (
    "You took the following actions in the checkpoint above:\n<ACTIONS>\n{actions}\n</ACTIONS>"
)
# The template's tracked fields, for the offline summariser.
SECTIONS = (
    Section("USER_CONTEXT:", "goal"),
    Section("COMPLETED:", "done"),
    Section("PENDING:", "next"),
    Section("CURRENT_STATE:", "in_progress"),
    Section("CODE_STATE:", "critical"),
    Section("TESTS:", "note"),
    Section("CHANGES:", "decisions"),
    Section("DEPS:", "constraints"),
    Section("VERSION_CONTROL_STATUS:", "none"),
)
_ORIGIN = "history_processors[type=summarize_every_n_turns]"


@dataclass(slots=True)
class Turn:
    """One (assistant, tool results) pair: source indexes. An assistant turn split over
    several messages (text, then calls) is one entry."""

    assistants: list[int]
    results: list[int] = field(default_factory=list)


def _words_cut(text: str, limit: int) -> str:
    return " ".join(text.split(" ")[:limit])


def render_item(role: str, content: str, action: str | None, max_reasoning: int) -> str:
    """One history item as ``_construct_user_prompt_for_summary`` writes it."""
    out = ""
    if max_reasoning == 0:
        out += ""
    elif max_reasoning == -1 or len(content.split(" ")) <= max_reasoning:
        out += f"{role.upper()}: {content}\n"
    else:
        out += f"{role.upper()}: {_words_cut(content, max_reasoning)}..."
    if action is not None:
        out += f"ACTION: {action}\n"
    return out


def cut_action(action: str, max_action: int) -> str:
    if max_action == 0:
        return ""
    if max_action == -1 or len(action.split(" ")) <= max_action:
        return action
    return _words_cut(action, max_action) + "..."


def message_content(message: Message) -> str:
    """The entry's ``content``: its tool outputs for a result, else its text blocks."""
    results = any(b.kind is BlockKind.TOOL_RESULT for b in message.blocks)
    kind = BlockKind.TOOL_RESULT if results else BlockKind.TEXT
    return "\n".join(b.text for b in message.blocks if b.kind is kind)


def message_action(message: Message) -> str | None:
    """The assistant entry's ``action`` (reading: each tool call as ``name json(input)``)."""
    calls = [b for b in message.blocks if b.kind is BlockKind.TOOL_USE]
    if not calls:
        return None
    return "\n".join(
        f"{b.tool_name} {json.dumps(b.tool_input, ensure_ascii=False, sort_keys=True)}"
        for b in calls
    )


@dataclass(slots=True)
class _State:
    task: int | None = None  # source index of history[1]
    turns: list[Turn] = field(default_factory=list)
    open: Turn | None = None  # the assistant message awaiting its results
    done: int = 0  # turns[:done] are summarised (checkpoints * n)
    checkpoints: list[str] = field(default_factory=list)  # rendered, oldest first
    shows_all: bool = True  # whether the summary slot holds every checkpoint
    masked_ids: set[int] = field(default_factory=set)
    loose: list[int] = field(default_factory=list)  # appended, neither task nor turn
    # reference counts of checkpoints[i] + "\n\n", counted once each (see _joined_reference)
    separated_refs: list[int] = field(default_factory=list)
    scaled: list[int] = field(default_factory=list)  # the estimator's count of each checkpoint


class ComplexityTrapSummaryStrategy(ObservationMaskingStrategy):
    name: ClassVar[str] = "complexity_trap_summary"
    label: ClassVar[str] = "LLM summary / hybrid (The Complexity Trap / SWE-agent, N=21, M=10)"
    description: ClassVar[str] = (
        "SWE-agent's SummarizeEveryNTurns history processor as used by 'The Complexity Trap' "
        "(arXiv 2508.21433): once 21 + 10 turns are unsummarised, the oldest 21 are replaced "
        "by one checkpoint summary written by the agent's model with the OpenHands "
        "state-summary prompt, keeping the last 10 turns verbatim. mode=hybrid adds "
        "observation masking (LastNObservations, last 10 observations) after it."
    )
    estimator: ClassVar[str] = (
        "reference cl100k counts, per message (the trigger counts turns, not tokens)"
    )
    WINDOW = "context_window"
    State = _State
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "mode",
            "summary",
            "summary: the LLM-summary baseline; hybrid: summary then observation masking "
            "(the paper's N=21_M=10_masking_M=10 config).",
            "str",
            choices=("summary", "hybrid"),
            origin="history_processors list (summarize_every_n_turns [+ last_n_observations])",
        ),
        Param(
            "n",
            21,
            "Turns summarised per checkpoint (the paper's N).",
            min=1,
            origin=f"{_ORIGIN}.n",
        ),  # fmt: skip
        Param(
            "keep_last_m_turns",
            10,
            "Recent turns kept verbatim; a checkpoint is made when n + this many turns are "
            "unsummarised (the paper's M).",
            min=0,
            origin=f"{_ORIGIN}.keep_last_m_turns",
        ),
        Param(
            "enable_static_checkpointing",
            True,
            "Show only the newest checkpoint in the request that creates it (later requests "
            "show every checkpoint, as the original's cache does); off: always every one.",
            "bool",
            origin=f"{_ORIGIN}.enable_static_checkpointing",
        ),
        Param(
            "extract_action_from_turns",
            False,
            "Append the summarised turns' actions verbatim to the checkpoint.",
            "bool",
            origin=f"{_ORIGIN}.extract_action_from_turns",
        ),
        Param(
            "max_kept_action_length",
            -1,
            "Words of each extracted action kept (-1: all, 0: none).",
            min=-1,
            origin=f"{_ORIGIN}.max_kept_action_length",
        ),
        Param(
            "max_kept_reasoning_length",
            -1,
            "Words of each item's content shown to the summariser (-1: all, 0: none).",
            min=-1,
            origin=f"{_ORIGIN}.max_kept_reasoning_length",
        ),
        Param(
            "omit_turns",
            False,
            "Replace the turns by 'Previous N turns omitted for brevity.' (no call).",
            "bool",
            origin=f"{_ORIGIN}.omit_turns",
        ),
        Param(
            "summary_system_template",
            SUMMARY_SYSTEM_TEMPLATE,
            "System prompt of the summary call.",
            "str",
            origin="agent.templates.summary_system_template",
        ),
        Param(
            "masking_n",
            10,
            "Hybrid only: most recent observations kept verbatim by the masking step.",
            min=1,
            origin="history_processors[type=last_n_observations].n",
        ),
        Param(
            "context_window",
            262_144,
            "Model context window (overflow is judged against it; the trigger ignores it). "
            "Default: Qwen3-Coder 480B, the paper's main model.",
            min=1_000,
            origin="model context window",
        ),
    )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        Strategy.__init__(self, params)

    # --- hooks --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        msg = ctx.original(index)
        has_results = any(b.kind is BlockKind.TOOL_RESULT for b in msg.blocks)
        if msg.role is Role.ASSISTANT:
            if st.open is not None and not st.open.results:
                st.open.assistants.append(index)  # the same call continues
            else:
                st.open = Turn([index])
            return
        if has_results and st.open is not None:
            if not st.open.results:
                st.turns.append(st.open)
            st.open.results.append(index)
            return
        if st.open is not None and not st.open.results:
            # A plain answer (no tool results) followed by a person's words is no turn
            # either; left out here it was never dropped with its summarised span.
            st.loose.extend(st.open.assistants)
        st.open = None
        if st.task is None and msg.role is Role.USER:
            st.task = index
        else:
            st.loose.append(index)

    def before_call(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        n, m = int(self.params["n"]), int(self.params["keep_last_m_turns"])
        # An assistant message left without tool results is not a turn (a plain answer).
        if st.open is not None and not st.open.results:
            st.loose.extend(st.open.assistants)
        st.open = None
        unprocessed = st.turns[st.done :]
        if len(unprocessed) >= n + m:
            self._checkpoint(ctx, unprocessed[:n])
        elif not st.shows_all and st.checkpoints:
            # The cache holds every checkpoint: from this query on all are in the request.
            self._render(ctx, every=True)
        if self.params["mode"] == "hybrid":
            self._mask(ctx)

    # --- summary ------------------------------------------------------------------------
    def _checkpoint(self, ctx: ContextView, turns: list[Turn]) -> None:
        st: _State = ctx.state
        k = len(turns)
        record_id: int | None = None
        if self.params["omit_turns"]:
            content = OMITTED.format(k=k)
        else:
            request = self.summary_request(ctx, turns)
            members = [i for t in turns for i in (*t.assistants, *t.results)]
            record = ctx.summarize(request, messages=members)
            if record.error:
                ctx.emit(
                    "summary_failed",
                    summary_id=record.id,
                    error=record.error,
                    outcome="the original raises (the run stops); the replay keeps the "
                    "history and retries at the next query",
                )
                return
            record_id = record.id
            summary = record.output
            if self.params["extract_action_from_turns"]:
                summary += ACTIONS_SUFFIX.format(actions="\n".join(self._actions(ctx, turns)))
            content = CHECKPOINT.format(k=k, summary=summary)
        last = turns[-1].results[-1]
        gone = [i for t in turns for i in (*t.assistants, *t.results)]
        loose = [i for i in st.loose if i < last]
        st.loose = [i for i in st.loose if i > last]  # kept: a reading
        previous_ref = ctx.summary_ref
        st.checkpoints.append(content)
        with ctx.action(
            "summarise",
            reason=f"{k} oldest unsummarised turns replaced by a checkpoint "
            f"({self.params['keep_last_m_turns']} kept verbatim)",
            n=int(self.params["n"]),
            keep_last_m_turns=int(self.params["keep_last_m_turns"]),
            checkpoint=len(st.checkpoints),
            omitted=bool(self.params["omit_turns"]),
        ) as act:
            act.remove(gone, Fate.SUMMARISED)
            act.remove(loose, Fate.DROPPED, reason="not part of a turn: absent from the view")
            static = bool(self.params["enable_static_checkpointing"])
            self._render(ctx, every=not static, summary_id=record_id)
            act.summary_id = record_id
            act.always = True
        st.done += k
        st.masked_ids.difference_update(gone)
        check_summary_size(
            ctx,
            summary_rendered=content,
            replaced=gone,
            summary_id=record_id,
            previous_ref=previous_ref,
        )

    def _render(self, ctx: ContextView, *, every: bool, summary_id: int | None = None) -> None:
        """The summary slot: every checkpoint so far, or only the newest. Each checkpoint is
        counted once; the slot's text (all of them joined) is made only if read: remade at
        each checkpoint it made long replays quadratic."""
        st: _State = ctx.state
        shown = tuple(st.checkpoints) if every else (st.checkpoints[-1],)
        st.scaled.extend(
            self.scale(ctx.reference.text(c)) for c in st.checkpoints[len(st.scaled) :]
        )
        tokens = sum(st.scaled) if every else st.scaled[-1]
        rendered_ref = _joined_reference(ctx, list(shown), st.separated_refs if every else [])
        rendered: str | Callable[[], str] = shown[0]
        if len(shown) > 1:
            rendered = functools.partial("\n\n".join, shown)
            if rendered_ref is None:
                rendered = rendered()
        ctx.set_summary(
            rendered,
            tokens=tokens,
            rendered=rendered,
            summary_id=summary_id if summary_id is not None else ctx.summary_id,
            rendered_ref=rendered_ref,
        )
        st.shows_all = len(shown) == len(st.checkpoints)

    def summary_request(self, ctx: ContextView, turns: list[Turn]) -> SummaryRequest:
        """The call ``query_for_summary`` makes for ``turns``."""
        st: _State = ctx.state
        if st.checkpoints:
            context = f"<PREVIOUS_CHECKPOINT>\n{st.checkpoints[-1]}\n</PREVIOUS_CHECKPOINT>\n"
        else:
            task = ctx.original(st.task) if st.task is not None else None
            text = message_content(task) if task is not None else ""
            context = f"<PROBLEM_STATEMENT>\n{text}\n</PROBLEM_STATEMENT>\n"
        reasoning = int(self.params["max_kept_reasoning_length"])
        prompt = context
        material: list[MaterialItem] = []
        for i, turn in enumerate(turns):
            prompt += f"\n<TURN-{i}>\n"
            for index in (*turn.assistants, *turn.results):
                msg = ctx.original(index)
                role = "assistant" if msg.role is Role.ASSISTANT else "tool"
                action = message_action(msg) if role == "assistant" else None
                content = message_content(msg)
                prompt += render_item(role, content, action, reasoning)
                material.append(
                    MaterialItem(role, content + (f"\n{action}" if action else ""), index)
                )
            prompt += f"\n</TURN-{i}>\n"
        prompt += CALL_TO_ACTION
        return SummaryRequest(
            strategy=self.name,
            system=str(self.params["summary_system_template"]),
            messages=(PromptMessage("user", prompt),),
            style="sections",
            sections=SECTIONS,
            material=tuple(material),
            previous_summary=st.checkpoints[-1] if st.checkpoints else "",
        )

    def _actions(self, ctx: ContextView, turns: list[Turn]) -> list[str]:
        limit = int(self.params["max_kept_action_length"])
        out = []
        for turn in turns:
            for index in turn.assistants:
                action = message_action(ctx.original(index))
                if action is not None:
                    out.append(cut_action(action, limit))
        return out

    # --- hybrid: LastNObservations over the view ----------------------------------------
    def _mask(self, ctx: ContextView) -> None:
        st: _State = ctx.state
        observations = [t.results for t in st.turns[st.done :]]
        # +1: the task is the view's first observation; checkpoints are not observations.
        target = omitted_count(len(observations) + 1, int(self.params["masking_n"]))
        new = [i for group in observations[:target] for i in group if i not in st.masked_ids]
        if not new:
            return
        with ctx.action(
            "prune",
            reason=f"observation older than the last {self.params['masking_n']} masked "
            "(hybrid, request view)",
            n=int(self.params["masking_n"]),
            masked_observations=target,
        ) as act:
            for i in new:
                act.replace(i, mask_message(ctx.original(i)), Fate.PRUNED)
                st.masked_ids.add(i)


def _joined_reference(ctx: ContextView, checkpoints: list[str], separated: list[int]) -> int | None:
    """cl100k tokens of ``"\n\n".join(checkpoints)`` as the sum of each checkpoint with its
    separator: a cut after a newline followed by a non-space character splits the count
    exactly (``reference.safe_split``), so the summary of every checkpoint so far is not
    tokenised again at each new one (that made long replays quadratic). ``separated``
    holds the counts of ``checkpoints[i] + "\n\n"`` found so far and is extended: even a
    memoised count hashes its new joined string, so recounting them at every render stayed
    quadratic. None (count the whole) if a checkpoint starts with whitespace."""
    # checkpoints[1 : len(separated)] passed this test when their counts were kept
    unchecked = checkpoints[max(1, len(separated)) :]
    if not checkpoints or any(not c or c[0].isspace() for c in unchecked):
        return None
    text = ctx.reference.text
    separated.extend(_with_separator(text, c) for c in checkpoints[len(separated) : -1])
    return sum(separated[: len(checkpoints) - 1]) + text(checkpoints[-1])


def _with_separator(text: Callable[[str], int], checkpoint: str) -> int:
    """``text(checkpoint + "\n\n")`` from the checkpoint's own count (made at its render)
    and its last line's: both texts split exactly at the same safe point
    (``reference.safe_split``), so only the last line is counted again, and no copy of
    each checkpoint with its separator is made and memoised (a copy of every summary of
    the replay: 4.8 MiB on the realistic 20k transcript)."""
    cut = safe_split(checkpoint)  # == safe_split(checkpoint + "\n\n"): same newlines
    if cut == 0:
        return text(checkpoint + "\n\n")
    tail = checkpoint[cut:]
    return text(checkpoint) - text(tail) + text(tail + "\n\n")


STRATEGY = ComplexityTrapSummaryStrategy
