"""A prompt version (the prompt editor's) in each agent's own configuration.

``prompt_export(strategy, text, rules, instructions, params)`` returns the file the agent
reads the setting from:

- Claude Code: ``CLAUDE.md`` with a ``# Compact Instructions`` section (Claude Code reads
  compaction instructions from CLAUDE.md; the same text works as ``/compact <instructions>``
  or a PreCompact hook's ``newCustomInstructions``). Its prompt itself cannot be replaced.
- Codex CLI: ``config.toml`` ``compact_prompt`` (keys checked against codex-rs/core
  ``config.schema.json``; ``experimental_compact_prompt_file`` is the file variant).
- Roo Code: the settings export's ``customSupportPrompts.CONDENSE``.
- OpenCode, Gemini CLI, pi: their compaction settings file; the prompt is listed in
  ``unexpressed`` (none of them reads a compaction prompt from its settings).

What a file cannot carry is never dropped silently: it is in ``unexpressed`` and ``notes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..summarize import prompt_edit
from . import native_config
from .base import NativeConfig

CLAUDE_MD_HEADING = "# Compact Instructions"

_NO_PROMPT_SETTING = {
    "opencode": "OpenCode reads no compaction prompt from opencode.json; a plugin's "
    "experimental.session.compacting hook can replace it (output.prompt) or add context.",
    "gemini_cli": "Gemini CLI has no setting for its compression prompt (getCompressionPrompt "
    "in packages/core/src/prompts/snippets.ts).",
    "pi": "pi has no setting for its summarization prompt; /compact <instructions> adds "
    "'Additional focus:' for one compaction.",
}


def prompt_export(
    strategy: str,
    text: str,
    rules: Sequence[str] = (),
    instructions: str = "",
    params: Mapping[str, Any] | None = None,
) -> NativeConfig:
    """The version's setting in ``strategy``'s agent configuration (see the module doc)."""
    base = dict(params or {})
    resolved = prompt_edit.resolve(strategy, text, rules, instructions, base)
    tgt = prompt_edit.target(strategy)
    if strategy == "claude_code":
        return _claude_md(resolved, tgt)
    if tgt.native_mode == "replace":
        native = native_config(strategy, {**base, **resolved.params})
        return replace(native, notes=(*native.notes, *resolved.notes))
    native = native_config(strategy, base)
    if resolved.expressible:
        return native
    note = _NO_PROMPT_SETTING.get(strategy, f"{tgt.label} has no compaction prompt setting.")
    composed = prompt_edit.compose(text, prompt_edit.clean_rules(rules))
    unexpressed = (*native.unexpressed, ("compaction prompt", composed))
    out = native.text
    if native.media_type != "application/json":
        out = f"# Not expressible in {native.filename}: the edited compaction prompt\n" + out
    return replace(native, text=out, notes=(*native.notes, note), unexpressed=unexpressed)


def _claude_md(resolved: prompt_edit.Resolved, tgt: prompt_edit.PromptTarget) -> NativeConfig:
    instructions = str(resolved.params.get(tgt.native, ""))
    body = instructions or "(no custom compact instructions in this version)"
    text = f"{CLAUDE_MD_HEADING}\n\n{body}\n"
    notes = (
        "Add this section to the project's CLAUDE.md (or ~/.claude/CLAUDE.md); the same text "
        "can be given as /compact <instructions> or returned by a PreCompact hook.",
        *resolved.notes,
    )
    unexpressed: tuple[tuple[str, Any], ...] = ()
    if resolved.edit is not None and resolved.edit.text:
        unexpressed = (("compaction prompt", resolved.edit.text),)
    return NativeConfig(
        "claude_code",
        "CLAUDE.md",
        {"compact_instructions": instructions},
        text,
        notes,
        unexpressed,
    )
