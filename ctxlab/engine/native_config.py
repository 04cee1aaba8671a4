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
  ``model_auto_compact_token_limit``, ``tool_output_token_limit``); unset keys are omitted.
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
- LangChain: Python, not a config file: the ``SummarizationMiddleware(...)`` constructor call,
  and the ``trim_messages(...)`` pre-model hook (``content`` holds the keyword arguments).

Every parameter changed from its default is either in the file or listed by name in
``unexpressed`` (with its value): what the target format cannot carry is never dropped
silently. ``media_type`` is the file's real content type (JSON, TOML, Python).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .strategies import get_strategy_class

MEDIA_TYPES = {
    ".json": "application/json",
    ".toml": "application/toml",
    ".py": "text/x-python",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
}


def media_type(filename: str) -> str:
    """The content type a native file is served with (by its extension)."""
    for suffix, kind in MEDIA_TYPES.items():
        if filename.endswith(suffix):
            return kind
    return "text/plain"


@dataclass(frozen=True, slots=True)
class NativeConfig:
    strategy: str
    filename: str
    content: dict[str, Any]
    text: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    # (parameter, value) changed from the default that the file cannot carry
    unexpressed: tuple[tuple[str, Any], ...] = ()

    @property
    def media_type(self) -> str:
        return media_type(self.filename)

    def as_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "filename": self.filename,
            "media_type": self.media_type,
            "content": self.content,
            "notes": list(self.notes),
            "unexpressed": [{"param": name, "value": value} for name, value in self.unexpressed],
        }


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
         "summarize_token_percent"}
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
        {"model_context_window", "model_auto_compact_token_limit", "tool_output_token_limit"}
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
}  # fmt: skip


def _json_text(content: Mapping[str, Any]) -> str:
    return json.dumps(content, ensure_ascii=False, indent=2) + "\n"


def _qwenpaw(p: Mapping[str, Any]) -> NativeConfig:
    content = {
        "language": p["language"],
        "running": {
            "max_input_length": p["max_input_length"],
            "context_manager_backend": "light",
            "light_context_config": {
                "dialog_path": p["dialog_path"],
                "token_count_estimate_divisor": p["token_count_estimate_divisor"],
                "context_compact_config": {
                    "enabled": p["context_compact_enabled"],
                    "compact_threshold_ratio": p["compact_threshold_ratio"],
                    "reserve_threshold_ratio": p["reserve_threshold_ratio"],
                    "compact_with_thinking_block": p["compact_with_thinking_block"],
                },
                "tool_result_pruning_config": {
                    "enabled": p["tool_result_pruning_enabled"],
                    "pruning_recent_n": p["pruning_recent_n"],
                    "pruning_old_msg_max_bytes": p["pruning_old_msg_max_bytes"],
                    "pruning_recent_msg_max_bytes": p["pruning_recent_msg_max_bytes"],
                    "offload_retention_days": p["offload_retention_days"],
                    "tool_results_cache": p["tool_results_cache"],
                    "exempt_file_extensions": list(p["exempt_file_extensions"]),
                    "exempt_tool_names": list(p["exempt_tool_names"]),
                },
            },
        },
    }
    notes = (
        "max_input_length: QwenPaw reads it from the active model's info when the model is "
        "known; running.max_input_length applies otherwise.",
        f"working_dir {p['working_dir']!r}: the agent's working directory (QWENPAW_WORKING_DIR).",
    )
    return NativeConfig("qwenpaw", "agent.json", content, _json_text(content), notes)


