"""LangChain deepagents ``SummarizationMiddleware`` (deepagents.middleware.summarization).

Pinned: langchain-ai/deepagents @ 23b83ad50f63d241d0069a3dc426d43b211adf2e
(``libs/deepagents/deepagents/middleware/summarization.py``, last changed in fa55c52f;
released as deepagents 0.7.8, byte-identical to the wheel), with what it delegates to:
``langchain/agents/middleware/summarization.py`` of langchain 1.5.2 (the wheel deepagents
0.7.8 resolves; ``langchain>=1.3.16``) and ``count_tokens_approximately`` /
``get_buffer_string(format="xml")`` of langchain-core 1.8.3. The summary prompt
(``DEEPAGENTS_DEFAULT_SUMMARY_PROMPT``: langchain 1.5.2's ``DEFAULT_SUMMARY_PROMPT`` with the
media-reference addendum spliced in before ``<messages>``) is byte-exact.

deepagents' middleware wraps LangChain's (``self._lc_helper``): the trigger, keep, cutoff and
summary call are LangChain's, reused here from ``langchain_summarization`` (the estimator,
``determine_cutoff``, the tool-pair ``safe_cutoff_point``, ``trim_for_summary``). What
deepagents adds, as the code does it:

- Where: ``wrap_model_call``, before every model call, over the *effective* messages
  (``_apply_event_to_messages``: the last summary message + ``state["messages"][cutoff:]``;
  the state itself is never rewritten).
- Count: ``_count_tokens(effective, request.system_message, request.tools)``: the system
  prompt and the tool schemas are counted with the messages (the scaled counter,
  ``tools=``), unlike LangChain's ``before_model``.
- Trigger: ``("fraction", f)`` / ``("tokens", N)`` / ``("messages", N)``, a dict clause
  (AND: ``{"tokens": N, "messages": M}``) or a list (OR), LangChain 1.5's
  ``_trigger_clauses``; a token clause also fires on the last AI message's reported total.
  ``create_deep_agent`` builds it with ``create_summarization_middleware``:
  ``compute_summarization_defaults`` gives trigger ``("fraction", 0.85)``, keep
  ``("fraction", 0.10)`` and argument truncation at the same fractions when the model has
  a profile (``("tokens", 170000)``, ``("messages", 6)``, truncation at 20 messages keeping
  20 otherwise), and ``trim_tokens_to_summarize=None``: these are our defaults.
- Argument truncation (``truncate_args_settings``): once its own trigger holds, the
  ``args`` string values over ``max_length`` characters of ``write_file`` / ``edit_file``
  tool calls in AI messages before its keep window become the first 20 characters +
  ``truncation_text``; the count is taken again before the summarisation check.
- Offload: the messages to summarise, less the previous summary message, are appended as
  ``## Summarized at <timestamp>\\n\\n<get_buffer_string(xml)>\\n\\n`` to
  ``/conversation_history/<session id>.md`` on the backend, then summarised
  (LangChain's ``_create_summary``: trim, ``summary_prompt.format(messages=<xml buffer>)``,
  ``.rstrip()``, one call, ``.strip()``). The summary message names the file: "You are in
  the middle of a conversation that has been summarized. ... saved to <path> ...
  <summary>...</summary>". Messages before the cutoff are SUMMARISED (DROPPED when
  ``trim_tokens_to_summarize`` cut them from the call). Each section appended is one
  offload of the run, ``<path>#section-<n>`` (the file is the sections in order).
- ``compact_conversation`` (``SummarizationToolMiddleware``, ``compact_conversation_tool``):
  when the agent called that tool, the tool compacts the effective messages only if they
  reach half of a trigger clause (``max(1, int(value * 0.5))``; a token / fraction clause
  is judged on the last AI message's *reported* total only, never the estimate);
  otherwise it answers "Nothing to compact yet".

Replay mapping: one ctxlab message may be several LangChain messages (``_langchain_tokens``),
as in ``langchain_summarization``. Where we differ: the session id is fixed
(``SESSION_ID``; upstream a random uuid4 of the same length) and the offload section is
stamped with the replay step, not the wall clock. A failing summary call raises upstream
(the model call fails, after the history was written); the replay emits
``summary_failed`` and leaves the history as it was (the tool path answers "Compaction
failed" and compacts nothing, as here). The tool's compaction happens upstream in the tool
node, before its ToolMessage joins the state; the replay applies it before the next call,
with the tool's result already in the messages. Argument truncation is a request view,
as upstream: recomputed from the full messages before every call, the clipped calls shown
PRUNED (``truncate``) and RESTORED (``restore_request``) when the view lifts them; the
state and the later summaries keep the full arguments of the messages kept. Not modelled: the ``ContextOverflowError`` fallback (the
replay never sees a provider rejection), inline-media offload (the replay holds no media
bytes), ``_clip_overflow_tail``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import BlockKind, Message, ToolDef
from ..core.params import Param
from ..core.records import Fate
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, SummaryRequest
from . import _langchain_tokens as lc
from .langchain_summarization import (
    NO_HISTORY,
    STRUCTURED_SECTIONS,
    TOO_LONG,
    LangChainSummarizationStrategy,
    _State,
    parse_context_size,
)

if TYPE_CHECKING:
    from ..core.context_view import ContextView

MIDDLEWARE = "SummarizationMiddleware (deepagents)"
COMPACT_TOOL = "compact_conversation"
# upstream: f"session_{uuid.uuid4().hex}", fixed here (same length) so replays repeat
SESSION_ID = "session_" + hashlib.md5(b"ctxlab replay", usedforsecurity=False).hexdigest()
HISTORY_PATH = f"/conversation_history/{SESSION_ID}.md"


def history_section(number: int) -> str:
    """The run's offload holding the ``number``-th section appended to HISTORY_PATH (the
    file is the sections in order; each is kept once, as the worker stores offloads)."""
    return f"{HISTORY_PATH}#section-{number}"


PATH_SUMMARY_TEMPLATE = """\
You are in the middle of a conversation that has been summarized.

