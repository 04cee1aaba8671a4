"""Aider's chat-history summarisation (``ChatSummary``), as the coder runs it.

Sources, read at Aider-AI/aider @ 5dc9490bb35f9729ef2c95d00a19ccd30c26339c (2026-05-22):

- ``aider/history.py`` ``ChatSummary``: ``too_big``, ``summarize`` (appends an assistant
  ``Ok.`` when the result does not end on an assistant message), ``summarize_real`` (the
  recursive split) and ``summarize_all`` (the ``# USER`` / ``# ASSISTANT`` transcript, the
  models tried in order, ``summary_prefix`` + the reply as one user message).
- ``aider/models.py`` ``Model.__init__``: ``max_chat_history_tokens = min(max(
  max_input_tokens / 16, 1024), 8192)`` (a float); ``token_count`` (a message dict ->
  tokenizer of ``json.dumps(msg)``; a list -> ``litellm.token_counter``).
- ``aider/prompts.py`` ``summarize`` and ``summary_prefix`` (copied byte for byte below).
- ``aider/main.py`` ``ChatSummary([main_model.weak_model, main_model],
  args.max_chat_history_tokens or main_model.max_chat_history_tokens)``.
- ``aider/coders/base_coder.py``: ``move_back_cur_messages`` moves the finished exchange
  into ``done_messages`` and calls ``summarize_start`` (a thread, only when ``too_big``);
  ``format_chat_chunks`` calls ``summarize_end`` (joins: the next request waits) and uses
  the summarised list if ``done_messages`` did not change meanwhile.

What the replay does: when a new user request opens a turn, the previous turn joins the
done messages; if they are over ``max_chat_history_tokens`` a summary is started and lands
before the next request (deferred, the request waits for it). ``summarize_real``: under
the limit at depth 0 -> unchanged; 4 messages or fewer, or depth > 3 -> summarise all;
else the tail is the newest messages whose running total stays strictly under half the
limit, the split moves back until the head ends on an assistant message, a head of 4 or
fewer -> summarise all; the head is cut where its running total passes the weak model's
``max_input_tokens - 512`` (what is past the cut is neither summarised nor kept: dropped);
summary + tail under the limit -> done, else recurse at depth + 1.

Quirks kept from the code:

- Failure: each model is tried in turn (the weak model, then the main model: two calls
  even when they are the same model); when all fail ``summarize`` raises ``ValueError``,
  ``summarize_worker`` only warns, and ``summarize_end`` installs the still-empty
  ``summarized_done_messages``: every done message is dropped. The other reading (keep
  the history) is ``failure_drops_history=false``.
- Only ``user`` and ``assistant`` messages reach the summary prompt; other roles (tool
  results sent as ``tool`` messages) are skipped but still replaced by the summary.

Readings (Aider's history is plain ``{"role", "content"}`` strings):

- A message's content is its blocks' text joined by newlines (tool calls as
  ``name {json}``); a tool-result message in the user role counts as ``user``.
- Estimator: ``json.dumps(msg)`` (ASCII-escaped, as ``json.dumps`` defaults) counted with
  cl100k (litellm's tokenizer for OpenAI models; other models' tokenizers are not
  shipped). ``token_count(list)`` uses litellm's OpenAI rule: 3 per message + role +
  content, + 3.
- The ``Ok.`` Aider appends after a summary that does not end on an assistant message is
  counted with the summary (the lab keeps one summary, placed before the kept tail).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.findings import check_summary_size
from ..core.model import BlockKind, Message, Role
from ..core.params import Param
from ..core.records import Fate, SourceIndexes, SummaryRecord
from ..core.strategy import Strategy
from ..core.summary_request import MaterialItem, PromptMessage, SummaryRequest
from ..tokens.cl100k import block_text, reference_counter

if TYPE_CHECKING:
    from ..core.context_view import ContextView
    from ..tokens.reference import ReferenceTokens

# aider/prompts.py @ 5dc9490b, byte for byte.
SUMMARIZE = """*Briefly* summarize this partial conversation about programming.
Include less detail about older parts and more detail about the most recent messages.
Start a new paragraph every time the topic changes!

This is only part of a longer conversation so *DO NOT* conclude the summary with language like "Finally, ...". Because the conversation continues after the summary.
The summary *MUST* include the function names, libraries, packages that are being discussed.
The summary *MUST* include the filenames that are being referenced by the assistant inside the ```...``` fenced code blocks!
The summaries *MUST NOT* include ```...``` fenced code blocks!