def _copaw(p: Mapping[str, Any]) -> NativeConfig:
    content = {
        "agents": {
            "language": p["language"],
            "running": {
                "max_input_length": p["max_input_length"],
                "memory_compact_ratio": p["memory_compact_ratio"],
                "memory_reserve_ratio": p["memory_reserve_ratio"],
                "enable_tool_result_compact": p["enable_tool_result_compact"],
                "tool_result_compact_keep_n": p["tool_result_compact_keep_n"],
            },
        }
    }
    notes = (
        f"memory_compact_keep_recent: environment COPAW_MEMORY_COMPACT_KEEP_RECENT="
        f"{p['memory_compact_keep_recent']}",
        f"tool_result_threshold={p['tool_result_threshold']}, retention_days="
        f"{p['retention_days']}: ReMeLight constructor arguments (not in config.json).",
        f"token_counter {p['token_counter']!r}: CoPaw uses the Qwen2.5 tokenizer "
        "(bytes//4 is its fallback).",
        f"working_dir {p['working_dir']!r}: environment COPAW_WORKING_DIR.",
    )
    return NativeConfig("copaw", "config.json", content, _json_text(content), notes)


def _cowagent(p: Mapping[str, Any]) -> NativeConfig:
    content = {
        "agent_max_context_tokens": p["agent_max_context_tokens"],
        "agent_max_context_turns": p["agent_max_context_turns"],
    }
    notes = (
        f"model_context_window={p['model_context_window']}: derived from the model name by "
        "Agent._get_model_context_window (0 = derive).",
        f"current_turn_result_max_chars={p['current_turn_result_max_chars']}, "
        f"history_result_max_chars={p['history_result_max_chars']}: constants in "
        "agent_stream.py.",
        f"memory_enabled={p['memory_enabled']}, summary_injection={p['summary_injection']!r}, "
        f"simulate_overflow={p['simulate_overflow']}: replay switches, not CowAgent settings.",
    )
    return NativeConfig("cowagent", "config.json", content, _json_text(content), notes)


def _picoclaw(p: Mapping[str, Any]) -> NativeConfig:
    defaults: dict[str, Any] = {"max_tokens": p["max_tokens"]}
    if p["context_window"]:
        defaults["context_window"] = p["context_window"]
    defaults["summarize_message_threshold"] = p["summarize_message_threshold"]
    defaults["summarize_token_percent"] = p["summarize_token_percent"]
    content = {"agents": {"defaults": defaults}}
    notes = (
        "context_window omitted = max_tokens x 4 (instance.go)."
        if not p["context_window"]
        else "context_window set explicitly.",
        f"enable_summary={p['enable_summary']}, token_estimator={p['token_estimator']!r}: "
        "code paths in pkg/agent and pkg/tokenizer, not configuration.",
    )
    return NativeConfig("picoclaw", "config.json", content, _json_text(content), notes)


_BASEAGENT_CONSTANTS = (
    ("model_context_limit", "MODEL_CONTEXT_LIMIT"),
    ("output_token_max", "OUTPUT_TOKEN_MAX"),
    ("auto_compact_threshold", "AUTO_COMPACT_THRESHOLD"),
    ("prune_protect", "PRUNE_PROTECT"),
    ("prune_minimum", "PRUNE_MINIMUM"),
)