The full conversation history has been saved to {file_path} should you need to refer back to it for details.

A condensed summary follows:

<summary>
{summary}
</summary>"""  # noqa: E501
SECTION_TEMPLATE = "## Summarized at {stamp}\n\n{messages}\n\n"
NOTHING_TO_COMPACT = "Nothing to compact yet \u2014 conversation is within the token budget."
TRUNCATE_TOOLS = frozenset({"write_file", "edit_file"})
TRUNCATE_DEFAULTS: dict[str, Any] = {
    "keep": ["messages", 20],
    "max_length": 2000,
    "truncation_text": "...(argument truncated)",
}
TOOL_CALL_ID_DISPLAY_LIMIT = 64
DEEPAGENTS_SUMMARY_PROMPT = """<role>
Context Extraction Assistant
</role>

<primary_objective>
Your sole objective in this task is to extract the highest quality/most relevant context from the conversation history below.
</primary_objective>

<objective_information>
You're nearing the total number of input tokens you can accept, so you must extract the highest quality/most relevant pieces of information from your conversation history.
This context will then overwrite the conversation history presented below. Because of this, ensure the context you extract is only the most important information to continue working toward your overall goal.
</objective_information>

<instructions>
The conversation history below will be replaced with the context you extract in this step.
You want to ensure that you don't repeat any actions you've already completed, so the context you extract from the conversation history should be focused on the most important information to your overall goal.

You should structure your summary using the following sections. Each section acts as a checklist - you must populate it with relevant information or explicitly state "None" if there is nothing to report for that section:

## SESSION INTENT

What is the user's primary goal or request? What overall task are you trying to accomplish? This should be concise but complete enough to understand the purpose of the entire session.

## SUMMARY

Extract and record all of the most important context from the conversation history. Include important choices, conclusions, or strategies determined during this conversation. Include the reasoning behind key decisions. Document any rejected options and why they were not pursued.

## ARTIFACTS

What artifacts, files, or resources were created, modified, or accessed during this conversation? For file modifications, list specific file paths and briefly describe the changes made to each. This section prevents silent loss of artifact information.

## NEXT STEPS

What specific tasks remain to be completed to achieve the session intent? What should you do next?

</instructions>

The user will message you with the full message history from which you'll extract context to create a replacement. Carefully read through it all and think deeply about what information is most important to your overall goal and should be saved:

With all of this in mind, please carefully read over the entire conversation history, and extract the most important and relevant context to replace it so that you can free up space in the conversation history.
Respond ONLY with the extracted context. Do not include any additional information, or text before or after the extracted context.

<media_reference_information>
Conversation history may include XML media reference tags, for example:
<image url="/conversation_history/media/{{hash}}.png" />
These tags mean the original message included media that was preserved at the referenced backend path.
Treat the tag and path as part of the conversation context. Do not infer visual details that are not available from surrounding text.
When the media could be important for future context, preserve the media reference in your summary.
The model consuming the summary can call `read_file` on the referenced path if it needs to inspect the media.
</media_reference_information>