Phrase the summary with the USER in first person, telling the ASSISTANT about the conversation.
Write *as* the user.
The user should refer to the assistant as *you*.
Start the summary with "I asked you...".
"""  # noqa: E501
SUMMARY_PREFIX = "I spoke to you previously about a number of things.\n"
MIN_SPLIT = 4
MAX_DEPTH = 3
HEAD_BUFFER = 512
UNDEFINED_WEAK_INPUT = 4096  # history.py: `info.get("max_input_tokens") or 4096`
MODELS = ("weak model", "main model")
# the name of Aider's per-message counts in ``ReferenceTokens`` (stored at import)
STORED_RULE = "aider_json"


def history_budget(max_input_tokens: int) -> float:
    """``Model.max_chat_history_tokens``: 1/16 of the input window within [1024, 8192]."""
    return min(max(max_input_tokens / 16, 1024), 8192)


@dataclass(frozen=True, slots=True)
class Item:
    """One entry of ``done_messages``: a source message (``index`` >= 0) or a summary
    / ``Ok.`` Aider wrote (``index`` = -1; ``covers`` = source messages behind it)."""

    role: str
    content: str
    tokens: int
    index: int = -1
    covers: Sequence[int] = ()


class SummaryFailed(Exception):
    """Every model failed (Aider: ``ValueError("summarizer unexpectedly failed ...")``)."""


@dataclass(slots=True)
class _State:
    done: list[Item] = field(default_factory=list)
    turn_from: int | None = None  # first source index of the running exchange
    # the running exchange's messages and contents, kept from when each was counted
    contents: dict[int, tuple[Message, str]] = field(default_factory=dict)
    counted: tuple[Message | None, str] = (None, "")  # the last message counted


class AiderStrategy(Strategy):
    name: ClassVar[str] = "aider"
    State = _State
    label: ClassVar[str] = "Aider ChatSummary (aider-chat, 2026-05)"
    description: ClassVar[str] = (
        "Aider's chat-history summary: once the finished exchanges (done_messages) pass "
        "max_chat_history_tokens (1/16 of the model's input window, 1K to 8K), a weak-model "
        "summary written as the user ('I asked you...') replaces the older half, recursively "
        "(tail under half the budget, head ending on an assistant message, depth <= 3), "
        "prefixed 'I spoke to you previously about a number of things.'"
    )
    estimator: ClassVar[str] = "cl100k of json.dumps(message) per message (Model.token_count)"
    WINDOW = "max_input_tokens"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(
            "max_input_tokens",
            200_000,
            "The main model's input window; sets max_chat_history_tokens (1/16, 1K..8K).",
            min=1,
            origin="litellm model info max_input_tokens (main model)",
        ),
        Param(
            "max_chat_history_tokens",
            0,
            "Soft limit on the done messages' tokens before summarising (0 = the model's: "
            "max_input_tokens / 16 within [1024, 8192]).",
            min=0,
            origin="--max-chat-history-tokens / Model.max_chat_history_tokens",
        ),
        Param(
            "weak_max_input_tokens",
            0,
            "The weak (summary) model's input window; the head sent to it is cut at this "
            "- 512 (0 = same as max_input_tokens; Aider uses 4096 when it is unknown).",
            min=0,
            origin="weak model info max_input_tokens (history.py)",
        ),
        Param(
            "failure_drops_history",
            True,
            "When every summary call fails, the done messages are dropped (the code: "
            "summarize_end installs the empty result); false: they are kept.",
            "bool",
            origin="base_coder.summarize_worker / summarize_end",
        ),
    )

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        explicit = int(self.params["max_chat_history_tokens"])
        self.max_tokens: float = explicit or history_budget(int(self.params["max_input_tokens"]))
        weak = int(self.params["weak_max_input_tokens"]) or int(self.params["max_input_tokens"])
        self.head_limit = (weak or UNDEFINED_WEAK_INPUT) - HEAD_BUFFER

    # --- estimator ----------------------------------------------------------------------
    def count_text(self, text: str) -> int:
        return reference_counter().count(text)

    def count_dict(self, role: str, content: str) -> int:
        """``Model.token_count(msg)`` for one message dict. Counted past the shared text
        cache (same count): each dict is counted about once (20,200 distinct in 21,051
        calls on the realistic 20k transcript) and the cache kept every dict's JSON text
        (33 MiB there, and for the worker process's later runs)."""
        return reference_counter().count_distinct([message_json(role, content)])[0]

    def count_list(self, items: list[Item]) -> int:
        """``Model.token_count(list)``: litellm's per-message rule."""
        return 3 + sum(3 + self.count_text(i.role) + self.count_text(i.content) for i in items)

    def count_message(self, message: Message) -> int:
        return self.count_dict(aider_role(message), content_of(message))

    def message_counter(self, reference: ReferenceTokens, state: Any) -> Callable[[Message], int]:
        """``count_message`` that leaves the message and its content in the replay's state:
        ``after_append`` reads the content of the message just counted there."""
        st: _State = state

        def count(message: Message) -> int:
            content = content_of(message)
            st.counted = (message, content)
            stored = reference.rule_of(STORED_RULE, message)  # an original: counted at import
            if stored is not None:
                return stored
            return self.count_dict(aider_role(message), content)

        return count

    # --- geometry -----------------------------------------------------------------------
    def window(self, ctx: ContextView) -> int:
        return int(self.params["max_input_tokens"])

    def threshold(self, ctx: ContextView) -> int | None:
        return int(self.max_tokens)

    def conversation_room(self, ctx: ContextView) -> int:
        """Aider's budget is the chat history's own (``max_chat_history_tokens``), compared
        with the history alone: the system prompt and tools are outside it."""
        fits = self.window(ctx) - ctx.system_tokens - ctx.tools_tokens
        return min(int(self.max_tokens), fits)

    # --- hooks --------------------------------------------------------------------------
    def after_append(self, ctx: ContextView, index: int) -> None:
        st: _State = ctx.state
        appended = ctx.message(index)
        counted = st.counted  # usually this message, counted as it was appended
        content = counted[1] if counted[0] is appended else content_of(appended)
        st.contents[index] = (appended, content)
        if st.turn_from is None:
            st.turn_from = index
            return
        if ctx.turn_start != index:
            return
        # move_back_cur_messages: the finished exchange joins done_messages.
        for i in range(st.turn_from, index):
            msg = ctx.message(i)
            kept = st.contents.pop(i, None)
            content = kept[1] if kept is not None and kept[0] is msg else content_of(msg)
            st.done.append(Item(aider_role(msg), content, ctx.tokens(i), index=i))
        st.turn_from = index
        if self.too_big(st.done):
            snapshot = list(st.done)
            ctx.defer(
                "summarise",
                "ChatSummary thread (summarize_start); the next request joins it",
                lambda c: self._land(c, snapshot),
            )

    def too_big(self, items: list[Item]) -> bool:
        return sum(i.tokens for i in items) > self.max_tokens

    # --- ChatSummary ----------------------------------------------------------------------
    def summarize(self, ctx: ContextView, items: list[Item]) -> tuple[list[Item], set[int]]:
        """``ChatSummary.summarize``: the new done list and the source messages cut from
        the head before the summary call (dropped, not summarised)."""
        dropped: set[int] = set()
        out = self.summarize_real(ctx, items, 0, dropped)
        if out and out[-1].role != "assistant":
            out.append(Item("assistant", "Ok.", self.count_dict("assistant", "Ok.")))
        return out, dropped

    def summarize_real(
        self, ctx: ContextView, items: list[Item], depth: int, dropped: set[int]
    ) -> list[Item]:
        total = sum(i.tokens for i in items)
        if total <= self.max_tokens and depth == 0:
            return items
        if len(items) <= MIN_SPLIT or depth > MAX_DEPTH:
            return self.summarize_all(ctx, items)
        tail_tokens = 0
        split = len(items)
        half = self.max_tokens // 2
        for i in range(len(items) - 1, -1, -1):
            if tail_tokens + items[i].tokens < half:
                tail_tokens += items[i].tokens
                split = i
            else:
                break
        while items[split - 1].role != "assistant" and split > 1:
            split -= 1
        if split <= MIN_SPLIT:
            return self.summarize_all(ctx, items)
        tail = items[split:]
        keep: list[Item] = []
        running = 0
        for item in items[:split]:
            running += item.tokens
            if running > self.head_limit:
                break
            keep.append(item)
        for item in items[len(keep) : split]:
            dropped.update(covered(item))
        summary = self.summarize_all(ctx, keep)
        if self.count_list(summary) + sum(i.tokens for i in tail) < self.max_tokens:
            return summary + tail
        return self.summarize_real(ctx, summary + tail, depth + 1, dropped)

    def summarize_all(self, ctx: ContextView, items: list[Item]) -> list[Item]:
        content = ""
        for item in items:
            role = item.role.upper()
            if role not in ("USER", "ASSISTANT"):
                continue
            content += f"# {role}\n"
            content += item.content
            if not content.endswith("\n"):
                content += "\n"
        # Each source once: a message leaves done_messages when a summary covers it, so the
        # items' sources are disjoint (no dedup pass over ~10k indexes per summary). Held as
        # runs, chained from the earlier summary's: listed out, every summary repeats all
        # the sources before it (quadratic in the replay's length).
        sources = SourceIndexes.join(i.index if i.index >= 0 else i.covers for i in items)
        request = SummaryRequest(
            strategy=self.name,
            system=SUMMARIZE,
            messages=(PromptMessage("user", content),),
            style="plain",
            material=tuple(
                MaterialItem(i.role, i.content, i.index)
                for i in items
                if i.role in ("user", "assistant")
            ),
            previous_summary=ctx.summary,
        )
        for model in MODELS:
            record = ctx.summarize(request, messages=sources)
            if not record.error:
                text = SUMMARY_PREFIX + record.output
                return [Item("user", text, self.count_dict("user", text), covers=sources)]
            ctx.emit("summary_failed", model=model, error=record.error, summary_id=record.id)
        raise SummaryFailed("summarizer unexpectedly failed for all models")

    # --- landing (summarize_end) ---------------------------------------------------------
    def _land(self, ctx: ContextView, snapshot: list[Item]) -> None:
        st: _State = ctx.state
        if snapshot != st.done:
            return  # done_messages changed meanwhile: Aider discards the result
        before = sum(i.tokens for i in snapshot)
        live = [i.index for i in snapshot if i.index >= 0]
        previous_ref = ctx.summary_ref
        try:
            result, dropped = self.summarize(ctx, snapshot)
        except SummaryFailed as exc:
            if not self.params["failure_drops_history"]:
                return
            with ctx.action(
                "drop", reason=f"{exc}: summarize_end installs an empty history",
                done_tokens=before, max_chat_history_tokens=self.max_tokens,
            ) as act:  # fmt: skip
                act.remove(live, Fate.DROPPED)
                ctx.set_summary("", tokens=0, rendered="", summary_id=None)
                act.always = True
            st.done = []
            return
        kept = {i.index for i in result if i.index >= 0}
        written = [i for i in result if i.index < 0]
        gone = [i for i in live if i not in kept]
        summary = next((i for i in written if i.role == "user"), None)
        summary_id = ctx.result.summaries[-1].id if ctx.result.summaries else None
        with ctx.action(
            "summarise", reason="done messages over max_chat_history_tokens summarised",
            done_tokens=before, max_chat_history_tokens=self.max_tokens,
            kept_messages=len(kept), summary_calls=_calls_at(ctx.result.summaries, ctx.step),
        ) as act:  # fmt: skip
            act.remove([i for i in gone if i not in dropped], Fate.SUMMARISED)
            act.remove([i for i in gone if i in dropped], Fate.DROPPED,
                       reason="past the weak model's input limit: not sent to the summary")  # fmt: skip
            rendered = "\n".join(i.content for i in written)
            ctx.set_summary(
                summary.content[len(SUMMARY_PREFIX) :] if summary else "",
                tokens=sum(i.tokens for i in written), rendered=rendered,
                summary_id=summary_id,
            )  # fmt: skip
            act.summary_id = summary_id
            act.always = True
        st.done = result
        check_summary_size(ctx, summary_rendered=rendered, replaced=gone,
                           summary_id=summary_id, previous_ref=previous_ref)  # fmt: skip


def _calls_at(summaries: list[SummaryRecord], step: int) -> int:
    """The summary calls made at ``step``: the newest records (they are kept in step
    order), not a pass over every summary of the replay at each landing."""
    n = 0
    for record in reversed(summaries):
        if record.step != step:
            break
        n += 1
    return n


def message_json(role: str, content: str) -> str:
    """The text ``Model.token_count`` tokenizes for one message dict."""
    return json.dumps({"role": role, "content": content})


def stored_counts(messages: Sequence[Message]) -> list[int]:
    """Each message's ``Model.token_count`` (cl100k of its JSON), as the replay counts an
    original message: computed once at import, stored per message and seeded into the
    reference counts (``ReferenceTokens.seed_rule(STORED_RULE, ...)``), so a replay
    tokenizes no original message's JSON again (it was 2.7 s of Aider's 4.8 s on the
    realistic 20,000-message transcript). Distinct texts are counted once."""
    texts = [message_json(aider_role(m), content_of(m)) for m in messages]
    slot: dict[str, int] = {}
    for text in texts:
        slot.setdefault(text, len(slot))
    counts = reference_counter().count_distinct(list(slot))
    return [counts[slot[t]] for t in texts]


def aider_role(message: Message) -> str:
    return "tool" if message.role is Role.TOOL else str(message.role.value)


def content_of(message: Message) -> str:
    return "\n".join(
        t for b in message.blocks if b.kind is not BlockKind.MEDIA and (t := block_text(b))
    )


def covered(item: Item) -> Sequence[int]:
    return (item.index,) if item.index >= 0 else item.covers


STRATEGY = AiderStrategy