def _py_literal(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        return repr(value)
    return f"{value:_}" if abs(value) >= 10_000 else str(value)


def _baseagent(p: Mapping[str, Any]) -> NativeConfig:
    constants = {const: p[name] for name, const in _BASEAGENT_CONSTANTS}
    content = {
        "src/core/compaction.py": constants,
        "prune_old_tool_outputs": {"protect_last_turns": p["protect_last_turns"]},
        "run_compaction": {"max_tokens": p["compaction_max_tokens"]},
        "src/config/defaults.py": {"max_output_tokens": p["max_output_tokens"]},
    }
    lines = ["# src/core/compaction.py (module constants; compaction.py reads only these)"]
    lines += [f"{const} = {_py_literal(value)}" for const, value in constants.items()]
    lines += [
        "",
        f"# prune_old_tool_outputs(messages, protect_last_turns={p['protect_last_turns']})",
        f"# run_compaction: llm.chat(..., max_tokens={p['compaction_max_tokens']})",
        f"# defaults.py: max_output_tokens = {p['max_output_tokens']}  (tool output truncation)",
    ]
    notes = ("BaseAgent hard-codes these; edit the constants in the source.",)
    return NativeConfig("baseagent", "compaction.py", content, "\n".join(lines) + "\n", notes)


def _anthropic_edits(p: Mapping[str, Any]) -> NativeConfig:
    tool_edit: dict[str, Any] = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": p["trigger_type"], "value": p["trigger"]},
        "keep": {"type": "tool_uses", "value": p["keep"]},
    }
    if p["clear_at_least"]:
        tool_edit["clear_at_least"] = {"type": "input_tokens", "value": p["clear_at_least"]}
    if p["exclude_tools"]:
        tool_edit["exclude_tools"] = list(p["exclude_tools"])
    if p["clear_tool_inputs"]:
        inputs = p["clear_tool_inputs"]
        tool_edit["clear_tool_inputs"] = list(inputs) if isinstance(inputs, list) else True
    edits: list[dict[str, Any]] = []
    if p["clear_thinking"]:
        keep: Any = (
            "all"
            if p["thinking_keep_all"]
            else {"type": "thinking_turns", "value": p["thinking_keep"]}
        )
        edits.append({"type": "clear_thinking_20251015", "keep": keep})
    edits.append(tool_edit)
    content = {"edits": edits}
    notes = (
        "Send with the beta header anthropic-beta: context-management-2025-06-27; "
        "clear_thinking_20251015 needs extended thinking enabled.",
        f"max_tokens={p['max_tokens']}: the request's own max_tokens (top level).",
        f"placeholder {p['placeholder']!r}, keep_counts_excluded={p['keep_counts_excluded']}, "
        f"strip_prior_thinking={p['strip_prior_thinking']}: replay readings of undocumented "
        "server behaviour, not request fields.",
        f"token_ratio={p['token_ratio']}, context_window={p['context_window']}: replay "
        "estimator and model window, not request fields.",
    )
    return NativeConfig(
        "anthropic_edits", "context_management.json", content, _json_text(content), notes
    )


def _codex(p: Mapping[str, Any]) -> NativeConfig:
    content: dict[str, Any] = {"model_context_window": p["model_context_window"]}
    if p["model_auto_compact_token_limit"]:
        content["model_auto_compact_token_limit"] = p["model_auto_compact_token_limit"]
    if p["tool_output_token_limit"]:
        content["tool_output_token_limit"] = p["tool_output_token_limit"]
    text = "".join(f"{key} = {value}\n" for key, value in content.items())
    notes = (
        "model_auto_compact_token_limit omitted = 90% of model_context_window."
        if not p["model_auto_compact_token_limit"]
        else "model_auto_compact_token_limit set explicitly.",
        f"auto_compact_default={p['auto_compact_default']!r}, prompt_version="
        f"{p['prompt_version']!r}, truncation_policy={p['truncation_policy']!r}: Codex version "
        "and model family, not config keys.",
        f"compact_user_message_max_tokens={p['compact_user_message_max_tokens']}: "
        "COMPACT_USER_MESSAGE_MAX_TOKENS in codex-rs/core/src/compact.rs.",
    )
    return NativeConfig("codex", "config.toml", content, text, notes)