<messages>
Messages to summarize:
{messages}
</messages>"""  # noqa: E501

Clause = dict[str, float]


def parse_clauses(value: Any) -> list[Clause]:
    """LangChain 1.5 ``_normalize_trigger``: a ContextSize, a dict clause (AND) or a list of
    either (OR); ``None`` never fires."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        return [_clause(value)]
    if isinstance(value, list | tuple) and value and isinstance(value[0], str):
        kind, size = parse_context_size(value, "trigger")
        return [{kind: size}]
    if isinstance(value, list | tuple):
        out: list[Clause] = []
        for item in value:
            if isinstance(item, Mapping):
                out.append(_clause(item))
            elif isinstance(item, list | tuple):
                kind, size = parse_context_size(item, "trigger")
                out.append({kind: size})
            else:
                raise ValueError(f"Unsupported trigger item type: {type(item).__name__}")
        return out
    raise ValueError(f"Unsupported trigger type: {type(value).__name__}")


def _clause(value: Mapping[str, Any]) -> Clause:
    if not value:
        raise ValueError("trigger clause must specify at least one of 'tokens', 'messages', "
                         "'fraction'")  # fmt: skip
    out: Clause = {}
    for kind, size in value.items():
        if kind not in ("tokens", "messages", "fraction"):
            raise ValueError(f"Unsupported trigger metric: {kind!r}")
        if isinstance(size, bool) or not isinstance(size, int | float):
            raise ValueError(f"{kind} trigger value must be numeric, got {size!r}")
        if kind != "fraction" and not isinstance(size, int):
            raise ValueError(f"{kind} trigger values must be integers, got {size!r}")
        parse_context_size([kind, size], "trigger")
        out[kind] = size
    return out


def xml_buffer(messages: Sequence[lc.LcMessage]) -> str:
    """langchain-core 1.8 ``get_buffer_string(messages, format="xml")`` for the message
    shapes a replay holds (text, content lists, AI tool calls)."""
    return "\n".join(xml_message(m) for m in messages)


def xml_message(m: lc.LcMessage) -> str:
    """One message of the XML buffer."""
    # xml.sax.saxutils loads urllib.request (http, email, ssl): here only when a summary
    # is built, not whenever the strategy registry loads (``replay --help``).
    from xml.sax.saxutils import escape, quoteattr

    kind = quoteattr(m.type)
    parts = _xml_content(m.content)
    if not (m.type == lc.AI and m.tool_calls):
        return f"<message type={kind}>{' '.join(parts)}</message>"
    lines = [f"<message type={kind}>"]
    if parts:
        lines.append(f"  <content>{' '.join(parts)}</content>")
    for call in m.tool_calls:
        call_id = str(call.get("id") or "")
        if len(call_id) > TOOL_CALL_ID_DISPLAY_LIMIT:
            call_id = call_id[:TOOL_CALL_ID_DISPLAY_LIMIT] + "..."
        args = escape(json.dumps(call.get("args", {}), ensure_ascii=False))
        lines.append(f"  <tool_call id={quoteattr(call_id)} "
                     f"name={quoteattr(str(call.get('name') or ''))}>{args}</tool_call>")  # fmt: skip
    lines.append("</message>")
    return "\n".join(lines)


def _xml_content(content: lc.Content) -> list[str]:
    from xml.sax.saxutils import escape

    if isinstance(content, str):
        return [escape(content)] if content else []
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            if block:
                parts.append(escape(block))
        elif isinstance(block, dict):
            part = _xml_block(block)
            if part:
                parts.append(part)
    return parts


def _xml_block(block: dict[str, Any]) -> str | None:
    """``_format_content_block_xml``: text and reasoning; media only by URL (a replay's
    media blocks carry none, and base64 is skipped upstream); unknown types skipped."""
    from xml.sax.saxutils import escape, quoteattr

    kind = block.get("type", "")
    if kind == "text":
        text = str(block.get("text", ""))
        return escape(text) if text else None
    if kind == "reasoning":
        reasoning = str(block.get("reasoning", ""))
        return f"<reasoning>{escape(reasoning)}</reasoning>" if reasoning else None
    url = block.get("url")
    if kind in ("image", "audio", "video") and isinstance(url, str) and url:
        return None if url.startswith("data:") else f"<{kind} url={quoteattr(url)} />"
    return None


