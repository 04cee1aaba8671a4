"""The prompt editor's engine side: each summarising strategy's real prompt, and an edit of it.

A prompt version (the web app's ``PromptVersion``) is three things: the prompt text, a list
of must-keep rules, and the agent's own custom instructions where the original has them.
``resolve(strategy, ...)`` turns a version into what a replay runs with:

- the original's own parameter, under the original's name, when the agent has one
  (``PromptTarget.native``): Codex ``compact_prompt`` (replaces the prompt), Roo Code
  ``customCondensingPrompt`` (replaces it), Claude Code ``custom_instructions`` (appended as
  "Additional Instructions:", as ``/compact <instructions>`` and a PreCompact hook do);
- otherwise a ``PromptEdit``: the lab replaces the prompt's text inside each summary request
  (``EditingSummarizer``). The agent itself cannot be told so; the export says it.

Must-keep rules are appended to the prompt (``rules_block``) for a model to follow. The
offline summariser is extractive and reads no prompt: for it, the editing summariser keeps
each rule by extraction instead, appending the compacted lines that contain the rule's words
(``must_keep_lines``), and says so in the summary (``OFFLINE_RULES_HEADING``). That is what
an obedient model would do, done literally; a model's actual obedience is measured only with a
model (Claude, or an OpenAI-compatible endpoint).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..core.summary_request import (
    PromptMessage,
    Summarizer,
    SummaryRequest,
    SummaryResponse,
    approx_tokens,
)

NativeMode = Literal["replace", "append", ""]

RULES_HEADING = "Must keep (every item below must survive the summary verbatim):"
OFFLINE_RULES_HEADING = "Must keep (lines kept by the rules):"
MAX_RULE_LINES = 20  # lines appended per rule by the offline extraction
_WORD = re.compile(r"[\w./:-]+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class PromptTarget:
    """Where a strategy's summary prompt lives and how the agent lets a user change it."""

    strategy: str
    label: str
    # The prompt's text as sent (each variant the replay may send; the first is where the
    # editor starts), given the strategy's params.
    variants: Callable[[Mapping[str, Any]], tuple[str, ...]]
    native: str = ""  # the strategy parameter, under the original's name ("" = none)
    native_mode: NativeMode = ""
    where: str = ""  # where the agent reads it (shown on the page, used by the export)

    def default_text(self, params: Mapping[str, Any] | None = None) -> str:
        return self.variants(params or {})[0]


def _claude_code(p: Mapping[str, Any]) -> tuple[str, ...]:
    from ..strategies import _claude_code_rules as rules

    return (rules.BASE_COMPACT_PROMPT, rules.BASE_COMPACT_PROMPT_V20)


def _codex(p: Mapping[str, Any]) -> tuple[str, ...]:
    from ..strategies import _codex_rules as rules

    first = rules.PROMPTS.get(str(p.get("prompt_version", "goal")), rules.PROMPT_GOAL)
    return (first, *(t for t in rules.PROMPTS.values() if t != first))


def _opencode(p: Mapping[str, Any]) -> tuple[str, ...]:
    from ..strategies import opencode

    first = opencode.PROMPTS.get(str(p.get("prompt_version", "template")))
    rest = tuple(t for t in opencode.PROMPTS.values() if t != first)
    return (first, *rest) if first else rest


def _roo_code(p: Mapping[str, Any]) -> tuple[str, ...]:
    from ..strategies import roo_code

    return (roo_code.SUMMARY_PROMPT,)


def _gemini_cli(p: Mapping[str, Any]) -> tuple[str, ...]:
    from ..strategies import _gemini_cli_rules as rules

    return (rules.compression_prompt(),)


def _pi(p: Mapping[str, Any]) -> tuple[str, ...]:
    """The first summary's prompt only: pi's UPDATE prompt (a summary merged into the
    previous one) is another text, sent as it is."""
    from ..strategies import _pi_rules as rules

    return (rules.SUMMARIZATION_PROMPT,)