def _opencode(p: Mapping[str, Any]) -> NativeConfig:
    compaction: dict[str, Any] = {"auto": p["compaction_auto"], "prune": p["compaction_prune"]}
    if p["compaction_reserved"] >= 0:
        compaction["reserved"] = p["compaction_reserved"]
    content = {"compaction": compaction}
    limit = {"context": p["context"], "output": p["output"]}
    if p["input"]:
        limit["input"] = p["input"]
    notes = (
        f"model limits {json.dumps(limit)}: the model's models.dev entry, or for a custom "
        "model provider.<id>.models.<id>.limit in opencode.json.",
        "compaction.reserved omitted = min(20000, the model's max output tokens)."
        if p["compaction_reserved"] < 0
        else "compaction.reserved set explicitly.",
        f"output_token_max={p['output_token_max']}: environment "
        "OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX.",
        f"compaction_buffer={p['compaction_buffer']}, prune_protect={p['prune_protect']}, "
        f"prune_minimum={p['prune_minimum']}, prune_protect_turns={p['prune_protect_turns']}, "
        f"protected_tools={p['protected_tools']!r}: constants in session/overflow.ts and "
        "session/compaction.ts.",
        f"usable_rule={p['usable_rule']!r}, overflow_compare={p['overflow_compare']!r}, "
        f"usage_count={p['usage_count']!r}, prompt_version={p['prompt_version']!r}, "
        f"system_prompt={p['system_prompt']!r}: OpenCode version, not configuration; "
        f"usage_source={p['usage_source']!r} is a replay switch.",
    )
    return NativeConfig("opencode", "opencode.json", content, _json_text(content), notes)


def _claude_code(p: Mapping[str, Any]) -> NativeConfig:
    env: dict[str, str] = {}
    if 0 < p["autocompact_pct_override"] <= 100:
        env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] = f"{p['autocompact_pct_override']:g}"
    if p["disable_auto_compact"]:
        env["DISABLE_AUTO_COMPACT"] = "1"
    cap = _claude_code_window_cap(p)
    if cap:
        env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(cap)
    content: dict[str, Any] = {"autoCompactEnabled": p["auto_compact_enabled"]}
    if env:
        content["env"] = env
    notes = (
        "autoCompactEnabled is also toggled by /config (2.1.88 reads it from the global "
        "config, ~/.claude.json); the env block can equally be exported in the shell.",
        f"context_window={p['context_window']}, output_reserve={p['output_reserve']}, "
        f"autocompact_buffer_tokens={p['autocompact_buffer_tokens']}: the model's window and "
        "constants in services/compact/autoCompact.ts, not settings.",
        f"prompt_version={p['prompt_version']!r}: Claude Code version; custom_instructions: "
        "/compact <instructions> or a PreCompact hook; transcript_path: replay knob.",
    )
    return NativeConfig("claude_code", "settings.json", content, _json_text(content), notes)


def _claude_code_window_cap(p: Mapping[str, Any]) -> int:
    """``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` for these params: the explicit cap, or a
    ``context_window`` below the default (the cap takes the smaller window, ``Math.min``)."""
    default = _default("claude_code", "context_window")
    caps = [int(p["auto_compact_window"])] if p["auto_compact_window"] else []
    if int(p["context_window"]) < default:
        caps.append(int(p["context_window"]))
    return min(caps) if caps else 0


def _default(strategy: str, name: str) -> Any:
    return next(s.default for s in get_strategy_class(strategy).PARAMS if s.name == name)