def tool_dict(tool: ToolDef) -> dict[str, Any]:
    """``count_tokens_approximately``'s dict for a BaseTool (tool_call_schema less its
    title and description)."""
    parameters = dict(tool.parameters) if isinstance(tool.parameters, dict) else {}
    parameters.pop("title", None)
    parameters.pop("description", None)
    return {"name": tool.name, "description": tool.description, "parameters": parameters}


@dataclass(slots=True)
class _DeepState(_State):
    summary_message: lc.LcMessage | None = None  # the effective list's first, if any
    sections: int = 0  # sections appended to the offload file so far
    compact_requested: bool = False  # the agent called compact_conversation
    scale_pos: int = -1  # position of the last AI message with a reported total
    writes: list[int] = field(default_factory=list)  # positions of write/edit_file calls
    shown: dict[int, dict[str, Any]] = field(default_factory=dict)  # clipped in the view


def _inherited(*names: str) -> tuple[Param, ...]:
    by_name = {p.name: p for p in LangChainSummarizationStrategy.PARAMS}
    return tuple(by_name[n] for n in names)


class DeepAgentsSummarizationStrategy(LangChainSummarizationStrategy):
    name: ClassVar[str] = "deepagents_summarization"
    State = _DeepState
    label: ClassVar[str] = "LangChain deepagents SummarizationMiddleware (deepagents 0.7.8)"
    description: ClassVar[str] = (
        "deepagents' SummarizationMiddleware (create_deep_agent's default): before every "
        "model call, once the history with the system prompt and tool schemas reaches 85% "
        "of the model's input window, old write_file/edit_file arguments are clipped, the "
        "messages before a cutoff keeping the newest 10% of the window (never starting on a "
        "tool result) are appended to /conversation_history/<session>.md and summarised "
        "with LangChain's structured prompt; the model then sees one summary message naming "
        "that file plus the kept messages. The agent's compact_conversation tool compacts "
        "the same way from half the trigger."
    )
    estimator: ClassVar[str] = (
        "count_tokens_approximately: ceil(chars / 4) + 3 per message (role, name, tool "
        "calls, tool_call_id counted) plus the system prompt and ceil(tool schema JSON / 4), "
        "scaled by the last reported usage (x1.0-1.25)"
    )
    WINDOW = "max_input_tokens"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "trigger",
            ["fraction", 0.85],
            'When to summarise: ["fraction", f], ["tokens", N], ["messages", N], a clause '
            '{"tokens": N, "messages": M} (all must hold) or a list of them (any fires); '
            'null never summarises. Without a profile deepagents uses ["tokens", 170000].',
            "json",
            origin="compute_summarization_defaults()['trigger']",
        ),
        Param(
            "keep",
            ["fraction", 0.10],
            'What stays after summarising: ["fraction", f], ["tokens", N] or ["messages", N] '
            '(["messages", 6] without a profile).',
            "json",
            origin="compute_summarization_defaults()['keep']",
        ),
        Param(
            "trim_tokens_to_summarize",
            0,
            "Tokens of the newest messages-to-summarise sent to the summary call; 0 = None "
            "(create_summarization_middleware's default: everything is sent).",
            min=0,
            origin="create_summarization_middleware(trim_tokens_to_summarize=None)",
        ),
        Param(
            "max_input_tokens",
            200_000,
            "The chat model's profile max_input_tokens (fractions; 0 = no profile, "
            "fractions are refused as upstream does).",
            min=0,
            origin='ChatModel(profile={"max_input_tokens": ...})',
        ),
        Param(
            "truncate_args_settings",
            {"trigger": ["fraction", 0.85], "keep": ["fraction", 0.10]},
            "Clip write_file/edit_file string arguments over max_length (default 2000) to 20 "
            "characters + truncation_text in AI messages before keep, once trigger holds; "
            "null disables it.",
            "json",
            origin="compute_summarization_defaults()['truncate_args_settings']",
        ),
        Param(
            "compact_conversation_tool",
            True,
            "When the agent called compact_conversation (SummarizationToolMiddleware), "
            "compact at the next call if half of a trigger clause is reached.",
            "bool",
            origin="SummarizationToolMiddleware",
        ),
        *_inherited(
            "chars_per_token",
            "usage_metadata_scaling",
            "reported_usage_trigger",
            "cutoff_rule",
            "message_format",
        ),  # fmt: skip
    )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        Strategy.__init__(self, params)
        self.clauses = parse_clauses(self.params["trigger"])
        self.triggers = [(kind, value) for clause in self.clauses for kind, value in clause.items()]
        self.keep = parse_context_size(self.params["keep"], "keep")
        self.truncate = self._parse_truncate(self.params["truncate_args_settings"])
        fractions = [k for k, _ in self.triggers] + [self.keep[0]]
        if self.truncate is not None:
            fractions += [self.truncate["trigger"][0], self.truncate["keep"][0]]
        if "fraction" in fractions and not self.params["max_input_tokens"]:
            raise ValueError(
                "Model profile information is required to use fractional token limits: "
                "set max_input_tokens"
            )
        self._cpt = float(self.params["chars_per_token"])

    @staticmethod
    def _parse_truncate(value: Any) -> dict[str, Any] | None:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise ValueError(f"truncate_args_settings={value!r} is not an object")
        unknown = set(value) - {"trigger", "keep", "max_length", "truncation_text"}
        if unknown:
            raise ValueError(f"truncate_args_settings: unknown keys {sorted(unknown)}")
        if value.get("trigger") is None:
            return None
        settings = {**TRUNCATE_DEFAULTS, **value}
        settings["trigger"] = parse_context_size(settings["trigger"], "truncate trigger")
        settings["keep"] = parse_context_size(settings["keep"], "truncate keep")
        if isinstance(settings["max_length"], bool) or not isinstance(settings["max_length"], int):
            raise ValueError("truncate_args_settings: max_length must be an integer")
        if not isinstance(settings["truncation_text"], str):
            raise ValueError("truncate_args_settings: truncation_text must be a string")
        return settings

    # --- estimator ----------------------------------------------------------------------
    def count_system(self, text: str, message: Message | None) -> int:
        return int(self.lc_tokens(lc.LcMessage(lc.SYSTEM, text))) if text else 0

    def count_tools(self, tools: Sequence[ToolDef]) -> int:
        """The ``tools=`` term for BaseTool objects (what a deep agent's request holds):
        ``{"name", "description", "parameters"}`` with the schema's title and description
        popped, JSON length summed, then ceil(chars / chars_per_token)."""
        if not tools:
            return 0
        return math.ceil(sum(len(json.dumps(tool_dict(t))) for t in tools) / self._cpt)

    def request_total(self, ctx: ContextView) -> int:
        """``_count_tokens(effective, system_message, tools)``, kept incrementally: the
        tool schemas and the system message come first, then the effective messages."""
        return self._view_total(ctx, {})

    def _view_total(self, ctx: ContextView, clipped: Mapping[int, lc.LcMessage]) -> int:
        """The count with the ``clipped`` messages (position -> clipped version) in place."""
        st: _DeepState = ctx.state
        prefix = ctx.system_tokens + ctx.tools_tokens
        delta = delta_at_ai = 0.0
        for pos, m in clipped.items():
            change = self.lc_tokens(m) - self.lc_tokens(st.messages[pos])
            delta += change
            if pos <= st.scale_pos:
                delta_at_ai += change
        total = prefix + st.sum + delta
        counted = len(st.messages) + (1 if ctx.system_text else 0)
        approx = prefix + st.scale_at[1] + delta_at_ai if st.scale_at is not None else 0.0
        if self.params["usage_metadata_scaling"] and counted > 1 and st.scale_at and approx > 0:
            total *= lc.usage_scale(st.scale_at[0], approx)
        return math.ceil(total)

    # --- geometry -----------------------------------------------------------------------
    def threshold(self, ctx: ContextView) -> int | None:
        limits = []
        for clause in self.clauses:
            tokens = [self._limit(k, v) for k, v in clause.items() if k != "messages"]
            if tokens:
                limits.append(max(tokens))
        return min(limits) if limits else None

    # --- state --------------------------------------------------------------------------
    def _push(self, st: _State, item: lc.LcMessage, tokens: float | None = None) -> None:
        super()._push(st, item, tokens)
        assert isinstance(st, _DeepState)
        if item.type == lc.AI and item.total_tokens is not None:
            st.scale_pos = len(st.messages) - 1
        if item.type == lc.AI and any(c.get("name") in TRUNCATE_TOOLS for c in item.tool_calls):
            st.writes.append(len(st.messages) - 1)

    def _reset(self, st: _State, items: list[lc.LcMessage]) -> None:
        assert isinstance(st, _DeepState)
        st.writes, st.scale_pos = [], -1
        super()._reset(st, items)

    def after_append(self, ctx: ContextView, index: int) -> None:
        super().after_append(ctx, index)
        if self.params["compact_conversation_tool"] and any(
            b.kind is BlockKind.TOOL_USE and b.tool_name == COMPACT_TOOL
            for b in ctx.message(index).blocks
        ):
            ctx.state.compact_requested = True

    # --- hooks --------------------------------------------------------------------------
    def before_call(self, ctx: ContextView) -> None:
        st: _DeepState = ctx.state
        if st.compact_requested:
            st.compact_requested = False
            self._compact_tool(ctx)
        total = self.request_total(ctx)
        view: list[lc.LcMessage] = st.messages
        if self.truncate is not None and (st.writes or st.shown):
            clipped = self._clipped(st, total)
            self._show(ctx, clipped, total)
            if clipped:
                total = self._view_total(ctx, clipped)
                view = list(st.messages)
                for pos, m in clipped.items():
                    view[pos] = m
        fired = self._fired(st, total)
        if fired is None:
            st.skipped = False
            return
        cutoff = self.determine_cutoff(view)
        if cutoff <= 0:
            if not st.skipped:
                ctx.emit("compact_skipped", reason="no cutoff above 0: nothing to summarise",
                         trigger=fired, total_tokens=total, messages_count=len(st.messages))  # fmt: skip
            st.skipped = True
            return
        st.skipped = False
        self._offload_and_summarize(ctx, view, cutoff, total=total, fired=fired, via="trigger")

    def _fired(self, st: _State, total: int) -> str | None:
        """``_should_summarize``: the first clause whose every condition holds, described."""
        reported = self._reported_total(st)
        for clause in self.clauses:
            met: list[str] = []
            for kind, value in clause.items():
                if kind == "messages":
                    if len(st.messages) < value:
                        break
                    met.append(f"messages {len(st.messages)} >= {value:g}")
                    continue
                limit = self._limit(kind, value)
                if total >= limit:
                    met.append(f"{kind} {total} >= {limit}")
                elif reported is not None and reported >= limit:
                    met.append(f"{kind} reported {reported} >= {limit}")
                else:
                    break
            else:
                return " and ".join(met)
        return None

    # --- compact_conversation -----------------------------------------------------------
    def compact_eligible(self, st: _DeepState) -> str | None:
        """``_is_eligible_for_compaction``: half of a clause, token kinds on the reported
        total only (described; None: "Nothing to compact yet")."""
        reported = self._reported_total(st)
        for clause in self.clauses:
            met: list[str] = []
            for kind, value in clause.items():
                base = value if kind != "fraction" else int(self.params["max_input_tokens"]) * value
                half = max(1, int(base * 0.5))
                have = len(st.messages) if kind == "messages" else reported
                if have is None or have < half:
                    break
                met.append(f"{COMPACT_TOOL}: {kind} {have} >= {half}")
            else:
                return " and ".join(met)
        return None

    def _compact_tool(self, ctx: ContextView) -> None:
        st: _DeepState = ctx.state
        eligible = self.compact_eligible(st)
        cutoff = self.determine_cutoff(st.messages) if eligible else 0
        if eligible is None or cutoff == 0:
            ctx.emit("compact_skipped", reason=f"{COMPACT_TOOL}: {NOTHING_TO_COMPACT}",
                     messages_count=len(st.messages))  # fmt: skip
            return
        self._offload_and_summarize(ctx, st.messages, cutoff, total=self.request_total(ctx),
                                    fired=eligible, via=COMPACT_TOOL)  # fmt: skip

    # --- argument truncation ------------------------------------------------------------
    def _truncate_fires(self, st: _DeepState, total: int) -> bool:
        assert self.truncate is not None
        kind, value = self.truncate["trigger"]
        if kind == "messages":
            return len(st.messages) >= float(value)
        return total >= self._limit(kind, value)

    def truncate_cutoff(self, messages: Sequence[lc.LcMessage]) -> int:
        """``_determine_truncate_cutoff_index``: messages before it may be clipped."""
        assert self.truncate is not None
        kind, value = self.truncate["keep"]
        if kind == "messages":
            return len(messages) if len(messages) <= value else int(len(messages) - value)
        target = max(1, self._limit(kind, value) if kind == "fraction" else int(value))
        kept = 0
        for i in range(len(messages) - 1, -1, -1):
            tokens = math.ceil(self.lc_tokens(messages[i]))
            if kept + tokens > target:
                return i + 1
            kept += tokens
        return 0

    def clip_call(self, call: dict[str, Any]) -> dict[str, Any]:
        """``_truncate_tool_call``: string values over max_length -> 20 chars + text."""
        assert self.truncate is not None
        args = call.get("args", {})
        limit, text = self.truncate["max_length"], self.truncate["truncation_text"]
        if not isinstance(args, dict) or not any(
            isinstance(v, str) and len(v) > limit for v in args.values()
        ):
            return call
        clipped = {k: v[:20] + text if isinstance(v, str) and len(v) > limit else v
                   for k, v in args.items()}  # fmt: skip
        return {**call, "args": clipped}

    def _clipped(self, st: _DeepState, total: int) -> dict[int, lc.LcMessage]:
        """``_truncate_args``, from the full effective messages on every call: position ->
        the clipped AI message (empty when the trigger does not hold or nothing is long)."""
        if not st.writes or not self._truncate_fires(st, total):
            return {}
        cutoff = self.truncate_cutoff(st.messages)
        if cutoff >= len(st.messages):
            return {}  # every message is recent
        out: dict[int, lc.LcMessage] = {}
        for pos in st.writes:
            if pos >= cutoff:
                break
            m = st.messages[pos]
            calls = tuple(self.clip_call(c) if c.get("name") in TRUNCATE_TOOLS else c
                          for c in m.tool_calls)  # fmt: skip
            if calls != m.tool_calls:
                out[pos] = replace(m, tool_calls=calls)
        return out

    def _show(self, ctx: ContextView, clipped: Mapping[int, lc.LcMessage], total: int) -> None:
        """The request view of the clipped arguments (upstream recomputes it for every
        request from the untouched state): newly clipped calls PRUNED, calls no longer
        clipped RESTORED; one event each, only when the view changes."""
        st: _DeepState = ctx.state
        want: dict[int, dict[str, Any]] = {}  # source -> tool id -> shown args
        for m in clipped.values():
            if m.source >= 0:
                for c in m.tool_calls:
                    want.setdefault(m.source, {})[str(c.get("id"))] = c.get("args")
        lifted = sorted(i for i in st.shown if i not in want)
        changed = sorted(i for i, args in want.items() if st.shown.get(i) != args)
        if lifted:
            with ctx.action("restore_request", reason=f"{MIDDLEWARE}: arguments shown in full "
                            "again (the truncation trigger no longer holds or the call is "
                            "in the keep window)", counted=total) as act:  # fmt: skip
                for i in lifted:
                    act.replace(i, self._with_args(ctx, i, {}), Fate.RESTORED)
                    del st.shown[i]
        if changed:
            assert self.truncate is not None
            limit = self.truncate["max_length"]
            with ctx.action("truncate", reason=f"{MIDDLEWARE}: write_file/edit_file arguments "
                            f"over {limit} characters clipped before the keep window "
                            "(request view)", max_length=limit, counted=total) as act:  # fmt: skip
                for i in changed:
                    act.replace(i, self._with_args(ctx, i, want[i]), Fate.PRUNED)
                    st.shown[i] = want[i]

    @staticmethod
    def _with_args(ctx: ContextView, index: int, args: Mapping[str, Any]) -> Message:
        """The message as shown: its tool calls' arguments from ``args`` by id, the
        original's otherwise."""
        full = {b.tool_id: b.tool_input for b in ctx.original(index).blocks
                if b.kind is BlockKind.TOOL_USE}  # fmt: skip
        current = ctx.message(index)
        blocks = tuple(
            replace(b, tool_input=args.get(b.tool_id, full.get(b.tool_id, b.tool_input)))
            if b.kind is BlockKind.TOOL_USE else b
            for b in current.blocks
        )  # fmt: skip
        return replace(current, blocks=blocks)

    # --- offload + summary --------------------------------------------------------------
    def _offload_and_summarize(
        self,
        ctx: ContextView,
        view: list[lc.LcMessage],
        cutoff: int,
        *,
        total: int,
        fired: str,
        via: str,
    ) -> None:
        """``view``: the effective messages as the request shows them (arguments clipped);
        the state keeps the full ones from the cutoff on."""
        st: _DeepState = ctx.state
        old, kept = view[:cutoff], view[cutoff:]
        rendered = [xml_message(m) for m in old]  # once, for the file and the summary call
        offloaded = "\n".join(x for m, x in zip(old, rendered, strict=True)
                              if m is not st.summary_message)  # fmt: skip
        section = SECTION_TEMPLATE.format(stamp=f"step {ctx.step}", messages=offloaded)
        summary, record_id, shown, error = self._summary(ctx, old, rendered)
        if error:
            ctx.emit("summary_failed", reason=f"{MIDDLEWARE}: the summary call failed",
                     error=error, trigger=fired, estimate=total, via=via,
                     outcome="upstream the model call raises (the compact tool answers "
                             "'Compaction failed'); the history stays as it was")  # fmt: skip
            return
        st.sections += 1
        section_path = history_section(st.sections)
        text = PATH_SUMMARY_TEMPLATE.format(file_path=HISTORY_PATH, summary=summary)
        message = lc.LcMessage(lc.HUMAN, text)
        shown_sources = {m.source for m in shown}
        kept_parts: dict[int, set[int]] = {}
        for m in kept:
            kept_parts.setdefault(m.source, set()).update(m.parts)
        gone = sorted({m.source for m in old if m.source >= 0 and m.source not in kept_parts})
        split = sorted({m.source for m in old if m.source >= 0 and m.source in kept_parts})
        previous_ref = ctx.summary_ref
        with ctx.action(
            "summarise",
            reason=f"{MIDDLEWARE}: history before the cutoff offloaded to {HISTORY_PATH} "
                   "and replaced by a summary message naming it",
            trigger=fired, total_tokens=total, cutoff=cutoff, via=via,
            messages_count=len(st.messages), kept_messages=len(kept),
            summarized_messages=len(old), offload_path=section_path,
            no_call=summary if record_id is None else "",
        ) as act:  # fmt: skip
            for i in split:
                original = ctx.message(i)
                blocks = tuple(b for p, b in enumerate(original.blocks) if p in kept_parts[i])
                act.replace(i, replace(original, blocks=blocks), Fate.TRUNCATED,
                            reason="blocks before the cutoff summarised")  # fmt: skip
            act.remove([i for i in gone if i in shown_sources], Fate.SUMMARISED)
            act.remove([i for i in gone if i not in shown_sources], Fate.DROPPED,
                       reason="cut from the summary call by trim_tokens_to_summarize")  # fmt: skip
            act.offload(section_path, section)
            ctx.set_summary(summary, tokens=int(self.lc_tokens(message)), rendered=text,
                            summary_id=record_id)  # fmt: skip
            act.summary_id = record_id
            act.always = True
        self._reset(st, [message, *st.messages[cutoff:]])
        st.summary_message = message
        for i in gone:
            st.shown.pop(i, None)
        check_summary_size(ctx, summary_rendered=text, replaced=gone,
                           summary_id=record_id, previous_ref=previous_ref)  # fmt: skip

    def summary_prompt_text(
        self, messages: Sequence[lc.LcMessage], rendered: Sequence[str] | None = None
    ) -> str:
        """``_format_summary_prompt``: the XML buffer in the prompt, right-stripped."""
        buffer = "\n".join(rendered) if rendered is not None else xml_buffer(messages)
        return DEEPAGENTS_SUMMARY_PROMPT.format(messages=buffer).rstrip()

    def _summary(
        self, ctx: ContextView, old: list[lc.LcMessage], rendered: Sequence[str]
    ) -> tuple[str, int | None, list[lc.LcMessage], str]:
        """``_create_summary``: (text, record id, messages shown, error); ``rendered``: the
        XML of each of ``old``."""
        if not old:
            return NO_HISTORY, None, [], ""
        trimmed = self.trim_for_summary(old)
        if not trimmed:
            return TOO_LONG, None, [], ""
        request = SummaryRequest(
            strategy=self.name,
            system="",
            messages=(
                PromptMessage(
                    "user", self.summary_prompt_text(trimmed, rendered if trimmed is old else None)
                ),
            ),
            style="sections",
            sections=STRUCTURED_SECTIONS,
            material=tuple(MaterialItem(lc.role_of(m), m.text, m.source) for m in trimmed),
            previous_summary=ctx.summary,
        )
        sources = [m.source for m in trimmed if m.source >= 0]
        record = ctx.summarize(request, messages=list(dict.fromkeys(sources)))
        if record.error:
            return "", record.id, trimmed, record.error
        return record.output.strip(), record.id, trimmed, ""


STRATEGY = DeepAgentsSummarizationStrategy