TARGETS: dict[str, PromptTarget] = {
    t.strategy: t
    for t in (
        PromptTarget(
            "claude_code",
            "Claude Code",
            _claude_code,
            native="custom_instructions",
            native_mode="append",
            where="/compact <instructions>, a PreCompact hook's newCustomInstructions, or a "
            '"Compact Instructions" section of CLAUDE.md',
        ),
        PromptTarget(
            "codex",
            "Codex CLI",
            _codex,
            native="compact_prompt",
            native_mode="replace",
            where="~/.codex/config.toml compact_prompt (or experimental_compact_prompt_file)",
        ),
        PromptTarget(
            "roo_code",
            "Roo Code",
            _roo_code,
            native="customCondensingPrompt",
            native_mode="replace",
            where="Settings > Prompts > CONDENSE (customSupportPrompts.CONDENSE)",
        ),
        PromptTarget("opencode", "OpenCode", _opencode),
        PromptTarget("gemini_cli", "Gemini CLI", _gemini_cli),
        PromptTarget("pi", "pi", _pi),
    )
}


def target(strategy: str) -> PromptTarget:
    try:
        return TARGETS[strategy]
    except KeyError:
        known = ", ".join(sorted(TARGETS))
        raise ValueError(f"no prompt editor for {strategy!r} (known: {known})") from None


def clean_rules(rules: Sequence[str] | str) -> tuple[str, ...]:
    """One rule per non-blank line, stripped, duplicates dropped (order kept)."""
    lines = rules.splitlines() if isinstance(rules, str) else list(rules)
    out: list[str] = []
    for line in lines:
        rule = line.strip().lstrip("-*").strip()
        if rule and rule not in out:
            out.append(rule)
    return tuple(out)


def rules_block(rules: Sequence[str]) -> str:
    """The must-keep rules as the text appended to a prompt ("" for none)."""
    if not rules:
        return ""
    return RULES_HEADING + "\n" + "\n".join(f"- {rule}" for rule in rules)


def compose(text: str, rules: Sequence[str]) -> str:
    """The prompt a model is sent: the text, then the must-keep rules."""
    block = rules_block(rules)
    return f"{text.rstrip()}\n\n{block}" if block else text


@dataclass(frozen=True, slots=True)
class PromptEdit:
    """What the lab does to each summary request: every ``original`` text found in it is
    replaced by ``text`` (``""`` = left as sent), and ``rules`` are kept."""

    original: tuple[str, ...] = ()
    text: str = ""
    rules: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"original": list(self.original), "text": self.text, "rules": list(self.rules)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> PromptEdit | None:
        if not data:
            return None
        return cls(
            original=tuple(str(t) for t in data.get("original", ())),
            text=str(data.get("text", "")),
            rules=tuple(str(r) for r in data.get("rules", ())),
        )

    def edit_text(self, text: str) -> tuple[str, bool]:
        if not self.text:
            return text, False
        for original in self.original:
            if original and original in text:
                return text.replace(original, self.text), True
        return text, False

    def apply(self, request: SummaryRequest) -> tuple[SummaryRequest, bool]:
        """The request with the prompt replaced; False when no original text was in it."""
        system, found = self.edit_text(request.system)
        messages = []
        for message in request.messages:
            edited, hit = self.edit_text(message.text)
            found = found or hit
            messages.append(PromptMessage(message.role, edited) if hit else message)
        if not found:
            return request, False
        return replace(request, system=system, messages=tuple(messages)), True


@dataclass(frozen=True, slots=True)
class Resolved:
    """A prompt version as a replay runs it: strategy params, and the lab's edit (if any)."""

    params: dict[str, Any]
    edit: PromptEdit | None
    expressible: bool  # True when the agent's own setting carries the whole version
    notes: tuple[str, ...]