def _py_arg(value: Any) -> str:
    """A keyword value as Python source (lists of pairs become tuples, null -> None)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, list | tuple) and value and isinstance(value[0], list | tuple):
        return "[" + ", ".join(_py_arg(v) for v in value) + "]"
    if isinstance(value, list | tuple):
        inner = ", ".join(json.dumps(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return json.dumps(value)


def _langchain_summarization(p: Mapping[str, Any]) -> NativeConfig:
    content: dict[str, Any] = {}
    if p["trigger"] is not None:
        content["trigger"] = p["trigger"]
    content["keep"] = p["keep"]
    content["trim_tokens_to_summarize"] = p["trim_tokens_to_summarize"] or None
    lines = ["from langchain.agents.middleware import SummarizationMiddleware", "",
             "SummarizationMiddleware(", '    model="<summary model>",']  # fmt: skip
    lines += [f"    {key}={_py_arg(value)}," for key, value in content.items()]
    lines.append(")")
    notes = (
        "trigger omitted = None: the middleware never summarises."
        if p["trigger"] is None
        else "trigger: any listed condition fires.",
        f"summary_prompt={p['summary_prompt']!r}: DEFAULT_SUMMARY_PROMPT of the pinned "
        "version ('original' = the earlier text, pass it as summary_prompt=).",
        f"max_input_tokens={p['max_input_tokens']}: the chat model's profile "
        f"(ChatModel(profile={{'max_input_tokens': ...}})); chars_per_token="
        f"{p['chars_per_token']:g}: 3.3 when the summary model is ChatAnthropic.",
        f"usage_metadata_scaling={p['usage_metadata_scaling']}, reported_usage_trigger="
        f"{p['reported_usage_trigger']}, cutoff_rule={p['cutoff_rule']!r}: langchain version "
        f"behaviour; message_format={p['message_format']!r}: replay mapping.",
    )
    return NativeConfig("langchain_summarization", "agent.py", content,
                        "\n".join(lines) + "\n", notes)  # fmt: skip


def _langchain_trim(p: Mapping[str, Any]) -> NativeConfig:
    content: dict[str, Any] = {
        "strategy": p["strategy"],
        "max_tokens": p["max_tokens"],
        "start_on": p["start_on"] or None,
        "end_on": p["end_on"] or None,
        "include_system": p["include_system"],
        "allow_partial": p["allow_partial"],
    }
    lines = ["from langchain_core.messages.utils import count_tokens_approximately, trim_messages",
             "", "", "def pre_model_hook(state):", "    trimmed = trim_messages(",
             '        state["messages"],', f'        strategy="{p["strategy"]}",',
             "        token_counter=count_tokens_approximately,"]  # fmt: skip
    lines += [f"        {key}={_py_arg(content[key])},"
              for key in ("max_tokens", "start_on", "end_on", "include_system", "allow_partial")]  # fmt: skip
    lines += ["    )", '    return {"llm_input_messages": trimmed}']
    notes = (
        "Pass as create_react_agent(..., pre_model_hook=pre_model_hook): the state keeps the "
        "full history, only the request is trimmed.",
        f"chars_per_token={p['chars_per_token']:g}: functools.partial(count_tokens_approximately, "
        "chars_per_token=...) when not 4.",
        f"system_prompt_in_state={p['system_prompt_in_state']}, message_format="
        f"{p['message_format']!r}, context_window={p['context_window']}: replay mapping.",
    )
    return NativeConfig("langchain_trim", "agent.py", content, "\n".join(lines) + "\n", notes)


def _observation_masking(p: Mapping[str, Any]) -> NativeConfig:
    processors: list[dict[str, Any]] = []
    lines = ["agent:", "  history_processors:"]
    if p["keep_output_tools"]:
        names = list(p["keep_output_tools"])
        processors.append(
            {"type": "tag_tool_call_observations", "tags": ["keep_output"], "function_names": names}
        )
        lines += ["    - type: tag_tool_call_observations", "      tags: [keep_output]",
                  f"      function_names: {json.dumps(names, ensure_ascii=False)}"]  # fmt: skip
    processors.append({"type": "last_n_observations", "n": p["n"], "polling": p["polling"]})
    lines += ["    - type: last_n_observations", f"      n: {p['n']}",
              f"      polling: {p['polling']}"]  # fmt: skip
    notes = (
        f"placeholder={p['placeholder']!r}: the f-string in LastNObservations.__call__.",
        f"context_window={p['context_window']}: the model's window, not SWE-agent config.",
    )
    content = {"agent": {"history_processors": processors}}
    return NativeConfig(
        "observation_masking", "config.yaml", content, "\n".join(lines) + "\n", notes
    )


def _complexity_trap_summary(p: Mapping[str, Any]) -> NativeConfig:
    keys = ("n", "keep_last_m_turns", "enable_static_checkpointing", "extract_action_from_turns",
            "max_kept_action_length", "max_kept_reasoning_length", "omit_turns")  # fmt: skip
    summary = {"type": "summarize_every_n_turns", **{k: p[k] for k in keys}}
    processors: list[dict[str, Any]] = [summary]
    lines = ["agent:", "  templates:", "    summary_system_template: |-"]
    lines += [f"      {line}" if line else "" for line in p["summary_system_template"].split("\n")]
    lines += ["  history_processors:", "    - type: summarize_every_n_turns"]
    lines += [f"      {k}: {json.dumps(p[k])}" for k in keys]
    if p["mode"] == "hybrid":
        processors.append({"type": "last_n_observations", "n": p["masking_n"]})
        lines += ["    - type: last_n_observations", f"      n: {p['masking_n']}"]
    notes = (
        f"mode={p['mode']}: the history_processors list (hybrid adds last_n_observations).",
        f"context_window={p['context_window']}: the model's window, not SWE-agent config.",
    )
    content = {
        "agent": {
            "templates": {"summary_system_template": p["summary_system_template"]},
            "history_processors": processors,
        }
    }
    return NativeConfig(
        "complexity_trap_summary", "config.yaml", content, "\n".join(lines) + "\n", notes
    )


def _aider(p: Mapping[str, Any]) -> NativeConfig:
    content: dict[str, Any] = {}
    if p["max_chat_history_tokens"]:
        content["max-chat-history-tokens"] = p["max_chat_history_tokens"]
    text = "".join(f"{key}: {value}\n" for key, value in content.items()) or (
        "# max-chat-history-tokens unset: the model's max_input_tokens / 16 within [1024, 8192]\n"
    )
    notes = (
        "max-chat-history-tokens omitted = the model's max_input_tokens / 16 within [1024, 8192]."
        if not p["max_chat_history_tokens"]
        else "max-chat-history-tokens set explicitly.",
        f"max_input_tokens={p['max_input_tokens']}, weak_max_input_tokens="
        f"{p['weak_max_input_tokens']}: the models' metadata (litellm, or "
        ".aider.model.metadata.json).",
        f"failure_drops_history={p['failure_drops_history']}: Aider's code path, not config.",
    )
    return NativeConfig("aider", ".aider.conf.yml", content, text, notes)


# The [condenser] keys each OpenHands condenser type reads (condenser_config.py).
_OPENHANDS_KEYS = {
    "llm": ("keep_first", "max_size", "max_event_length"),
    "amortized": ("keep_first", "max_size"),
    "recent": ("keep_first", "max_events"),
    "observation_masking": ("attention_window",),
}


def _openhands_condenser(p: Mapping[str, Any]) -> NativeConfig:
    kind = p["condenser"]
    content: dict[str, Any] = {"type": kind}
    if kind == "llm":
        content["llm_config"] = "condenser"
    for key in _OPENHANDS_KEYS[kind]:
        content[key] = p[key]
    lines = ["[condenser]"]
    for key, value in content.items():
        lines.append(f"{key} = {json.dumps(value)}")
    # Keys the chosen type does not read: changed ones are unexpressed, never dropped.
    unused = tuple(
        (k, p[k])
        for k in ("keep_first", "max_size", "max_event_length", "attention_window", "max_events")
        if k not in _OPENHANDS_KEYS[kind] and p[k] != _default("openhands_condenser", k)
    )
    notes = [
        f"context_window={p['context_window']}: the model's window, not a condenser key.",
        "In the app (enable_default_condenser) OpenHands builds this condenser itself: "
        "keep_first=4, max_size=condenser_max_size or 120.",
    ]
    if kind == "llm":
        notes.append('Define the summarising model as [llm.condenser] (llm_config = "condenser").')
    text = "\n".join(lines) + "\n"  # native_config() comments on what is unexpressed
    return NativeConfig(
        "openhands_condenser", "config.toml", content, text, tuple(notes), unexpressed=unused
    )


def _anthropic_server_compaction(p: Mapping[str, Any]) -> NativeConfig:
    edit: dict[str, Any] = {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": p["trigger"]},
    }
    if str(p["instructions"]).strip():
        edit["instructions"] = p["instructions"]
    if p["pause_after_compaction"]:
        edit["pause_after_compaction"] = True
    content = {"edits": [edit]}
    notes = (
        "Send with the beta header anthropic-beta: compact-2026-01-12; append the whole "
        "response.content (the compaction block first) to the conversation.",
        f"summary_source={p['summary_source']!r}, context_window={p['context_window']}: "
        "replay choices and the model window, not request fields.",
    )
    return NativeConfig(
        "anthropic_server_compaction",
        "context_management.json",
        content,
        _json_text(content),
        notes,
    )


def _gemini_cli(p: Mapping[str, Any]) -> NativeConfig:
    content = {
        "model": {"compressionThreshold": p["compression_threshold"]},
        "tools": {"truncateToolOutputThreshold": p["truncate_tool_output_threshold"]},
    }
    notes = (
        "~/.gemini/settings.json (user) or .gemini/settings.json (workspace); both keys need "
        "a restart. A set compressionThreshold also overrides the remote experiment flag "
        "(Config.getCompressionThreshold reads it first).",
        "truncateToolOutputThreshold is capped at 4 x (token limit - last prompt tokens) "
        "by Config.getTruncateToolOutputThreshold.",
        f"token_limit={p['token_limit']}: tokenLimit(model) in core/tokenLimits.ts, chosen "
        "by model.name, not a setting.",
        f"preserve_threshold={p['preserve_threshold']:g}, function_response_token_budget="
        f"{p['function_response_token_budget']}: constants in chatCompressionService.ts.",
        f"verification={p['verification']}: Gemini CLI version (the single call of earlier "
        f"releases); project_temp_dir {p['project_temp_dir']!r}: Storage.getProjectTempDir(), "
        "not a setting.",
    )
    return NativeConfig("gemini_cli", "settings.json", content, _json_text(content), notes)


def _cline(p: Mapping[str, Any]) -> NativeConfig:
    content = {"compactionEnabled": True, "compactionStrategy": p["strategy"]}
    notes = (
        "~/.cline/data/settings/global-settings.json (CLINE_GLOBAL_SETTINGS_PATH or "
        "CLINE_DATA_DIR move it); the CLI's /settings panel writes it and "
        "`cline --compaction agentic|basic` overrides it for one run.",
        f"preserve_recent_tokens={p['preserve_recent_tokens']}, summary_max_output_tokens="
        f"{p['summary_max_output_tokens']}: an SDK embedder's CoreSessionConfig "
        "compaction.{preserveRecentTokens, summarizer.maxOutputTokens}, not a settings file.",
        f"max_input_tokens={p['max_input_tokens']}, max_tokens={p['max_tokens']}: the "
        "model's info (maxInputTokens, maxTokens) from the provider's model catalogue.",
        f"trigger_ratio={p['trigger_ratio']:g}, target_ratio={p['target_ratio']:g}: constants "
        "in the SDK's compaction code (0.75 was the VS Code extension's older "
        "autoCondenseThreshold state key); tool_aliases: a replay reading.",
    )
    return NativeConfig("cline", "global-settings.json", content, _json_text(content), notes)


NATIVE_SHAPES: dict[str, Callable[[Mapping[str, Any]], NativeConfig]] = {
    "qwenpaw": _qwenpaw,
    "copaw": _copaw,
    "cowagent": _cowagent,
    "picoclaw": _picoclaw,
    "baseagent": _baseagent,
    "anthropic_edits": _anthropic_edits,
    "codex": _codex,
    "opencode": _opencode,
    "claude_code": _claude_code,
    "langchain_summarization": _langchain_summarization,
    "langchain_trim": _langchain_trim,
    "observation_masking": _observation_masking,
    "complexity_trap_summary": _complexity_trap_summary,
    "aider": _aider,
    "openhands_condenser": _openhands_condenser,
    "anthropic_server_compaction": _anthropic_server_compaction,
    "gemini_cli": _gemini_cli,
    "cline": _cline,
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
    if strategy == "claude_code" and _claude_code_window_cap(full):
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
