"""A strategy's parameters in the original system's own configuration shape.

``native_config(strategy, params)`` returns the file a tuned setting goes into, its content
(nested exactly as the original reads it) and that content rendered as text, so a setting
found in the lab can be pasted straight back into the agent. Parameters the original does
not read from configuration (constructor defaults, code constants, our own replay knobs)
are listed in ``notes`` with where they live instead.

Shapes (each strategy's page in docs/strategies/ names its original's sources):
- QwenPaw: ``agent.json`` -> ``language`` + ``running.light_context_config.{...}``;
  ``max_input_length`` comes from the active model's info (``running.max_input_length``).
- CoPaw 0.0.7: ``config.json`` -> ``agents.language`` + ``agents.running.{...}``;
  ``COPAW_MEMORY_COMPACT_KEEP_RECENT`` is an environment variable.
- CowAgent (chatgpt-on-wechat): flat ``config.json`` keys.
- PicoClaw: ``config.json`` -> ``agents.defaults.{max_tokens, context_window, ...}``.
- BaseAgent: module constants in ``src/core/compaction.py`` (hard-coded, not configurable).
- Anthropic context editing: the Messages request's ``context_management`` body
  (``{"edits": [clear_thinking_20251015?, clear_tool_uses_20250919]}``, thinking first as the
  API requires).
- OpenCode: ``opencode.json`` -> ``compaction.{auto, prune, reserved}`` (``reserved`` omitted
  when unset); model limits live in the models.dev entry or ``provider.*.models.*.limit``.
- Codex CLI: ``~/.codex/config.toml`` top-level keys (``model_context_window``,
  ``model_auto_compact_token_limit``, ``tool_output_token_limit``, ``compact_prompt``); unset
  keys are omitted.
- Claude Code: ``settings.json`` -> ``autoCompactEnabled`` + ``env.{CLAUDE_AUTOCOMPACT_PCT_OVERRIDE,
  DISABLE_AUTO_COMPACT, CLAUDE_CODE_AUTO_COMPACT_WINDOW}`` (set ones only; values as strings);
  a ``context_window`` below the default becomes ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` (it caps
  the model's window, so the trigger is the same).
- Observation masking (SWE-agent fork of The Complexity Trap): the run config YAML's
  ``agent.history_processors`` list (``tag_tool_call_observations`` before
  ``last_n_observations`` when tools keep their output).
- Aider: ``.aider.conf.yml`` ``max-chat-history-tokens`` (omitted when derived from the
  model's window).
- OpenHands condensers: ``config.toml`` ``[condenser]`` (``type`` and the keys that type
  reads; ``llm_config = "condenser"`` names the summarising LLM's ``[llm.condenser]``).
- Anthropic server-side compaction: the Messages request's ``context_management`` body
  (``{"edits": [{"type": "compact_20260112", "trigger": ..., ...}]}``).
- Gemini CLI: ``settings.json`` -> ``model.compressionThreshold`` + ``tools.truncateToolOutputThreshold``
  (``packages/cli/src/config/settingsSchema.ts``).
- Cline: ``~/.cline/data/settings/global-settings.json`` -> ``compactionEnabled`` +
  ``compactionStrategy`` (the only compaction keys the SDK's global settings read; the rest
  is the embedding app's ``CoreSessionConfig.compaction`` or model info).
- pi: ``~/.pi/agent/settings.json`` (or ``<cwd>/.pi/settings.json``) ->
  ``compaction.{enabled, reserveTokens, keepRecentTokens}``; the window is the model's.
- Goose: ``~/.config/goose/config.yaml`` -> ``GOOSE_AUTO_COMPACT_THRESHOLD`` (the context
  limit is the model's, or the environment variable ``GOOSE_CONTEXT_LIMIT``).
- Roo Code: the settings export ``roo-code-settings.json`` -> ``globalSettings.{autoCondenseContext,
  autoCondenseContextPercent, customSupportPrompts.CONDENSE}`` (``providerProfiles`` required
  by the import; the window and max tokens are the model's).
- Crush: ``crushrc`` (Bash) -> ``option auto-summarize`` (the deprecated ``crush.json``:
  ``options.disable_auto_summarize``); the window is the model's.
- Kimi CLI: ``~/.kimi/config.toml`` -> ``[loop_control]`` ``reserved_context_size``,
  ``compaction_trigger_ratio``; the window is the model's (``[models.<name>]``).
- AutoGen model contexts: ``model_context.json``, the declarative component
  (``{"provider": "autogen_core.model_context.<Kind>ChatCompletionContext",
  "component_type": "chat_completion_context", "config": {...}}``) that
  ``ChatCompletionContext.load_component`` reads; the token-limited one names its model
  client (``OpenAIChatCompletionClient``, ``gpt-4-turbo``). Strands Agents has no config
  file (the managers are constructor calls).
- LangChain: Python, not a config file: the ``SummarizationMiddleware(...)`` constructor call,
  and the ``trim_messages(...)`` pre-model hook (``content`` holds the keyword arguments).

Every parameter changed from its default is either in the file or listed by name in
``unexpressed`` (with its value): what the target format cannot carry is never dropped
silently. ``media_type`` is the file's real content type (JSON, TOML, Python).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ..strategies import get_strategy_class
from . import frameworks, providers, seeds
from .base import MEDIA_TYPES, NativeConfig, media_type

__all__ = ["MEDIA_TYPES", "NATIVE_SHAPES", "WRITES", "NativeConfig", "media_type", "native_config"]

# The parameters each shape writes into its file (everything else is a note at best).
WRITES: dict[str, frozenset[str]] = {
    "qwenpaw": frozenset(
        {"language", "max_input_length", "dialog_path", "token_count_estimate_divisor",
         "context_compact_enabled", "compact_threshold_ratio", "reserve_threshold_ratio",
         "compact_with_thinking_block", "tool_result_pruning_enabled", "pruning_recent_n",
         "pruning_old_msg_max_bytes", "pruning_recent_msg_max_bytes", "offload_retention_days",
         "tool_results_cache", "exempt_file_extensions", "exempt_tool_names"}
    ),
    "copaw": frozenset(
        {"language", "max_input_length", "memory_compact_ratio", "memory_reserve_ratio",
         "enable_tool_result_compact", "tool_result_compact_keep_n"}
    ),
    "cowagent": frozenset({"agent_max_context_tokens", "agent_max_context_turns"}),
    "picoclaw": frozenset(
        {"max_tokens", "context_window", "summarize_message_threshold",
         "summarize_token_percent", "max_llm_retries"}
    ),
    "baseagent": frozenset(
        {"model_context_limit", "output_token_max", "auto_compact_threshold", "prune_protect",
         "prune_minimum", "protect_last_turns", "compaction_max_tokens", "max_output_tokens"}
    ),
    "anthropic_edits": frozenset(
        {"trigger", "trigger_type", "keep", "clear_at_least", "exclude_tools",
         "clear_tool_inputs", "clear_thinking", "thinking_keep", "thinking_keep_all"}
    ),
    "codex": frozenset(
        {"model_context_window", "model_auto_compact_token_limit", "tool_output_token_limit",
         "compact_prompt"}
    ),
    "opencode": frozenset({"compaction_auto", "compaction_prune", "compaction_reserved"}),
    "claude_code": frozenset(
        {"auto_compact_enabled", "autocompact_pct_override", "disable_auto_compact",
         "auto_compact_window"}
    ),
    "langchain_summarization": frozenset({"trigger", "keep", "trim_tokens_to_summarize"}),
    "langchain_trim": frozenset(
        {"strategy", "max_tokens", "start_on", "end_on", "include_system", "allow_partial"}
    ),
    "observation_masking": frozenset({"n", "polling", "keep_output_tools"}),
    "complexity_trap_summary": frozenset(
        {"mode", "n", "keep_last_m_turns", "enable_static_checkpointing",
         "extract_action_from_turns", "max_kept_action_length", "max_kept_reasoning_length",
         "omit_turns", "summary_system_template"}
    ),
    "aider": frozenset({"max_chat_history_tokens"}),
    # Each condenser type writes only the keys it reads; _openhands_condenser lists a
    # changed key its type ignores as unexpressed.
    "openhands_condenser": frozenset(
        {"condenser", "max_size", "keep_first", "max_event_length", "attention_window",
         "max_events"}
    ),
    "anthropic_server_compaction": frozenset(
        {"trigger", "instructions", "pause_after_compaction"}
    ),
    "gemini_cli": frozenset({"compression_threshold", "truncate_tool_output_threshold"}),
    "cline": frozenset({"strategy"}),
    "pi": frozenset({"enabled", "reserveTokens", "keepRecentTokens"}),
    "goose": frozenset({"GOOSE_AUTO_COMPACT_THRESHOLD"}),
    "roo_code": frozenset(
        {"autoCondenseContext", "autoCondenseContextPercent", "customCondensingPrompt"}
    ),
    "crush": frozenset({"disable_auto_summarize"}),
    "kimi_cli": frozenset({"reserved_context_size", "compaction_trigger_ratio"}),
    "autogen_buffered": frozenset({"buffer_size"}),
    "autogen_head_and_tail": frozenset({"head_size", "tail_size"}),
    "autogen_token_limited": frozenset({"token_limit"}),
}  # fmt: skip

NATIVE_SHAPES: dict[str, Callable[[Mapping[str, Any]], NativeConfig]] = {
    **seeds.SHAPES,
    **providers.SHAPES,
    **frameworks.SHAPES,
}


def native_config(strategy: str, params: Mapping[str, Any] | None = None) -> NativeConfig:
    """``params`` (validated, defaults filled) in ``strategy``'s original config shape.

    Raises ValueError for an unknown strategy, bad params, or a strategy without a shape.
    """
    cls = get_strategy_class(strategy)
    full = cls(params).params
    shape = NATIVE_SHAPES.get(strategy)
    if shape is None:
        raise ValueError(f"strategy {strategy!r} has no native configuration shape")
    native = shape(full)
    writes = set(WRITES.get(strategy, ()))
    if strategy == "claude_code" and providers.claude_code_window_cap(full):
        writes.add("context_window")  # carried as CLAUDE_CODE_AUTO_COMPACT_WINDOW
    if strategy == "complexity_trap_summary" and full["mode"] == "hybrid":
        writes.add("masking_n")  # the last_n_observations processor's n
    unexpressed = native.unexpressed + tuple(  # a shape may list its own (openhands)
        (spec.name, full[spec.name])
        for spec in cls.PARAMS
        if spec.name not in writes and full[spec.name] != spec.default
    )
    if not unexpressed:
        return native
    text = native.text
    if native.media_type != "application/json":  # TOML and Python take comments
        listed = ", ".join(f"{name}={value!r}" for name, value in unexpressed)
        text = f"# Not expressible in {native.filename}: {listed}\n" + text
    return replace(native, text=text, unexpressed=unexpressed)