def resolve(
    strategy: str,
    text: str,
    rules: Sequence[str] = (),
    instructions: str = "",
    params: Mapping[str, Any] | None = None,
) -> Resolved:
    """What runs a prompt version: the native parameter where the agent has one, the lab's
    request edit for the rest. The original prompt (text unchanged, no rules, no
    instructions) resolves to no change at all."""
    tgt = target(strategy)
    variants = tgt.variants(params or {})
    kept = clean_rules(rules)
    changed = text.strip() != variants[0].strip()
    out: dict[str, Any] = {}
    notes: list[str] = []
    edit: PromptEdit | None = None
    if tgt.native_mode == "replace":
        if changed or kept:
            out[tgt.native] = compose(text, kept)
        # Offline extraction of the rules needs the edit too (it reads no prompt).
        edit = PromptEdit(rules=kept) if kept else None
        return Resolved(out, edit, True, tuple(notes))
    if tgt.native_mode == "append":
        extra = "\n\n".join(part for part in (instructions.strip(), rules_block(kept)) if part)
        if extra:
            out[tgt.native] = extra
        if changed:
            notes.append(
                f"{tgt.label} has no setting that replaces its compaction prompt: the edited "
                f"text is a lab replay only; only {tgt.native} ({tgt.where}) can be exported."
            )
        edit = PromptEdit(variants if changed else (), text if changed else "", kept)
        if edit == PromptEdit():
            edit = None
        return Resolved(out, edit, not changed, tuple(notes))
    if changed or kept:
        edit = PromptEdit(variants, compose(text, kept) if changed or kept else "", kept)
        notes.append(
            f"{tgt.label} has no setting for its compaction prompt: this version is a lab "
            "replay only (the export names what it cannot express)."
        )
    return Resolved(out, edit, not (changed or kept), tuple(notes))


def must_keep_lines(request: SummaryRequest, rules: Sequence[str], summary: str) -> list[str]:
    """The compacted lines holding each rule's words that the summary lacks (offline)."""
    out: list[str] = []
    sources = [item.text for item in request.material] or [m.text for m in request.messages]
    for rule in rules:
        words = [w.lower() for w in _WORD.findall(rule) if len(w) > 2]
        if not words:
            continue
        taken = 0
        for text in sources:
            for line in text.splitlines():
                stripped = line.strip()
                low = stripped.lower()
                if not stripped or stripped in summary or stripped in out:
                    continue
                if all(w in low for w in words):
                    out.append(stripped[:400])
                    taken += 1
                    if taken >= MAX_RULE_LINES:
                        break
            if taken >= MAX_RULE_LINES:
                break
    return out


class EditingSummarizer:
    """Sends each summary request with the edit applied; for an extractive summariser
    (``offline``), keeps the must-keep rules by extraction (see the module docstring)."""

    def __init__(self, inner: Summarizer, edit: PromptEdit) -> None:
        self.inner = inner
        self.edit = edit
        self.name = inner.name
        self.applied = 0  # requests whose prompt was found and replaced
        self.missed = 0  # requests without the original prompt text (sent unchanged)

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        edited, found = self.edit.apply(request)
        if self.edit.text:
            if found:
                self.applied += 1
            else:
                self.missed += 1
        response = self.inner.summarize(edited)
        if self.inner.name != "offline" or not self.edit.rules or response.error:
            return response
        lines = must_keep_lines(request, self.edit.rules, response.text)
        if not lines:
            return response
        block = OFFLINE_RULES_HEADING + "\n" + "\n".join(f"- {line}" for line in lines)
        text = f"{response.text.rstrip()}\n\n{block}"
        usage = response.usage
        if usage is not None and usage.estimated:  # the local estimate of the longer text
            usage = replace(usage, output_tokens=approx_tokens(text))
        return replace(response, text=text, usage=usage)


def wrap(summarizer: Summarizer, data: Mapping[str, Any] | None) -> Summarizer:
    """``summarizer`` with a stored edit applied (``Run.llm["prompt_edit"]``), or as is."""
    edit = PromptEdit.from_json(data)
    if edit is None or (not edit.text and not edit.rules):
        return summarizer
    return EditingSummarizer(summarizer, edit)
